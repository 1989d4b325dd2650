"""CaptureTheFlag-v0: every rule, its own argument checks, observation, infos, glyphs (the contract every level
game keeps, API and seeding included, is tests/test_level_game_contract.py)."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.envs import CaptureTheFlag, Knobs, Level
from spade_rllib.envs.ctf import (CH_CARRIER, CH_ENEMY_BASE, CH_ENEMY_FLAG, CH_HALF, CH_OPP, CH_OWN_BASE, CH_OWN_FLAG,
                                  CH_TRAIL, CH_WALL, LEFT, NOOP, RIGHT, TAG, UP, V_BASE_DC, V_BASE_DIST, V_BASE_DR,
                                  V_CARRYING, V_COOLDOWN, V_ENEMY_FLAG_DC, V_ENEMY_FLAG_DIST, V_ENEMY_FLAG_DR,
                                  V_ENEMY_FLAG_HOME, V_OWN_FLAG_HOME, V_RESPAWN, V_TAG_READY, V_TEAM, V_TIME,
                                  SEEN_CHANNELS, SEEN_DECAY)

P0, P1 = "player_0", "player_1"
# a (1,1) and b (3,7); A's half is the left part, B's the right; column 4 is neutral
MAP = """\
#########
#a.A....#
#.......#
#....B.b#
#########"""


def env_for(text: str = MAP, **kw) -> CaptureTheFlag:
    env = CaptureTheFlag(level=Level.from_ascii(text), **kw)
    env.reset(seed=0)
    return env


def split(env: CaptureTheFlag, obs: np.ndarray):
    (w, _, c), v = CaptureTheFlag.obs_layout(env.view_radius)
    return obs[: w * w * c].reshape(w, w, c), obs[w * w * c:]


# ---------------------------------------------------------------------------- API / determinism


# ---------------------------------------------------------------------------- rules
def place(env: CaptureTheFlag, **cells):
    for a, cell in cells.items():
        env.positions[a] = cell


def test_pickup_capture_rewards_and_final_infos():
    env = env_for()
    place(env, player_0=(3, 6), player_1=(1, 5))
    _, rew, term, _, _ = env.step({P0: RIGHT, P1: NOOP})  # onto base b
    assert env.carrier == [None, P0] and env.carrying(P0) and env.flag_pickups == [1, 0]
    assert not any(term.values()) and rew[P0] == 0
    place(env, player_0=(1, 2))
    obs, rew, term, trunc, infos = env.step({P0: LEFT, P1: NOOP})  # home, own flag at home
    assert rew == {P0: 1.0, P1: -1.0} and all(term.values()) and not any(trunc.values())
    assert env.agents == []
    info = infos[P1]
    assert info["winner"] == "A" and info["reason"] == "capture" and info["episode_length"] == 2
    assert info["captures"] == {"A": 1, "B": 0} and info["flag_pickups"] == {"A": 1, "B": 0}
    assert info["tags"] == {"A": 0, "B": 0} and info["level"]["height"] == 5 and info["level"]["base_distance"] == 8
    assert env.outcome["winner"] == "A"


def test_capture_needs_own_flag_at_home():
    env = env_for()
    env.carrier = [P1, P0]  # each carries the other's flag
    place(env, player_0=(1, 2), player_1=(3, 6))
    _, rew, term, _, _ = env.step({P0: LEFT, P1: RIGHT})
    assert env.positions[P0] == (1, 1) and env.positions[P1] == (3, 7)
    assert not any(term.values()) and env.captures == [0, 0] and rew[P0] == 0


def test_own_base_is_closed_unless_carrying():
    env = env_for()
    place(env, player_0=(1, 2))
    env.step({P0: LEFT, P1: NOOP})
    assert env.positions[P0] == (1, 2)


def test_agents_never_block_each_other():
    env = env_for()
    place(env, player_0=(2, 3), player_1=(2, 5))
    env.step({P0: RIGHT, P1: LEFT})
    assert env.positions[P0] == env.positions[P1] == (2, 4)


