"""Level: ASCII round-trip, every LevelError case, fairness, cached distances, hand-written sizes."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from spade_rllib.envs import Level, LevelError

SMALL = """\
#####
#A.B#
#.F.#
#...#
#####"""


def test_round_trip_exact():
    lv = Level.from_ascii(SMALL)
    assert lv.to_ascii() == SMALL
    assert Level.from_ascii(lv.to_ascii()) == lv
    assert (lv.height, lv.width, lv.agents_per_team) == (5, 5, 1)
    assert lv.flag == (2, 2) and lv.spawns == (((1, 1),), ((1, 3),))


def test_round_trip_ignores_indent_and_blank_lines():
    text = "\n    #####\n    #A.B#\n    #.F.#\n    #...#\n    #####\n\n"
    assert Level.from_ascii(text).to_ascii() == SMALL


def test_hash_eq_pickle():
    a, b = Level.from_ascii(SMALL), Level.from_ascii(SMALL)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    c = pickle.loads(pickle.dumps(a))
    assert c == a and c.fairness() == 0


def test_distance_map_cached_and_correct():
    lv = Level.from_ascii(SMALL)
    d = lv.distance_to_flag()
    assert d is lv.distance_to_flag()
    assert d.dtype == np.int32 and d[2, 2] == 0 and d[1, 1] == 2 and d[0, 0] == -1
    assert not d.flags.writeable


@pytest.mark.parametrize(
    "text, problem, line, column",
    [
        ("#####\n#A.B#\n#.F.\n#...#\n#####", "not rectangular", 3, 5),
        ("#####\n#A.B#\n#.Fx#\n#...#\n#####", "unknown character", 3, 4),
        ("#####\n#A.B#\n#...#\n#...#\n#####", "zero flags", 1, 1),
        ("#####\n#A.B#\n#.F.#\n#.F.#\n#####", "two flags", 4, 3),
        ("#####\n#A..#\n#.F.#\n#...#\n#####", "missing spawns", 1, 1),
        ("#####\n#..B#\n#.F.#\n#...#\n#####", "missing spawns", 1, 1),
        ("#####\n#A#B#\n##F.#\n#...#\n#####", "spawn unreachable", 2, 2),
        ("#####\n#A.B#\n###.#\n#F#.#\n#####", "flag unreachable", 4, 2),
        ("#####\n#A.B#\n#.F..\n#...#\n#####", "open outer border", 3, 5),
        ("##.##\n#A.B#\n#.F.#\n#...#\n#####", "open outer border", 1, 3),
        ("#######\n#AA.B.#\n#..F..#\n#.....#\n#######", "different numbers of spawns", 2, 3),
    ],
)
def test_level_errors_name_problem_line_and_column(text, problem, line, column):
    with pytest.raises(LevelError) as ei:
        Level.from_ascii(text)
    msg = str(ei.value)
    assert problem in msg
    assert f"line {line}, column {column}" in msg
    assert (ei.value.line, ei.value.column) == (line, column)
    assert isinstance(ei.value, ValueError)


def test_flag_unreachable_when_no_spawn_reaches_it():
    with pytest.raises(LevelError, match="flag unreachable"):
        Level.from_ascii("#######\n#A...B#\n###.###\n##F####\n#######".replace("##F####", "#F#####"))


UNFAIR = """\
#######
#A....#
#..F..#
#....B#
#.....#
#######"""


def test_unfair_map_reports_and_optionally_errors():
    lv = Level.from_ascii(UNFAIR)
    assert lv.team_distances() == ((3,), (3,))
    unfair = Level.from_ascii(UNFAIR.replace("#....B#", "#.....#").replace("#.....#\n#######", "#....B#\n#######"))
    assert unfair.fairness() == 1
    assert "UNFAIR by 1" in unfair.report()
    with pytest.raises(LevelError, match="unfair map"):
        Level.from_ascii(unfair.to_ascii(), max_unfairness=0)
    assert Level.from_ascii(unfair.to_ascii(), max_unfairness=1).fairness() == 1
    with pytest.raises(ValueError, match="max_unfairness"):
        Level.from_ascii(UNFAIR, max_unfairness=-1)


def test_team_mode_letters_in_reading_order():
    text = "#######\n#A.B..#\n#..F..#\n#.A.B.#\n#######"
    lv = Level.from_ascii(text)
    assert lv.agents_per_team == 2
    assert lv.spawns == (((1, 1), (3, 2)), ((1, 3), (3, 4)))
    assert lv.to_ascii() == text


def hand_map(n: int) -> str:
    """An n x n hand-written map: corridors with a wall stub, flag in the middle column."""
    rows = [["#"] * n] + [["#"] + ["."] * (n - 2) + ["#"] for _ in range(n - 2)] + [["#"] * n]
    for c in range(2, n - 2):
        if n > 5 and c % 3 == 0:
            rows[n // 2 - 1][c] = "#"
    rows[1][1], rows[n - 2][n - 2], rows[n // 2][n // 2] = "A", "B", "F"
    return "\n".join("".join(r) for r in rows)


@pytest.mark.parametrize("n", [5, 7, 9, 12, 17, 21, 25])
def test_hand_written_sizes_load(n):
    lv = Level.from_ascii(hand_map(n))
    assert (lv.height, lv.width) == (n, n)
    assert lv.to_ascii() == hand_map(n)


def test_non_square_map_loads():
    text = "##########\n#A......B#\n#...F....#\n##########"
    lv = Level.from_ascii(text)
    assert (lv.height, lv.width) == (4, 10)
