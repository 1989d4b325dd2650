"""The bring-your-own-env matrix: envs of other packages train, checkpoint, evaluate, play and export.

Shared helpers (`train_cli`, `evaluate_dir`, `write_run_config`) for the other matrix files. Fast rows use
tiny untrained checkpoints (plumbing: the env id read from the run's `config.yaml`, round robin, ratings,
replays, play, refusals); the `slow` rows train through `python -m spade_rllib.train` as a user runs it,
each with a budget in env steps so load does not change the result:

- `pettingzoo.classic:tictactoe_v3` with `tune_configs/pettingzoo_board.yaml`: beats random, evaluates from
  the trial dir without `--env`, writes a GIF replay (it renders `rgb_array`), exports ONNX;
- `pettingzoo.classic:rps_v2`: trains and evaluates (its optimum against itself is a draw).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

ROOT = Path(__file__).resolve().parents[1]
BOARD = ROOT / "tune_configs" / "pettingzoo_board.yaml"


# ------------------------------------------------------------------------------------------ helpers
def write_run_config(trial: Path, env_id: str, kwargs: dict | None = None) -> None:
    """The run's `config.yaml` as `train` writes it (evaluate/play read `env.id` and how the env was built:
    `env.kwargs`, teams, mode, api); Tune's `params.json` removed, so the id can only come from `config.yaml`."""
    (trial / "config.yaml").write_text(f"env:\n  id: {env_id}\n  kwargs: {json.dumps(kwargs or {})}\n")
    (trial / "params.json").unlink(missing_ok=True)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def score(games: list[dict], player: str, opponent: str) -> float:
    """`player`'s score (win 1, draw 0.5) over its games against `opponent` in games.csv rows."""
    total, n = 0.0, 0
    for g in games:
        if {g["seat0"], g["seat1"]} != {player, opponent}:
            continue
        seat = 0 if g["seat0"] == player else 1
        w = int(g["winner_seat"])
        total += 0.5 if w == -1 else float(w == seat)
        n += 1
    assert n, f"no games of {player} vs {opponent}"
    return total / n