def test_tag_only_in_the_taggers_half_and_sends_back_to_spawn():
    env = env_for()
    half = env.level.half()
    assert half[2, 2] == 0 and half[2, 6] == 1 and half[2, 4] == -1
    # B intrudes into A's half, A tags it (after the moves: B stepped next to A)
    place(env, player_0=(2, 2), player_1=(2, 4))
    env.step({P0: TAG, P1: LEFT})
    assert env.positions[P1] == (3, 5) and env.frozen[P1] == 6 and env.tags == [1, 0]
    # A next to B but B stands in its own half: A's tag misses, and the cooldown is spent anyway
    env = env_for()
    place(env, player_0=(2, 5), player_1=(2, 6))
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (2, 6) and env.tags == [0, 0] and env.cooldown[P0] == 4
    # the same position the other way round: A is in B's half, B's tag lands
    env.step({P0: NOOP, P1: TAG})
    assert env.positions[P0] == (1, 3) and env.tags == [0, 1]


def test_tag_reward_is_zero_sum_per_tag_and_off_by_default():
    for kw, bonus in (({}, 0.0), ({"tag_reward": 0.2}, 0.2)):
        env = env_for(**kw)
        place(env, player_0=(2, 2), player_1=(2, 4))
        _, rew, _, _, _ = env.step({P0: TAG, P1: LEFT})  # A tags the intruder in its half
        assert env.tags == [1, 0] and rew == {P0: bonus, P1: -bonus}
        _, rew, _, _, _ = env.step({P0: NOOP, P1: NOOP})  # nothing happens: nothing paid
        assert rew == {P0: 0.0, P1: 0.0}
    env = env_for(tag_reward=0.2)
    place(env, player_0=(2, 5), player_1=(2, 6))  # a miss (B in its own half) pays nothing
    _, rew, _, _, _ = env.step({P0: TAG, P1: NOOP})
    assert env.tags == [0, 0] and rew == {P0: 0.0, P1: 0.0}
    for bad in (-0.1, 1.5, True, "0.1", float("nan")):
        with pytest.raises(ValueError, match="tag_reward must be a number in"):
            CaptureTheFlag(level=Level.from_ascii(MAP), tag_reward=bad)


def test_new_cell_reward_pays_each_cell_once_per_episode_and_is_off_by_default():
    env = env_for(new_cell_reward=0.05)
    place(env, player_0=(2, 2), player_1=(3, 6))  # placed by hand: (2, 2) counts as new when stood on next step
    _, rew, _, _, _ = env.step({P0: NOOP, P1: NOOP})
    assert rew == {P0: 0.05, P1: 0.05}
    _, rew, _, _, _ = env.step({P0: RIGHT, P1: NOOP})  # a new cell for A; B stays
    assert rew == {P0: 0.05, P1: 0.0}
    _, rew, _, _, _ = env.step({P0: LEFT, P1: NOOP})  # back to a cell A has stood on: nothing
    assert rew == {P0: 0.0, P1: 0.0}
    env.reset(seed=1)  # a new episode forgets the cells
    assert env._visited[P0].sum() == 1 and env._visited[P0][env.positions[P0]]
    plain = env_for()
    place(plain, player_0=(2, 2))
    _, rew, _, _, _ = plain.step({P0: RIGHT, P1: NOOP})
    assert rew == {P0: 0.0, P1: 0.0}
    for bad in (-0.1, 2, False, float("nan")):
        with pytest.raises(ValueError, match="new_cell_reward must be a number in"):
            CaptureTheFlag(level=Level.from_ascii(MAP), new_cell_reward=bad)


