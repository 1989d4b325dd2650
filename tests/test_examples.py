"""The examples in examples/ run end to end with a tiny budget (each in its own process, with its own Ray).

A smoke check that the walk-throughs stay in step with the package's API: they train, evaluate, save and act.
How well they learn at their default budgets is measured by running them (their docstrings say what to expect).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.ray


def run_example(name: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own local Ray, not the session's
    env.update(PYTHONWARNINGS="ignore", PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name), *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_self_play_example_trains_a_league_evaluates_and_acts():
    out = run_example("self_play.py", "--iterations", "2", "--games", "2")
    assert re.search(r"iteration +2 +env steps +4,096 +league size", out), out
    assert re.search(r"main vs random: score \d\.\d\d", out) and re.search(r"main vs bot:rusher: score", out)
    assert re.search(r"Policy\(module_id='main'.*picks action \d for player_0", out), out


def test_bring_your_own_env_example_trains_its_own_pettingzoo_env():
    out = run_example("bring_your_own_env.py", "--iterations", "2", "--games", "4")
    assert re.search(r"iteration +2 +env steps +4,096", out), out
    assert re.search(r"main vs random: score \d\.\d\d .*4 games", out)
    assert "one game of the trained policy against itself: player_0@" in out
