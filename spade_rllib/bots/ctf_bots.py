"""Scripted CaptureTheFlag players that act from the full env state: the ladder's fixed opponents, and a teacher.

* ``random``   - uniform over the 6 actions.
* ``rusher``   - shortest path to the enemy flag, then home (waits on its base while its own flag is
  away); never tags.
* ``defender`` - never goes for the enemy flag. Waits next to its own base (agents cannot stand on
  their own base) on the path the enemy comes by; chases the nearest intruder (an opponent it could
  tag: in its half) and, 1 time in 2 (``DEFENDER_EAGER``, seeded), tags when the intruder's next cell
  (a shortest-path step toward the defender's base, or toward its own base when carrying) is in
  reach; otherwise it holds.
* ``raider``   - a rusher that tags the intruders it meets the same way.
* ``hybrid``   - attacks like the raider, but turns back to defend (defender logic) when an opponent
  is in its half and it can still get between it and its flag (while carrying: only the thief of its
  flag, on the thief's way home through its half); stops short of ready enemy taggers
  to bait their tag; opens 3 episodes in 4 (seeded) guarding its base until it tags an intruder (or
  for twice the base distance, or until the steps left fit no more than ``RACE_SLACK`` races there and
  home), guards again after every stalemate (the same limits), and counter-attacks while the tagged
  opponent waits to respawn.
* ``sentry``   - the raider on levels under ``GUARD_SIDE`` cells a side, the defender on larger ones (where a
  racer that knows less of the map loses the race, and guarding holds a draw against the racers). A teacher
  for kickstarting (``agent.teacher: sentry``), not a rung of the ladder: played only when named.

Tags land after the moves (see ``spade_rllib/envs/ctf.py``), so taggers aim at the intruder's
*predicted* next cells: they tag when at least half of them are in reach. Paths come from BFS maps
cached per level, target cell and closed cell: a player that does not carry the enemy flag may not
enter its own base (the rules' move 1), so its paths (and the predicted paths of opponents) go around
it; a bot never chooses a move the rules refuse. ``Bot(seed).act(env, agent) -> int``; deterministic given ``seed``.
"""
from __future__ import annotations

import numpy as np

from ..envs.ctf import DOWN, LEFT, NOOP, RIGHT, TAG, UP
from ..envs.level import Level, _bfs
from .race_bots import RandomBot  # both games have the same 6 actions: one uniform player serves both

__all__ = ["BOTS", "LADDER", "RandomBot", "RusherBot", "DefenderBot", "RaiderBot", "HybridBot", "SentryBot"]

DEFENDER_EAGER = 0.5
"""The defender tags 1 time in 2 when its prediction says the tag lands, else holds (an always-eager
defender is beaten by a baiting hybrid; the measured ladder is in docs/results.md)."""
GUARD_FIRST = 0.75
"""Probability that the hybrid opens an episode guarding its base (until it tags an intruder, or for
twice the base-to-base distance when nobody comes, or until only ``RACE_SLACK`` races fit in the steps left)."""
RACE_SLACK = 1.5
"""The hybrid's guard spell ends once the steps left are no more than this many times a race from where it
stands (to the enemy base and home): on long maps (four base distances past the step limit: low-braid mazes of
15x15 and larger) guarding for twice the base distance left no time to score, and the hybrid drew against a team
that never moves."""
BAIT_STEPS = 3
"""The hybrid waits up to this many steps (seeded) out of reach of a ready enemy tagger, to make it
waste its tag."""
GUARD_SIDE = 15
"""The sentry guards on levels whose larger side has at least this many cells (the issue's "15x15 and larger")."""

_MOVES = ((UP, -1, 0), (DOWN, 1, 0), (LEFT, 0, -1), (RIGHT, 0, 1))
_DELTA = {act: (dr, dc) for act, dr, dc in _MOVES}