def test_training_only_kwargs_are_dropped_from_every_env_evaluation_builds():
    from spade_rllib.games.catalog import evaluation_kwargs, recorded_game_kwargs

    kwargs = {"draw_reward": -0.1, "tag_reward": 0.1, "new_cell_reward": 0.01, "trail": False}
    assert evaluation_kwargs(kwargs) == {"draw_reward": -0.1, "trail": False}
    assert recorded_game_kwargs({"kwargs": {**kwargs, "difficulty": 3}}) == {"draw_reward": -0.1, "trail": False}


def test_tag_reaches_the_four_neighbours_only():
    env = env_for()
    place(env, player_0=(2, 2), player_1=(2, 2))  # same cell: out of reach
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (2, 2)
    env = env_for()
    place(env, player_0=(2, 2), player_1=(1, 3))  # diagonal: out of reach
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (1, 3)


def test_tagged_carrier_drops_the_flag_which_returns_home():
    env = env_for()
    env.carrier = [P1, None]
    place(env, player_0=(2, 1), player_1=(2, 3))
    env.step({P0: TAG, P1: LEFT})  # B's carrier steps next to A in A's half
    assert env.carrier == [None, None] and env.positions[P1] == (3, 5)
    obs = env._observe(P0)
    assert split(env, obs)[1][V_OWN_FLAG_HOME] == 1.0


def test_carriers_anywhere_option():
    for anywhere, tagged in ((False, False), (True, True)):
        env = env_for(tag_carriers_anywhere=anywhere)
        env.carrier = [P1, None]
        place(env, player_0=(2, 5), player_1=(2, 6))  # B carries A's flag, in B's half
        env.step({P0: TAG, P1: NOOP})
        assert (env.positions[P1] == (3, 5)) is tagged


def test_cooldown_and_respawn_wait():
    env = env_for(tag_cooldown=3, respawn_steps=2)
    place(env, player_0=(2, 2), player_1=(2, 3))
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (3, 5) and env.cooldown[P0] == 2
    obs = env._observe(P1)
    assert split(env, obs)[1][V_RESPAWN] == 1.0
    env.step({P0: NOOP, P1: UP})  # waiting: the move is ignored
    assert env.positions[P1] == (3, 5)
    env.step({P0: NOOP, P1: UP})
    assert env.positions[P1] == (3, 5)
    env.step({P0: NOOP, P1: UP})
    assert env.positions[P1] == (2, 5)
    place(env, player_1=(2, 3))
    assert env.cooldown[P0] == 0  # tag_cooldown steps later it is ready again
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (3, 5)


def test_tag_on_cooldown_does_nothing():
    env = env_for(tag_cooldown=5)
    place(env, player_0=(2, 2), player_1=(2, 5))
    env.step({P0: TAG, P1: NOOP})  # a miss spends the cooldown
    place(env, player_1=(2, 3))
    env.step({P0: TAG, P1: NOOP})
    assert env.positions[P1] == (2, 3) and env.tags == [0, 0]


def test_stalemate_returns_both_flags():
    env = env_for(stalemate_steps=3)
    env.carrier = [P1, P0]
    for _ in range(2):
        env.step({P0: NOOP, P1: NOOP})
    assert env.carrier == [P1, P0]
    _, _, _, _, infos = env.step({P0: NOOP, P1: NOOP})
    assert env.carrier == [None, None] and env.stalemates == 1


def test_timeout_is_a_draw_unless_captures_differ():
    env = env_for(max_steps=3)
    for _ in range(2):
        _, rew, term, trunc, _ = env.step({P0: NOOP, P1: NOOP})
        assert not any(trunc.values())
    _, rew, term, trunc, infos = env.step({P0: NOOP, P1: NOOP})
    assert all(trunc.values()) and not any(term.values()) and rew == {P0: 0.0, P1: 0.0}
    assert infos[P0]["winner"] == "draw" and infos[P0]["reason"] == "timeout"
    env = env_for(max_steps=2, captures_to_win=2)
    env.captures = [0, 1]
    env.step({P0: NOOP, P1: NOOP})
    _, rew, _, trunc, infos = env.step({P0: NOOP, P1: NOOP})
    assert all(trunc.values()) and infos[P0]["winner"] == "B" and rew == {P0: -1.0, P1: 1.0}


