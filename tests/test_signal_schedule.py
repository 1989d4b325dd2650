"""`env.signal_schedule`: training-only signals over lifetime env steps (pure schedule, driver component, the
CTF env's setter, the config checks, and one env runner that takes the values on its training envs only)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.envs import CaptureTheFlag, Level
from spade_rllib.games import CTF_ID
from spade_rllib.rllib.plan import DriverUpdate
from spade_rllib.rllib.signal_schedule_component import SignalScheduleComponent
from spade_rllib.training.signal_schedule import initial_values, value_at

ANNEAL = [[0, 0.005], [1000, 0.001], [2000, 0.0]]
MAP = """\
#########
#a.A....#
#.......#
#....B.b#
#########"""


def test_value_is_linear_between_points_and_flat_outside():
    assert value_at(ANNEAL, 0) == 0.005 and value_at(ANNEAL, -5) == 0.005
    assert math.isclose(value_at(ANNEAL, 500), 0.003) and math.isclose(value_at(ANNEAL, 1500), 0.0005)
    assert value_at(ANNEAL, 1000) == 0.001 and value_at(ANNEAL, 2000) == 0.0 and value_at(ANNEAL, 10**9) == 0.0
    assert value_at([[0, 0.1]], 10**6) == 0.1
    assert initial_values({"tag_reward": [[0, 0.2], [10, 0.0]]}) == {"tag_reward": 0.2}
    with pytest.raises(ValueError):
        value_at([], 0)


def test_component_sends_values_when_they_change_and_everything_when_full():
    comp = SignalScheduleComponent({"new_cell_reward": ANNEAL, "tag_reward": [[0, 0.1]]})
    assert comp.initial_metrics() == {"signals/new_cell_reward": 0.005, "signals/tag_reward": 0.1}
    assert comp.runner_update(full=False) is None  # the envs were built with the first values
    assert comp.runner_update(full=True).env_signals == {"new_cell_reward": 0.005, "tag_reward": 0.1}
    metrics = comp.update([], SimpleNamespace(env_steps_lifetime=500))
    assert math.isclose(metrics["signals/new_cell_reward"], 0.003)
    sent = comp.runner_update(full=False)
    assert isinstance(sent, DriverUpdate) and math.isclose(sent.env_signals["new_cell_reward"], 0.003)
    assert comp.runner_update(full=False) is None
    comp.update([], SimpleNamespace(env_steps_lifetime=5000))
    assert comp.runner_update(full=False).env_signals == {"new_cell_reward": 0.0, "tag_reward": 0.1}
    restored = SignalScheduleComponent({"new_cell_reward": ANNEAL, "tag_reward": [[0, 0.1]]})
    restored.load_state_dict(comp.state_dict())
    assert restored.runner_update(full=False).env_signals == {"new_cell_reward": 0.0, "tag_reward": 0.1}


def test_driver_updates_merge_their_signals():
    a = DriverUpdate(env_signals={"tag_reward": 0.1})
    b = DriverUpdate(env_signals={"new_cell_reward": 0.0, "tag_reward": 0.2})
    assert a.merged(b).env_signals == {"tag_reward": 0.2, "new_cell_reward": 0.0}
    assert DriverUpdate().merged(DriverUpdate()).env_signals is None


def test_ctf_setter_checks_every_value_first_and_counts_new_cells_from_the_next_episode():
    env = CaptureTheFlag(level=Level.from_ascii(MAP))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="new_cell_reward must be a number in"):
        env.set_training_signals(tag_reward=0.5, new_cell_reward=float("nan"))
    assert env.tag_reward == 0.0  # nothing set when one value is bad
    with pytest.raises(TypeError, match="unknown training signal 'draw_reward'"):
        env.set_training_signals(draw_reward=-0.1)
    env.set_training_signals(new_cell_reward=0.5)
    _, rew, _, _, _ = env.step({"player_0": 4, "player_1": 3})
    assert rew == {"player_0": 0.0, "player_1": 0.0}  # switched on mid-episode: from the next one
    env.reset(seed=0)
    _, rew, _, _, _ = env.step({"player_0": 4, "player_1": 3})
    assert rew == {"player_0": 0.5, "player_1": 0.5}
    env.set_training_signals(new_cell_reward=0.0)
    _, rew, _, _, _ = env.step({"player_0": 4, "player_1": 3})
    assert rew == {"player_0": 0.0, "player_1": 0.0}


