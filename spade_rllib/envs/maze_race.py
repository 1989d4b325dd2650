"""MazeRace-v0: two teams race through a maze to one flag and may tag each other to stun.

Description
-----------
A PettingZoo ``ParallelEnv``. Two teams start on the spawns of a :class:`~spade_rllib.envs.Level`
(hand-written, or generated from :class:`~spade_rllib.envs.Knobs` / a difficulty scalar) and race
to the single flag. Generated levels are point-symmetric, so both teams are equally far away.

Agents
------
1v1: ``player_0`` (team A, 0) and ``player_1`` (team B, 1).
2v2: ``a_0, a_1`` (team A) and ``b_0, b_1`` (team B). ``env.team_of(agent)`` gives 0 or 1.
Agent *i* of a team starts on that team's *i*-th spawn in reading order.

Action space
------------
``Discrete(6)``: 0 noop, 1 up, 2 down, 3 left, 4 right, 5 tag. A missing action counts as noop.

Rules (one step, all moves simultaneous)
----------------------------------------
1. **Tags resolve first**, all from the positions at the start of the step. An agent that is not
   stunned, chooses ``tag`` and whose cooldown is 0 stuns *every* opponent within Manhattan
   distance 1, and its cooldown becomes ``tag_cooldown`` (a tag is possible again
   ``tag_cooldown`` steps later). A tag with cooldown > 0 does nothing. A tag with nobody in range
   still uses the cooldown. Mutual tags both land.
2. **Stun**: a tagged agent is stunned for ``stun_steps`` steps *starting with the current one*:
   its action this step and in the next ``stun_steps - 1`` steps is ignored. Tagging a stunned
   agent refreshes its stun to ``max(remaining, stun_steps)``.
3. **Moves**: a move into a wall, or into a cell occupied at the start of the step, fails (so a
   swap of two agents fails, and an agent cannot follow into a cell being vacated). Several agents
   moving into the same free cell: one of them, drawn from the env's seeded RNG, gets it; the
   others stay - except on the flag, see 4.
4. **Flag**: the first team to step onto the flag gets +1 per agent and the other team -1.
   If agents of both teams move onto the flag in the same step, both reached it: a draw (0).
5. **Timeout**: after ``max_steps`` steps without a capture the episode is a draw (0).
6. The episode ends for all agents at once: ``terminations`` are all True after a capture or a
   simultaneous arrival, ``truncations`` all True on timeout. Shaping: none (``reward_shaping``
   does not exist yet; rewards are only the +1/-1 above).

Observation space
-----------------
One flat ``Box(-1, 1, (N,), float32)`` per agent, identical for every level size (RLlib needs fixed
spaces). ``MazeRace.obs_layout(r) -> ((2r+1, 2r+1, C), V)``; ``N = (2r+1)^2 * C + V``, with
``r = view_radius`` (default 4: N = 9*9*6 + 16 = 502). The first ``(2r+1)^2 * C`` entries are an
egocentric window centred on the agent, channels-last, flattened in C order; then the vector.

Window channels (C = 6); cells outside the map read as walls:

===  ===============  =======================================================================
 0   wall             1 for walls and outside the map
 1   flag             1 on the flag cell
 2   teammates        1 where a teammate stands (never the agent itself)
 3   opponents        1 where an opponent stands
 4   stunned          1 where a stunned agent stands (the agent itself included)
 5   flag distance    local potential field: ``clip((d(cell) - d(self)) / (2r), -1, 1)`` with
                      ``d`` the BFS path length to the flag; walls/unreachable/outside read 1.
                      Walking downhill on this channel is a shortest path to the flag, which is
                      what lets a memoryless MLP policy navigate mazes up to 21x21 and beyond.
===  ===============  =======================================================================

Vector (V = 16):

===  ======================================================================================
 0   flag row offset ``(flag_r - r) / 24``, clipped to [-1, 1]
 1   flag column offset ``(flag_c - c) / 24``, clipped
 2   own BFS distance to the flag ``/ 256``, clipped to 1
 3-6 shortest-path hint: 1 if moving up / down / left / right lowers the distance to the flag
 7   own stun remaining ``/ stun_steps``
 8   own tag cooldown ``/ tag_cooldown``
 9   fraction of time remaining ``(max_steps - t) / max_steps``
 10  nearest (to the flag) opponent's distance to the flag ``/ 256``, clipped
 11  lead: ``clip((d_opponent - d_own) / 16, -1, 1)``, > 0 when ahead
 12  1 if an opponent is within tag range (Manhattan <= 1)
 13  1 if a tag is possible now (cooldown 0 and not stunned)
 14  best teammate's distance to the flag ``/ 256`` (1 when there is no teammate)
 15  own team (0 = A, 1 = B)
===  ======================================================================================

Infos
-----
Every step: ``{"team": 0 | 1}``. On the final step additionally ``winner`` ("A" | "B" | "draw"),
``reason`` ("flag" | "both_flag" | "timeout"), ``episode_length`` and ``level`` (the level's knobs
dict plus ``family``, ``size``, ``difficulty`` when known, ``level_seed`` when generated).

Levels per episode
------------------
``MazeRace(level=L)`` replays ``L``; ``MazeRace(difficulty=d)`` / ``MazeRace(knobs=k)`` generates
a new level every reset from the env's seeded RNG. ``reset(options=...)`` may choose this episode's
level: ``{"level": Level}``, ``{"knobs": Knobs, "level_seed": int}`` or ``{"difficulty": float}``.
``reset(seed=s)`` is fully deterministic (level, contested moves, trajectory).

Rendering
---------
``render_mode="ansi"`` returns the map as text (team A agents ``A``/``a`` when stunned, team B
``B``/``b``, flag ``F``), plus a status line; ``"rgb_array"`` returns an ``(H*8, W*8, 3)`` uint8 image.

Versions
--------
v0: first release.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .generators import Knobs, default_max_steps, generate_level
from .level import Level
from .level_game import DOWN, LEFT, NOOP, NUM_ACTIONS, RIGHT, TAG, UP, CellTemplates, LevelGame

__all__ = ["MazeRace", "NOOP", "UP", "DOWN", "LEFT", "RIGHT", "TAG", "NUM_ACTIONS"]

DELTAS = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}

# window channels
CH_WALL, CH_FLAG, CH_MATE, CH_OPP, CH_STUN, CH_DIST = range(6)
NUM_CHANNELS = 6
# vector entries
V_FLAG_DR, V_FLAG_DC, V_OWN_DIST, V_DOWNHILL, V_STUN, V_COOLDOWN, V_TIME, V_OPP_DIST, V_LEAD, \
    V_OPP_ADJ, V_TAG_READY, V_MATE_DIST, V_TEAM = 0, 1, 2, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15
VECTOR_SIZE = 16
POS_SCALE = 24.0
DIST_SCALE = 256.0
LEAD_SCALE = 16.0
_FAR = 1.0e6  # distance value of walls / unreachable cells in the padded layer


class _Templates(CellTemplates):
    """Per (level, radius): wall, flag and flag-distance layers; the static vector of each cell."""

    def __init__(self, level: Level, radius: int):
        super().__init__(level, radius, NUM_CHANNELS, VECTOR_SIZE)
        self.inner[level.flag[0], level.flag[1], CH_FLAG] = 1.0
        dist = level.distance_to_flag()
        self.pad[..., CH_DIST] = _FAR
        self.inner[..., CH_DIST] = np.where(dist >= 0, dist, _FAR)
        self.dist = level.dist_rows()

    def fill(self, cell: tuple[int, int], out: np.ndarray) -> None:
        r, c = cell
        rad, dist, k = self.radius, self.dist, self.k
        win = self.window(cell).copy()
        d = dist[r][c]
        win[..., CH_DIST] = np.clip((win[..., CH_DIST] - d) / (2 * rad), -1.0, 1.0)
        out[:k] = win.ravel()
        fr, fc = self.level.flag
        out[k + V_FLAG_DR] = max(-1.0, min(1.0, (fr - r) / POS_SCALE))
        out[k + V_FLAG_DC] = max(-1.0, min(1.0, (fc - c) / POS_SCALE))
        out[k + V_OWN_DIST] = min(1.0, d / DIST_SCALE)
        for i, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
            nd = dist[r + dr][c + dc]
            out[k + V_DOWNHILL + i] = 1.0 if 0 <= nd < d else 0.0


class MazeRace(LevelGame, name="MazeRace-v0", channels=NUM_CHANNELS, vector_size=VECTOR_SIZE, ctf_levels=False,
               generator=generate_level, default_max_steps=default_max_steps):
    """Two teams race to one flag; see the module docstring for the full manual."""

    COLOURS = {"#": (40, 40, 48), ".": (235, 235, 228), "F": (240, 190, 20), "A": (40, 90, 220),
               "a": (130, 160, 230), "B": (210, 50, 50), "b": (230, 150, 150)}

    def __init__(self, level: Level | None = None, difficulty: float | None = None, knobs: Knobs | None = None,
                 agents_per_team: int | None = None, seed: int | None = None, view_radius: int = 4,
                 max_steps: int | None = None, stun_steps: int = 3, tag_cooldown: int = 5,
                 render_mode: str | None = None, family: str | None = None):
        super().__init__(level=level, difficulty=difficulty, knobs=knobs, agents_per_team=agents_per_team, seed=seed,
                         view_radius=view_radius, max_steps=max_steps, render_mode=render_mode, family=family,
                         int_params=(("stun_steps", stun_steps, 0, 1000), ("tag_cooldown", tag_cooldown, 0, 1000)))
        self.stun_steps = int(stun_steps)
        self.tag_cooldown = int(tag_cooldown)
        self._mates = {a: tuple(b for b in self.possible_agents if b != a and self._team[b] == self._team[a])
                       for a in self.possible_agents}
        self.stun: dict[str, int] = {}

    def _level_extra(self, level: Level, info: dict[str, Any]) -> None:
        info["flag_distance_actual"] = level.team_distances()[0][0]

    # ------------------------------------------------------------------ reset
    def _start_episode(self, level: Level) -> None:
        self._templates = level.cached(("obs_templates", self.view_radius),
                                       lambda lv: _Templates(lv, self.view_radius))
        self._dist = level.dist_rows()
        self.stun = {a: 0 for a in self.agents}

    # ------------------------------------------------------------------ step
    def step(self, actions: dict[str, int]):
        given = self._validated(actions)  # raises before any state changes
        names = self.possible_agents
        pos, stun, cd, team = self.positions, self.stun, self.cooldown, self._team
        acts = {a: given.get(a, NOOP) for a in names}
        self.step_count += 1  # after the checks: an invalid action changes nothing
        stunned = {a for a in names if stun[a] > 0}
        # 1. tags, from start-of-step positions
        tagged = []
        for a in names:
            if acts[a] == TAG and a not in stunned and cd[a] == 0:
                cd[a] = self.tag_cooldown
                r, c = pos[a]
                for o in self._opponents[a]:
                    orr, oc = pos[o]
                    if abs(orr - r) + abs(oc - c) <= 1:
                        tagged.append(o)
        if tagged and self.stun_steps > 0:
            for o in tagged:
                stun[o] = max(stun[o], self.stun_steps)
                stunned.add(o)
        # 2. moves
        walls = self._walls
        claims: dict[tuple[int, int], list[str]] | None = None
        occupied = None
        for a in names:
            act = acts[a]
            if 1 <= act <= 4 and a not in stunned:
                r, c = pos[a]
                dr, dc = DELTAS[act]
                t = (r + dr, c + dc)
                if walls[t[0]][t[1]]:
                    continue
                if occupied is None:
                    occupied = set(pos.values())
                    claims = {}
                if t in occupied:
                    continue
                claims.setdefault(t, []).append(a)
        flag = self.level.flag
        teams_at_flag: set[int] = set()
        if claims:
            for t, who in claims.items():
                if t == flag:
                    teams_at_flag.update(team[a] for a in who)
                if len(who) == 1:
                    pos[who[0]] = t
                else:
                    pos[who[int(self._rng.integers(len(who)))]] = t
        # 3. clocks
        for a in stunned:
            stun[a] -= 1
        for a in names:
            if cd[a] > 0:
                cd[a] -= 1
        # 4. outcome
        done = truncated = False
        winner, reason = "draw", ""
        if teams_at_flag:
            done = True
            if len(teams_at_flag) == 2:
                winner, reason = "draw", "both_flag"
            else:
                winner, reason = ("A", "B")[teams_at_flag.pop()], "flag"
        elif self.step_count >= self.max_steps:
            truncated = True
            winner, reason = "draw", "timeout"
        return self._step_result(done, truncated, winner, reason)

    # ------------------------------------------------------------------ observation
    def _observe(self, agent: str) -> np.ndarray:
        pos = self.positions
        r, c = pos[agent]
        o = self._templates[(r, c)].copy()
        k, w, rad = self._k, self._side, self.view_radius
        my_team = self._team[agent]
        stun, cd, dist = self.stun, self.cooldown, self._dist
        d_own = dist[r][c]
        d_opp = 1 << 30
        mate = 1 << 30
        adjacent = 0.0
        for b, (br, bc) in pos.items():
            dr, dc = br - r, bc - c
            if -rad <= dr <= rad and -rad <= dc <= rad:
                base = ((dr + rad) * w + dc + rad) * NUM_CHANNELS
                if b != agent:
                    o[base + (CH_MATE if self._team[b] == my_team else CH_OPP)] = 1.0
                if stun[b] > 0:
                    o[base + CH_STUN] = 1.0
            if b == agent:
                continue
            db = dist[br][bc]
            if self._team[b] == my_team:
                if db < mate:
                    mate = db
            else:
                if db < d_opp:
                    d_opp = db
                if abs(dr) + abs(dc) <= 1:
                    adjacent = 1.0
        s = stun[agent]
        o[k + V_STUN] = s / self.stun_steps if self.stun_steps else 0.0
        o[k + V_COOLDOWN] = cd[agent] / self.tag_cooldown if self.tag_cooldown else 0.0
        o[k + V_TIME] = (self.max_steps - self.step_count) / self.max_steps
        o[k + V_OPP_DIST] = min(1.0, d_opp / DIST_SCALE)
        lead = (d_opp - d_own) / LEAD_SCALE
        o[k + V_LEAD] = 1.0 if lead > 1.0 else (-1.0 if lead < -1.0 else lead)
        o[k + V_OPP_ADJ] = adjacent
        o[k + V_TAG_READY] = 1.0 if (s == 0 and cd[agent] == 0) else 0.0
        o[k + V_MATE_DIST] = min(1.0, mate / DIST_SCALE)
        o[k + V_TEAM] = my_team
        return o

    # ------------------------------------------------------------------ rendering
    def _char_grid(self) -> list[list[str]]:
        lv = self.level
        grid = [["#" if w else "." for w in row] for row in self._walls]
        grid[lv.flag[0]][lv.flag[1]] = "F"
        for a, (r, c) in self.positions.items():
            ch = "AB"[self._team[a]]
            grid[r][c] = ch.lower() if self.stun[a] > 0 else ch
        return grid

    def _status(self) -> str:
        return "  ".join(f"{a}@{self.positions[a]} stun={self.stun[a]} cd={self.cooldown[a]}"
                         for a in self.possible_agents)
