"""Curriculum under RLlib (SpadePPO): the run config's `curriculum:` section, driver -> env runner sync
with 2 remote env runners (one state, no drift, restarted runners catch up), and checkpoint/restore
of the exact curriculum state (threshold: difficulty, window, RNG; plr: buffer too). Tiny budgets;
one Ray per session (`ray_session`)."""
from __future__ import annotations

import copy

import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.testing.state_equality import assert_exactly_equal

pytestmark = pytest.mark.ray

# Threshold settings that raise difficulty after every iteration on tiny batches: random agents on
# difficulty-1 levels finish most episodes, which is far above up_threshold.
FAST_THRESHOLD = {"signal": "completion", "window": 20, "min_episodes": 3, "up_threshold": 0.05, "down_threshold": 0.0, "up_factor": 1.5}


def tiny(curriculum: dict, runners: int = 0, **sections) -> dict:
    raw = {
        "experiment": {"name": "t", "seed": 3},
        "env": {"id": "MazeRace-v0"},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 4, "num_env_runners": runners},
        "resources": {"num_cpus_per_env_runner": 0.5},
        "curriculum": {"enabled": True, **curriculum},
        "evaluation": {"interval": 0},
    }
    for k, v in sections.items():
        raw.setdefault(k, {}).update(v)
    return raw


def curriculum_of(algo):
    return next(c for c in algo.components if c.name == "curriculum")


def runner_views(algo) -> list:
    """(worker_index, sampling state, version, level id of a fixed key) on every env runner, local included."""
    def view(r):
        src = r.level_source
        return (r.worker_index, src.sampling_state, src.version, src.spec_for((0, 0, 0)).level_id)

    group = algo.env_runner_group
    return group.foreach_env_runner(view, local_env_runner=True)


# ---------------------------------------------------------------------------------------------- config


def test_config_section_carries_every_core_key():
    from spade_rllib.curriculum.curriculum_config import CurriculumConfig as Core

    raw = {"env": {"id": "MazeRace-v0"},
           "curriculum": {"enabled": True, "strategy": "fixed", "families": ["maze"], "metrics_window": 50,
                          "threshold": {"up_factor": 1.5}, "plr": {"capacity": 8}, "uniform": {"size": [7, 9]},
                          "fixed": {"difficulty": 7.5}}}
    cfg = parse_config(raw)
    core = cfg.curriculum.to_core()
    assert isinstance(core, Core) and core.strategy == "fixed" and core.families == ("maze",)
    assert (core.metrics_window, core.threshold.up_factor, core.plr.capacity) == (50, 1.5, 8)
    assert (core.uniform.size, core.fixed.difficulty) == ((7, 9), 7.5)
    # every sub-section holds every setting after parsing, and the dump parses back to the same
    assert cfg.to_dict()["curriculum"]["threshold"] == {**Core().to_dict()["threshold"], "up_factor": 1.5}
    assert parse_config(cfg.to_dict()).to_dict() == cfg.to_dict()
    from spade_rllib.rllib.components import EnvInfo
    from spade_rllib.rllib.curriculum_component import make_component

    info = EnvInfo("MazeRace-v0", "level", (("player_0",), ("player_1",)), 6, 10, 0)
    assert make_component(cfg, info).config == core  # the component gets the same core config


@pytest.mark.parametrize(
    "section, expect",
    [
        ({"threshold": {"up_factr": 1.5}}, "curriculum.threshold.up_factr: unknown key (did you mean 'up_factor'?)"),
        ({"plr": {"capasity": 4}}, "curriculum.plr.capasity: unknown key (did you mean 'capacity'?)"),
        ({"threshold": {"up_factor": 0.5}}, "curriculum.threshold.up_factor = 0.5: out of range, allowed a number in (1.0, 100.0]"),
        ({"plr": {"score": "regret"}}, "curriculum.plr.score = 'regret': not allowed"),
        ({"uniform": {"size": [4, 9]}}, "curriculum.uniform.size[0] = 4: out of range"),
        ({"fixed": {"difficulty": 11}}, "curriculum.fixed.difficulty = 11: out of range, allowed a number in [1.0, 10.0]"),
        ({"families": ["mazes"]}, "curriculum.families[0] = 'mazes': not allowed (did you mean 'maze'?)"),
        ({"metrics_window": 0}, "curriculum.metrics_window = 0: out of range"),
        ({"strategy": "plrr"}, "curriculum.strategy = 'plrr': not allowed (did you mean 'plr'?)"),
        ({"windw": 5}, "curriculum.windw: unknown key"),
        ({"threshold": 5}, "curriculum.threshold = 5: wrong type, expected a mapping"),
        ({"enabled": True}, "curriculum.strategy = 'none': choose a strategy"),
    ],
)
def test_config_errors_name_the_key(section, expect):
    with pytest.raises(ConfigError) as info:
        parse_config({"env": {"id": "MazeRace-v0"}, "curriculum": section})
    msg = str(info.value)
    assert expect in msg and "\n" not in msg, msg