def test_captures_to_win_two():
    env = env_for(captures_to_win=2)
    env.carrier = [None, P0]
    place(env, player_0=(1, 2))
    _, rew, term, _, _ = env.step({P0: LEFT, P1: NOOP})
    assert env.captures == [1, 0] and env.carrier == [None, None] and not any(term.values())
    obs = env._observe(P0)
    assert split(env, obs)[1][13] == 0.5


def test_default_max_steps_and_2v2_spawns():
    env = CaptureTheFlag(difficulty=6, agents_per_team=2, seed=0)
    env.reset(seed=0)
    assert env.max_steps == 11 * 11 // 2 + 8 * 11
    assert {env.positions[a] for a in ("a_0", "a_1")} == set(env.level.spawns[0])


# ---------------------------------------------------------------------------- strict input checks


@pytest.mark.parametrize("kwargs, match", [
    (dict(tag_cooldown=-1), "tag_cooldown must be an int"),
    (dict(respawn_steps=1.5), "respawn_steps must be an int"),
    (dict(captures_to_win=0), "captures_to_win must be an int"),
    (dict(trail="yes"), "trail must be a bool"),
    (dict(trail_decay=1.0), "trail_decay must be a number in \\[0, 1\\)"),
    (dict(seen_map=4), "seen_map must be 0 \\(off\\) or an odd number"),
    (dict(seen_map=True), "seen_map must be 0"),
    (dict(seen_map=5, seen_map_block=0), "seen_map_block must be an int in 1..7"),
])
def test_bad_knobs_are_one_line_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match) as ei:
        CaptureTheFlag(**kwargs)
    assert "\n" not in str(ei.value)


# ---------------------------------------------------------------------------- observation


def test_observation_channels_and_vector():
    env = env_for()
    place(env, player_0=(2, 3), player_1=(2, 5))
    obs = env._observe(P0)
    win, vec = split(env, obs)
    c = 4  # the agent sits at window centre (4, 4); map cell (r, q) -> window (r - 2 + 4, q - 3 + 4)
    assert win[c, c, CH_WALL] == 0 and win[c - 2, c, CH_WALL] == 1 and win[0, 0, CH_WALL] == 1  # outside reads wall
    assert win[c - 1, c - 2, CH_OWN_BASE] == 1 and win[c - 1, c - 2, CH_OWN_FLAG] == 1
    assert win[c + 1, c + 4, CH_ENEMY_BASE] == 1 and win[c + 1, c + 4, CH_ENEMY_FLAG] == 1
    assert win[c, c + 2, CH_OPP] == 1.0  # opponent, tag ready
    assert win[c, c - 1, CH_HALF] == 1 and win[c, c + 1, CH_HALF] == 0 and win[c, c + 2, CH_HALF] == -1
    assert vec[V_TEAM] == 0 and vec[V_TAG_READY] == 1 and vec[V_COOLDOWN] == 0 and vec[V_TIME] == 1
    assert vec[V_OWN_FLAG_HOME] == 1 and vec[V_ENEMY_FLAG_HOME] == 1 and vec[V_CARRYING] == 0
    # compass: straight-line direction to base b (3, 7) from (2, 3): (1, 4) / sqrt(17)
    assert np.allclose(vec[[V_ENEMY_FLAG_DR, V_ENEMY_FLAG_DC]], np.array([1, 4]) / np.sqrt(17), atol=1e-6)
    assert np.isclose(vec[V_ENEMY_FLAG_DIST], np.sqrt(17) / 32)
    assert np.allclose(vec[[V_BASE_DR, V_BASE_DC]], np.array([-1, -2]) / np.sqrt(5)) and vec[V_BASE_DIST] > 0
    # carrying: the enemy flag moves onto the agent, carriers channel, vector flags
    env.carrier = [None, P0]
    env.cooldown[P1] = 2
    win, vec = split(env, env._observe(P0))
    assert vec[V_CARRYING] == 1 and vec[V_ENEMY_FLAG_HOME] == 0 and vec[V_ENEMY_FLAG_DIST] == 0
    assert win[c, c, CH_ENEMY_FLAG] == 1 and win[c, c, CH_CARRIER] == 1 and win[c + 1, c + 4, CH_ENEMY_FLAG] == 0
    assert win[c, c + 2, CH_OPP] == 0.5  # opponent on cooldown
    # B sees its own flag on the carrier, not at its base
    win_b, vec_b = split(env, env._observe(P1))
    assert vec_b[V_OWN_FLAG_HOME] == 0 and win_b[c + 1, c + 2, CH_OWN_FLAG] == 0 and win_b[c, c - 2, CH_OWN_FLAG] == 1


