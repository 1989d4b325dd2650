"""Scripted MazeRace players that act from the full env state (fixed reference opponents).

* ``random``        - uniform over the 6 actions.
* ``rusher``        - steps along a shortest path to the flag (the level's cached BFS distance map),
  preferring free downhill cells, ties broken by its own seeded RNG; never tags.
* ``rusher_tagger`` - a rusher that tags when its tag is ready and an opponent within Manhattan
  distance 1 is at least as close to the flag as itself (and not already stunned past next step).

Each bot: ``Bot(seed).act(env, agent) -> int``; deterministic given ``seed``.
"""
from __future__ import annotations

import numpy as np

from ..envs.maze_race import DOWN, LEFT, NOOP, RIGHT, TAG, UP

__all__ = ["BOTS", "RandomBot", "RusherBot", "RusherTaggerBot"]

_MOVES = ((UP, -1, 0), (DOWN, 1, 0), (LEFT, 0, -1), (RIGHT, 0, 1))


class RandomBot:
    name = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def act(self, env, agent: str) -> int:
        return int(self.rng.integers(6))


class RusherBot:
    name = "rusher"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def move(self, env, agent: str) -> int:
        e = env.unwrapped
        dist = e.level.dist_rows()
        r, c = e.positions[agent]
        d = dist[r][c]
        occupied = set(e.positions.values())
        free, blocked = [], []
        for act, dr, dc in _MOVES:
            nd = dist[r + dr][c + dc]
            if 0 <= nd < d:
                (blocked if (r + dr, c + dc) in occupied else free).append(act)
        options = free or blocked
        if not options:
            return NOOP
        return options[int(self.rng.integers(len(options)))] if len(options) > 1 else options[0]

    def act(self, env, agent: str) -> int:
        return self.move(env, agent)


class RusherTaggerBot(RusherBot):
    name = "rusher_tagger"

    def act(self, env, agent: str) -> int:
        e = env.unwrapped
        if e.stun[agent] == 0 and e.cooldown[agent] == 0:
            dist = e.level.dist_rows()
            r, c = e.positions[agent]
            for o in e._opponents[agent]:
                orr, oc = e.positions[o]
                if abs(orr - r) + abs(oc - c) <= 1 and e.stun[o] <= 1 and dist[orr][oc] <= dist[r][c]:
                    return TAG
        return self.move(env, agent)


BOTS = {"random": RandomBot, "rusher": RusherBot, "rusher_tagger": RusherTaggerBot}
