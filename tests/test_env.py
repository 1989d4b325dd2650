"""MazeRace-v0: every rule, observations, glyphs, hand-written maps (the contract every level game keeps, API
and seeding included, is tests/test_level_game_contract.py)."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.games import make_bot
from spade_rllib.envs import Knobs, Level, MazeRace, generate_level
from spade_rllib.envs.maze_race import (CH_DIST, CH_FLAG, CH_MATE, CH_OPP, CH_STUN, CH_WALL, DOWN, LEFT, NOOP, RIGHT,
                                        TAG, UP, V_COOLDOWN, V_DOWNHILL, V_LEAD, V_OPP_ADJ, V_STUN, V_TAG_READY,
                                        V_TEAM, V_TIME)

P0, P1 = "player_0", "player_1"


def env_for(text: str, **kw) -> MazeRace:
    env = MazeRace(level=Level.from_ascii(text), **kw)
    env.reset(seed=0)
    return env


def split(env: MazeRace, obs: np.ndarray):
    (w, _, c), v = MazeRace.obs_layout(env.view_radius)
    return obs[: w * w * c].reshape(w, w, c), obs[w * w * c:]


# ---------------------------------------------------------------------------- API / determinism


def test_same_seed_same_level_and_different_seeds_differ():
    env = MazeRace(difficulty=7)
    env.reset(seed=11)
    a = env.level
    env.reset(seed=11)
    assert env.level == a
    env.reset(seed=12)
    assert env.level != a


# ---------------------------------------------------------------------------- rules
ROW = """\
#######
#.AB..#
#.....#
#..F..#
#######"""


def test_tag_stuns_adjacent_opponent_starting_this_step():
    env = env_for(ROW)
    obs, *_ = env.step({P0: TAG, P1: DOWN})
    assert env.positions[P1] == (1, 3)  # its move was cancelled by the tag
    assert env.stun[P1] == 2 and env.cooldown[P0] == 4
    _, vec = split(env, obs[P1])
    assert vec[V_STUN] == pytest.approx(2 / 3) and vec[V_TAG_READY] == 0
    win, vec0 = split(env, obs[P0])
    r = env.view_radius
    assert win[r, r + 1, CH_OPP] == 1 and win[r, r + 1, CH_STUN] == 1
    assert vec0[V_COOLDOWN] == pytest.approx(4 / 5) and vec0[V_OPP_ADJ] == 1
    for expected_stun in (1, 0):  # stunned for 3 steps in all: actions ignored
        env.step({P0: NOOP, P1: DOWN})
        assert env.positions[P1] == (1, 3) and env.stun[P1] == expected_stun
    env.step({P0: NOOP, P1: DOWN})
    assert env.positions[P1] == (2, 3)


def test_stunned_agent_cannot_tag_and_tag_out_of_range_uses_cooldown():
    env = env_for(ROW)
    env.step({P0: TAG, P1: NOOP})
    env.step({P0: NOOP, P1: TAG})  # stunned: ignored
    assert env.stun[P0] == 0 and env.cooldown[P1] == 0
    env2 = env_for(ROW.replace(".AB..", ".A..B"))
    env2.step({P0: TAG, P1: NOOP})
    assert env2.stun[P1] == 0 and env2.cooldown[P0] == 4


def test_cooldown():
    env = env_for(ROW)
    env.step({P0: TAG, P1: NOOP})
    cds = []
    for _ in range(4):
        env.step({P0: TAG, P1: NOOP})  # on cooldown: no effect
        cds.append(env.cooldown[P0])
    assert cds == [3, 2, 1, 0] and env.stun[P1] == 0
    env.step({P0: TAG, P1: NOOP})  # 5 steps after the first tag: ready again
    assert env.stun[P1] == 2 and env.cooldown[P0] == 4


def test_mutual_tags_both_land():
    env = env_for(ROW)
    env.step({P0: TAG, P1: TAG})
    assert env.stun[P0] == 2 and env.stun[P1] == 2


