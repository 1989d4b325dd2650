"""The ablation benches end to end at a smoke size (tiny MLP, seconds per run, evaluated on the three
smallest held-out maps: `--max-map-size`), as a user runs them: by subprocess, checking the last JSON
line's keys and that every interval is the Student-t interval of the per-seed values it reports."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_rllib.sweeps.stats import seed_interval

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
SMALL_MAPS = 3
"""Held-out maps of at most 15 rows and columns: MazeRace's open_room, pillars, bottleneck (`--max-map-size 15`);
CTF's open_field, twin_rooms, crossroads (`--max-map-size 13`: rooms_15 is 15x15)."""
TINY = ["--env-id", "MazeRace-v0", "--seeds", "2", "--games", "1", "--max-map-size", "15",
        "--set", "agent.train_batch_size=512", "--set", "agent.minibatch_size=256",
        "--set", "agent.model.hidden=[16]", "--set", "training.num_envs_per_runner=8",
        "--set", "training.num_env_runners=0"]  # sampling in the bench's process: no runner actor to start per unit


def run_bench(name: str, *args: str, out_dir: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "ablations" / name), *TINY, *args, "--out-dir", str(out_dir)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_interval_from_seeds(stat: dict, seeds: int) -> None:
    assert stat["n"] == seeds and len(stat["values"]) == seeds
    iv = seed_interval(stat["values"])
    for key, want in (("mean", iv.mean), ("low", iv.low), ("high", iv.high)):
        assert stat[key] == pytest.approx(want, abs=1e-5), (key, stat)
    assert stat["low"] <= stat["mean"] <= stat["high"]


def test_curriculum_ablation_smoke(tmp_path):
    out = run_bench("curriculum_ablation.py", "--minutes", "0.01", "--setups", "threshold,accel,fixed_hardest",
                    out_dir=tmp_path)
    assert out["bench"] == "curriculum_ablation" and out["env_id"] == "MazeRace-v0" and out["seeds"] == 2
    assert out["ladder"] == ["random", "rusher", "rusher_tagger"]
    assert set(out["setups"]) == {"threshold", "accel", "fixed_hardest"}
    for setup in out["setups"].values():
        assert set(setup) >= {"ladder", "navigation", "iterations", "env_steps"}
        for stat in [*setup["ladder"].values(), setup["navigation"]]:
            assert_interval_from_seeds(stat, 2)
            assert all(0.0 <= v <= 1.0 for v in stat["values"])
        assert all(i >= 1 for i in setup["iterations"])
    assert set(out["claim"]) == {"ladder/rusher_tagger", "navigation"}
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert len(curves["threshold"]) == 2 and curves["fixed_hardest"][0]["curriculum/difficulty"][0] == 10.0


def test_league_ablation_smoke(tmp_path):
    out = run_bench("league_ablation.py", "--minutes", "0.02", "--exploit-minutes", "0.01", "--setups", "mirror,pfsp",
                    out_dir=tmp_path)
    assert out["bench"] == "league_ablation" and out["seeds"] == 2
    assert set(out["setups"]) == {"mirror", "pfsp"}
    for setup in out["setups"].values():
        for stat in [*setup["ladder"].values(), setup["exploitability"], setup["rating"]]:
            assert_interval_from_seeds(stat, 2)
        assert all(g > 0 for g in setup["exploiter_games_last_iter"])  # the exploiter played the frozen main
    assert len(out["mains"]) == 4 and out["round_robin_games"] == 6 * SMALL_MAPS * 2  # 6 pairs x maps x 2 seats
    for m in out["mains"].values():
        assert m["low"] <= m["elo"] <= m["high"]
    ratings = [out["mains"][f"{s}/seed{k}"]["elo"] for s in ("mirror", "pfsp") for k in range(2)]
    assert sum(ratings) / 4 == pytest.approx(1000.0, abs=0.5)  # Bradley-Terry centred on the mean
    assert out["setups"]["pfsp"]["final_plan"][0]  # the league planned its opponents
    assert not any(math.isnan(v) for v in ratings)


FLAGSHIP_TINY = ["--seeds", "2", "--games", "1", "--minutes", "0.01", "--exploit-minutes", "0.01", "--max-map-size", "13",
                 "--set", "agent.train_batch_size=512", "--set", "agent.minibatch_size=256",
                 "--set", "agent.model.hidden=[16]", "--set", "training.num_envs_per_runner=8",
                 "--set", "curriculum.plr.capacity=8", "--set", "curriculum.maestro.capacity=4",
                 "--set", "curriculum.uniform.size=[7, 9]",
                 "--set", "training.num_env_runners=0"]  # sampling in the bench's process: no runner actor to start per run


def test_flagship_ablation_smoke(tmp_path):
    """The flagship bench (CTF, flagship.yaml with a tiny model, a local env runner and one iteration per run): every arm's
    held-out scores, exploitability and Elo with bootstrap intervals over seeds in the last JSON line. A second
    invocation with the same out-dir trains nothing: every unit and the round robin come from the unit cache."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(ROOT / "bench" / "ablations" / "flagship_ablation.py"), *FLAGSHIP_TINY, "--arms", "mirror,maestro",
           "--out-dir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["complete"] is True and len(out["units_done"]) == 4 and "cached:" not in proc.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT, check=True)
    assert json.loads(again.stdout.strip().splitlines()[-1]) == out
    assert again.stderr.count("cached: ") == 5 and "cached: maestro seed 1 (finished " in again.stderr  # 4 units + round robin
    assert "iterations," not in again.stderr  # no training progress line: nothing trained
    assert out["bench"] == "flagship_ablation" and out["env_id"] == "CaptureTheFlag-v0" and out["seeds"] == 2
    assert out["ladder"] == ["random", "rusher", "defender", "raider", "hybrid"]
    assert set(out["arms"]) == {"mirror", "maestro"}
    for arm in out["arms"].values():
        for stat in [*arm["heldout"].values(), arm["navigation"], arm["exploitability"]]:
            assert stat["n"] == 2 and len(stat["values"]) == 2
            assert 0.0 <= stat["low"] <= stat["mean"] <= stat["high"] <= 1.0
            assert min(stat["values"]) - 1e-9 <= stat["low"] and stat["high"] <= max(stat["values"]) + 1e-9
        assert arm["rating"]["n"] == 2 and all(g > 0 for g in arm["exploiter_games_last_iter"])
        assert all(i >= 1 for i in arm["iterations"])
    assert len(out["mains"]) == 4 and out["round_robin_games"] == 6 * SMALL_MAPS * 2  # 6 pairs x maps x 2 seats
    ratings = [out["mains"][f"{a}/seed{k}"]["elo"] for a in ("mirror", "maestro") for k in range(2)]
    assert sum(ratings) / 4 == pytest.approx(1000.0, abs=0.5)
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert len(runs["maestro"]) == 2 and "draws/mirror_draw_rate" in runs["maestro"][0]["history"]
