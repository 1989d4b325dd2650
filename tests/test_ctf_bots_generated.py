"""Every racing bot beats a team that never moves on generated large maps (15x15 to 21x21: mazes, rooms,
halls; both seats), not only on the shipped held-out maps. Pure numpy, no Ray; ~300 games, a few seconds.

The racing bots are `rusher`, `raider` and `hybrid` (tests/test_ctf_bots_paths.py's RACERS). The `sentry` is
the defender on maps of GUARD_SIDE (15) cells a side and more: by design it never attacks there, so against a
still team it draws (its bar is tested on the held-out maps); `defender` and `random` do not race.
The bench with many more maps: ``python bench/ablations/ctf_bots_still.py --generated 64``."""
from __future__ import annotations

import functools

import pytest

from spade_rllib.bots.ctf_bots import RACE_SLACK, HybridBot, bfs_rows
from spade_rllib.envs import CaptureTheFlag, Knobs, generate_ctf_level
from test_ctf_bots_paths import RACERS, play, score

SIZES = (15, 17, 19, 21)
LONGEST = 4
MAZE_CANDIDATES = 24
"""Per size, the LONGEST mazes of braid 0 by base distance among level seeds 0..MAZE_CANDIDATES-1 (the longest
races the generator makes: where a bot that wastes time runs out of it), and two of more loops."""
ROOM_DENSITIES = (0.0, 0.15, 0.3)
"""One rooms and one halls map per wall density and size."""


def base_distance(level) -> int:
    (br, bc) = level.bases[1]
    return bfs_rows(level, level.bases[0])[br][bc]


@functools.lru_cache(maxsize=None)
def levels(size: int) -> tuple:
    """The generated maps of one size (flag_distance None: the bases as far apart as the layout allows)."""
    mazes = [generate_ctf_level(Knobs(family="maze", size=size, braid=0.0), seed) for seed in range(MAZE_CANDIDATES)]
    out = sorted(mazes, key=lambda lv: (-base_distance(lv), lv.meta["seed"]))[:LONGEST]
    out += [generate_ctf_level(Knobs(family="maze", size=size, braid=b), 1000 + i) for i, b in enumerate((0.2, 0.5))]
    for family in ("rooms", "halls"):
        out += [generate_ctf_level(Knobs(family=family, size=size, wall_density=d), 100 * size + i)
                for i, d in enumerate(ROOM_DENSITIES)]
    return tuple(out)


# A 17x17 maze whose bases are 76 steps apart: guarding for twice that left 128 of its 280 steps for a 152-step
# race, and the hybrid drew against a still team (before RACE_SLACK) from both seats.
LONG_MAZE = Knobs(family="maze", size=17, braid=0.11, wall_density=0.187), 22


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", RACERS)
def test_every_racer_beats_a_still_team_on_generated_maps(name, size):
    assert len(levels(size)) == LONGEST + 2 + 2 * len(ROOM_DENSITIES)
    for i, level in enumerate(levels(size)):
        for team in (0, 1):
            seed = 2 * i + team
            out = play(level, {team: name}, seed)
            assert score(out, team) == 1.0, \
                f"{name} vs a still team on {level.meta['knobs']} level seed {level.meta['seed']} (seed {seed}, team {team}): {out}"


@pytest.mark.parametrize("name", RACERS)
def test_every_racer_beats_a_still_team_2v2(name):
    """Two of the bot against two still agents, one long maze per size."""
    for size in SIZES:
        level = generate_ctf_level(Knobs(family="maze", size=size, braid=0.1, agents_per_team=2), 7 * size)
        for team in (0, 1):
            out = play(level, {team: name}, team)
            assert score(out, team) == 1.0, f"{name} 2v2 on {level.meta['knobs']} (team {team}): {out}"


def test_hybrid_stops_guarding_while_a_race_still_fits():
    """On the long maze, a hybrid that opens guarding leaves its post while the steps left still exceed
    RACE_SLACK races from there, and captures; its guard spell never resumes."""
    level = generate_ctf_level(*LONG_MAZE)
    distance = base_distance(level)
    assert distance == 76
    for team in (0, 1):
        guarded = 0
        for seed in range(8):
            env = CaptureTheFlag(level=level)
            env.reset(seed=seed)
            bot, me = HybridBot(seed), env.possible_agents[team]
            modes = []
            while env.agents:
                acts = {a: bot.act(env, a) if a == me else 0 for a in env.agents}
                modes.append(bot.guard)
                env.step(acts)
            assert env.outcome["winner"] == "AB"[team], (team, seed, env.outcome)
            if modes[0]:
                guarded += 1
                left = modes.index(False)
                assert not any(modes[left:])  # attacking for good once the spell ends
                assert env.max_steps - left <= RACE_SLACK * (2 * distance + 2)  # it guarded as long as time allowed
                assert left < 2 * distance  # the time limit, not the base distance, ended the spell
        assert guarded >= 4  # GUARD_FIRST: most episodes open guarding


def test_still_team_bench_on_generated_maps_ends_with_json():
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "bench/ablations/ctf_bots_still.py", "--generated", "2", "--sizes", "15,17",
                           "--families", "maze,halls", "--braid", "0,0.3", "--bots", "rusher,defender"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["maps"] == 8 and out["games"] == 32 and out["sizes"] == [15, 17] and out["braid"] == [0.0, 0.3]
    rusher, defender = out["bots"]["rusher"], out["bots"]["defender"]
    assert rusher["wins"] == rusher["games"] == 16 and rusher["score"] == 1.0 and not rusher["non_wins"]
    assert rusher["by_size"] == {"15": 1.0, "17": 1.0} and rusher["by_family"] == {"maze": 1.0, "halls": 1.0}
    assert defender["wins"] == 0 and defender["score"] == 0.5 and len(defender["non_wins"]) == 16
    assert {g["winner"] for g in defender["non_wins"]} == {"draw"}
    bad = subprocess.run([sys.executable, "bench/ablations/ctf_bots_still.py", "--generated", "1", "--families", "mazes"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "unknown family 'mazes' (did you mean 'maze'?)" in bad.stderr
