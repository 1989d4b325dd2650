"""Generators: every level valid, solvable, fair and matching its knobs; knob errors; difficulty map."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spade_rllib.envs import FAMILIES, Knobs, Level, flag_distance_tolerance, generate_level, knobs_for_difficulty
from spade_rllib.envs.generators import default_max_steps, max_flag_distance


def _check_level(lv: Level, k: Knobs) -> None:
    assert (lv.height, lv.width) == (k.size, k.size)
    assert lv.agents_per_team == k.agents_per_team
    # valid: re-parsing the ASCII runs every validation check again
    assert Level.from_ascii(lv.to_ascii(), max_unfairness=0) == lv
    dist = lv.distance_to_flag()
    assert all(dist[s] > 0 for team in lv.spawns for s in team)  # solvable
    assert lv.fairness() == 0
    if k.flag_distance is not None:
        tol = flag_distance_tolerance(k.flag_distance)
        assert all(abs(d - k.flag_distance) <= tol for d in lv.team_distances()[0])
    assert lv.meta["knobs"] == k.to_dict()
    if k.family == "open":
        interior = lv.walls[1:-1, 1:-1].mean()
        cells = (k.size - 2) ** 2
        assert interior <= k.wall_density + 2 / cells  # rounding to mirrored pairs
        assert interior >= 0.7 * k.wall_density - 2 / cells


@st.composite
def knobs_st(draw):
    family = draw(st.sampled_from(FAMILIES))
    size = draw(st.sampled_from(range(5, 26, 2)))
    braid = draw(st.floats(0, 1))
    fd = draw(st.one_of(st.none(), st.integers(2, max_flag_distance(size, family, braid))))
    return Knobs(family=family, size=size, wall_density=draw(st.floats(0, 0.4)), braid=braid,
                 flag_distance=fd, agents_per_team=draw(st.sampled_from((1, 2))))


@settings(max_examples=80, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(k=knobs_st(), seed=st.integers(0, 2**31 - 1))
def test_generated_levels_valid_solvable_fair_match_knobs(k, seed):
    _check_level(generate_level(k, seed), k)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("difficulty", [1, 3, 5, 7.5, 10])
def test_difficulty_levels(family, difficulty):
    k = knobs_for_difficulty(difficulty, family=family)
    for seed in range(3):
        _check_level(generate_level(k, seed), k)


def test_deterministic_in_knobs_and_seed():
    k = Knobs(family="maze", size=15, braid=0.2)
    assert generate_level(k, 7).to_ascii() == generate_level(k, 7).to_ascii()
    assert len({generate_level(k, s).to_ascii() for s in range(5)}) > 1


def test_flag_distance_limits_are_reachable():
    assert max_flag_distance(11, "open") == 8 and max_flag_distance(11, "maze", 0.0) == 16
    for fam, braid in (("open", 0.0), ("rooms", 0.0), ("halls", 0.0), ("maze", 0.0), ("maze", 1.0)):
        for size in (7, 15, 25):
            k = Knobs(family=fam, size=size, braid=braid, wall_density=0.3,
                      flag_distance=max_flag_distance(size, fam, braid), agents_per_team=2)
            _check_level(generate_level(k, size), k)


def test_maze_is_a_maze():
    lv = generate_level(Knobs(family="maze", size=21, braid=0.0, flag_distance=36), 0)
    assert lv.walls.mean() > 0.4  # corridors, not an open room
    assert lv.team_distances()[0][0] >= 29


def test_halls_are_rooms_of_uneven_sizes_joined_by_doors():
    """`halls`: mirrored wall lines at random gaps (rooms 2-6 cells wide, sometimes a line through the centre),
    one door per wall segment (two from 6 cells): a layout unlike `open`, with more than one room width."""
    widths, centre_lines = set(), 0
    for seed in range(20):
        k = Knobs(family="halls", size=21, wall_density=0.0)
        lv = generate_level(k, seed)
        _check_level(lv, k)
        full = [r for r in range(1, 20) if lv.walls[r, 1:-1].mean() > 0.6]  # a wall line, doors aside
        assert full, lv.to_ascii()
        widths |= {b - a - 1 for a, b in zip([0] + full, full + [20])}
        centre_lines += 10 in full
    assert {2, 3, 4, 5, 6} <= widths and 0 < centre_lines < 20


@pytest.mark.parametrize("kwargs, knob", [
    ({"family": "cave"}, "family"), ({"size": 4}, "size"), ({"size": 27}, "size"), ({"size": 10}, "size"),
    ({"wall_density": 0.5}, "wall_density"), ({"wall_density": -0.1}, "wall_density"),
    ({"braid": 1.5}, "braid"), ({"flag_distance": 1}, "flag_distance"), ({"size": 7, "flag_distance": 99}, "flag_distance"),
    ({"size": 11, "flag_distance": 9}, "flag_distance"), ({"family": "maze", "size": 11, "braid": 0, "flag_distance": 17}, "flag_distance"),
    ({"agents_per_team": 3}, "agents_per_team"), ({"max_steps": 0}, "max_steps"),
])
def test_bad_knobs_raise_value_error_naming_knob_and_range(kwargs, knob):
    with pytest.raises(ValueError, match=knob) as ei:
        Knobs(**kwargs)
    assert "[" in str(ei.value) or "one of" in str(ei.value) or "1 or 2" in str(ei.value)


def test_family_typo_suggests():
    with pytest.raises(ValueError, match="did you mean 'maze'"):
        Knobs(family="mase")


@pytest.mark.parametrize("d", [0, 10.5, float("nan"), "5"])
def test_bad_difficulty(d):
    with pytest.raises(ValueError, match="difficulty"):
        knobs_for_difficulty(d)


def test_difficulty_mapping_documented_shape():
    sizes = [knobs_for_difficulty(d).size for d in range(1, 11)]
    assert sizes == [5, 7, 7, 9, 9, 11, 11, 13, 13, 15]
    assert all(s % 2 == 1 for s in sizes)
    for fam in FAMILIES:
        ks = [knobs_for_difficulty(d, family=fam) for d in np.linspace(1, 10, 10)]
        assert all(a.flag_distance <= b.flag_distance for a, b in zip(ks, ks[1:]))
        assert all(a.wall_density <= b.wall_density for a, b in zip(ks, ks[1:]))
        assert all(a.braid >= b.braid for a, b in zip(ks, ks[1:]))
    assert knobs_for_difficulty(2).family == "open" and knobs_for_difficulty(9).family == "maze"


def test_knobs_dict_round_trip_and_max_steps():
    k = Knobs(family="rooms", size=13, flag_distance=6, agents_per_team=2)
    assert Knobs.from_dict({**k.to_dict(), "difficulty": 3}) == k
    assert k.effective_max_steps == default_max_steps(13)
    assert Knobs(max_steps=50).effective_max_steps == 50