def test_custom_stun_and_cooldown():
    env = env_for(ROW, stun_steps=1, tag_cooldown=0)
    env.step({P0: TAG, P1: DOWN})
    assert env.stun[P1] == 0 and env.positions[P1] == (1, 3)
    env.step({P0: TAG, P1: DOWN})
    assert env.positions[P1] == (1, 3)


def test_blocking_and_swap_fail():
    env = env_for(ROW)
    env.step({P0: RIGHT, P1: NOOP})
    assert env.positions == {P0: (1, 2), P1: (1, 3)}
    env.step({P0: RIGHT, P1: LEFT})  # swap
    assert env.positions == {P0: (1, 2), P1: (1, 3)}
    env.step({P0: RIGHT, P1: RIGHT})  # cannot follow into a cell being vacated
    assert env.positions == {P0: (1, 2), P1: (1, 4)}
    env.step({P0: UP, P1: NOOP})  # into a wall
    assert env.positions[P0] == (1, 2)


def test_contested_cell_goes_to_one_agent_deterministically():
    text = ROW.replace(".AB..", ".A.B.")
    winners = set()
    for seed in range(12):
        env = MazeRace(level=Level.from_ascii(text))
        env.reset(seed=seed)
        env.step({P0: RIGHT, P1: LEFT})
        pos = env.positions
        assert sorted([pos[P0], pos[P1]]) in ([(1, 2), (1, 3)], [(1, 3), (1, 4)])
        assert len(set(pos.values())) == 2
        winners.add(P0 if pos[P0] == (1, 3) else P1)
        env2 = MazeRace(level=Level.from_ascii(text))
        env2.reset(seed=seed)
        env2.step({P0: RIGHT, P1: LEFT})
        assert env2.positions == pos
    assert winners == {P0, P1}


FLAG_BETWEEN = """\
#######
#.....#
#.AFB.#
#.....#
#######"""


def test_capture_rewards_and_end_for_all():
    env = env_for(FLAG_BETWEEN)
    obs, rew, term, trunc, info = env.step({P0: RIGHT, P1: NOOP})
    assert rew == {P0: 1.0, P1: -1.0}
    assert term == {P0: True, P1: True} and trunc == {P0: False, P1: False}
    assert env.agents == []
    for a in (P0, P1):
        assert info[a]["winner"] == "A" and info[a]["reason"] == "flag" and info[a]["episode_length"] == 1
        assert info[a]["team"] == env.team_of(a)
        assert info[a]["level"]["height"] == 5
    env.reset(seed=0)
    _, rew, *_ , info = env.step({P0: NOOP, P1: LEFT})
    assert rew == {P0: -1.0, P1: 1.0} and info[P0]["winner"] == "B"


def test_simultaneous_arrival_is_a_draw():
    env = env_for(FLAG_BETWEEN)
    _, rew, term, _, info = env.step({P0: RIGHT, P1: LEFT})
    assert rew == {P0: 0.0, P1: 0.0} and all(term.values())
    assert info[P0]["winner"] == "draw" and info[P0]["reason"] == "both_flag"


def test_stunned_agent_cannot_capture():
    env = env_for(FLAG_BETWEEN.replace(".AFB.", ".AFB.").replace("#.....#\n#######", "#.....#\n#######"))
    env.positions[P1] = (1, 3)  # above the flag, adjacent to nobody; put A next to it instead
    env.positions[P0] = (1, 2)
    env.step({P0: TAG, P1: DOWN})
    assert env.agents and env.positions[P1] == (1, 3)


def test_timeout_is_a_draw_with_truncation():
    env = env_for(FLAG_BETWEEN, max_steps=3)
    for i in range(3):
        obs, rew, term, trunc, info = env.step({P0: NOOP, P1: NOOP})
        _, vec = split(env, obs[P0])
        assert vec[V_TIME] == pytest.approx((3 - i - 1) / 3)
    assert all(trunc.values()) and not any(term.values()) and rew == {P0: 0.0, P1: 0.0}
    assert info[P1]["winner"] == "draw" and info[P1]["reason"] == "timeout" and info[P1]["episode_length"] == 3
    assert env.agents == []
    # Stepping a finished episode used to return empty dicts, which hid runner bugs that kept
    # stepping dead envs; it is refused now, like CaptureTheFlag and PettingZoo's own envs (issue 16).
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step({P0: NOOP})


