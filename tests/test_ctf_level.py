"""CTF levels: a/b bases in the ASCII format, every LevelError with line/column, halves, generators, held-out maps."""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spade_rllib
from spade_rllib.envs import CaptureTheFlag, Knobs, Level, LevelError, generate_ctf_level, knobs_for_difficulty

CTF = """\
#######
#a.A..#
#.....#
#..B.b#
#######"""
HELDOUT_CTF = Path(spade_rllib.__file__).parent / "levels" / "heldout_ctf"


def test_round_trip_and_fields():
    lv = Level.from_ascii(CTF)
    assert lv.is_ctf and lv.flag is None and lv.bases == ((1, 1), (3, 5))
    assert lv.spawns == (((1, 3),), ((3, 3),))
    assert lv.to_ascii() == CTF and Level.from_ascii(lv.to_ascii()) == lv
    assert pickle.loads(pickle.dumps(lv)) == lv
    assert not Level.from_ascii("#####\n#A.B#\n#.F.#\n#####").is_ctf


def test_distances_halves_and_fairness():
    lv = Level.from_ascii(CTF)
    da, db = lv.distance_to_base(0), lv.distance_to_base(1)
    assert da[1, 1] == 0 and db[3, 5] == 0 and da[3, 5] == 6 and da is lv.distance_to_base(0)
    half = lv.half()
    assert half[1, 1] == 0 and half[3, 5] == 1 and half[2, 3] == -1 and half[0, 0] == -1
    assert half is lv.half() and not half.flags.writeable
    assert lv.team_distances() == ((4,), (4,)) and lv.home_distances() == ((2,), (2,)) and lv.fairness() == 0
    with pytest.raises(ValueError, match="no single flag"):
        lv.distance_to_flag()
    assert "base a at line 2 column 2" in lv.report() and lv.report().endswith("fair")


def test_unfair_ctf_map():
    text = "#######\n#aA...#\n#.....#\n#..B.b#\n#######"
    lv = Level.from_ascii(text)
    assert lv.fairness() == 1
    with pytest.raises(LevelError, match="unfair map.*line 2, column 3"):
        Level.from_ascii(text, max_unfairness=0)


@pytest.mark.parametrize("text, problem, line, column", [
    ("#######\n#..A..#\n#.....#\n#..B.b#\n#######", "missing base", 1, 1),
    ("#######\n#a.A..#\n#.....#\n#..B..#\n#######", "missing base", 1, 1),
    ("#######\n#a.A..#\n#a....#\n#..B.b#\n#######", "duplicate base", 3, 2),
    ("#######\n#a.A..#\n#.....#\n#..B.b#\n#b....#\n#######", "duplicate base", 5, 2),
    ("#######\n#a.A..#\n#..F..#\n#..B.b#\n#######", "flag on a CTF map", 3, 4),
    ("#######\n#F.A..#\n#.....#\n#..B.b#\n#######", "base on a MazeRace map", 4, 6),
    ("#######\n#a.A..#\n#######\n#..B.b#\n#######", "base unreachable", 4, 6),
    ("#######\n#a.A#.#\n#..##.#\n#.#B.b#\n#######", "base unreachable", 4, 6),
    ("#######\n#a#A..#\n###...#\n#..B.b#\n#######", "spawn unreachable", 2, 4),
    ("#######\n#a.A..#\n#.....#\n#..B.b.\n#######", "open outer border", 4, 7),
    ("#######\n#a.A..#\n#..x..#\n#..B.b#\n#######", "unknown character", 3, 4),
    ("#######\n#a.AA.#\n#.....#\n#..B.b#\n#######", "different numbers of spawns", 2, 5),
    ("#######\n#a.A..#\n#.....#\n#..B.b#\n######", "not rectangular", 5, 7),
])
def test_ctf_errors_name_problem_line_and_column(text, problem, line, column):
    with pytest.raises(LevelError) as ei:
        Level.from_ascii(text)
    assert problem in str(ei.value) and f"line {line}, column {column}" in str(ei.value)
    assert (ei.value.line, ei.value.column) == (line, column) and "\n" not in str(ei.value)


def _point_symmetric(lv: Level) -> bool:
    n = lv.height
    (ar, ac), b = lv.bases
    return (np.array_equal(lv.walls, lv.walls[::-1, ::-1]) and b == (n - 1 - ar, n - 1 - ac)
            and sorted(lv.spawns[1]) == sorted((n - 1 - r, n - 1 - c) for r, c in lv.spawns[0]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), difficulty=st.floats(1, 10), apt=st.sampled_from([1, 2]),
       family=st.sampled_from([None, "open", "rooms", "maze"]))
def test_generated_ctf_levels_are_fair_and_point_symmetric(seed, difficulty, apt, family):
    lv = generate_ctf_level(knobs_for_difficulty(difficulty, family=family, agents_per_team=apt), seed)
    assert lv.is_ctf and lv.fairness() == 0 and _point_symmetric(lv) and lv.agents_per_team == apt
    half = lv.half()
    assert all(half[s] == t for t in (0, 1) for s in lv.spawns[t])  # spawns in the own half, near the base
    assert all(1 <= lv.distance_to_base(t)[s] <= 3 for t in (0, 1) for s in lv.spawns[t])
    assert (lv.distance_to_base(0)[~lv.walls] >= 0).all()  # one connected floor
    assert Level.from_ascii(lv.to_ascii()) == lv


def test_generator_is_deterministic_and_uses_flag_distance():
    k = Knobs(family="open", size=15, wall_density=0.0, flag_distance=6)
    a, b = generate_ctf_level(k, 3), generate_ctf_level(k, 3)
    assert a == b and a.meta["knobs"] == k.to_dict()
    centre = (7, 7)
    from spade_rllib.envs.level import _bfs
    assert abs(_bfs(a.walls, centre)[a.bases[0]] - 6) <= 1
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        generate_ctf_level(k, -1)
    with pytest.raises(TypeError, match="knobs must be a Knobs"):
        generate_ctf_level({"size": 9}, 0)


# ---------------------------------------------------------------------------- held-out CTF maps
HELDOUT_FILES = sorted(HELDOUT_CTF.glob("*.txt"))


def test_at_least_six_heldout_ctf_maps_ship():
    assert len(HELDOUT_FILES) >= 6
    sizes = sorted(Level.from_ascii(p.read_text()).height for p in HELDOUT_FILES)
    assert sizes[0] <= 9 and sizes[-1] >= 21


@pytest.mark.parametrize("path", HELDOUT_FILES, ids=lambda p: p.stem)
def test_heldout_ctf_map_loads_is_fair_and_plays(path):
    lv = Level.from_ascii(path.read_text(), max_unfairness=0)
    assert lv.is_ctf and 9 <= lv.height <= 21 and 9 <= lv.width <= 21
    assert lv.to_ascii() == path.read_text().strip()
    half = lv.half()
    assert all(half[s] == t for t in (0, 1) for s in lv.spawns[t])
    env = CaptureTheFlag(level=lv)
    obs, _ = env.reset(seed=0)
    assert all(env.observation_space(a).contains(o) for a, o in obs.items())