def bfs_rows(level: Level, target: tuple[int, int], closed: tuple[int, int] | None = None) -> list[list[int]]:
    """BFS path lengths to ``target`` as nested lists (-1 = wall or unreachable), cached on the level per
    target. ``closed`` is a cell the walker may not enter (a player's own base while it does not carry:
    the rules' move 1); with it, every path avoids that cell, and a closed target is unreachable."""
    def build(lv: Level) -> list[list[int]]:
        walls = lv.walls
        if closed is not None:
            walls = walls.copy()
            walls[closed] = True
        return _bfs(walls, target).tolist()
    return level.cached(("ctf_bot_bfs", target, closed), build)


def downhill(level: Level, pos: tuple[int, int], target: tuple[int, int],
             closed: tuple[int, int] | None = None) -> list[tuple[int, int, int]]:
    """``(action, r, c)`` of the moves from ``pos`` that shorten the path to ``target`` (a path that never
    enters ``closed``)."""
    dist = bfs_rows(level, target, closed)
    r, c = pos
    d = dist[r][c]
    return [(act, r + dr, c + dc) for act, dr, dc in _MOVES if 0 <= dist[r + dr][c + dc] < d]


def closed_cell(e, agent: str) -> tuple[int, int] | None:
    """The cell ``agent`` may not enter now: its own base unless it carries the enemy flag (None then)."""
    return None if e.carrying(agent) else e.level.bases[e.team_of(agent)]


def guard_post(level: Level, team: int) -> tuple[int, int]:
    """The neighbour of ``team``'s base on a shortest path to the enemy base that avoids the own base
    (agents cannot stand on their own base); the base itself when it has no open neighbour."""
    def build(lv: Level) -> tuple[int, int]:
        base, enemy = lv.bases[team], lv.bases[1 - team]
        dist = bfs_rows(lv, enemy, base)
        near = [(dist[base[0] + dr][base[1] + dc], (base[0] + dr, base[1] + dc)) for _, dr, dc in _MOVES
                if dist[base[0] + dr][base[1] + dc] >= 0]
        return min(near, default=(0, base))[1]
    return level.cached(("ctf_guard_post", team), build)