TEAM = """\
#########
#.A...B.#
#...F...#
#.A...B.#
#########"""


def test_team_mode_2v2():
    env = env_for(TEAM)
    assert env.possible_agents == ["a_0", "a_1", "b_0", "b_1"]
    assert [env.team_of(a) for a in env.possible_agents] == [0, 0, 1, 1]
    assert env.positions == {"a_0": (1, 2), "a_1": (3, 2), "b_0": (1, 6), "b_1": (3, 6)}
    obs, *_ = env.step({"a_0": RIGHT, "b_0": LEFT})
    win, vec = split(env, obs["a_0"])
    r = env.view_radius
    assert win[r + 2, r - 1, CH_MATE] == 1 and win[r, r + 2, CH_OPP] == 1 and vec[V_TEAM] == 0
    assert split(env, obs["b_1"])[1][V_TEAM] == 1
    # a_0 at (1,3), b_0 at (1,5): b_0 steps next to a_0, a_0 tags both opponents in range
    env.step({"b_0": LEFT})
    env.positions["b_1"] = (2, 3)
    env.step({"a_0": TAG, "a_1": RIGHT})
    assert env.stun["b_0"] == 2 and env.stun["b_1"] == 2 and env.stun["a_1"] == 0
    _, rew, term, _, info = env.step({"a_1": UP, "a_0": NOOP})  # (3,3) -> (2,3) is b_1's cell: blocked
    assert env.agents
    env.positions["a_1"] = (3, 4)
    _, rew, term, _, info = env.step({"a_1": UP})
    assert rew == {"a_0": 1.0, "a_1": 1.0, "b_0": -1.0, "b_1": -1.0} and all(term.values())
    assert info["b_1"]["winner"] == "A"


TEAM_FLAG = """\
#########
#.A.F.B.#
#.A...B.#
#########"""


def test_teammates_block_each_other_and_same_team_flag_contest_wins():
    env = env_for(TEAM_FLAG)
    env.step({"a_1": UP})  # into its teammate's cell
    assert env.positions["a_1"] == (2, 2)
    env.positions.update({"a_0": (1, 3), "a_1": (2, 4)})
    _, rew, term, _, info = env.step({"a_0": RIGHT, "a_1": UP})
    assert info["a_0"]["winner"] == "A" and info["a_0"]["reason"] == "flag" and rew["b_0"] == -1.0
    assert sorted(env.positions[a] for a in ("a_0", "a_1")) in ([(1, 3), (1, 4)], [(1, 4), (2, 4)])


