"""Kuhn poker through the product as a user runs it: train (league on, exact exploitability recorded), the
summary's exploitability line, `evaluate --exploitability`, and the league loaded as one player."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")

ROOT = Path(__file__).resolve().parents[1]


def test_kuhn_league_trains_and_scores_its_mixture_exactly(tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/kuhn_league.yaml",
           "--set", f"experiment.storage_path={tmp_path}", "--set", "agent.train_batch_size=512",
           "--set", "agent.minibatch_size=256", "--set", "agent.epochs=1", "--set", "training.num_envs_per_runner=8",
           "--set", "training.num_env_runners=0", "--set", "resources.num_cpus=2",
           "--set", "league.every_n_iterations=1", "--set", "evaluation.exploitability_interval=1",
           "--set", "training.stop.iterations=2", "--final-eval-games", "10"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("exact exploitability (NashConv/2): main "))
    assert "league:uniform" in line and "league:nash" in line and "league:plan" in line, line
    assert "league:average" in line, line  # the uniform mixture distilled into one network (league_average)
    trial = next((tmp_path / "kuhn_league").glob("kuhn_league_*"))
    rows = list(csv.DictReader((trial / "progress.csv").open()))
    values = [float(r["exploitability/main"]) for r in rows]
    assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values), values  # Kuhn: random 0.458
    assert all(0.0 <= float(r["exploitability/mixture"]) <= 1.0 for r in rows)
    ev = subprocess.run([sys.executable, "-m", "spade_rllib.evaluate", "--checkpoint", str(trial), "--exploitability"],
                        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env, check=False)
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert "main_v1" in ev.stdout and "league:nash" in ev.stdout, ev.stdout
    from spade_rllib.players.league_player import MixturePolicy
    from spade_rllib.players.policy import load_policy

    mix = load_policy(trial, "league:uniform")
    assert isinstance(mix, MixturePolicy) and mix.table is not None and len(mix.members) >= 3
    bad = subprocess.run([sys.executable, "-m", "spade_rllib.evaluate", "--checkpoint", str(trial), "--exploitability",
                          "--env", "connect_four_v3"], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
                         check=False)
    assert bad.returncode == 2 and "was trained on kuhn_poker" in bad.stderr, bad.stderr[-1000:]
    check_league_export(trial, mix, tmp_path / "league_export", env)


def check_league_export(trial: Path, mix, out: Path, env: dict) -> None:
    """`export --module league:uniform`: one ONNX per member, the weights, and the exact average policy whose
    exploitability is the mixture's."""
    import json

    import numpy as np

    from spade_rllib.games.exploitability import exploitability_of_table, info_states
    from spade_rllib.players.league_export import read_average_policy

    cmd = [sys.executable, "-m", "spade_rllib.export", "--checkpoint", str(trial), "--module", "league:uniform",
           "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((out / "mixture.json").read_text())
    assert manifest["module"] == "league:uniform" and manifest["env_id"] == "kuhn_poker"
    members = manifest["members"]
    assert [m["member"] for m in members] == [m.member for m in mix.members]
    assert abs(sum(m["weight"] for m in members) - 1.0) < 1e-9
    for m in members:
        assert (out / m["onnx"]).is_file() and m["max_abs_diff_vs_torch"] < 1e-4, m
    game, table = read_average_policy(out / manifest["average_policy"])
    states = info_states(game)
    probs = np.asarray([table[k] for k in states.keys])
    assert np.allclose(probs, mix.table, atol=1e-8)
    assert abs(exploitability_of_table(game, probs).exploitability
               - exploitability_of_table(game, mix.table).exploitability) < 1e-6
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env, check=False)
    assert again.returncode == 0, again.stderr[-1000:]  # its own earlier export is replaced
    (out.parent / "other").mkdir()
    (out.parent / "other" / "notes.txt").write_text("mine")
    refused = subprocess.run([*cmd[:-1], str(out.parent / "other")], capture_output=True, text=True, timeout=120,
                             cwd=ROOT, env=env, check=False)
    assert refused.returncode == 2 and "not empty" in refused.stderr, refused.stderr[-1000:]


def test_exploitability_interval_refused_on_other_games(tmp_path):
    from spade_rllib.config.run_config import ConfigError, parse_config, read_yaml
    from spade_rllib.config.preflight import check_exploitability

    raw = read_yaml((ROOT / "tune_configs" / "connect_four.yaml").read_text())
    raw.setdefault("evaluation", {})["exploitability_interval"] = 5
    with pytest.raises(ConfigError, match="evaluation.exploitability_interval = 5: exact exploitability needs an OpenSpiel"):
        check_exploitability(parse_config(raw))
