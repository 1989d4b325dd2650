"""ACCEL's level edits keep every MazeRace and CaptureTheFlag level valid and fair (hypothesis over
generated levels, held-out maps and edit seeds), and `accel` puts edited levels into PLR's buffer."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spade_rllib.curriculum import LevelSpec, build_level, edit_level, load_heldout_levels, make_strategy, sample_level
from spade_rllib.curriculum.level_edits import mirror, mutate, spread, toggle_wall_pair
from spade_rllib.envs import Knobs, Level, generate_level
from spade_rllib.envs.generators import generate_ctf_level
from spade_rllib.games import CTF_ID, MAZERACE_ID, heldout_dir

HELDOUT_DIR = heldout_dir(MAZERACE_ID)
MAZE_BUILDER = functools.partial(build_level, env_id=MAZERACE_ID)
CTF_HELDOUT = heldout_dir(CTF_ID)

knobs = st.builds(lambda fam, size, wd, braid, n: Knobs(family=fam, size=size, wall_density=wd, braid=braid,
                                                        agents_per_team=n),
                  st.sampled_from(["open", "maze", "rooms"]), st.sampled_from([7, 9, 11, 13]),
                  st.floats(0.0, 0.3), st.floats(0.0, 1.0), st.sampled_from([1, 2]))


def level_of(game: str, k: Knobs, seed: int) -> Level:
    return generate_ctf_level(k, seed) if game == "ctf" else generate_level(k, seed)


def assert_valid_fair_child(parent: Level, child: Level) -> None:
    again = Level.from_ascii(child.to_ascii())  # validity: the map parses and passes every check
    assert again.is_ctf == parent.is_ctf
    assert (again.height, again.width) == (parent.height, parent.width)
    assert again.agents_per_team == parent.agents_per_team
    assert again.fairness() == 0 and parent.fairness() == 0
    assert again.walls[0].all() and again.walls[-1].all() and again.walls[:, 0].all() and again.walls[:, -1].all()


@settings(max_examples=60, deadline=None)
@given(game=st.sampled_from(["mazerace", "ctf"]), k=knobs, level_seed=st.integers(0, 10_000),
       edit_seed=st.integers(0, 2**32 - 1), edits=st.integers(1, 6))
def test_mutations_keep_levels_valid_and_fair(game, k, level_seed, edit_seed, edits):
    parent = level_of(game, k, level_seed)
    child = mutate(parent, np.random.default_rng(edit_seed), edits)
    if child is not None:
        assert_valid_fair_child(parent, child)
        assert (child.walls == child.walls[::-1, ::-1]).all()  # generated levels are point-symmetric; so are children


@settings(max_examples=40, deadline=None)
@given(game=st.sampled_from(["mazerace", "ctf"]), k=knobs, level_seed=st.integers(0, 10_000),
       edit_seed=st.integers(0, 2**32 - 1))
def test_each_edit_is_valid_fair_and_symmetric(game, k, level_seed, edit_seed):
    parent = level_of(game, k, level_seed)
    rng = np.random.default_rng(edit_seed)
    for edit in (toggle_wall_pair, spread):
        child = edit(parent, rng)
        if child is None:
            continue
        assert_valid_fair_child(parent, child)
        walls = child.walls
        assert (walls == walls[::-1, ::-1]).all()  # point-symmetric parent, point-symmetric child


def test_spread_moves_the_bases_apart_and_the_spawns_from_the_flag():
    k = Knobs(family="open", size=11, wall_density=0.0, agents_per_team=1)
    moved = 0
    for seed in range(20):
        ctf = generate_ctf_level(k, seed)
        child = spread(ctf, np.random.default_rng(seed))
        if child is not None:
            moved += 1
            assert child.bases[1] == mirror(child, child.bases[0])
            assert child.distance_to_base(1)[child.bases[0]] > ctf.distance_to_base(1)[ctf.bases[0]]
        race = generate_level(Knobs(family="open", size=11, wall_density=0.0, flag_distance=4), seed)
        child = spread(race, np.random.default_rng(seed))
        if child is not None:
            moved += 1
            assert child.team_distances()[0][0] > race.team_distances()[0][0]
    assert moved >= 20


@pytest.mark.parametrize("path", [HELDOUT_DIR, CTF_HELDOUT], ids=["mazerace", "ctf"])
def test_heldout_maps_mutate_fairly(path):
    for name, level in load_heldout_levels(path).items():
        for seed in range(5):
            child = mutate(level, np.random.default_rng(seed), 3)
            assert child is not None, name
            assert_valid_fair_child(level, child)


def test_accel_edits_replays_and_children_enter_the_buffer():
    cfg = {"strategy": "accel", "plr": {"capacity": 4, "min_fill": 0.5, "replay_prob": 1.0, "prior": 0.0},
           "accel": {"edit_prob": 1.0, "edits": 2}, "uniform": {"size": [9, 9]}}
    s = make_strategy(cfg, seed=0)
    for i in range(2):  # two new levels that main wins half the time: buffer at min_fill
        spec = s.sample()
        assert not s.can_replay and spec.is_generated
        s.update([{"winner": w, "reason": "flag", "level_spec": spec.to_dict(), "main_team": 0} for w in "AB"])
    state = s.sampling_state()
    assert state["kind"] == "plr" and state["edit_prob"] == 1.0 and state["can_replay"]
    rng = np.random.default_rng(1)
    child = sample_level(state, rng, MAZE_BUILDER)
    assert not child.is_generated and child.level_id not in {e.spec["level_id"] for e in s.entries}
    assert sample_level(state, np.random.default_rng(1), MAZE_BUILDER) == child  # a pure function of (state, rng)
    s.update([{"winner": w, "reason": "flag", "level_spec": child.to_dict(), "main_team": 1} for w in "AB"])
    assert s.entries[-1].spec == child.to_dict() and s.entries[-1].score == pytest.approx(0.25)
    assert s.metrics()["curriculum/edited_share"] == pytest.approx(1 / 3)


def test_edit_level_keeps_the_parent_when_nothing_fits():
    tiny = LevelSpec.grid("#####\n#AFB#\n#####")
    assert edit_level(tiny, np.random.default_rng(0), 3, MAZE_BUILDER) == tiny


def test_accel_edits_capture_the_flag_levels_on_the_runner_path():
    """The runner's level source builds ACCEL parents with the game's own builder: a CTF parent gives a
    CTF child (regression: edits built the parent as a MazeRace level and the CTF env refused the child)."""
    import functools

    from spade_rllib.curriculum import CurriculumLevelSource
    from spade_rllib.curriculum.level_spec import build_level
    from spade_rllib.envs.ctf import CaptureTheFlag

    cfg = {"strategy": "accel", "plr": {"capacity": 2, "min_fill": 0.5, "replay_prob": 1.0, "prior": 0.0},
           "accel": {"edit_prob": 1.0, "edits": 2}, "uniform": {"size": [9, 9]}}
    s = make_strategy(cfg, seed=0)
    parent = s.sample()
    s.update([{"winner": w, "reason": "capture", "level_spec": parent.to_dict(), "main_team": 0} for w in "AB"])
    builder = functools.partial(build_level, env_id="CaptureTheFlag-v0")
    source = CurriculumLevelSource(s.sampling_state(), builder, seed=0, version=1)
    children = [source.reset_options((0, 0, n)) for n in range(4)]
    assert any(not LevelSpec.from_dict(c["level_spec"]).is_generated for c in children)
    env = CaptureTheFlag()
    for c in children:
        assert c["level"].is_ctf
        env.reset(seed=0, options={"level": c["level"]})
