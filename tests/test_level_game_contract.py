"""The contract every level game of the catalog keeps (MazeRace-v0, CaptureTheFlag-v0, and any game
registered later): PettingZoo API and seeding, levels per episode, the shared strict checks, the
observation layout, infos, rendering, pickling, and its levels (generated ones fair and
point-symmetric; the shipped held-out maps load, are fair and play). Each game's own rules are
tested in test_env.py (MazeRace) and test_ctf_env.py (CaptureTheFlag)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test, parallel_seed_test

from spade_rllib.envs import Knobs, Level, knobs_for_difficulty
from spade_rllib.games import game, level_game_ids, make_env

GAMES = level_game_ids()
P0 = "player_0"


def cls_of(env_id: str):
    return game(env_id).level_class


def other_kind(env_id: str) -> Level:
    """A level of the other map kind (CTF bases vs a MazeRace flag)."""
    if cls_of(env_id).CTF_LEVELS:
        return Level.from_ascii("#####\n#A.B#\n#.F.#\n#####")
    return Level.from_ascii("#######\n#a.A..#\n#.....#\n#..B.b#\n#######")


def two_per_team(env_id: str) -> Level:
    spec = game(env_id)
    return spec.level_generator(knobs_for_difficulty(3, agents_per_team=2), 0)


def rollout(env, seed: int, steps: int = 300):
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    trace = [env.level.to_ascii(), [o.copy() for o in obs.values()]]
    for _ in range(steps):
        if not env.agents:
            obs, _ = env.reset()
            trace.append(env.level.to_ascii())
        obs, rew, term, trunc, info = env.step({a: int(rng.integers(6)) for a in env.agents})
        trace.append((sorted(env.positions.items()), [o.copy() for o in obs.values()], rew, term, trunc,
                      info[env.possible_agents[0]]))
    return trace


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


# ---------------------------------------------------------------------------- API and seeding
@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("kw", [dict(difficulty=3), dict(difficulty=8, agents_per_team=2),
                                dict(knobs=Knobs(family="maze", size=21))], ids=["d3", "2v2", "maze21"])
def test_parallel_api(env_id, kw):
    parallel_api_test(make_env(env_id, seed=1, **kw), num_cycles=300)


@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("apt", [1, 2])
def test_pettingzoo_seed_test_and_full_determinism(env_id, apt):
    parallel_seed_test(lambda: make_env(env_id, difficulty=6, agents_per_team=apt), num_cycles=200)
    t1 = rollout(make_env(env_id, difficulty=5, agents_per_team=apt), seed=3)
    t2 = rollout(make_env(env_id, difficulty=5, agents_per_team=apt), seed=3)
    t3 = rollout(make_env(env_id, difficulty=5, agents_per_team=apt), seed=4)
    assert _equal(t1, t2) and not _equal(t1, t3)


@pytest.mark.parametrize("env_id", GAMES)
def test_agents_teams_and_catalog(env_id):
    env = make_env(env_id, difficulty=4, agents_per_team=2)
    assert isinstance(env, cls_of(env_id)) and env.metadata["name"] == env_id
    assert env.possible_agents == ["a_0", "a_1", "b_0", "b_1"]
    assert [env.team_of(a) for a in env.possible_agents] == [0, 0, 1, 1]
    assert make_env(env_id).possible_agents == ["player_0", "player_1"]
    with pytest.raises(ValueError, match=f"did you mean '{env_id}'"):
        make_env(env_id.replace("-v0", "-v9"))


# ---------------------------------------------------------------------------- levels per episode
@pytest.mark.parametrize("env_id", GAMES)
def test_reset_options_choose_the_level(env_id):
    env = make_env(env_id, difficulty=3, seed=0)
    generate = game(env_id).level_generator
    lv = generate(Knobs(family="open", size=9), 1)
    env.reset(options={"level": lv})
    assert env.level is lv
    k = Knobs(family="rooms", size=13)
    env.reset(options={"knobs": k, "level_seed": 5})
    assert env.level == generate(k, 5)
    env.reset(options={"knobs": k.to_dict(), "level_seed": 5})
    assert env.level == generate(k, 5)
    env.reset(options={"difficulty": 9})
    assert env.level.meta["difficulty"] == 9
    with pytest.raises(ValueError, match="level has 2 agents per team; this env plays 1"):
        env.reset(options={"level": two_per_team(env_id)})
    with pytest.raises(TypeError, match="options must be a dict"):
        env.reset(options=["level"])
    with pytest.raises(TypeError, match=r"options\['knobs'\] must be a Knobs or a dict"):
        env.reset(options={"knobs": 3})
    with pytest.raises(ValueError, match="map"):
        env.reset(options={"level": other_kind(env_id)})


@pytest.mark.parametrize("env_id", GAMES)
def test_final_info_carries_outcome_and_level(env_id):
    env = make_env(env_id, difficulty=4, seed=0, max_steps=2)
    env.reset(seed=0)
    env.step({})
    _, rew, term, trunc, info = env.step({})
    assert env.agents == [] and all(trunc.values()) and not any(term.values()) and set(rew.values()) == {0.0}
    final = info[P0]
    assert final["winner"] == "draw" and final["reason"] == "timeout" and final["episode_length"] == 2
    lvl = final["level"]
    assert lvl["difficulty"] == 4.0 and lvl["max_steps"] == 2 and "level_seed" in lvl and "family" in lvl
    assert {k: final[k] for k in env.outcome} == env.outcome and final["team"] == 0


# ---------------------------------------------------------------------------- strict checks (one behaviour)
@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("kwargs, error, match", [
    (dict(difficulty=3, knobs=Knobs()), ValueError, "at most one of"),
    (dict(agents_per_team=3), ValueError, "agents_per_team must be 1 or 2"),
    (dict(agents_per_team=True), ValueError, "agents_per_team must be 1 or 2"),
    (dict(view_radius=0), ValueError, r"view_radius must be an int in \[1, 12\]"),
    (dict(max_steps=0), ValueError, r"max_steps must be None or an int in \[1, 100000\]"),
    (dict(max_steps=100_001), ValueError, "max_steps must be None or an int"),
    (dict(render_mode="human"), ValueError, "render_mode must be None or one of"),
    (dict(seed="abc"), TypeError, "seed must be None or an int"),
    (dict(level="#####"), TypeError, "level must be a Level"),
    (dict(knobs={"size": 9}), TypeError, "knobs must be a Knobs"),
    (dict(difficulty=0), ValueError, r"difficulty must be a number in \[1, 10\]"),
])
def test_bad_arguments_are_one_line_errors(env_id, kwargs, error, match):
    with pytest.raises(error, match=match) as ei:
        make_env(env_id, **kwargs)
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("env_id", GAMES)
def test_maps_of_the_other_kind_and_team_sizes_are_refused(env_id):
    with pytest.raises(ValueError, match="map") as ei:
        make_env(env_id, level=other_kind(env_id))
    assert "\n" not in str(ei.value)
    with pytest.raises(ValueError, match="agents_per_team=1 but the level/knobs have 2 per team"):
        make_env(env_id, level=two_per_team(env_id), agents_per_team=1)
    three = "###########\n#aAAA.BBBb#\n###########" if cls_of(env_id).CTF_LEVELS else "#########\n#AAAFBBB#\n#########"
    with pytest.raises(ValueError, match=f"3 spawns per team; {env_id[:-3]} plays 1 or 2"):
        make_env(env_id, level=Level.from_ascii(three))


@pytest.mark.parametrize("env_id", GAMES)
@pytest.mark.parametrize("bad", [6, -1, True, 1.5, "1", None, np.float32(2.0)])
def test_invalid_action_raises_and_changes_nothing(env_id, bad):
    env = make_env(env_id, difficulty=3, seed=0)
    env.reset(seed=0)
    before = (dict(env.positions), env.step_count)
    with pytest.raises(ValueError, match=r"action for player_0 must be an int in \[0, 5\]"):
        env.step({P0: bad})
    assert (dict(env.positions), env.step_count) == before


@pytest.mark.parametrize("env_id", GAMES)
def test_step_order_agents_and_numpy_actions(env_id):
    env = make_env(env_id, difficulty=3, seed=0, max_steps=3)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step({P0: 0})
    with pytest.raises(TypeError, match="reset\\(seed=...\\) must be None or an int"):
        env.reset(seed="abc")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent 'player_9'"):
        env.step({"player_9": 0})
    with pytest.raises(TypeError, match="actions must be a dict"):
        env.step([0, 0])
    env.step({P0: np.int64(1), "player_1": np.array(0)})
    env.step({})
    env.step({})
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step({})


# ---------------------------------------------------------------------------- observation, render, pickle
@pytest.mark.parametrize("env_id", GAMES)
def test_observation_size_is_the_same_for_every_level(env_id):
    cls = cls_of(env_id)
    (w, _, c), v = cls.obs_layout(4)
    sizes = set()
    for d in (1, 5, 10):
        for apt in (1, 2):
            env = make_env(env_id, difficulty=d, agents_per_team=apt, seed=0)
            obs, _ = env.reset(seed=0)
            sizes |= {o.shape for o in obs.values()}
            assert all(env.observation_space(a).contains(o) for a, o in obs.items())
    assert sizes == {(w * w * c + v,)} and (w, c) == (9, cls.NUM_CHANNELS)
    assert make_env(env_id, view_radius=2).observation_space(P0).shape == (5 * 5 * c + v,)


@pytest.mark.parametrize("env_id", GAMES)
def test_render_modes(env_id):
    env = make_env(env_id, difficulty=2, seed=0, render_mode="ansi")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.reset(seed=0)
    text = env.render()
    assert "step 0/" in text and text.count("\n") == env.level.height + 1
    img = make_env(env_id, difficulty=2, seed=0, render_mode="rgb_array")
    img.reset(seed=0)
    frame = img.render()
    assert frame.shape == (img.level.height * 8, img.level.width * 8, 3) and frame.dtype == np.uint8


@pytest.mark.parametrize("env_id", GAMES)
def test_pickle_env(env_id):
    env = make_env(env_id, difficulty=5, seed=0)
    env.reset(seed=0)
    env2 = pickle.loads(pickle.dumps(env))
    assert env2.level == env.level and env2.positions == env.positions


# ---------------------------------------------------------------------------- levels of the game
def _point_symmetric(lv: Level) -> bool:
    n, m = lv.height, lv.width
    flip = lambda cell: (n - 1 - cell[0], m - 1 - cell[1])  # noqa: E731
    goals = lv.bases if lv.is_ctf else (lv.flag, lv.flag)
    return (np.array_equal(lv.walls, lv.walls[::-1, ::-1]) and goals[1] == flip(goals[0])
            and sorted(lv.spawns[1]) == sorted(flip(s) for s in lv.spawns[0]))


@pytest.mark.parametrize("env_id", GAMES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), difficulty=st.floats(1, 10), apt=st.sampled_from([1, 2]),
       family=st.sampled_from([None, "open", "rooms", "maze"]))
def test_generated_levels_are_fair_point_symmetric_and_round_trip(env_id, seed, difficulty, apt, family):
    lv = game(env_id).level_generator(knobs_for_difficulty(difficulty, family=family, agents_per_team=apt), seed)
    assert lv.is_ctf == cls_of(env_id).CTF_LEVELS and lv.agents_per_team == apt
    assert lv.fairness() == 0 and _point_symmetric(lv)
    assert Level.from_ascii(lv.to_ascii()) == lv


@pytest.mark.parametrize("path", [p for g in GAMES if game(g).heldout_dir for p in sorted(game(g).heldout_dir.glob("*.txt"))],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_shipped_heldout_maps_load_are_fair_and_play(path):
    env_id = next(g for g in GAMES if game(g).heldout_dir == path.parent)
    lv = Level.from_ascii(path.read_text(), max_unfairness=0)
    assert lv.is_ctf == cls_of(env_id).CTF_LEVELS and lv.to_ascii() == path.read_text().strip()
    env = make_env(env_id, level=lv)
    obs, _ = env.reset(seed=0)
    assert all(env.observation_space(a).contains(o) for a, o in obs.items())
    rng = np.random.default_rng(0)
    while env.agents:
        env.step({a: int(rng.integers(6)) for a in env.agents})
    assert env.outcome["winner"] in ("A", "B", "draw")
