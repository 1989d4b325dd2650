"""CaptureTheFlag bots: registered, deterministic given the seed, legal, and they play the game they claim to."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_rllib.games import bot_names, default_bot_names, game, make_bot
from spade_rllib.envs import CaptureTheFlag, generate_ctf_level, knobs_for_difficulty

ENV = "CaptureTheFlag-v0"
LADDER = ("random", "rusher", "defender", "raider", "hybrid")
NAMES = (*LADDER, "sentry")
ROOT = Path(__file__).resolve().parent.parent
ENV_VARS = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def play(a: str, b: str, level, seed: int, apt: int = 1):
    env = CaptureTheFlag(level=level)
    env.reset(seed=seed)
    bots = {ag: make_bot(a if env.team_of(ag) == 0 else b, seed=seed + i, env_id=ENV)
            for i, ag in enumerate(env.possible_agents)}
    trace = []
    while env.agents:
        acts = {ag: bots[ag].act(env, ag) for ag in env.agents}
        assert all(isinstance(x, int) and 0 <= x < 6 for x in acts.values())
        env.step(acts)
        trace.append(tuple(sorted(env.positions.items())))
    return env.outcome, trace


def test_registered():
    assert bot_names(ENV) == NAMES and set(game(ENV).bots) == set(NAMES)
    assert default_bot_names(ENV) == LADDER  # the sentry (a teacher) is played only when named
    with pytest.raises(ValueError, match=r"unknown bot 'rushr' for CaptureTheFlag-v0 \(did you mean 'rusher'\?\)"):
        make_bot("rushr", env_id=ENV)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_given_seed(name):
    level = generate_ctf_level(knobs_for_difficulty(6), 11)
    assert play(name, "hybrid", level, 5) == play(name, "hybrid", level, 5)


@pytest.mark.parametrize("apt", [1, 2])
def test_every_pair_plays_2v2_and_1v1(apt):
    level = generate_ctf_level(knobs_for_difficulty(5, agents_per_team=apt), 3)
    for a in NAMES:
        out, _ = play(a, "raider", level, 0, apt)
        assert out["winner"] in ("A", "B", "draw")


def test_rusher_captures_against_a_passive_opponent_and_never_tags():
    for seed in range(10):
        level = generate_ctf_level(knobs_for_difficulty(8), seed)
        out, _ = play("rusher", "random", level, seed)
        assert out["tags"]["A"] == 0
        out, _ = play("rusher", "defender", level, seed)
        assert out["tags"]["A"] == 0 and out["flag_pickups"]["B"] == 0 and out["captures"]["B"] == 0


def test_defender_never_attacks():
    for seed in range(10):
        level = generate_ctf_level(knobs_for_difficulty(4 + seed % 6), seed)
        out, _ = play("defender", "hybrid", level, seed)
        assert out["flag_pickups"]["A"] == 0 and out["winner"] != "A"


def test_ladder_bench_runs_and_ends_with_json():
    proc = subprocess.run([sys.executable, "bench/ablations/ladder.py", "--levels", "3", "--bots", "rusher,defender,raider"],
                          cwd=ROOT, env=ENV_VARS, capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out["score"]) == {"rusher", "defender", "raider"} and out["levels"] == 3
    assert abs(out["score"]["rusher"]["raider"] + out["score"]["raider"]["rusher"] - 1.0) < 1e-9


def test_env_speed_bench_has_the_ctf_cases():
    proc = subprocess.run([sys.executable, "bench/speed/env_speed.py", "--steps", "300"], cwd=ROOT, env=ENV_VARS,
                          capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ctf_11_1v1"] > 0 and out["ctf_15_2v2"] > 0 and "maze_11_1v1" in out
