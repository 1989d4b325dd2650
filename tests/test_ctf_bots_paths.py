"""CaptureTheFlag bots plan only paths they may walk (the own base is closed unless carrying), and every
racing bot beats a team that never moves on every shipped held-out map. Pure numpy, no Ray."""
from __future__ import annotations

import pytest

from spade_rllib.bots.ctf_bots import GUARD_SIDE, DefenderBot, bfs_rows, downhill, guard_post
from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import CaptureTheFlag, Level, generate_ctf_level, knobs_for_difficulty
from spade_rllib.envs.ctf import DELTAS, NOOP, TAG
from spade_rllib.games import make_bot
from spade_rllib.games.catalog import heldout_dir

ENV = "CaptureTheFlag-v0"
RACERS = ("rusher", "raider", "hybrid")
"""The bots that attack: each must capture against a team that never moves."""
HELDOUT = load_heldout_levels([heldout_dir(ENV)])

# Team A's spawn (1, 3) has two equally short ways on: left through its own base (1, 1) and right. A
# bot that plans through its base steps to (1, 2) and then stands still forever beside it.
BESIDE_BASE = Level.from_ascii("""
#########
#a.A....#
#.####..#
#......##
####.####
##......#
#..####.#
#....B.b#
#########
""")


def illegal_move(env: CaptureTheFlag, agent: str, act: int) -> str | None:
    """Why the rules refuse `act` for `agent` now (None: allowed; noop and tag always are)."""
    if act in (NOOP, TAG) or env.frozen[agent]:
        return None
    r, c = env.positions[agent]
    dr, dc = DELTAS[act]
    cell = (r + dr, c + dc)
    if env.level.walls[cell]:
        return f"{agent} walks into the wall at {cell}"
    if cell == env.level.bases[env.team_of(agent)] and not env.carrying(agent):
        return f"{agent} walks onto its own base {cell} without the enemy flag"
    return None


def play(level: Level, bots: dict[int, str], seed: int, check: bool = True, moves: list | None = None) -> dict:
    """One game: team t plays bot `bots[t]`, or stands still (noop) when absent. With `check`, every move
    a bot chooses must be one the rules allow; `moves`, when given, gets each step's actions."""
    env = CaptureTheFlag(level=level)
    env.reset(seed=seed)
    players = {a: make_bot(bots[env.team_of(a)], seed=seed + i, env_id=ENV)
               for i, a in enumerate(env.possible_agents) if env.team_of(a) in bots}
    while env.agents:
        acts = {a: players[a].act(env, a) if a in players else NOOP for a in env.agents}
        if check:
            for a, act in acts.items():
                assert illegal_move(env, a, act) is None, illegal_move(env, a, act)
        if moves is not None:
            moves.append(tuple(sorted(acts.items())))
        env.step(acts)
    return env.outcome


def score(outcome: dict, team: int) -> float:
    w = outcome["winner"]
    return 1.0 if w == "AB"[team] else 0.5 if w == "draw" else 0.0


def test_paths_avoid_the_own_base_unless_carrying():
    lv, base, enemy = BESIDE_BASE, BESIDE_BASE.bases[0], BESIDE_BASE.bases[1]
    assert {(r, c) for _, r, c in downhill(lv, (1, 3), enemy)} == {(1, 2), (1, 4)}  # walls only: both ways
    assert [(r, c) for _, r, c in downhill(lv, (1, 3), enemy, base)] == [(1, 4)]
    assert downhill(lv, (1, 2), enemy, base) == [(4, 1, 3)]  # back out, not through the base
    assert bfs_rows(lv, base, base)[1][2] == -1  # the closed base is no target
    assert [(r, c) for _, r, c in downhill(lv, (1, 2), base)] == [(1, 1)]  # a carrier may go home
    assert guard_post(lv, 0) in {(1, 2), (2, 1)} and guard_post(lv, 1) in {(7, 6), (6, 7)}


@pytest.mark.parametrize("name", RACERS)
def test_racer_never_freezes_beside_its_base(name):
    for seed in range(8):
        for team in (0, 1):
            assert score(play(BESIDE_BASE, {team: name}, seed), team) == 1.0, (name, seed, team)


@pytest.mark.parametrize("level_name", sorted(HELDOUT))
def test_every_racer_beats_a_still_team_on_every_heldout_map(level_name):
    level = HELDOUT[level_name]
    for name in RACERS:
        for seed in range(6):
            team = seed % 2
            out = play(level, {team: name}, seed)
            assert score(out, team) == 1.0, f"{name} vs a still team on {level_name} (seed {seed}, team {team}): {out}"


@pytest.mark.parametrize("level_name", sorted(HELDOUT))
def test_defender_holds_its_post_against_a_still_team(level_name):
    """The defender never attacks: a draw, with the defender on its guard post (not stuck on the way)."""
    level = HELDOUT[level_name]
    for team in (0, 1):
        env = CaptureTheFlag(level=level)
        env.reset(seed=team)
        bot, me = DefenderBot(seed=team), env.possible_agents[team]
        while env.agents:
            acts = {a: bot.act(env, a) if a == me else NOOP for a in env.agents}
            assert illegal_move(env, me, acts[me]) is None
            env.step(acts)
        assert env.outcome["winner"] == "draw" and env.positions[me] == guard_post(level, team)


@pytest.mark.parametrize("level_name", sorted(HELDOUT))
def test_sentry_races_below_guard_side_and_guards_from_it(level_name):
    """The sentry is the raider on maps under GUARD_SIDE cells a side and the defender on larger ones: the same
    game, move for move, as that bot with the same seed (against `rusher` and against a still team)."""
    level = HELDOUT[level_name]
    twin = "defender" if max(level.height, level.width) >= GUARD_SIDE else "raider"

    def trace(bots: dict[int, str], seed: int) -> list:
        moves: list = []
        outcome = play(level, bots, seed, moves=moves)
        return [*moves, outcome]

    for seed in range(2):
        for team in (0, 1):
            for other in ({}, {1 - team: "rusher"}):
                assert trace({team: "sentry", **other}, seed) == trace({team: twin, **other}, seed), \
                    (level_name, seed, team, other)
    assert score(play(level, {0: "sentry"}, 0), 0) == (0.5 if twin == "defender" else 1.0)


def test_bots_choose_only_legal_moves_against_each_other():
    """Ladder games on generated and held-out maps: no bot ever picks a move the rules refuse (the base
    rule included: carriers come home, the others go around their base)."""
    levels = [generate_ctf_level(knobs_for_difficulty(2 + seed % 8), seed) for seed in range(6)]
    levels += [HELDOUT["maze_17"], HELDOUT["large_maze"]]
    for i, level in enumerate(levels):
        for a, b in (("raider", "hybrid"), ("hybrid", "defender"), ("rusher", "raider")):
            play(level, {0: a, 1: b}, seed=i)


def test_still_team_bench_ends_with_json():
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "bench/ablations/ctf_bots_still.py", "--games", "2", "--bots", "rusher,defender"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out) == set(HELDOUT) and all(v == {"rusher": 1.0, "defender": 0.5} for v in out.values())