def train_cli(tmp_path: Path, config: Path, name: str, sets: list[str], timeout: int = 600,
              extra_path: str = "", final_games: int = 0) -> tuple[Path, str]:
    """Run `python -m spade_rllib.train` (`final_games` games of the summary's final evaluation; the
    matrix evaluates with `evaluate_dir` instead); returns (trial dir, stdout)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), extra_path, os.environ.get("PYTHONPATH", "")) if p)}
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", str(config),
           "--set", f"experiment.storage_path={tmp_path}", "--set", f"experiment.name={name}",
           "--set", "resources.num_cpus=2", "--final-eval-games", str(final_games), "--final-replays", "0", *sum((["--set", s] for s in sets), [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    trial = next((tmp_path / name).glob(f"{name}_*"))
    return trial, proc.stdout


def evaluate_dir(trial: Path, out: Path, *extra: str) -> int:
    """`python -m spade_rllib.evaluate --checkpoint TRIAL` in this process, without --env and without Ray."""
    from spade_rllib.evaluate import main

    return main(["--checkpoint", str(trial), "--out", str(out), "--workers", "0", "--no-progress", *extra])


# ------------------------------------------------------------------------------------------ fast rows
def test_a_users_env_evaluates_and_plays_from_its_config_yaml(user_envs, tmp_path, capsys):
    trial = tmp_path / "run"
    save_tiny_checkpoint(trial, "myenv:Matching", hidden=(8,))
    write_run_config(trial, "myenv:Matching", {"rounds": 5})  # games as the run played them: 5 rounds
    out = tmp_path / "eval"
    assert evaluate_dir(trial, out, "--games-per-pair", "4", "--replays", "1") == 0, capsys.readouterr().err
    games = read_csv(out / "games.csv")
    assert len(games) == 4 and {g["seat0"] for g in games} == {"main", "random"}
    assert all(g["length"] == "5" and g["reason"] in ("higher return", "equal return") for g in games)
    assert {r["player"] for r in read_csv(out / "ratings.csv")} == {"main", "random"}
    replays = list((out / "replays").iterdir())
    assert [p.suffix for p in replays] == [".txt"], replays  # it renders ansi only: a transcript, no GIF
    text = replays[0].read_text()
    assert "round 1/5" in text and "step 5:" in text and "result:" in text
    # play in the terminal (the env renders ansi): the human types action numbers
    from spade_rllib.play import main as play_main

    keys = iter(["9", "x", "1", "1", "1", "1", "1"])
    lines: list[str] = []
    assert play_main(["--checkpoint", str(trial)], read=lambda prompt: next(keys), write=lines.append) == 0
    assert sum("invalid action" in ln for ln in lines) == 2 and "round 5/5" in "\n".join(lines)
    assert lines[-1] in ("You win!", "The policy wins.", "Draw."), lines


def test_play_refuses_an_env_without_a_text_render_and_evaluate_a_many_team_env(tmp_path, capsys):
    from spade_rllib.evaluate import main as evaluate_main
    from spade_rllib.play import main as play_main

    ttt = tmp_path / "ttt"
    save_tiny_checkpoint(ttt, "pettingzoo.classic:tictactoe_v3", hidden=(8,))
    write_run_config(ttt, "pettingzoo.classic:tictactoe_v3")
    assert play_main(["--checkpoint", str(ttt)], read=lambda p: "q", write=lambda t: None) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not render 'ansi'" in err and "rgb_array" in err, err
    pursuit = tmp_path / "pursuit"
    save_tiny_checkpoint(pursuit, "sisl/pursuit-v5", hidden=(8,))
    write_run_config(pursuit, "sisl/pursuit-v5")
    assert evaluate_main(["--checkpoint", str(pursuit), "--out", str(tmp_path / "e"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "has 8 teams" in err and "two teams" in err, err
    # a recorded id that builds nothing here, and no catalog game fits the spaces
    write_run_config(ttt, "nosuchpkg:Thing")
    assert evaluate_main(["--checkpoint", str(ttt), "--out", str(tmp_path / "e2"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "'nosuchpkg:Thing', which builds no env here" in err and "pass --env" in err, err


def test_tictactoe_checkpoint_evaluates_with_gif_replays(tmp_path, capsys):
    trial = tmp_path / "run"
    save_tiny_checkpoint(trial, "pettingzoo.classic:tictactoe_v3", hidden=(8,))
    write_run_config(trial, "pettingzoo.classic:tictactoe_v3")
    out = tmp_path / "eval"
    assert evaluate_dir(trial, out, "--games-per-pair", "2", "--replays", "1") == 0, capsys.readouterr().err
    assert {p.suffix for p in (out / "replays").iterdir()} == {".gif", ".txt"}
    assert "[gif](replays/" in (out / "report.md").read_text()


# ------------------------------------------------------------------------------------------ trained rows
@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.timeout(600)
def test_tictactoe_trains_with_the_board_template_evaluates_and_exports(tmp_path):
    """The template beats random within 4 iterations of 8,192 env steps (measured: 0.940-0.945 at 41k, docs/envs.md)."""
    trial, stdout = train_cli(tmp_path, BOARD, "ttt", ["env.id=pettingzoo.classic:tictactoe_v3",
                                                      "training.stop.env_steps=32768", "training.stop.time_s=null",
                                                      "evaluation.interval=0", "training.checkpoint_every=0"])
    assert "done: 4 iterations, 32,768 env steps" in stdout, stdout[-2000:]
    out = tmp_path / "eval"
    assert evaluate_dir(trial, out, "--games-per-pair", "40", "--replays", "1") == 0
    assert score(read_csv(out / "games.csv"), "main", "random") >= 0.8
    assert any(p.suffix == ".gif" for p in (out / "replays").iterdir())
    from spade_rllib.export import main as export_main

    onnx = tmp_path / "main.onnx"
    assert export_main(["--checkpoint", str(trial), "--out", str(onnx)]) == 0 and onnx.stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.timeout(600)
def test_rps_trains_and_evaluates(tmp_path):
    trial, stdout = train_cli(tmp_path, BOARD, "rps", [
        "env.id=pettingzoo.classic:rps_v2", "env.random_opening_plies=0", "training.stop.env_steps=8192",
        "training.stop.time_s=null", "agent.train_batch_size=4096", "agent.minibatch_size=512", "agent.epochs=2",
        "training.num_envs_per_runner=16", "evaluation.interval=0", "training.checkpoint_every=0",
        "evaluation.targets={}"])
    assert "done: 2 iterations" in stdout and "Traceback" not in stdout
    out = tmp_path / "eval"
    assert evaluate_dir(trial, out, "--games-per-pair", "4", "--replays", "1") == 0
    games = read_csv(out / "games.csv")
    assert len(games) == 4 and all(int(g["length"]) > 1 for g in games)  # rps_v2 plays many rounds per game
    assert json.loads((out / "eval_config.json").read_text())["env_id"] == "pettingzoo.classic:rps_v2"