class RusherBot:
    """Base class: movement helpers; acts as the rusher."""

    name = "rusher"
    tags = False

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ helpers
    def toward(self, e, agent: str, target: tuple[int, int]) -> int:
        """A move along a shortest path to ``target`` that ``agent`` may walk now (never through its own
        base unless it carries); NOOP when there is none."""
        options = downhill(e.level, e.positions[agent], target, closed_cell(e, agent))
        if not options:
            return NOOP
        return options[int(self.rng.integers(len(options)))][0] if len(options) > 1 else options[0][0]

    @staticmethod
    def threats(e, agent: str) -> list[str]:
        """Opponents the agent could tag: in its half (or, with ``tag_carriers_anywhere``, carrying its flag)."""
        t = e.team_of(agent)
        half = e.level.half_rows()
        anywhere = e.tag_carriers_anywhere
        return [o for o in e._opponents[agent]
                if half[e.positions[o][0]][e.positions[o][1]] == t or (anywhere and e.carrier[t] == o)]

    @staticmethod
    def predicted(e, o: str) -> list[tuple[int, int]]:
        """Where opponent ``o`` is likely to be after its move: a shortest-path step toward its goal
        (its own base when carrying, the carrier of its flag when that is away too, else our base);
        its current cell when already there."""
        to = e.team_of(o)
        if e.carrier[1 - to] == o:  # carrying: home, or (own flag away) toward the carrier of its flag
            goal = e.level.bases[to] if e.carrier[to] is None else e.positions[e.carrier[to]]
        else:
            goal = e.level.bases[1 - to]
        cells = [(r, c) for _, r, c in downhill(e.level, e.positions[o], goal, closed_cell(e, o))]
        return cells or [e.positions[o]]

    predictive = True
    eager = 1.0
    """Probability of tagging when the prediction says the tag lands (a mixed strategy: an always-eager
    tagger can be baited by an attacker that stops short)."""

    def tag_now(self, e, agent: str) -> bool:
        """Ready, and at least half of some intruder's predicted cells would be tagged (a reactive
        bot, ``predictive = False``: an intruder is in reach now)."""
        if e.cooldown[agent] > 0:
            return False
        if not self.predictive:
            r, c = e.positions[agent]
            return any(abs(e.positions[o][0] - r) + abs(e.positions[o][1] - c) == 1 for o in self.threats(e, agent))
        t = e.team_of(agent)
        r, c = e.positions[agent]
        half = e.level.half_rows()
        for o in e._opponents[agent]:
            carrying = e.tag_carriers_anywhere and e.carrier[t] == o
            cells = self.predicted(e, o)
            if e.positions[o] not in cells:  # it may also stay where it is
                cells = cells + [e.positions[o]]
            hits = sum(1 for pr, pc in cells
                       if abs(pr - r) + abs(pc - c) == 1 and (half[pr][pc] == t or carrying))
            if hits and 2 * hits >= len(cells):
                return self.eager >= 1.0 or self.rng.random() < self.eager
        return False

    def attack(self, e, agent: str) -> int:
        t = e.team_of(agent)
        if e.carrying(agent):
            return self.toward(e, agent, e.level.bases[t])
        return self.toward(e, agent, e.level.bases[1 - t])

    def defend(self, e, agent: str, threats: list[str]) -> int:
        if self.tag_now(e, agent):
            return TAG
        me = e.positions[agent]
        dist = bfs_rows(e.level, me)
        target = min(threats, key=lambda o: (dist[e.positions[o][0]][e.positions[o][1]], o))
        goal = self.predicted(e, target)[0]
        if goal == closed_cell(e, agent):  # its next cell is our base, which we may not enter: meet it where it is
            goal = e.positions[target]
        return NOOP if goal == me else self.toward(e, agent, goal)

    # ------------------------------------------------------------------ policy
    def act(self, env, agent: str) -> int:
        return self.attack(env.unwrapped, agent)


class DefenderBot(RusherBot):
    name = "defender"
    eager = DEFENDER_EAGER

    def act(self, env, agent: str) -> int:
        e = env.unwrapped
        threats = self.threats(e, agent)
        if threats:
            act = self.defend(e, agent, threats)
            r, c = e.positions[agent]
            dr, dc = _DELTA.get(act, (0, 0))
            return NOOP if (r + dr, c + dc) == e.level.bases[1 - e.team_of(agent)] else act  # never attacks
        post = guard_post(e.level, e.team_of(agent))
        return NOOP if e.positions[agent] == post else self.toward(e, agent, post)


class RaiderBot(RusherBot):
    name = "raider"

    def act(self, env, agent: str) -> int:
        e = env.unwrapped
        if self.tag_now(e, agent):
            return TAG
        return self.attack(e, agent)