def test_no_information_about_opponents_outside_the_view():
    env = CaptureTheFlag(knobs=Knobs(family="open", size=21, wall_density=0.0), seed=0)
    env.reset(seed=0)
    far = [cell for cell in ((19, 19), (19, 16), (18, 12)) if cell not in env.level.bases]
    assert env.positions[P0][0] <= 10  # team A spawns in the upper half: rows 18+ are out of view
    seen = []
    for i, cell in enumerate(far):
        place(env, player_1=cell)
        env.cooldown[P1] = i
        seen.append(env._observe(P0))
    assert all(np.array_equal(seen[0], o) for o in seen[1:])


def test_trail_channel_and_option():
    env = env_for(trail_decay=0.5)
    place(env, player_0=(2, 2))
    env._trail[P0][:] = 0
    env.step({P0: RIGHT, P1: NOOP})
    env.step({P0: RIGHT, P1: NOOP})
    win, _ = split(env, env._observe(P0))
    assert win[4, 4, CH_TRAIL] == 1.0 and win[4, 3, CH_TRAIL] == 0.5 and win[4, 5, CH_TRAIL] == 0.0
    off = env_for(trail=False)
    off.step({P0: RIGHT, P1: NOOP})
    assert not split(off, off._observe(P0))[0][..., CH_TRAIL].any()


def test_seen_map_remembers_what_left_the_view_and_only_that():
    """The memory map: per block around the agent, the share of cells remembered open / wall / stood on, built
    from the agent's own past windows only (an unseen corridor stays unknown, a passed wall stays known)."""
    corridor = "#" * 23 + "\n#a" + "." * 19 + "A#\n#" + "." * 21 + "#\n#B" + "." * 19 + "b#\n" + "#" * 23
    env = env_for(corridor, seen_map=5, seen_map_block=3, view_radius=2)
    (w, _, c), v = CaptureTheFlag.obs_layout(2)
    assert env.observation_space(P0).shape == (w * w * c + v + 5 * 5 * SEEN_CHANNELS,) and SEEN_CHANNELS == 5
    obs = env._observe(P0)
    assert env.observation_space(P0).contains(obs)
    assert np.array_equal(obs[: w * w * c + v], CaptureTheFlag(level=env.level, view_radius=2).reset(seed=0)[0][P0])
    place(env, player_0=(2, 10))
    env.step({P0: NOOP, P1: NOOP})
    first = env.seen_map_of(P0).copy()
    # block (2, 2) is the agent's own 3x3: all seen, it stood on its centre
    assert first[2, 2, 0] + first[2, 2, 1] == pytest.approx(1.0) and first[2, 2, 2] == pytest.approx(1 / 9)
    assert first[2, 4].sum() == 0  # 6-8 cells to the right: beyond the 5x5 window, never seen
    for _ in range(6):  # walk right 6 cells: the cells it passed stay in memory, 6-8 cells behind it
        env.step({P0: RIGHT, P1: NOOP})
    after = env.seen_map_of(P0)
    assert after[2, 0, 0] + after[2, 0, 1] > 0 and after[2, 0, 2] > 0  # the walked corridor, remembered
    fresh = CaptureTheFlag(level=env.level, seen_map=5, seen_map_block=3, view_radius=2)
    fresh.reset(seed=0)
    place(fresh, player_0=env.positions[P0])
    fresh._remember(P0)
    assert fresh.seen_map_of(P0)[2, 0].sum() == 0  # a copy that never walked there knows nothing of it
    assert env.seen_map_of(P1).sum() > 0 and not np.array_equal(env.seen_map_of(P1), after)  # each agent its own


