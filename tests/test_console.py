"""The console of `train`: short lines off a terminal, a live panel on one, all within 80 columns.

The pty test runs `python -m spade_rllib.train` on the `make demo` config (with a budget of a few
iterations) inside an 80x40 pseudo-terminal, as a user's terminal would show it, and checks that no
line would wrap there: every segment between newlines and carriage returns, ANSI sequences removed,
is at most 80 columns.
"""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B]|[=>])")


def _result(n_opponents: int = 6) -> dict:
    return {"training_iteration": 123, "time_total_s": 151.2,
            "env_runners": {"num_env_steps_sampled_lifetime": 1_234_567, "num_env_steps_sampled_lifetime_throughput": 8123.0},
            "eval": {f"bot:opponent_{i}": {"win_rate": 0.5, "draw_rate": 0.25, "loss_rate": 0.25} for i in range(n_opponents)},
            "league": {"size": 12.0, "main_rating": 1234.0}, "curriculum": {"difficulty": 4.25, "size_mean": 11.0},
            "heldout": {"ladder": {"score": 0.4}, "iteration": 120.0}}


def test_short_line_fits_80_columns_and_keeps_the_first_fields():
    from spade_rllib.training.console import short_line

    for n in (0, 1, 3, 12):
        line = short_line(_result(n), budget_s=200)
        assert len(line) <= 80, line
        assert line.startswith("iter  123 | 1.2M steps | 8.1k/s | 151/200s"), line
    assert "score opponent 0.62" in short_line(_result(1), 200)


def test_short_line_cuts_the_score_list_after_a_score_never_after_a_name():
    from spade_rllib.training.console import short_line

    for n in range(2, 9):
        line = short_line(_result(n), budget_s=200)
        scores = next(p for p in line.split(" | ") if p.startswith("score ")).split(" ")[1:]
        assert scores and len(scores) % 2 == 0, line  # (name, score) pairs only
        assert all(re.fullmatch(r"\d\.\d\d", v) for v in scores[1::2]), line
        assert len(line) <= 80, line


def test_panel_renders_every_field_within_80_columns():
    from rich.console import Console

    from spade_rllib.training.console import panel

    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    console.print(panel(_result(3), 200, "CaptureTheFlag-v0 / quickstart"))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 80
    for part in ("iteration 123", "1,234,567 env steps", "8,123 steps/s", "151 / 200 s", "bot:opponent_2", "0.62",
                 "league 12 members, main Elo 1234", "curriculum level 4.25", "held-out score 0.40"):
        assert part in text, (part, text)


def test_commands_are_wrapped_with_continuations():
    from spade_rllib.training.console import ready_commands, wrap_command

    long = ["python", "-m", "spade_rllib.evaluate", "--checkpoint", "results/quickstart/" + "x" * 50, "--out", "y"]
    lines = wrap_command(long)
    assert all(len(ln) <= 80 for ln in lines) and all(ln.endswith(" \\") for ln in lines[:-1]) and len(lines) > 1
    assert " ".join(ln.rstrip("\\").strip() for ln in lines).split() == long
    cmds = "\n".join(ready_commands(Path("results/q/t"), "results/q/t/checkpoint_000001", 2.0, Path("results/q/t/report.html")))
    cmds = cmds.replace(" \\\n    ", " ")  # joined continuations
    assert "--levels generated:8@2 --stochastic" in cmds and "--levels heldout" in cmds
    assert "spade_rllib.play --checkpoint results/q/t/checkpoint_000001" in cmds and "spade_rllib.report results/q/t" in cmds
    c4 = "\n".join(ready_commands(Path("t"), "t/c", None, None, level_game=False)).replace(" \\\n    ", " ")
    assert "--levels" not in c4 and "spade_rllib.evaluate --checkpoint t --out t/eval" in c4


def test_final_table_shows_the_configured_verdicts():
    from spade_rllib.training.console import final_table
    from spade_rllib.training.targets import target_verdicts

    final = {"final/random/win_rate": 0.95, "final/random/draw_rate": 0.05, "final/random/loss_rate": 0.0,
             "final/bot:rusher/win_rate": 0.6, "final/bot:rusher/draw_rate": 0.1, "final/bot:rusher/loss_rate": 0.3,
             "final/mirror/win_rate": 0.3, "final/mirror/draw_rate": 0.4, "final/mirror/loss_rate": 0.3}
    verdicts = target_verdicts({"evaluation": {"targets": {"random": 0.9, "bot:rusher": 0.75}}}, final)
    lines = final_table(["random", "bot:rusher", "mirror"], final, verdicts)
    assert "PASS (score >= 0.9)" in lines[1] and "BELOW TARGET (score >= 0.75)" in lines[2] and "40% draws" in lines[3]
    assert all(len(ln) <= 80 for ln in lines)


