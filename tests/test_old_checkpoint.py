"""A checkpoint written before issue 12 (league on, 2 iterations, tiny MLP) still loads.

`tests/fixtures/checkpoint_before_issue12/` is a trial directory trained with the code of commit
ffb1e69 (its `config.yaml`: MazeRace 1v1, an 8-unit MLP, league snapshots every iteration, 2
iterations), trimmed to the checkpoint, `config.yaml` and `league.csv`. Its pickles name
`spade_rllib.rllib.{algorithm,module,plan,runner}`, so those modules keep their names.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.players.policy import load_policy, resolve_checkpoint

OLD_RUN = Path(__file__).resolve().parent / "fixtures" / "checkpoint_before_issue12"
OLD_CKPT = OLD_RUN / "checkpoint_000000"
MEMBERS = ("main_v1", "main_v2")  # the league.csv of that run lists these snapshots


def test_old_checkpoint_resolves_modules_members_and_env():
    info = resolve_checkpoint(OLD_RUN)
    assert info.path == OLD_CKPT.resolve() and info.trial_dir == OLD_RUN.resolve()
    assert info.module_ids == ("main",) and info.league_ids == MEMBERS
    # the layout module reads the league where the trainer wrote it, and the run's env
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_id, component_state, league_member_states, module_dir

    assert module_dir(OLD_CKPT) == OLD_CKPT / "learner_group" / "learner" / "rl_module" / "main"
    assert set(component_state(info, "league")) >= {"league", "plan", "counters"}
    weights = league_member_states(info)
    assert tuple(weights) == MEMBERS and all(isinstance(v, np.ndarray) for w in weights.values() for v in w.values())
    assert checkpoint_env_id(info) == "MazeRace-v0"


@pytest.mark.parametrize("module_id", ["main", *MEMBERS])
def test_old_checkpoint_policies_act(module_id):
    policy = load_policy(OLD_CKPT, module_id=module_id, env_id="MazeRace-v0")
    assert policy.num_actions == 6
    obs = np.random.default_rng(0).uniform(-1, 1, size=(5, policy.feature_size)).astype(np.float32)
    actions = policy.act_batch(obs)
    assert actions.shape == (5,) and all(0 <= a < 6 for a in actions)


def test_old_checkpoint_restores_into_the_trainer(ray_session, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    ckpt = tmp_path / "ckpt"
    shutil.copytree(OLD_CKPT, ckpt)
    algo = Algorithm.from_checkpoint(str(ckpt))
    try:
        league = next(c for c in algo.components if c.name == "league").league
        assert tuple(str(m) for m in league.snapshots()) == MEMBERS
        result = algo.train()
        assert result["training_iteration"] == 3
    finally:
        algo.stop()


def test_the_names_checkpoints_pickle_by_reference_stay_in_the_algorithm_module():
    """A checkpoint pickles the algo config, which names these by module and name (the class itself,
    the policy mapping functions and the learner connector factory): moving one breaks every saved run."""
    import io
    import pickle

    from ray import cloudpickle

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib import algorithm
    from spade_rllib.rllib.algo_config import build_algo_config

    seen = set()

    class Names(pickle.Unpickler):
        def find_class(self, module, name):
            if module.startswith("spade_rllib.rllib.algo"):
                seen.add((module, name))
            return super().find_class(module, name)

    config = build_algo_config(parse_config({"env": {"id": "MazeRace-v0"}, "training": {"stop": {"iterations": 1}}}))
    Names(io.BytesIO(cloudpickle.dumps(config))).load()
    assert seen == {("spade_rllib.rllib.algorithm", n) for n in ("SpadePPO", "_make_gae_connector", "_policy_mapping_fn")}
    assert callable(algorithm._role_policy_mapping)  # a role game's mapping (functools.partial of it)