@pytest.mark.parametrize("name, strategy", [("curriculum.yaml", "threshold"), ("plr.yaml", "plr")])
def test_shipped_configs(name, strategy):
    from pathlib import Path

    from spade_rllib.config.run_config import load_config

    cfg = load_config(str(Path(__file__).resolve().parents[1] / "tune_configs" / name))
    assert cfg.curriculum.enabled and cfg.curriculum.strategy == strategy and cfg.self_play.mode == "mirror"
    assert cfg.curriculum.to_core().strategy == strategy
    assert cfg.evaluation.heldout_levels and cfg.evaluation.interval > 0
    assert parse_config(cfg.to_dict()).to_dict() == cfg.to_dict()


def test_curriculum_needs_mazerace():
    with pytest.raises(ConfigError, match="curriculum.enabled = true: only allowed with env.id 'MazeRace-v0'"):
        parse_config({"env": {"id": "CartPole-v1"}, "curriculum": {"enabled": True, "strategy": "threshold"}})


# ---------------------------------------------------------------------------------------------- sync


@pytest.fixture(scope="module")
def threshold_algo(ray_session):
    """SpadePPO with threshold + self-play and 2 remote env runners, trained 2 iterations."""
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny({"strategy": "threshold", "threshold": FAST_THRESHOLD}, runners=2))
    config = build_algo_config(cfg).fault_tolerance(delay_between_env_runner_restarts_s=0.0).env_runners(sample_timeout_s=120.0)
    algo = config.build_algo()
    results = [algo.train() for _ in range(2)]
    yield algo, results
    algo.stop()


def test_two_runners_share_the_driver_state(threshold_algo):
    algo, results = threshold_algo
    comp = curriculum_of(algo)
    state = comp.strategy.sampling_state()
    assert state["kind"] == "difficulty" and state["difficulty"] > 1.0  # an update happened
    views = runner_views(algo)
    assert sorted(v[0] for v in views) == [0, 1, 2]
    for idx, sampling_state, version, level_id in views:
        assert sampling_state == state, f"runner {idx} drifted"
        assert version == comp.version
        assert level_id == views[0][3]  # the same key draws the same level on every runner
    # the difficulty the runners play is the one the driver reports
    assert results[-1]["curriculum"]["difficulty"] == state["difficulty"]


def test_outcomes_of_both_runners_reach_the_driver(threshold_algo):
    algo, _ = threshold_algo
    comp = curriculum_of(algo)
    before = comp.strategy.metrics()["curriculum/episodes"]
    result = algo.train()
    m = result["curriculum"]
    assert m["episodes"] > before and m["difficulty"] == comp.strategy.sampling_state()["difficulty"]
    for key in ("size_mean", "wall_density_mean", "flag_distance_mean", "completion_rate", "version"):
        assert key in m
    # every env runner sampled this iteration; none keeps outcomes the driver did not drain
    left = algo.env_runner_group.foreach_env_runner(lambda r: len(r._outcomes), local_env_runner=False)
    assert left == [0, 0]


