"""The moving magnet (`agent.magnet_coeff`, `agent.magnet_ema`; spade_rllib/rllib/lean_learner.py): config errors
in one line, the learner's KL term on a masked game, the magnet's EMA step, and its weights kept in checkpoints."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config


def _raw(**agent) -> dict:
    return {"experiment": {"name": "magnet_t", "seed": 5},
            "env": {"id": "leduc_poker"},
            "agent": {"train_batch_size": 512, "minibatch_size": 256, "epochs": 2, "model": {"hidden": [16]},
                      **agent},
            "training": {"num_envs_per_runner": 8, "num_env_runners": 0, "stop": {"env_steps": 5000}},
            "evaluation": {"interval": 0, "opponents": [], "exploitability_interval": 0}}


@pytest.mark.parametrize("agent, training, words", [
    ({"magnet_ema": 0.1}, {}, ["agent.magnet_ema = 0.1", "agent.magnet_coeff is 0"]),
    ({"magnet_coeff": -1.0}, {}, ["agent.magnet_coeff"]),
    ({"magnet_coeff": float("nan")}, {}, ["agent.magnet_coeff"]),
    ({"magnet_coeff": 0.5, "magnet_ema": 0.0}, {}, ["agent.magnet_ema"]),
    ({"magnet_coeff": 0.5, "magnet_ema": 1.5}, {}, ["agent.magnet_ema"]),
    ({"magnet_coeff": 0.5}, {"lean_learner": False}, ["needs training.lean_learner = true"]),
])
def test_bad_magnet_settings_are_one_line_config_errors(agent, training, words):
    raw = _raw(**agent)
    raw["training"].update(training)
    with pytest.raises(ConfigError) as e:
        parse_config(raw)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_a_magnet_on_continuous_actions_is_refused_before_ray():
    from spade_rllib.rllib.env_description import check_env_builds

    raw = _raw(magnet_coeff=0.5)
    raw["env"] = {"id": "Pendulum-v1"}
    with pytest.raises(ConfigError, match="discrete actions only"):
        check_env_builds(parse_config(raw))


def test_the_learner_hears_of_the_magnet_only_when_it_is_on():
    from spade_rllib.rllib.algo_config import learner_settings
    from spade_rllib.rllib.lean_learner import MAGNET_KEY

    assert learner_settings(parse_config(_raw()).agent) == {}
    on = learner_settings(parse_config(_raw(magnet_coeff=0.3, magnet_ema=0.01)).agent)
    assert on == {MAGNET_KEY: {"coeff": 0.3, "ema": 0.01}}


def _learner(algo):
    return algo.learner_group._learner


def _weights(module) -> dict:
    return {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


@pytest.mark.ray
def test_the_magnet_follows_the_policy_and_its_kl_is_logged(ray_session):
    """Leduc (illegal raises masked): the KL term is finite and logged; with `magnet_ema: 1` the magnet is the policy
    after every step, so after training it holds exactly the module's weights; with a small step it lags behind."""
    from spade_rllib.rllib.algo_config import build_algo_config

    for ema in (1.0, 0.05):
        algo = build_algo_config(parse_config(_raw(magnet_coeff=1.0, magnet_ema=ema))).build_algo()
        try:
            start = _weights(_learner(algo).module["main"])
            results = [algo.train() for _ in range(2)]
            learner = _learner(algo)
            magnet, module = _weights(learner._magnets["main"]), _weights(learner.module["main"])
        finally:
            algo.stop()
        kl = [r["learners"]["main"]["magnet_kl"] for r in results]
        assert all(math.isfinite(x) and x >= -1e-6 for x in kl), kl
        assert magnet.keys() == module.keys()
        gap = sum(float(np.abs(magnet[k] - module[k]).sum()) for k in module)
        moved = sum(float(np.abs(start[k] - module[k]).sum()) for k in module)
        if ema == 1.0:
            assert gap == pytest.approx(0.0, abs=1e-6)
        else:  # between where the policy started and where it is
            assert 0 < gap < moved
            assert sum(float(np.abs(start[k] - magnet[k]).sum()) for k in module) > 0


@pytest.mark.ray
def test_the_magnet_is_saved_and_restored_with_the_learner(ray_session, tmp_path):
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.lean_learner import MAGNET_STATE_KEY

    cfg = parse_config(_raw(magnet_coeff=0.5, magnet_ema=0.2))
    algo = build_algo_config(cfg).build_algo()
    try:
        algo.train()
        saved = _weights(_learner(algo)._magnets["main"])
        assert MAGNET_STATE_KEY in _learner(algo).get_state()
        assert MAGNET_STATE_KEY not in _learner(algo).get_state(components="rl_module")  # weight syncs stay lean
        algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    fresh = build_algo_config(parse_config(_raw(magnet_coeff=0.5, magnet_ema=0.2))).build_algo()
    try:
        fresh.restore_from_path(str(tmp_path / "ckpt"))
        restored = _weights(_learner(fresh)._magnets["main"])
        module = _weights(_learner(fresh).module["main"])
    finally:
        fresh.stop()
    assert restored.keys() == saved.keys()
    assert all(np.array_equal(restored[k], saved[k]) for k in saved)
    assert any(not np.array_equal(restored[k], module[k]) for k in saved)  # the magnet, not a copy of the policy
