"""Smoke tests of the throughput benches' pieces that need no Ray (the full benches take minutes)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.profile_iteration import SelfTimers  # noqa: E402
from bench.train_speed import FAST_LAYOUT, LEAGUE_ON, ceiling, curriculum_on, env_only  # noqa: E402

QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")


def test_league_curriculum_overrides_validate_and_keep_the_level_size():
    from spade_rllib.config import load_config

    cfg = load_config(QUICKSTART, [*LEAGUE_ON, *curriculum_on(4.0)])
    assert cfg.league.enabled and cfg.curriculum.enabled and cfg.curriculum.strategy == "threshold"
    th = cfg.curriculum.threshold
    assert th.min == 4.0 and th.initial == 4.0
    assert 5 + 2 * (int(th.max) // 2) == 9  # the band of difficulty 4: 9x9 levels only
    fast = load_config(QUICKSTART, [*LEAGUE_ON, *curriculum_on(6.0), *FAST_LAYOUT])
    assert (fast.training.num_env_runners, fast.training.num_envs_per_runner) == (2, 128)
    assert fast.curriculum.threshold.min == 6.0 and fast.league.enabled


def test_ceiling_overlapped_vs_serial():
    from spade_rllib.config import load_config

    ahead = load_config(QUICKSTART, ["training.num_env_runners=1", "training.sample_ahead=true"])
    sync = load_config(QUICKSTART, ["training.num_env_runners=1", "training.sample_ahead=false"])
    assert ceiling(30_000.0, 40_000.0, ahead) == 30_000.0  # runner and learner on separate cores
    assert ceiling(30_000.0, 60_000.0, sync) == pytest.approx(20_000.0)  # one after the other


def test_self_timers_are_exclusive_and_keep_staticmethods():
    class Work:
        def outer(self):
            time.sleep(0.02)
            self.inner()

        def inner(self):
            time.sleep(0.03)

        @staticmethod
        def helper(x):
            return x + 1

    t = SelfTimers()
    t.wrap(Work, "outer", "outer")
    t.wrap(Work, "inner", "inner")
    t.wrap(Work, "helper", "helper")
    Work().outer()
    assert Work.helper(1) == 2 and Work().helper(2) == 3
    rep = t.report()
    assert 0.015 < rep["outer"][0] < 0.045  # its own 0.02 s sleep (late wake-ups on a loaded machine), not + inner's 0.03
    assert rep["inner"][0] >= 0.025 and rep["helper"][1] == 2


def test_env_only_ceiling_runs_the_runner_adapter():
    from spade_rllib.config import load_config

    cfg = load_config(QUICKSTART, ["training.num_envs_per_runner=4", "env.level_pool=8"])
    sps, obs = env_only(cfg, 0.2)
    assert sps > 0
    assert obs.shape[0] == 8 and obs.dtype.name == "float32"  # 4 envs x 2 agents
