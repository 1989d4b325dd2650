"""CaptureTheFlag-v0: two teams each defend a base holding their flag and try to bring the other's home.

Description
-----------
A PettingZoo ``ParallelEnv`` on a CTF :class:`~spade_rllib.envs.Level` (``a``/``b`` bases, hand-written,
or generated from :class:`~spade_rllib.envs.Knobs` / a difficulty scalar by
:func:`~spade_rllib.envs.generate_ctf_level`: point-symmetric, so fair). Each cell belongs to the half
of the base it is closer to by path length (equal: neutral). The manual with the measured ladder is
``docs/ctf.md``.

Agents
------
1v1: ``player_0`` (team A, 0) and ``player_1`` (team B, 1). 2v2: ``a_0, a_1`` vs ``b_0, b_1``.
``env.team_of(agent)`` gives 0 or 1. Agent *i* of a team starts on (and respawns at) that team's
*i*-th spawn in reading order.

Action space
------------
``Discrete(6)``: 0 noop, 1 up, 2 down, 3 left, 4 right, 5 tag (the tagger stays where it is).
A missing action counts as noop; anything else invalid raises ``ValueError`` and changes nothing.

Rules (one step, all agents at once)
------------------------------------
1. **Moves**: into a wall fails; agents never block each other (any number may share a cell). An
   agent may enter its own base only while carrying the enemy flag (no camping on the own flag).
   An agent waiting to respawn (see 2) does not act.
2. **Tags**, from the positions *after* the moves: a ready tagger (cooldown 0) that chose ``tag``
   (and so did not move) tags every opponent on one of its 4 neighbouring cells that stands in the
   tagger's own half (``tag_carriers_anywhere=True`` also allows flag carriers anywhere). Its
   cooldown becomes ``tag_cooldown`` (default 5: it can tag again 5 steps later) even when the tag
   hits nobody; a tag on cooldown does nothing. A tagged agent goes back to its spawn and waits
   there ``respawn_steps`` steps (default 6); a tagged carrier drops the flag, which returns to its
   base at once.
3. **Captures**: a carrier on its own base while its own flag is at home scores a capture; the
   carried flag returns to its base. ``captures_to_win`` (default 1) captures end the episode.
4. **Pickups**: an agent on the enemy base while that flag is at home picks it up (captures are
   resolved first).
5. **Stalemate**: when both flags have been carried for ``stalemate_steps`` steps in a row (default
   6; 0 = never), both return to their bases (two carriers at home in their own halves can never be
   tagged, so the episode would otherwise end in a timeout draw).
6. **Timeout** after ``max_steps`` (default ``ctf_default_max_steps(size)``): the team with more
   captures wins, else a draw.
7. The episode ends for everyone at once (``terminations`` all True on a win by captures,
   ``truncations`` all True on timeout); ``env.agents`` becomes empty; stepping again raises.
   Rewards: +1 to every agent of the winning team, -1 to the other, ``draw_reward`` (default 0) to
   everyone on a draw; no shaping unless ``tag_reward`` > 0 (a training-only signal, dropped from the env
   that evaluation builds: per opponent tagged, +tag_reward to the tagging team, -tag_reward to the tagged) or
   ``new_cell_reward`` > 0 (the same kind: +new_cell_reward to an agent on a cell it has not stood on this episode). A negative ``draw_reward`` makes the safe all-defend draw worse than
   a risked attack (the all-draw collapse of self-play; docs/league.md).

Why these rules (measured with ``bench/ablations/ladder.py``; ``docs/results.md``): agents that block each other
let a defender seal a 1-wide corridor; standing on the own flag makes it unreachable; tags from
start-of-step positions make an adjacent ready defender a sure hit (tags after the moves reward
anticipation and baiting instead); the respawn wait turns a successful defence into tempo for a
counter-attack; the stalemate return ends mutual steals.

Observation space (no oracle: nothing path-based, nothing about opponents outside the window)
---------------------------------------------------------------------------------------------
One flat ``Box(-1, 1, (N,), float32)`` per agent, identical for every level size.
``CaptureTheFlag.obs_layout(r) -> ((2r+1, 2r+1, C), V)``; default ``r = 4``: 9*9*10 + 16 = 826. The
window (channels-last, C order, cells outside the map read as walls) comes first, then the vector.

===  ===============  ===================================================================
 0   wall             1 on walls and outside the map
 1   own base         1 on the own base cell
 2   enemy base       1 on the enemy base cell
 3   own flag         1 where the own flag is (at its base, or on the opponent carrying it)
 4   enemy flag       1 where the enemy flag is (at its base, or on the teammate carrying it)
 5   teammates        1 where a teammate stands (never the agent itself)
 6   opponents        where an opponent stands: 1 if its tag is ready, 0.5 while on cooldown
 7   carriers         1 where an agent carrying a flag stands (the agent itself included)
 8   half             +1 own half, -1 enemy half, 0 neutral / wall / outside
 9   trail            visit trace ``trail_decay ** (steps since the agent was last there)``;
                      all 0 with ``trail=False``
===  ===============  ===================================================================

===  =====================================================================================
 0-1 compass to the enemy flag: unit vector (row, column), 0 on it
 2   straight-line distance to the enemy flag ``/ 32``, clipped to 1
 3-4 compass to the own base: unit vector (row, column)
 5   straight-line distance to the own base ``/ 32``, clipped
 6   carrying the enemy flag
 7   own flag at home
 8   enemy flag at home (0 while a teammate carries it)
 9   tag ready (cooldown 0)
 10  cooldown ``/ tag_cooldown``
 11  fraction of time remaining ``(max_steps - t) / max_steps``
 12  own team (0 = A, 1 = B)
 13  own team's captures ``/ captures_to_win``
 14  opponents' captures ``/ captures_to_win``
 15  respawn wait remaining ``/ respawn_steps`` (0 while free)
===  =====================================================================================

Memory map (``seen_map=B``, off by default so older checkpoints keep their layout)
------------------------------------------------------------------------------------
``B * B * 5`` more values after the vector: an egocentric map of ``B x B`` blocks of ``seen_map_block``
(default 3) cells a side centred on the agent (B = 7: 21 x 21 cells), built only from the agent's own past
windows. Per block: the share of its cells the agent has seen open, seen as wall (outside the map counts as
a known wall), and stood on; then where it last saw each opponent, and its own flag off its base (on the
opponent carrying it), as ``SEEN_DECAY ** (steps since)`` (0.95; the freshest where a block holds two), kept
until it sees them again (the flag's also until the flag is home). What it walked past stays known after it
leaves the view; nothing it never saw is in it (no oracle). ``CaptureTheFlag.seen_map_of(agent)`` returns it
as ``(B, B, 5)``.

Infos
-----
Every step ``{"team": 0 | 1}``; on the final step also ``winner`` ("A" | "B" | "draw"), ``reason``
("capture" | "timeout"), ``episode_length``, ``level`` (knobs dict plus ``family``, ``height``,
``width``, ``max_steps``, ``base_distance``, ``level_seed`` / ``difficulty`` when known) and three
per-team counters, each ``{"A": int, "B": int}``: ``tags`` (tags that hit someone, by the tagging
team), ``flag_pickups`` and ``captures``; and ``stalemates`` (int). ``env.outcome`` holds the same.

Levels per episode, seeding, rendering: as MazeRace (``reset(options={"level" | "knobs" +
"level_seed" | "difficulty"})``, ``reset(seed=s)`` fully deterministic, ``render_mode`` "ansi" or
"rgb_array").

Versions
--------
v0: first release.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from .cell_memory import CHANNELS as CELL_CHANNELS
from .cell_memory import MAX_SIDE as CELL_MEMORY_MAX
from .cell_memory import MIN_SIDE as CELL_MEMORY_MIN
from .cell_memory import PLAN_SIZE, CellMemory
from .generators import Knobs, ctf_default_max_steps, generate_ctf_level
from .level import Level
from .level_game import DOWN, LEFT, NOOP, NUM_ACTIONS, RIGHT, TAG, UP, CellTemplates, LevelGame

__all__ = ["CaptureTheFlag", "NOOP", "UP", "DOWN", "LEFT", "RIGHT", "TAG", "NUM_ACTIONS"]

DELTAS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (0, 0))

CH_WALL, CH_OWN_BASE, CH_ENEMY_BASE, CH_OWN_FLAG, CH_ENEMY_FLAG, CH_MATE, CH_OPP, CH_CARRIER, CH_HALF, \
    CH_TRAIL = range(10)
NUM_CHANNELS = 10
V_ENEMY_FLAG_DR, V_ENEMY_FLAG_DC, V_ENEMY_FLAG_DIST, V_BASE_DR, V_BASE_DC, V_BASE_DIST, V_CARRYING, \
    V_OWN_FLAG_HOME, V_ENEMY_FLAG_HOME, V_TAG_READY, V_COOLDOWN, V_TIME, V_TEAM, V_OWN_CAPTURES, \
    V_OPP_CAPTURES, V_RESPAWN = range(16)
VECTOR_SIZE = 16
SEEN_CHANNELS = 5  # memory map per block: remembered open, wall, visited; opponent and own flag last seen
SEEN_DENSE = 3  # of them stored per cell (open, wall, visited); the sightings are points, kept apart
SEEN_DECAY = 0.95
"""Per step, a sighting in the memory map fades by this factor (half of it is gone after 13-14 steps)."""
DIST_SCALE = 32.0
TRAINING_SIGNALS = ("tag_reward", "new_cell_reward")
"""Constructor arguments that only shape training (auxiliary rewards, off in every evaluation env)."""
TEAM_LETTERS = ("A", "B")


def _seen_cells(level: Level, pad: int) -> np.ndarray:
    """The level's cells as the memory map stores them, padded by `pad` on every side: (open, wall) one-hot,
    float32 (outside the map reads as wall)."""
    walls = np.asarray(level.walls, dtype=bool)
    out = np.zeros((walls.shape[0] + 2 * pad, walls.shape[1] + 2 * pad, 2), dtype=np.float32)
    out[..., 1] = 1.0
    inner = out[pad:pad + walls.shape[0], pad:pad + walls.shape[1]]
    inner[..., 0] = ~walls
    inner[..., 1] = walls
    return out


def _compass(dr: float, dc: float) -> tuple[float, float, float]:
    """Unit direction and clipped straight-line distance / DIST_SCALE (no path information)."""
    d = math.hypot(dr, dc)
    if d == 0.0:
        return 0.0, 0.0, 0.0
    return dr / d, dc / d, min(1.0, d / DIST_SCALE)


class _Templates(CellTemplates):
    """Per (level, team, radius): the observation template of each cell: the static window channels
    (wall, bases, flags at home, half) and the static vector (compasses to the enemy base and the own
    base, team). The env overwrites only what moves."""

    def __init__(self, level: Level, team: int, radius: int):
        super().__init__(level, radius, NUM_CHANNELS, VECTOR_SIZE)
        self.team = team
        inner = self.inner
        own, enemy = level.bases[team], level.bases[1 - team]
        inner[own[0], own[1], CH_OWN_BASE] = inner[own[0], own[1], CH_OWN_FLAG] = 1.0
        inner[enemy[0], enemy[1], CH_ENEMY_BASE] = inner[enemy[0], enemy[1], CH_ENEMY_FLAG] = 1.0
        half = level.half()
        inner[..., CH_HALF] = np.where(half == team, 1.0, np.where(half == 1 - team, -1.0, 0.0))

    def fill(self, cell: tuple[int, int], out: np.ndarray) -> None:
        r, c = cell
        k = self.k
        out[:k] = self.window(cell).ravel()
        own, enemy = self.level.bases[self.team], self.level.bases[1 - self.team]
        out[k + V_ENEMY_FLAG_DR:k + V_ENEMY_FLAG_DIST + 1] = _compass(enemy[0] - r, enemy[1] - c)
        out[k + V_BASE_DR:k + V_BASE_DIST + 1] = _compass(own[0] - r, own[1] - c)
        out[k + V_TEAM] = self.team


class CaptureTheFlag(LevelGame, name="CaptureTheFlag-v0", channels=NUM_CHANNELS, vector_size=VECTOR_SIZE,
                     ctf_levels=True, generator=generate_ctf_level, default_max_steps=ctf_default_max_steps):
    """Two teams, two bases, two flags; see the module docstring for the full manual."""

    COLOURS = {"#": (40, 40, 48), ".": (235, 235, 228), "a": (120, 150, 240), "b": (240, 130, 130),
               "X": (190, 200, 240), "Y": (240, 200, 200), "1": (40, 90, 220), "2": (210, 50, 50),
               "3": (240, 190, 20), "4": (240, 120, 20)}
    INFO_KEYS = ("difficulty", "level_id", "name")

    def __init__(self, level: Level | None = None, difficulty: float | None = None, knobs: Knobs | None = None,
                 agents_per_team: int | None = None, seed: int | None = None, view_radius: int = 4,
                 max_steps: int | None = None, tag_cooldown: int = 5, respawn_steps: int = 6,
                 captures_to_win: int = 1, tag_carriers_anywhere: bool = False, stalemate_steps: int = 6,
                 trail: bool = True, trail_decay: float = 0.9, render_mode: str | None = None,
                 family: str | None = None, draw_reward: float = 0.0, seen_map: int = 0, seen_map_block: int = 3,
                 tag_reward: float = 0.0, new_cell_reward: float = 0.0, cell_memory: int = 0, plan: bool = False):
        for name, v in (("tag_carriers_anywhere", tag_carriers_anywhere), ("trail", trail), ("plan", plan)):
            if not isinstance(v, bool):
                raise ValueError(f"{name} must be a bool, got {v!r}")
        if isinstance(seen_map, bool) or not isinstance(seen_map, int) or not (seen_map == 0 or (
                3 <= seen_map <= 15 and seen_map % 2 == 1)):
            raise ValueError(f"seen_map must be 0 (off) or an odd number of blocks per side in 3..15, got {seen_map!r}")
        if isinstance(cell_memory, bool) or not isinstance(cell_memory, int) or not (
                cell_memory == 0 or CELL_MEMORY_MIN <= cell_memory <= CELL_MEMORY_MAX):
            raise ValueError(f"cell_memory must be 0 (off) or the grid's cells a side in {CELL_MEMORY_MIN}.."
                             f"{CELL_MEMORY_MAX} (levels up to that size), got {cell_memory!r}")
        if cell_memory and seen_map:
            raise ValueError(f"cell_memory={cell_memory} and seen_map={seen_map} are two memory maps; pick one (did you "
                             "mean seen_map=0?)")
        if isinstance(seen_map_block, bool) or not isinstance(seen_map_block, int) or not 1 <= seen_map_block <= 7:
            raise ValueError(f"seen_map_block must be an int in 1..7 (cells per block side), got {seen_map_block!r}")
        if isinstance(trail_decay, bool) or not isinstance(trail_decay, (int, float)) or not 0.0 <= trail_decay < 1.0:
            raise ValueError(f"trail_decay must be a number in [0, 1), got {trail_decay!r}")
        if isinstance(draw_reward, bool) or not isinstance(draw_reward, (int, float)) or not -1.0 <= draw_reward <= 0.0:
            raise ValueError(f"draw_reward must be a number in [-1, 0], got {draw_reward!r}")
        self.draw_reward = float(draw_reward)
        self.tag_reward = self.new_cell_reward = 0.0
        self._visited: dict[str, np.ndarray] = {}
        self.set_training_signals(tag_reward=tag_reward, new_cell_reward=new_cell_reward)
        super().__init__(level=level, difficulty=difficulty, knobs=knobs, agents_per_team=agents_per_team, seed=seed,
                         view_radius=view_radius, max_steps=max_steps, render_mode=render_mode, family=family,
                         int_params=(("tag_cooldown", tag_cooldown, 0, 1000), ("respawn_steps", respawn_steps, 0, 1000),
                                     ("stalemate_steps", stalemate_steps, 0, 100_000),
                                     ("captures_to_win", captures_to_win, 1, 100)))
        self.tag_cooldown = int(tag_cooldown)
        self.respawn_steps = int(respawn_steps)
        self.stalemate_steps = int(stalemate_steps)
        self.captures_to_win = int(captures_to_win)
        self.tag_carriers_anywhere = tag_carriers_anywhere
        self.trail = trail
        self.trail_decay = float(trail_decay)
        self.seen_map, self.seen_map_block = int(seen_map), int(seen_map_block)
        self.cell_memory, self.plan = int(cell_memory), plan
        self._cell_memories: dict[str, CellMemory] = {}
        if self.cell_memory or plan:  # one memory per agent, built from its own windows (envs/cell_memory.py)
            self._cell_memories = {a: CellMemory(self.cell_memory, view_radius)
                                   for a in self.possible_agents}
        extra = (PLAN_SIZE if plan else 0) + SEEN_CHANNELS * self.seen_map ** 2 + \
            len(CELL_CHANNELS) * self.cell_memory ** 2
        if extra:  # the plan, then a memory map, follow the vector: a longer observation
            space = spaces.Box(-1.0, 1.0, shape=(self._k + VECTOR_SIZE + extra,), dtype=np.float32)
            self.observation_spaces = {a: space for a in self.possible_agents}
        self.frozen: dict[str, int] = {}
        """Steps a tagged agent still waits on its spawn (its actions are ignored meanwhile)."""
        self.carrier: list[str | None] = [None, None]
        """Who carries team t's flag (an opponent), or None while it is at home."""
        self.captures = [0, 0]
        self.tags = [0, 0]
        self.flag_pickups = [0, 0]

    def carrying(self, agent: str) -> bool:
        """True while ``agent`` carries the enemy flag."""
        return self.carrier[1 - self._team[agent]] == agent

    def _level_extra(self, level: Level, info: dict[str, Any]) -> None:
        info["base_distance"] = int(level.distance_to_base(0)[level.bases[1]])

    # ------------------------------------------------------------------ reset
    def _start_episode(self, level: Level) -> None:
        rad = self.view_radius
        self._templates = tuple(level.cached(("ctf_templates", t, rad), lambda lv, t=t: _Templates(lv, t, rad))
                                for t in (0, 1))
        self._half = level.half_rows()
        self.frozen = {a: 0 for a in self.possible_agents}
        self._waiting = 0  # how many agents have frozen > 0
        self.carrier = [None, None]
        self.captures = [0, 0]
        self.tags = [0, 0]
        self.flag_pickups = [0, 0]
        self.stalemates = 0
        self._both_away = 0
        h, w = level.height, level.width
        self._trail = {a: np.zeros((h + 2 * rad, w + 2 * rad), dtype=np.float32) for a in self.possible_agents}
        self._visited = {}
        if self.new_cell_reward:  # the cells each agent has stood on this episode (its spawn included)
            self._visited = {a: np.zeros((h, w), dtype=bool) for a in self.possible_agents}
            for a, (r, c) in self.positions.items():
                self._visited[a][r, c] = True
        if self.trail:
            for a, (r, c) in self.positions.items():
                self._trail[a][r + rad, c + rad] = 1.0
        if self.seen_map:
            pad = self.seen_map * self.seen_map_block // 2
            self._cells = level.cached(("ctf_seen_cells", pad), lambda lv: _seen_cells(lv, pad))
            shape = (self._cells.shape[0], self._cells.shape[1], SEEN_DENSE)
            self._memory = {a: np.zeros(shape, dtype=np.float32) for a in self.possible_agents}
            self._last_seen: dict[str, dict[str, tuple[int, int, int]]] = {a: {} for a in self.possible_agents}
            for a in self.possible_agents:
                self._remember(a)
        for a, memory in self._cell_memories.items():
            t = self._team[a]
            memory.reset((h, w), level.bases[t], level.bases[1 - t])
            self._see(a)

    # ------------------------------------------------------------------ step
    def step(self, actions: dict[str, int]):
        acts = self._validated(actions)  # raises before any state changes
        names = self.possible_agents
        pos, cd, team, carrier, frozen = self.positions, self.cooldown, self._team, self.carrier, self.frozen
        level = self.level
        self.step_count += 1
        if self._waiting:  # tagged agents wait on their spawn
            acts = {a: act for a, act in acts.items() if not frozen[a]}
            for a in names:
                if frozen[a]:
                    frozen[a] -= 1
                    self._waiting -= frozen[a] == 0
        # 1. moves (agents never block each other; the own base is closed unless carrying)
        walls = self._walls
        bases = level.bases
        for a, act in acts.items():
            if 1 <= act <= 4:
                r, c = pos[a]
                dr, dc = DELTAS[act]
                if not walls[r + dr][c + dc]:
                    t = team[a]
                    if (r + dr, c + dc) != bases[t] or carrier[1 - t] == a:
                        pos[a] = (r + dr, c + dc)
        # 2. tags, from the positions after the moves
        tagged: set[str] = set()
        half = self._half
        for a, act in acts.items():
            if act == TAG and cd[a] == 0:
                cd[a] = self.tag_cooldown  # the clock below ticks this step too: ready again tag_cooldown steps later
                r, c = pos[a]
                t = team[a]
                hit = False
                for o in self._opponents[a]:
                    orr, oc = pos[o]
                    if abs(orr - r) + abs(oc - c) == 1 and (
                            half[orr][oc] == t or (self.tag_carriers_anywhere and carrier[t] == o)):
                        tagged.add(o)
                        hit = True
                if hit:
                    self.tags[t] += 1
        for o in tagged:
            pos[o] = level.spawns[team[o]][self._slot[o]]
            if self.respawn_steps:
                self._waiting += frozen[o] == 0
                frozen[o] = self.respawn_steps
            ft = 1 - team[o]
            if carrier[ft] == o:
                carrier[ft] = None
        # 3. captures, then 4. pickups
        winner = None
        for a in names:
            t = team[a]
            p = pos[a]
            if carrier[1 - t] == a and p == bases[t] and carrier[t] is None:
                carrier[1 - t] = None
                self.captures[t] += 1
                if self.captures[t] >= self.captures_to_win and winner is None:
                    winner = t
        for a in names:
            t = team[a]
            if carrier[1 - t] is None and pos[a] == bases[1 - t]:
                carrier[1 - t] = a
                self.flag_pickups[t] += 1
        # stalemate: both flags carried for stalemate_steps steps in a row -> both return home
        if carrier[0] is not None and carrier[1] is not None:
            self._both_away += 1
            if self.stalemate_steps and self._both_away >= self.stalemate_steps:
                carrier[0] = carrier[1] = None
                self.stalemates += 1
                self._both_away = 0
        else:
            self._both_away = 0
        # clocks and trails
        for a in names:
            if cd[a] > 0:
                cd[a] -= 1
        if self.trail:
            rad, decay = self.view_radius, self.trail_decay
            for a in names:
                tr = self._trail[a]
                tr *= decay
                r, c = pos[a]
                tr[r + rad, c + rad] = 1.0
        if self.seen_map:
            for a in names:
                self._remember(a)
        for a in self._cell_memories:
            self._see(a)
        # outcome
        done = winner is not None
        truncated = not done and self.step_count >= self.max_steps
        if truncated:
            ca, cb = self.captures
            winner = 0 if ca > cb else (1 if cb > ca else None)
        letter = "draw" if winner is None else TEAM_LETTERS[winner]
        result = self._step_result(done, truncated, letter, "capture" if done else "timeout", lambda: {
            "tags": dict(zip(TEAM_LETTERS, self.tags)),
            "flag_pickups": dict(zip(TEAM_LETTERS, self.flag_pickups)),
            "captures": dict(zip(TEAM_LETTERS, self.captures)),
            "stalemates": self.stalemates,
        })
        if self.tag_reward or self.new_cell_reward:
            self._add_training_signals(result[1], tagged)
        return result

    def set_training_signals(self, **values: float) -> None:
        """Set training-only signals (``tag_reward``, ``new_cell_reward``: numbers in [0, 1], 0 off), e.g. from
        ``env.signal_schedule``; they apply from the next step (``new_cell_reward`` switched on mid-episode: from
        the next episode). Checks every value before setting any."""
        for name, v in values.items():
            if name not in TRAINING_SIGNALS:
                raise TypeError(f"unknown training signal {name!r} (allowed: {', '.join(TRAINING_SIGNALS)})")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1] (0: off), got {v!r}")
        for name, v in values.items():
            setattr(self, name, float(v))

    def _add_training_signals(self, rewards: dict[str, float], tagged: set[str]) -> None:
        """The training-only signals (off by default and in evaluation), added to this step's ``rewards``:
        ``tag_reward`` per opponent tagged, + to every agent of the tagging team and - to every agent of the
        tagged one (zero-sum); ``new_cell_reward`` to every agent on a cell it has not stood on this episode."""
        team = self._team
        for o in tagged if self.tag_reward else ():
            for a in self.possible_agents:
                rewards[a] += -self.tag_reward if team[a] == team[o] else self.tag_reward
        if self.new_cell_reward and self._visited:  # switched on mid-episode: counts from the next one
            for a in self.possible_agents:
                r, c = self.positions[a]
                seen = self._visited[a]
                if not seen[r, c]:
                    seen[r, c] = True
                    rewards[a] += self.new_cell_reward

    # ------------------------------------------------------------------ memory map
    def _remember(self, agent: str) -> None:
        """What `agent` sees now joins its memory: every cell of its window (open or wall), its own cell as
        visited, and where (and when) it sees each opponent and its own flag off its base. A sighting stays
        where it was made until the same opponent (or the flag) is seen again; the flag's is dropped when the
        flag is home."""
        r, c = self.positions[agent]
        pad, rad = self.seen_map * self.seen_map_block // 2, self.view_radius
        r0, c0 = r + pad - rad, c + pad - rad
        rows, cols = slice(max(0, r0), r0 + 2 * rad + 1), slice(max(0, c0), c0 + 2 * rad + 1)
        memory = self._memory[agent]
        memory[rows, cols, :2] = self._cells[rows, cols]
        memory[r + pad, c + pad, 2] = 1.0
        last = self._last_seen[agent]  # {opponent name or "flag": (padded row, padded column, step)}
        own_flag_carrier = self.carrier[self._team[agent]]
        if own_flag_carrier is None:
            last.pop("flag", None)
        for o in self._opponents[agent]:
            orr, oc = self.positions[o]
            if abs(orr - r) <= rad and abs(oc - c) <= rad:
                last[o] = (orr + pad, oc + pad, self.step_count)
                if o == own_flag_carrier:
                    last["flag"] = last[o]

    def _see(self, agent: str) -> None:
        """`agent`'s cell memory takes in its window now: the wall layer of its own window, the opponents in it and
        whether one of them carries its flag (``envs/cell_memory.py``)."""
        r, c = self.positions[agent]
        t = self._team[agent]
        rad = self.view_radius
        seen = {o: self.positions[o] for o in self._opponents[agent]
                if abs(self.positions[o][0] - r) <= rad and abs(self.positions[o][1] - c) <= rad}
        carrier = self.carrier[t]
        self._cell_memories[agent].see((r, c), self._templates[t].window((r, c))[..., CH_WALL], self.step_count,
                                       seen, flag_home=carrier is None, carrier=carrier)

    def cell_memory_of(self, agent: str) -> CellMemory:
        """`agent`'s :class:`~spade_rllib.envs.cell_memory.CellMemory` (with ``cell_memory`` or ``plan`` on)."""
        return self._cell_memories[agent]

    @classmethod
    def map_layout(cls, seen_map: int = 0, cell_memory: int = 0, **_) -> tuple[int, int, int] | None:
        """The memory map at the end of the observation: ``(B, B, 5)`` with ``seen_map=B``, ``(S, S, 9)`` with
        ``cell_memory=S``; None without either."""
        if cell_memory:
            return int(cell_memory), int(cell_memory), len(CELL_CHANNELS)
        return (int(seen_map), int(seen_map), SEEN_CHANNELS) if seen_map else None

    def seen_map_of(self, agent: str) -> np.ndarray:
        """`agent`'s memory map, ``(B, B, 5)`` around it (B = `seen_map` blocks of `seen_map_block` cells a side):
        per block, the share of its cells remembered open, remembered wall (outside the map counts as a
        known wall), and stood on; then its freshest sighting of an opponent, and of the own flag off its
        base, as ``SEEN_DECAY ** (steps since)``."""
        out = np.empty((self.seen_map, self.seen_map, SEEN_CHANNELS), dtype=np.float32)
        self._fill_seen_map(agent, out)
        return out

    def _fill_seen_map(self, agent: str, out: np.ndarray) -> None:
        """Writes `seen_map_of(agent)` into `out` (a ``(B, B, 5)`` view of the observation)."""
        b, k = self.seen_map, self.seen_map_block
        r, c = self.positions[agent]
        span = b * k
        # Two single-axis sums (rows in blocks of k, then columns) on views: a third of the time of one
        # sum over both block axes of the 5-d reshape, which numpy reduces element by element.
        rows = np.add.reduce(self._memory[agent][r:r + span, c:c + span].reshape(b, k, span * SEEN_DENSE), axis=1)
        rows *= 1.0 / (k * k)
        np.add.reduce(rows.reshape(b, b, k, SEEN_DENSE), axis=2, out=out[..., :SEEN_DENSE])
        out[..., SEEN_DENSE:] = 0.0
        for key, (sr, sc, step) in self._last_seen[agent].items():
            br, bc = (sr - r) // k, (sc - c) // k  # the memory's padded row r is the map's top row
            if 0 <= br < b and 0 <= bc < b:
                ch = 4 if key == "flag" else 3
                out[br, bc, ch] = max(out[br, bc, ch], SEEN_DECAY ** (self.step_count - step))

    # ------------------------------------------------------------------ observation
    def _observe(self, agent: str) -> np.ndarray:
        pos = self.positions
        r, c = pos[agent]
        t = self._team[agent]
        template = self._templates[t][(r, c)]
        if self.seen_map or self._cell_memories:  # the plan, then the memory map, after the vector
            o = np.empty(self.observation_spaces[agent].shape, dtype=np.float32)
            n = template.shape[0]
            o[:n] = template
            if self.plan:
                self._cell_memories[agent].plan(o[n:n + PLAN_SIZE])
                n += PLAN_SIZE
            if self.seen_map:
                self._fill_seen_map(agent, o[n:].reshape(self.seen_map, self.seen_map, SEEN_CHANNELS))
            elif self.cell_memory:
                self._cell_memories[agent].grid(o[n:].reshape(self.cell_memory, self.cell_memory, len(CELL_CHANNELS)))
        else:
            o = template.copy()
        k, side, rad = self._k, self._side, self.view_radius
        carrier = self.carrier
        bases = self.level.bases
        # flags away from home: clear them at the base, mark them on the carrier
        for ch, ft in ((CH_OWN_FLAG, t), (CH_ENEMY_FLAG, 1 - t)):
            if carrier[ft] is not None:
                br, bc = bases[ft]
                dr, dc = br - r, bc - c
                if -rad <= dr <= rad and -rad <= dc <= rad:
                    o[((dr + rad) * side + dc + rad) * NUM_CHANNELS + ch] = 0.0
                cr, cc = pos[carrier[ft]]
                dr, dc = cr - r, cc - c
                if -rad <= dr <= rad and -rad <= dc <= rad:
                    base = ((dr + rad) * side + dc + rad) * NUM_CHANNELS
                    o[base + ch] = 1.0
                    o[base + CH_CARRIER] = 1.0
        team, cd = self._team, self.cooldown
        for b, (br, bc) in pos.items():
            if b == agent:
                continue
            dr, dc = br - r, bc - c
            if -rad <= dr <= rad and -rad <= dc <= rad:
                if team[b] == t:
                    o[((dr + rad) * side + dc + rad) * NUM_CHANNELS + CH_MATE] = 1.0
                else:  # max(): two opponents on one cell show the readier one
                    i = ((dr + rad) * side + dc + rad) * NUM_CHANNELS + CH_OPP
                    o[i] = max(o[i], 1.0 if cd[b] == 0 else 0.5)
        if self.trail:
            o[CH_TRAIL:k:NUM_CHANNELS] = self._trail[agent][r:r + side, c:c + side].ravel()
        enemy_carrier = carrier[1 - t]
        if enemy_carrier is not None:
            o[k + V_ENEMY_FLAG_HOME] = 0.0
            if enemy_carrier == agent:
                o[k + V_CARRYING] = 1.0
                o[k + V_ENEMY_FLAG_DR] = o[k + V_ENEMY_FLAG_DC] = o[k + V_ENEMY_FLAG_DIST] = 0.0
            else:
                cr, cc = pos[enemy_carrier]
                o[k + V_ENEMY_FLAG_DR:k + V_ENEMY_FLAG_DIST + 1] = _compass(cr - r, cc - c)
        else:
            o[k + V_ENEMY_FLAG_HOME] = 1.0
        o[k + V_OWN_FLAG_HOME] = 1.0 if carrier[t] is None else 0.0
        mine = cd[agent]
        o[k + V_TAG_READY] = 1.0 if mine == 0 else 0.0
        o[k + V_COOLDOWN] = mine / self.tag_cooldown if self.tag_cooldown else 0.0
        o[k + V_TIME] = (self.max_steps - self.step_count) / self.max_steps
        o[k + V_OWN_CAPTURES] = self.captures[t] / self.captures_to_win
        o[k + V_OPP_CAPTURES] = self.captures[1 - t] / self.captures_to_win
        wait = self.frozen[agent]
        if wait:
            o[k + V_RESPAWN] = wait / self.respawn_steps
        return o

    # ------------------------------------------------------------------ rendering
    def _char_grid(self) -> list[list[str]]:
        """Walls '#', floor '.', bases 'a'/'b' (upper case 'X'/'Y' when the flag is away), agents
        '1'/'2' (team A/B), '3'/'4' while carrying."""
        lv = self.level
        grid = [["#" if w else "." for w in row] for row in self._walls]
        for t, (r, c) in enumerate(lv.bases):
            grid[r][c] = "ab"[t] if self.carrier[t] is None else "XY"[t]
        for a, (r, c) in self.positions.items():
            t = self._team[a]
            grid[r][c] = ("34" if self.carrying(a) else "12")[t]
        return grid

    def _status(self) -> str:
        return (f"captures A {self.captures[0]} B {self.captures[1]}  " +
                "  ".join(f"{a}@{self.positions[a]} cd={self.cooldown[a]}" +
                          (" carrying" if self.carrying(a) else "") for a in self.possible_agents))