def test_restarted_runner_gets_the_current_state(threshold_algo):
    """A killed env runner that Ray restarts comes back blank; RLlib's restore (SpadePPO's override)
    gives it the driver's full state again.

    Deterministic on purpose. `ray.kill()` only sends the kill request and returns (well under 1 ms),
    so a call issued right after it is often still served by the OLD process (measured here: 8 of
    10 kills). RLlib marks an actor unhealthy only when a call raises a RayError
    (`FaultTolerantActorManager._fetch_result`), and `probe_unhealthy_actors` pings only actors
    already marked unhealthy; calls that reach the restarted process succeed. So a runner whose
    death no call happened to observe stays "healthy" and `restore_env_runners()` returns [] forever
    (the old 180 s timeout). Here the test waits until Ray has really replaced the process, then
    marks the runner unhealthy itself, as RLlib does on a failed call, and lets RLlib restore it."""
    import os
    import time

    import ray

    algo, _ = threshold_algo
    group = algo.env_runner_group
    manager = group._worker_manager
    runner_id = 1
    actor = manager._actors[runner_id]
    old_pid = ray.get(actor.apply.remote(lambda r: os.getpid()))
    ray.kill(actor, no_restart=False)  # RLlib gives its env runners max_restarts > 0: Ray restarts it

    # Wait until the actor answers from a new process. Calls can still reach the old process,
    # fail while it dies ("actor was restarted"), or wait while the new one starts (imports torch
    # and RLlib, builds the envs: about 4 s here, much longer on a loaded machine).
    deadline = time.monotonic() + 300
    while True:
        try:
            pid, blank = ray.get(actor.apply.remote(lambda r: (os.getpid(), r.level_source is None)), timeout=30)
            if pid != old_pid:
                break
        except ray.exceptions.RayError:
            pass
        if time.monotonic() > deadline:
            pytest.fail("Ray did not restart the killed env runner within 300 s")
        time.sleep(0.2)
    assert blank, "the restarted runner should come back without the driver's state"

    # What RLlib does when a call to the actor raises a RayError (actor_manager.py `_fetch_result`).
    manager.set_actor_state(runner_id, healthy=False)
    assert runner_id not in group.healthy_env_runner_ids()
    # The new process is up and idle: the first probe (ping) normally answers; retry in case one
    # ping outlasts env_runner_health_probe_timeout_s on a loaded machine.
    restored: list = []
    while not restored:
        restored = algo.restore_env_runners(group)
        if not restored and time.monotonic() > deadline:
            pytest.fail("restore_env_runners() did not bring the restarted env runner back")
    assert restored == [runner_id] and sorted(group.healthy_env_runner_ids()) == [1, 2]
    comp = curriculum_of(algo)
    views = runner_views(algo)
    assert sorted(v[0] for v in views) == [0, 1, 2]
    for idx, sampling_state, version, _ in views:
        assert sampling_state == comp.strategy.sampling_state() and version == comp.version, idx
    # A sample-ahead request sent to the dead process never answers: it must not be waited for.
    assert runner_id not in algo._in_flight
    started = time.monotonic()
    algo.train()
    assert time.monotonic() - started < algo.config.sample_timeout_s / 2


# ---------------------------------------------------------------------------------------------- checkpoints



def test_checkpoint_restore_threshold_two_runners(threshold_algo, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    algo, _ = threshold_algo
    comp = curriculum_of(algo)
    saved = copy.deepcopy(comp.state_dict())
    assert saved["strategy"]["window"] or saved["strategy"]["difficulty"] > 1.0
    ckpt = algo.save_to_path(str(tmp_path / "ckpt"))
    restored = Algorithm.from_checkpoint(ckpt)
    try:
        rcomp = curriculum_of(restored)
        assert_exactly_equal(rcomp.state_dict(), saved)
        assert_exactly_equal(rcomp.strategy.sampling_state(), comp.strategy.sampling_state())
        # the restored runners hold the restored state: they draw the levels the old run would draw
        views = runner_views(restored)
        assert len(views) == 3
        for idx, sampling_state, version, level_id in views:
            assert sampling_state == comp.strategy.sampling_state() and version == comp.version, idx
            assert level_id == comp.level_source().spec_for((0, 0, 0)).level_id
        # the same outcomes move both strategies identically (window and RNG restored too)
        outcomes = [{"winner": "A", "reason": "flag", "length": 5, "level": {"difficulty": comp.strategy.sampling_state()["difficulty"]},
                     "main_team": 0, "level_spec": comp.level_source().spec_for((0, 0, i)).to_dict()} for i in range(30)]
        assert comp.update(copy.deepcopy(outcomes)) == rcomp.update(copy.deepcopy(outcomes))
        assert_exactly_equal(rcomp.state_dict(), comp.state_dict())
    finally:
        restored.stop()


def test_checkpoint_restore_plr_buffer_and_rng(ray_session, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny({"strategy": "plr", "plr": {"capacity": 8, "min_fill": 0.25}}))
    algo = build_algo_config(cfg).build_algo()
    try:
        result = {}
        for _ in range(2):
            result = algo.train()
        comp = curriculum_of(algo)
        assert result["curriculum"]["buffer_size"] > 0
        for key in ("score_mean", "score_max", "replay_share"):
            assert key in result["curriculum"]
        saved = copy.deepcopy(comp.state_dict())
        assert saved["strategy"]["entries"], "PLR buffer is empty"
        ckpt = algo.save_to_path(str(tmp_path / "ckpt"))
        expect_next = [comp.strategy.sample().level_id for _ in range(5)]  # advances the driver RNG
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(ckpt)
    try:
        rcomp = curriculum_of(restored)
        assert_exactly_equal(rcomp.state_dict(), saved)
        assert [rcomp.strategy.sample().level_id for _ in range(5)] == expect_next
        (view,) = runner_views(restored)
        assert view[1] == rcomp.strategy.sampling_state()
    finally:
        restored.stop()