def test_seen_map_remembers_where_it_last_saw_the_opponent_and_its_flag():
    """Channels 3 and 4: where the agent last saw the opponent, and its own flag off its base (on the carrier),
    in its own window only; the sighting stays where it was made, fading by SEEN_DECAY per step, until the
    opponent is seen again; the flag's goes when the flag is home."""
    corridor = "#" * 23 + "\n#a" + "." * 19 + "A#\n#" + "." * 21 + "#\n#B" + "." * 19 + "b#\n" + "#" * 23
    env = env_for(corridor, seen_map=5, seen_map_block=3, view_radius=2)
    place(env, player_0=(2, 10), player_1=(2, 12))
    env.carrier = [P1, None]  # player_1 carries player_0's flag
    env.step({P0: NOOP, P1: NOOP})
    seen = env.seen_map_of(P0)
    assert seen[2, 3, 3] == pytest.approx(1.0) and seen[2, 3, 4] == pytest.approx(1.0)  # fresh, one block right
    assert seen[..., 3].sum() == pytest.approx(1.0) and seen[..., 4].sum() == pytest.approx(1.0)
    assert env.seen_map_of(P1)[..., 4].sum() == 0  # player_1's own flag is home
    for _ in range(3):  # the carrier leaves the 5x5 window: the sighting stays at (2, 12) and fades
        env.step({P0: NOOP, P1: RIGHT})
    seen = env.seen_map_of(P0)
    assert seen[2, 3, 3] == pytest.approx(SEEN_DECAY ** 3) and seen[2, 3, 4] == pytest.approx(SEEN_DECAY ** 3)
    assert seen[..., 3].sum() == pytest.approx(SEEN_DECAY ** 3)  # nothing where it really is now, (2, 15)
    for _ in range(3):  # walking after it: seen again at (2, 15), the old sighting is replaced
        env.step({P0: RIGHT, P1: NOOP})
    seen = env.seen_map_of(P0)
    assert seen[2, 3, 3] == pytest.approx(1.0) and seen[..., 3].sum() == pytest.approx(1.0)
    env.carrier = [None, None]  # the flag is home again: the flag channel empties
    env.step({P0: NOOP, P1: NOOP})
    assert env.seen_map_of(P0)[..., 4].sum() == 0 and env.seen_map_of(P0)[..., 3].sum() == pytest.approx(1.0)
    assert env.observation_space(P0).contains(env._observe(P0))


def test_seen_map_is_off_by_default_so_old_checkpoints_keep_their_layout():
    env = env_for()
    (w, _, c), v = CaptureTheFlag.obs_layout(4)
    assert env.observation_space(P0).shape == (w * w * c + v,) == env._observe(P0).shape


# ---------------------------------------------------------------------------- rendering
def test_render_modes():
    env = env_for(render_mode="ansi")
    env.carrier = [None, P0]
    text = env.render()
    assert "3" in text and "Y" in text and "step 0/" in text
    img = CaptureTheFlag(level=Level.from_ascii(MAP), render_mode="rgb_array")
    img.reset(seed=0)
    assert img.render().shape == (5 * 8, 9 * 8, 3)
    with pytest.raises(RuntimeError, match="reset"):
        CaptureTheFlag(difficulty=2, render_mode="ansi").render()