def test_ray_noise_is_filtered_from_the_console(caplog):
    import logging

    from spade_rllib.training.console import _NoiseFilter

    flt = _NoiseFilter()
    rec = logging.LogRecord("ray.rllib", logging.WARNING, "x", 1, "You are running PPO on the new API stack! ...", None, None)
    assert not flt.filter(rec)
    rec = logging.LogRecord("ray", logging.WARNING, "x", 1, "Some other warning", None, None)
    assert flt.filter(rec)


def _run_in_pty(cmd: list[str], cols: int, rows: int, timeout: float, env: dict, cwd: Path) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    else:
        proc.kill()
        pytest.fail(f"{' '.join(cmd)} ran past {timeout} s")
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.ray
def test_demo_fits_an_80_column_terminal(tmp_path):
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "40", "PYTHONWARNINGS": "ignore"}
    for var in ("CI", "GITHUB_ACTIONS", "BUILDKITE", "GITLAB_CI"):
        env.pop(var, None)  # the user's terminal, not CI
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    # Run where a user runs `make demo`: results/ under the working directory, so paths print relative.
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", str(ROOT / "tune_configs" / "quickstart.yaml"),
           "--set", "training.stop.time_s=null", "--set", "training.stop.env_steps=null", "--set", "training.stop.iterations=3", "--set", "evaluation.interval=2",
           "--set", "resources.num_cpus=2", "--final-eval-games", "4",
           "--set", f"evaluation.final_heldout_levels=[{ROOT / 'spade_rllib' / 'levels' / 'heldout_ctf'}]",
           "--set", "evaluation.final_heldout_games=1", "--set", "evaluation.final_heldout_size_games=1"]
    rc, out = _run_in_pty(cmd, 80, 40, timeout=600, env=env, cwd=tmp_path)  # the size lines and large-map replays add ~1-2 min
    text = ANSI.sub("", out)
    assert rc == 0, text[-3000:]
    segments = [s for line in text.split("\n") for s in line.split("\r")]
    wide = [s for s in segments if len(s) > 80]
    assert not wide, wide[:5]
    assert "╭─ CaptureTheFlag-v0 / quickstart" in text and "iteration 3" in text  # the live panel
    assert "ray get-auth-token" in text and "You are running PPO" not in text and "DeprecationWarning" not in text
    assert "spade_rllib.report" in text and "spade_rllib.play --checkpoint" in text
    assert "--levels heldout" in text and "--stochastic" in text
    trial = next((tmp_path / "results" / "quickstart").glob("quickstart_*"))
    assert (trial / "report.html").is_file() and (trial / "iterations.log").read_text().count("iter ") == 3
    assert list((trial / "final_games" / "replays").glob("*.gif"))  # the report's replays of the last checkpoint
    assert "held-out maps up to 11x11" in text and "held-out maps 17x17 to 21x21" in text  # the size lines
    large = list((trial / "final_games_heldout" / "replays").glob("*.gif"))  # a replay per large held-out map
    assert len(large) >= 8, large
    assert "data:image/gif;base64," in (trial / "report.html").read_text()
    tb = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = tb.EventAccumulator(str(trial))
    acc.Reload()
    assert {"ray/tune/eval/random/score", "ray/tune/eval/bot_rusher/score"} <= set(acc.Tags()["scalars"])


def test_off_a_terminal_lines_are_throttled_and_the_last_one_is_kept(tmp_path):
    """Without a TTY at most one short line per `line_every_s`; close() prints the last result's line."""
    import io

    from spade_rllib.training.console import RunConsole

    out = io.StringIO()
    view = RunConsole(200, "t", full_line=lambda r: f"iter {r['training_iteration']}", live=False, out=out, line_every_s=3600)
    for it in range(1, 11):
        view.on_result({**_result(1), "training_iteration": it}, str(tmp_path))
    assert [ln.split("|")[0].strip() for ln in out.getvalue().splitlines()] == ["iter    1"]
    view.close()
    assert [ln.split("|")[0].strip() for ln in out.getvalue().splitlines()] == ["iter    1", "iter   10"]
    assert (tmp_path / "iterations.log").read_text().count("iter ") == 10  # the log keeps every line
