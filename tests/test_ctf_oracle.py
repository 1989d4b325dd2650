"""The CTF observation is oracle-free: a policy that sees only the compass (straight-line direction to the
enemy flag, then to the own base) and the walls next to it solves small open levels but not large mazes."""
from __future__ import annotations

import numpy as np

from spade_rllib.envs import CaptureTheFlag, generate_ctf_level, knobs_for_difficulty
from spade_rllib.envs.ctf import (CH_WALL, DOWN, LEFT, NOOP, NUM_CHANNELS, RIGHT, UP, V_BASE_DC, V_BASE_DR, V_CARRYING,
                                  V_ENEMY_FLAG_DC, V_ENEMY_FLAG_DR)

MOVES = ((UP, -1, 0), (DOWN, 1, 0), (LEFT, 0, -1), (RIGHT, 0, 1))


def compass_greedy(obs: np.ndarray, radius: int = 4) -> int:
    """The move closest to the compass direction whose cell is not a wall (window centre's neighbours)."""
    side = 2 * radius + 1
    k = side * side * NUM_CHANNELS
    vec = obs[k:]
    win = obs[:k].reshape(side, side, NUM_CHANNELS)
    dr, dc = (vec[V_BASE_DR], vec[V_BASE_DC]) if vec[V_CARRYING] else (vec[V_ENEMY_FLAG_DR], vec[V_ENEMY_FLAG_DC])
    ranked = sorted(MOVES, key=lambda m: -(m[1] * dr + m[2] * dc))
    for act, mr, mc in ranked:
        if win[radius + mr, radius + mc, CH_WALL] == 0:
            return act
    return NOOP


def solved(difficulty: float, seed: int, family: str | None = None) -> bool:
    level = generate_ctf_level(knobs_for_difficulty(difficulty, family=family), seed)
    env = CaptureTheFlag(level=level)
    obs, _ = env.reset(seed=seed)
    while env.agents:
        obs, *_ = env.step({"player_0": compass_greedy(obs["player_0"]), "player_1": NOOP})
    return env.outcome["winner"] == "A"


def test_compass_greedy_solves_small_open_levels():
    wins = [solved(d, s, "open") for d in (1, 2, 3) for s in range(20)]
    assert np.mean(wins) >= 0.8, np.mean(wins)


def test_compass_greedy_fails_most_difficulty_10_mazes():
    wins = [solved(10, s) for s in range(40)]
    assert np.mean(wins) <= 0.3, np.mean(wins)