def _raw(**env) -> dict:
    return {"experiment": {"name": "sig_t", "seed": 1},
            "env": {"id": CTF_ID, "difficulty": 1.0, **env},
            "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
            "training": {"num_envs_per_runner": 2, "num_env_runners": 0, "stop": {"env_steps": 1000}},
            "evaluation": {"interval": 0}}


@pytest.mark.parametrize("schedule, kwargs, words", [
    ({"new_cell_rewrd": [[0, 0.1]]}, {}, ["env.signal_schedule.new_cell_rewrd", "did you mean 'new_cell_reward'"]),
    ({"new_cell_reward": [[0, 0.1], [10, 2.0]]}, {}, ["new_cell_reward[1] = [10, 2.0]", "in [0, 1]"]),
    ({"new_cell_reward": [[5, 0.1]]}, {}, ["must start at 0"]),
    ({"new_cell_reward": [[0, float("nan")]]}, {}, ["new_cell_reward[0]", "finite"]),
    ({"tag_reward": [[0, 0.1]]}, {"tag_reward": 0.1}, ["env.kwargs.tag_reward is set too"]),
])
def test_bad_schedules_are_one_line_config_errors(schedule, kwargs, words):
    with pytest.raises(ConfigError) as e:
        parse_config(_raw(signal_schedule=schedule, kwargs=kwargs))
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_games_without_signals_refuse_a_schedule():
    raw = _raw(signal_schedule={"tag_reward": [[0, 0.1]]})
    raw["env"] = {"id": "MazeRace-v0", "signal_schedule": {"tag_reward": [[0, 0.1]]}}
    with pytest.raises(ConfigError, match="MazeRace-v0 does not take tag_reward"):
        parse_config(raw)


def test_runner_sets_the_values_on_its_training_envs_only():
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    cfg = parse_config(_raw(signal_schedule={"new_cell_reward": ANNEAL}))
    runner = SpadeEnvRunner(config=build_algo_config(cfg), worker_index=0, num_workers=0)
    try:
        assert [g.raw_env.new_cell_reward for g in runner.games] == [0.005, 0.005]  # built with the first value
        assert runner._make_eval_game().raw_env.new_cell_reward == 0.0
        runner.apply_driver_update(DriverUpdate(env_signals={"new_cell_reward": 0.002}))
        assert [g.raw_env.new_cell_reward for g in runner.games] == [0.002, 0.002]
        assert runner._make_eval_game().raw_env.new_cell_reward == 0.0
    finally:
        runner.stop()


@pytest.mark.ray
def test_a_run_anneals_the_signal_on_its_runners(ray_session):
    """Through SpadePPO with one remote runner: each iteration's `signals/...` is the schedule at the lifetime env
    steps, and the runner's training envs hold it after the broadcast."""
    from spade_rllib.rllib.algo_config import build_algo_config

    raw = _raw(signal_schedule={"new_cell_reward": [[0, 0.01], [512, 0.0]]})
    raw["training"]["num_env_runners"] = 1
    algo = build_algo_config(parse_config(raw)).build_algo()
    try:
        first, second = algo.train(), algo.train()
        held = algo.env_runner_group.foreach_env_runner(
            lambda r: sorted({g.raw_env.new_cell_reward for g in r.games}), local_env_runner=False)
    finally:
        algo.stop()
    assert math.isclose(first["signals"]["new_cell_reward"], 0.005)  # 256 of 512 env steps
    assert second["signals"]["new_cell_reward"] == 0.0 and held == [[0.0]]
