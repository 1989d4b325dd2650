"""The ablation benches' unit cache without Ray or training: fake unit files in an out-dir, then the flagship
bench's `main` in this process. A changed setting stops it with one line (exit 2) and touches nothing; a
changed commit only warns; missing units give an incomplete summary over the seeds present."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.ablations import flagship_ablation
from bench.ablation_common import MANIFEST, UnitCache, unit_manifest

ARGV = ["--seeds", "2", "--arms", "mirror,pfsp", "--minutes", "0.01", "--exploit-minutes", "0.01", "--games", "1",
        "--set", "agent.model.hidden=[16]"]


def fake_record(score: float) -> dict:
    bots = ["still", "random", "rusher", "defender", "raider", "hybrid"]
    return {"heldout": {b: score for b in bots}, "exploitability": 1.0 - score, "exploiter_games": 4,
            "history": {"draws/mirror_draw_rate": [0.5, score], "draws/captures_per_game": [0.0, 1.0]},
            "iterations": 2, "env_steps": 1024, "train_s": 1.0}


def cache_with(out_dir: Path, units: dict[tuple[str, int], float]) -> UnitCache:
    args, _, _, _, env_id = flagship_ablation.parse_args([*ARGV, "--out-dir", str(out_dir)])
    cache = UnitCache(args.out_dir, unit_manifest(args, env_id, args.config.read_text()))
    for (arm, seed), score in units.items():
        cache.save(arm, seed, fake_record(score), {"pi": {"w": np.full(3, score, np.float32)}})
    return cache


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_unit_round_trip(tmp_path):
    cache = cache_with(tmp_path, {("mirror", 0): 0.25})
    assert cache.load("mirror", 0)["heldout"]["still"] == 0.25 and cache.load("mirror", 1) is None
    np.testing.assert_array_equal(cache.weights("mirror", 0)["pi"]["w"], np.full(3, 0.25, np.float32))
    assert not list(tmp_path.rglob("*.tmp*"))  # atomic writes leave no temporary files


def test_manifest_mismatch_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    cache_with(tmp_path, {("mirror", 0): 0.25})
    before = snapshot(tmp_path)
    with pytest.raises(SystemExit) as exc:
        flagship_ablation.main([*ARGV, "--games", "3", "--out-dir", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "games=1" in err[0] and "games=3" in err[0] and "--out-dir" in err[0], err
    with pytest.raises(SystemExit):
        flagship_ablation.main([*ARGV, "--set", "agent.lr=0.01", "--out-dir", str(tmp_path)])
    assert "overrides=" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_incomplete_summary_over_the_seeds_present(tmp_path, capsys):
    cache = cache_with(tmp_path, {("mirror", 0): 0.2, ("mirror", 1): 0.6, ("pfsp", 0): 0.4})
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / MANIFEST).write_text(json.dumps({**manifest, "git_commit": "0" * 40}))  # another commit: a warning
    assert flagship_ablation.main([*ARGV, "--only-seeds", "1", "--max-units", "0", "--out-dir", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert "WARNING" in cap.err and "cached: pfsp seed 0 (finished " in cap.err and cap.err.count("cached: ") == 3
    lines = cap.out.strip().splitlines()
    out = json.loads(lines[-1])
    assert out["complete"] is False and out["units_missing"] == ["pfsp_seed1"]
    assert out["units_done"] == ["mirror_seed0", "pfsp_seed0", "mirror_seed1"]
    assert out["arms"]["mirror"]["navigation"]["n"] == 2 and out["arms"]["mirror"]["navigation"]["mean"] == pytest.approx(0.4)
    assert out["arms"]["pfsp"]["heldout"]["hybrid"]["n"] == 1 and out["arms"]["pfsp"]["exploitability"]["mean"] == 0.6
    assert out["arms"]["pfsp"]["rating"]["n"] == 0 and out["mains"] == {}  # no round robin without every main
    cont = next(line for line in lines if line.startswith("continue with:"))
    assert "--only-seeds" not in cont and "--max-units" not in cont and str(tmp_path) in cont
    assert cache.load("pfsp", 1) is None  # --max-units 0 trained nothing


def test_config_hash_reads_the_resolved_config_not_the_text():
    from bench.ablation_common import config_sha256

    text = (Path(__file__).resolve().parents[1] / "tune_configs" / "kuhn_league.yaml").read_text()
    assert "encoder: mlp" in text
    same = config_sha256(text)
    assert config_sha256("# a comment\n" + text) == same
    assert config_sha256(text.replace("encoder: mlp", "kind: mlp")) == same  # the old spelling of the same key
    assert config_sha256(text.replace("hidden: [64, 64]", "hidden: [64, 32]")) != same


@pytest.mark.parametrize("argv, words", [
    (["--exploit-env-steps", "0"], ["--exploit-env-steps 0", ">= 1"]),
    (["--exploit-env-steps", "-5"], ["--exploit-env-steps -5", ">= 1"]),
    (["--env-steps", "0"], ["--env-steps 0", ">= 1"]),
])
def test_step_budgets_below_one_are_one_error(argv, words, tmp_path, capsys):
    """A budget of 0 or fewer env steps is refused before anything is read or written (it once ran uncapped)."""
    with pytest.raises(SystemExit) as exc:
        flagship_ablation.parse_args([*argv, "--out-dir", str(tmp_path)])
    assert exc.value.code == 2 and not any(tmp_path.iterdir())
    error = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(error) == 1 and all(w in error[0] for w in words), error
