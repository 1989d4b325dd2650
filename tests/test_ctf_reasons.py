"""Outcome reasons of CaptureTheFlag games (evaluation/ctf_reasons.py): each label comes from the state it
names, the match engine records them per seat, the reports count them per level. Pure, no Ray."""
from __future__ import annotations

from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import CaptureTheFlag
from spade_rllib.envs.ctf import DOWN, LEFT, NOOP, RIGHT, TAG, UP
from spade_rllib.evaluation import ctf_reasons as cr
from spade_rllib.evaluation.eval_report import REASON_COLUMNS, reason_rows, reasons_console
from spade_rllib.evaluation.match_engine import GameResult, GameSpec, LevelEntry, play_game
from spade_rllib.evaluation.players import PlayerSpec, build_player
from spade_rllib.evaluation.replays import large_levels, pick_replays
from spade_rllib.games.catalog import heldout_dir

ENV = "CaptureTheFlag-v0"
MAPS = load_heldout_levels([heldout_dir(ENV)])
OPEN = MAPS["open_field"]  # a (2, 2), b (6, 6); (3, 3) is in A's half, (5, 5) and (5, 6) in B's
P0, P1 = "player_0", "player_1"


def game(max_steps: int = 40):
    env = CaptureTheFlag(level=OPEN, max_steps=max_steps)
    env.reset(seed=0)
    return env, cr.CtfWatch(env)


def step(env, watch, a0=NOOP, a1=NOOP):
    env.step({P0: a0, P1: a1})
    watch.step()


def take_flag_and_score(env, watch):
    """Player 0 steps onto B's base from (6, 5), then onto its own base from (2, 3): a capture."""
    env.positions[P0] = (6, 5)
    step(env, watch, a0=RIGHT)
    assert env.carrying(P0)
    env.positions[P0] = (2, 3)
    step(env, watch, a0=LEFT)
    assert env.outcome["winner"] == "A"


def test_flag_taken_while_away():
    env, watch = game()
    env.positions[P1] = (3, 3)  # in A's half
    take_flag_and_score(env, watch)
    assert watch.why(0) == ("win", cr.FLAG_TAKEN_AWAY)


def test_flag_taken_past_a_guard():
    env, watch = game()
    env.positions[P1] = (5, 6)  # beside its base, does nothing
    take_flag_and_score(env, watch)
    assert watch.why(0) == ("win", cr.FLAG_TAKEN_PAST_GUARD)


def test_flag_taken_in_its_half_away_from_the_base():
    env, watch = game()
    env.positions[P1] = (7, 3)  # B's half, 6 steps from its base
    assert env.level.half_rows()[7][3] == 1 and env.level.distance_to_base(1)[7, 3] > cr.GUARD_STEPS
    take_flag_and_score(env, watch)
    assert watch.why(0) == ("win", cr.FLAG_TAKEN_IN_HALF)


def test_flag_taken_while_respawning():
    env, watch = game()
    env.positions[P1] = (3, 3)
    env.frozen[P1], env._waiting = 3, 1  # as a tag leaves it
    take_flag_and_score(env, watch)
    assert watch.why(0) == ("win", cr.FLAG_TAKEN_RESPAWNING)


def test_tagged_carrying_then_timeout():
    env, watch = game(max_steps=12)
    env.positions[P0], env.positions[P1] = (6, 5), (4, 6)
    step(env, watch, a0=RIGHT)  # picks up B's flag on (6, 6)
    step(env, watch, a0=UP, a1=TAG)  # to (5, 6), next to the tagger on (4, 6), in B's half
    assert not env.carrying(P0) and env.frozen[P0]
    while env.agents:
        step(env, watch)
    assert env.outcome["winner"] == "draw" and watch.tagged_carrying == [1, 0]
    assert watch.why(None) == (cr.TAGGED_CARRYING, cr.NEVER_TOOK_FLAG)


def test_stalemate_then_timeout():
    env, watch = game(max_steps=20)
    env.positions[P0], env.positions[P1] = (6, 5), (2, 3)
    step(env, watch, a0=RIGHT, a1=LEFT)  # both pick up the other's flag
    assert env.carrying(P0) and env.carrying(P1)
    while env.agents:
        step(env, watch)
    assert env.stalemates >= 1 and watch.tagged_carrying == [0, 0]
    assert watch.pickups[0] == watch.pickups[1] >= env.stalemates  # standing on the base picks the flag up again
    assert watch.why(None) == (cr.STALEMATE, cr.STALEMATE)


def test_carried_no_score():
    env, watch = game(max_steps=6)
    env.positions[P0] = (6, 5)
    step(env, watch, a0=RIGHT)
    while env.agents:
        step(env, watch, a0=DOWN)  # stays in B's half carrying; nobody tags
    assert watch.why(None) == (cr.CARRIED_NO_SCORE, cr.NEVER_TOOK_FLAG)


def play(a: str, b: str, level_id: str, index: int, seed: int) -> GameResult:
    players = [build_player(PlayerSpec(p, "bot", p), ENV, 6) for p in (a, b)]
    entry = LevelEntry(level_id, MAPS[level_id], "heldout", size=f"{MAPS[level_id].height}x{MAPS[level_id].width}")
    return play_game(ENV, players, entry, GameSpec(index, a, b, 0, seed)).result


def test_match_engine_records_reasons_and_reports_count_them():
    results = [play("raider", "hybrid", name, i, seed=i) for i, name in enumerate(("open_field", "maze_17") * 3)]
    for r in results:
        assert (r.why_seat0 == "win") == (r.winner_seat == 0) and (r.why_seat1 == "win") == (r.winner_seat == 1)
        assert {r.why_seat0, r.why_seat1} <= {"win", *cr.REASONS}
    levels = [LevelEntry(n, MAPS[n], "heldout", size=f"{MAPS[n].height}x{MAPS[n].width}") for n in ("open_field", "maze_17")]
    rows = reason_rows("raider", levels, results)
    assert [row["level_id"] for row in rows] == ["open_field", "maze_17"]
    for row in rows:
        assert set(REASON_COLUMNS) <= set(row) and row["games"] == 3
        assert row["win"] + sum(row[k] for k in cr.REASONS) == row["games"]
    assert "why main did not win" in reasons_console(rows)
    # a game without reasons (another env) gives no rows
    plain = GameResult(0, "raider", "hybrid", "open_field", 0, 0, "capture", 10)
    assert reason_rows("raider", levels, [plain]) == []


def test_each_large_map_gets_a_replay():
    levels = [LevelEntry(n, MAPS[n], "heldout") for n in sorted(MAPS)]
    large = large_levels(levels)
    assert {"large_maze", "maze_17", "river"} <= set(large) and "open_field" not in large  # river is 11x17
    assert large == [e.level_id for e in levels if max(e.level.height, e.level.width) >= 15]
    results = [GameResult(i, "main", "rusher", name, i, w, "capture", 9) for i, (name, w) in
               enumerate([("open_field", 1), ("maze_17", 0), ("maze_17", 1), ("large_maze", -1), ("river", 0)])]
    chosen = pick_replays(results, "main", 1, per_level=large)
    assert [r.index for r in chosen] == [0, 2, 3, 4]  # the loss first, then a non-win on each large map