class HybridBot(RusherBot):
    name = "hybrid"

    def __init__(self, seed: int | None = None):
        super().__init__(seed)
        self.waited = 0
        self.guard = False
        self.guard_from: int | None = None  # step the current guard spell began (None: attacking)
        self.seen = (-1, 0, 0)  # (step, stalemates, own team's tags) at the previous call

    def act(self, env, agent: str) -> int:
        e = env.unwrapped
        t = e.team_of(agent)
        step, stalemates, tags = e.step_count, e.stalemates, e.tags[t]
        if self.seen[0] < 0 or step <= self.seen[0]:  # a new episode: guard first in some (seeded)
            self.guard_from = step if self.rng.random() < GUARD_FIRST else None
        elif stalemates > self.seen[1]:  # racing ended in a stalemate: guard first now
            self.guard_from = step
        if tags > self.seen[2]:  # we tagged someone: counter-attack while it waits on its spawn
            self.guard_from = None
        self.seen = (step, stalemates, tags)
        # nobody came for a while (the opponent defends too), or a race there and home would not fit in the
        # steps left: attack (and stay attacking: the spell ends for good, it does not resume as the race eats time)
        if self.guard_from is not None and (step - self.guard_from >= 2 * self.base_distance(e)
                                            or not self.race_fits(e, agent)):
            self.guard_from = None
        self.guard = self.guard_from is not None
        if self.tag_now(e, agent):
            return TAG
        carrying = e.carrying(agent)
        threats = self.threats(e, agent)
        if carrying:  # only the thief of our flag is worth a detour while carrying (we cannot score without it)
            threats = [o for o in threats if e.carrier[t] == o]
        if threats:
            # turn back when this agent can still get between an intruder and its flag
            me = e.positions[agent]
            home = bfs_rows(e.level, e.level.bases[t])
            if self.guard or any(home[me[0]][me[1]] <= home[e.positions[o][0]][e.positions[o][1]] for o in threats):
                return self.defend(e, agent, threats)
        if self.guard and not carrying:
            post = guard_post(e.level, t)
            return NOOP if e.positions[agent] == post else self.toward(e, agent, post)
        move = self.attack(e, agent)
        if self.bait(e, agent, move):
            return NOOP
        return move

    @staticmethod
    def base_distance(e) -> int:
        """Path length between the two bases (walls only)."""
        (br, bc) = e.level.bases[1]
        return bfs_rows(e.level, e.level.bases[0])[br][bc]

    def race_fits(self, e, agent: str) -> bool:
        """Whether the steps left exceed ``RACE_SLACK`` times a race from here: to the enemy base (around the own
        base) and home from there. Guarding longer would leave no time to score before the timeout."""
        r, c = e.positions[agent]
        (er, ec) = e.level.bases[1 - e.team_of(agent)]
        there = bfs_rows(e.level, (er, ec), closed_cell(e, agent))[r][c]
        return e.max_steps - e.step_count > RACE_SLACK * (max(there, 0) + self.base_distance(e))

    def bait(self, e, agent: str, move: int) -> bool:
        """Hold instead of stepping into the reach of a ready enemy tagger, for up to ``BAIT_STEPS``
        steps (seeded): an eager tagger wastes its tag (cooldown) on the cell this agent did not enter."""
        t = e.team_of(agent)
        r, c = e.positions[agent]
        dr, dc = _DELTA.get(move, (0, 0))
        nr, nc = r + dr, c + dc
        half = e.level.half_rows()
        eligible = half[nr][nc] == 1 - t or e.carrying(agent)
        threatened = eligible and (nr, nc) != (r, c) and any(
            e.cooldown[o] == 0 and abs(e.positions[o][0] - nr) + abs(e.positions[o][1] - nc) == 1
            for o in e._opponents[agent])
        if threatened and self.waited < int(self.rng.integers(BAIT_STEPS + 1)):
            self.waited += 1
            return True
        self.waited = 0
        return False


class SentryBot:
    """The raider on levels under ``GUARD_SIDE`` cells a side, the defender on larger ones (two bots, one
    seed: a level is played by one of them)."""

    name = "sentry"

    def __init__(self, seed: int | None = None):
        self.race, self.guard = RaiderBot(seed), DefenderBot(seed)

    def act(self, env, agent: str) -> int:
        level = env.unwrapped.level
        bot = self.guard if max(level.height, level.width) >= GUARD_SIDE else self.race
        return bot.act(env, agent)


BOTS = {"random": RandomBot, "rusher": RusherBot, "defender": DefenderBot, "raider": RaiderBot,
        "hybrid": HybridBot, "sentry": SentryBot}
LADDER = ("random", "rusher", "defender", "raider", "hybrid")
"""The bots played when none are named (evaluation, the ladder bench); ``sentry`` is two of them by level size."""
