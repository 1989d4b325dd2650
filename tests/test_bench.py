"""Smoke tests of the throughput benches' pieces that need no Ray (the full benches take minutes)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.speed.profile_iteration import SelfTimers  # noqa: E402
from bench.speed.measure import FAST_LAYOUT, LEAGUE_ON, curriculum_on  # noqa: E402
from bench.speed.train_speed import ceiling, env_only  # noqa: E402

QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")


def test_league_curriculum_overrides_validate_and_keep_the_level_size():
    from spade_rllib.config.run_config import load_config

    cfg = load_config(QUICKSTART, [*LEAGUE_ON, *curriculum_on(4.0)])
    assert cfg.league.enabled and cfg.curriculum.enabled and cfg.curriculum.strategy == "threshold"
    th = cfg.curriculum.threshold
    assert th.min == 4.0 and th.initial == 4.0
    assert 5 + 2 * (int(th.max) // 2) == 9  # the band of difficulty 4: 9x9 levels only
    fast = load_config(QUICKSTART, [*LEAGUE_ON, *curriculum_on(6.0), *FAST_LAYOUT])
    assert (fast.training.num_env_runners, fast.training.num_envs_per_runner) == (2, 128)
    assert fast.curriculum.threshold.min == 6.0 and fast.league.enabled


def test_ceiling_overlapped_vs_serial():
    from spade_rllib.config.run_config import load_config

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
    from spade_rllib.config.run_config import load_config

    cfg = load_config(QUICKSTART, ["training.num_envs_per_runner=4", "env.level_pool=8"])
    sps, obs = env_only(cfg, 0.2)
    assert sps > 0
    assert obs.shape[0] == 8 and obs.dtype.name == "float32"  # 4 envs x 2 agents


def test_driver_scale_bench_smoke(capsys):
    """bench/speed/driver_scale.py at tiny sizes, without Ray: one JSON line, a case per (runners, snapshots),
    slot weights shipped only once the league outgrows its 4 slots, a full broadcast carrying every slot."""
    import json

    from bench.speed import driver_scale

    assert driver_scale.main(["--runners", "1,3", "--snapshots", "1,6", "--outcomes", "24", "--iterations", "2",
                              "--no-ray"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    out = json.loads(last)
    assert out["bench"] == "driver_scale" and out["ray"] is False and len(out["load_average"]) == 3
    cases = {(c["runners"], c["snapshots"]): c for c in out["cases"]}
    assert sorted(cases) == [(1, 1), (1, 6), (3, 1), (3, 6)]
    weights = cases[(1, 1)]["snapshot_weights_bytes"]
    assert weights > 100_000  # the flagship MLP's numpy weights
    for (runners, snapshots), c in cases.items():
        parts = ("drain_s", "plr_s", "league_s", "self_play_s", "draw_watch_s", "runner_update_s")
        assert all(c[k] > 0 for k in ("drain_s", "plr_s", "league_s", "ratings_s", "plan_s", "broadcast_ser_s"))
        assert c["driver_s"] == pytest.approx(sum(c[k] for k in parts) + c["broadcast_ser_s"], rel=1e-3)
        if snapshots == 1:  # one snapshot keeps its slot: only the plan and the level source travel
            assert c["slot_loads_per_iter"] == 0 and c["broadcast_bytes"] < weights / 2
            assert c["full_broadcast_bytes"] < 1.5 * weights
        else:  # six members over four slots: resampled each plan, weights shipped
            assert c["slot_loads_per_iter"] > 0
            assert c["broadcast_bytes"] > 0.9 * weights * c["slot_loads_per_iter"]  # a snapshot's weights per load
            assert c["full_broadcast_bytes"] > 3.5 * weights