# ---------------------------------------------------------------------------- observations
@pytest.mark.parametrize("view_radius", [2, 4])
def test_observation_spaces_identical_across_sizes(view_radius):
    spaces = set()
    for size in range(5, 26, 2):
        for fam in ("open", "maze", "rooms"):
            env = MazeRace(knobs=Knobs(family=fam, size=size, flag_distance=None), view_radius=view_radius)
            obs, _ = env.reset(seed=size)
            sp = env.observation_space(P0)
            spaces.add((sp.shape, sp.dtype, float(sp.low.min()), float(sp.high.max())))
            assert all(sp.contains(o) for o in obs.values())
    for n in (5, 8, 25):
        text = "\n".join(["#" * n] + ["#" + "." * (n - 2) + "#"] * (n - 2) + ["#" * n])
        text = text.replace("#" + "." * (n - 2) + "#", "#A" + "." * (n - 4) + "B#", 1)
        rows = text.split("\n")
        rows[n // 2] = "#" + "." * ((n - 3) // 2) + "F" + "." * (n - 3 - (n - 3) // 2) + "#"
        env = env_for("\n".join(rows), view_radius=view_radius)
        sp = env.observation_space(P0)
        spaces.add((sp.shape, sp.dtype, float(sp.low.min()), float(sp.high.max())))
    (w, _, c), v = MazeRace.obs_layout(view_radius)
    assert spaces == {((w * w * c + v,), np.dtype(np.float32), -1.0, 1.0)}


def test_observation_content():
    env = env_for(ROW)
    obs, _ = env.reset(seed=0)
    win, vec = split(env, obs[P0])
    r = env.view_radius
    assert win[r - 1, r, CH_WALL] == 1 and win[0, 0, CH_WALL] == 1  # border and outside the map read as walls
    assert win[r, r, CH_WALL] == 0
    assert win[r + 2, r + 1, CH_FLAG] == 1 and win[..., CH_FLAG].sum() == 1
    assert win[r, r, CH_DIST] == 0 and win[r + 2, r + 1, CH_DIST] < 0 and win[r - 1, r, CH_DIST] == 1
    # downhill hint: down and right both shorten the path from (1,2) to (3,3)
    assert list(vec[V_DOWNHILL:V_DOWNHILL + 4]) == [0, 1, 0, 1]
    assert vec[V_LEAD] < 0  # B starts one step closer
    assert vec[V_TAG_READY] == 1 and vec[V_TIME] == 1
    obs2, *_ = env.step({P0: NOOP, P1: NOOP})
    assert not np.shares_memory(obs2[P0], obs[P0])


def test_downhill_hint_walks_shortest_path_in_a_maze():
    lv = generate_level(Knobs(family="maze", size=21, braid=0.0, flag_distance=36), 2)
    env = MazeRace(level=lv)
    obs, _ = env.reset(seed=0)
    d0 = lv.distance_to_flag()[lv.spawns[0][0]]
    for t in range(d0):
        vec = split(env, obs[P0])[1]
        action = [UP, DOWN, LEFT, RIGHT][int(np.argmax(vec[V_DOWNHILL:V_DOWNHILL + 4]))]
        obs, rew, *_ = env.step({P0: action, P1: NOOP})
    assert rew[P0] == 1.0 and env.outcome["episode_length"] == d0


# ---------------------------------------------------------------------------- levels per episode


# ---------------------------------------------------------------------------- hand-written maps play
def hand_map(n: int) -> str:
    rows = [["#"] * n] + [["#"] + ["."] * (n - 2) + ["#"] for _ in range(n - 2)] + [["#"] * n]
    for r in range(2, n - 2, 2):  # wall stubs to route around
        for c in range(1 + (r // 2) % 2, n - 2, 3):
            rows[r][c] = "#"
    rows[1][1], rows[n - 2][n - 2], rows[n // 2][n // 2] = "A", "B", "F"
    return "\n".join("".join(x) for x in rows)


@pytest.mark.parametrize("n", [5, 6, 9, 14, 21, 25, 31])
def test_hand_written_maps_load_and_play(n):
    try:
        lv = Level.from_ascii(hand_map(n))
    except Exception as e:  # pragma: no cover - map construction bug, not env bug
        pytest.fail(f"hand map {n}: {e}")
    env = MazeRace(level=lv, render_mode="ansi")
    env.reset(seed=n)
    bots = {a: make_bot("rusher", seed=i, env_id="MazeRace-v0") for i, a in enumerate(env.possible_agents)}
    while env.agents:
        _, _, _, _, info = env.step({a: bots[a].act(env, a) for a in env.agents})
    assert info[P0]["winner"] in ("A", "B", "draw")
    assert info[P0]["reason"] in ("flag", "both_flag")  # rushers always arrive
    assert env.render().count("\n") == n + 1


# ---------------------------------------------------------------------------- render / registry
def test_render_modes():
    env = env_for(ROW, render_mode="ansi")
    text = env.render()
    assert text.splitlines()[1] == "#.AB..#" and "step 0/" in text
    env.step({P0: TAG})
    assert env.render().splitlines()[1] == "#.Ab..#"
    env = env_for(ROW, render_mode="rgb_array")
    img = env.render()
    assert img.shape == (5 * 8, 7 * 8, 3) and img.dtype == np.uint8
    assert MazeRace.metadata["name"] == "MazeRace-v0"


