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
   Rewards: +1 to every agent of the winning team, -1 to the other, 0 on a draw; no shaping.

Why these rules (measured with ``bench/ladder.py``; ``docs/ctf.md``): agents that block each other
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
from operator import index
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .generators import Knobs, ctf_default_max_steps, generate_ctf_level, knobs_for_difficulty
from .level import Level

__all__ = ["CaptureTheFlag", "NOOP", "UP", "DOWN", "LEFT", "RIGHT", "TAG", "NUM_ACTIONS"]

NOOP, UP, DOWN, LEFT, RIGHT, TAG = range(6)
NUM_ACTIONS = 6
DELTAS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (0, 0))

CH_WALL, CH_OWN_BASE, CH_ENEMY_BASE, CH_OWN_FLAG, CH_ENEMY_FLAG, CH_MATE, CH_OPP, CH_CARRIER, CH_HALF, \
    CH_TRAIL = range(10)
NUM_CHANNELS = 10
V_ENEMY_FLAG_DR, V_ENEMY_FLAG_DC, V_ENEMY_FLAG_DIST, V_BASE_DR, V_BASE_DC, V_BASE_DIST, V_CARRYING, \
    V_OWN_FLAG_HOME, V_ENEMY_FLAG_HOME, V_TAG_READY, V_COOLDOWN, V_TIME, V_TEAM, V_OWN_CAPTURES, \
    V_OPP_CAPTURES, V_RESPAWN = range(16)
VECTOR_SIZE = 16
DIST_SCALE = 32.0
MAX_VIEW_RADIUS = 12
TEAM_LETTERS = ("A", "B")


def _compass(dr: float, dc: float) -> tuple[float, float, float]:
    """Unit direction and clipped straight-line distance / DIST_SCALE (no path information)."""
    d = math.hypot(dr, dc)
    if d == 0.0:
        return 0.0, 0.0, 0.0
    return dr / d, dc / d, min(1.0, d / DIST_SCALE)


class _Templates(dict):
    """Per (level, team, radius): the observation template of each cell, built lazily: the static
    window channels (wall, bases, flags at home, half) and the static vector (compasses to the enemy
    base and the own base, team). The env overwrites only what moves."""

    def __init__(self, level: Level, team: int, radius: int):
        super().__init__()
        self.level, self.team, self.radius = level, team, radius
        h, w = level.height, level.width
        pad = np.zeros((h + 2 * radius, w + 2 * radius, NUM_CHANNELS), dtype=np.float32)
        pad[..., CH_WALL] = 1.0
        inner = pad[radius:radius + h, radius:radius + w]
        inner[..., CH_WALL] = level.walls
        own, enemy = level.bases[team], level.bases[1 - team]
        inner[own[0], own[1], CH_OWN_BASE] = inner[own[0], own[1], CH_OWN_FLAG] = 1.0
        inner[enemy[0], enemy[1], CH_ENEMY_BASE] = inner[enemy[0], enemy[1], CH_ENEMY_FLAG] = 1.0
        half = level.half()
        inner[..., CH_HALF] = np.where(half == team, 1.0, np.where(half == 1 - team, -1.0, 0.0))
        self.pad = pad
        side = 2 * radius + 1
        self.k = side * side * NUM_CHANNELS
        self.n = self.k + VECTOR_SIZE

    def __missing__(self, cell: tuple[int, int]) -> np.ndarray:
        r, c = cell
        side = 2 * self.radius + 1
        out = np.zeros(self.n, dtype=np.float32)
        out[:self.k] = self.pad[r:r + side, c:c + side].ravel()
        k = self.k
        own, enemy = self.level.bases[self.team], self.level.bases[1 - self.team]
        out[k + V_ENEMY_FLAG_DR:k + V_ENEMY_FLAG_DIST + 1] = _compass(enemy[0] - r, enemy[1] - c)
        out[k + V_BASE_DR:k + V_BASE_DIST + 1] = _compass(own[0] - r, own[1] - c)
        out[k + V_TEAM] = self.team
        out.setflags(write=False)
        self[cell] = out
        return out


class CaptureTheFlag(ParallelEnv):
    """Two teams, two bases, two flags; see the module docstring for the full manual."""

    metadata = {"name": "CaptureTheFlag-v0", "render_modes": ["ansi", "rgb_array"], "render_fps": 8,
                "is_parallelizable": True}

    def __init__(
        self,
        level: Level | None = None,
        difficulty: float | None = None,
        knobs: Knobs | None = None,
        agents_per_team: int | None = None,
        seed: int | None = None,
        view_radius: int = 4,
        max_steps: int | None = None,
        tag_cooldown: int = 5,
        respawn_steps: int = 6,
        captures_to_win: int = 1,
        tag_carriers_anywhere: bool = False,
        stalemate_steps: int = 6,
        trail: bool = True,
        trail_decay: float = 0.9,
        render_mode: str | None = None,
        family: str | None = None,
    ):
        given = [n for n, v in (("level", level), ("difficulty", difficulty), ("knobs", knobs)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"pass at most one of level, difficulty, knobs; got {given}")
        if level is not None and not isinstance(level, Level):
            raise TypeError(f"level must be a Level, got {type(level).__name__}")
        if level is not None and not level.is_ctf:
            raise ValueError("level is a MazeRace map (one 'F'); CaptureTheFlag needs bases 'a' and 'b'")
        if knobs is not None and not isinstance(knobs, Knobs):
            raise TypeError(f"knobs must be a Knobs, got {type(knobs).__name__}")
        if agents_per_team is not None and (isinstance(agents_per_team, bool) or agents_per_team not in (1, 2)):
            raise ValueError(f"agents_per_team must be 1 or 2, got {agents_per_team!r}")
        for name, v, lo, hi in (("view_radius", view_radius, 1, MAX_VIEW_RADIUS),
                                ("tag_cooldown", tag_cooldown, 0, 1000), ("respawn_steps", respawn_steps, 0, 1000),
                                ("stalemate_steps", stalemate_steps, 0, 100_000),
                                ("captures_to_win", captures_to_win, 1, 100)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                                      or not 1 <= max_steps <= 100_000):
            raise ValueError(f"max_steps must be None or an int in [1, 100000], got {max_steps!r}")
        for name, v in (("tag_carriers_anywhere", tag_carriers_anywhere), ("trail", trail)):
            if not isinstance(v, bool):
                raise ValueError(f"{name} must be a bool, got {v!r}")
        if isinstance(trail_decay, bool) or not isinstance(trail_decay, (int, float)) or not 0.0 <= trail_decay < 1.0:
            raise ValueError(f"trail_decay must be a number in [0, 1), got {trail_decay!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        _check_seed(seed, "seed")

        implied = level.agents_per_team if level is not None else (knobs.agents_per_team if knobs is not None else None)
        if level is not None and implied not in (1, 2):
            raise ValueError(f"level has {implied} spawns per team; CaptureTheFlag plays 1 or 2 agents per team")
        if agents_per_team is not None and implied is not None and implied != agents_per_team:
            raise ValueError(f"agents_per_team={agents_per_team} but the level/knobs have {implied} per team")
        apt = int(agents_per_team or implied or 1)
        if level is None and knobs is None:
            difficulty = 5.0 if difficulty is None else difficulty
            knobs = knobs_for_difficulty(difficulty, family=family, agents_per_team=apt)
        self.agents_per_team = apt
        self.fixed_level = level
        self.knobs = knobs
        self.difficulty = None if difficulty is None else float(difficulty)
        self.family = family
        self.view_radius = int(view_radius)
        self.tag_cooldown = int(tag_cooldown)
        self.respawn_steps = int(respawn_steps)
        self.stalemate_steps = int(stalemate_steps)
        self.captures_to_win = int(captures_to_win)
        self.tag_carriers_anywhere = tag_carriers_anywhere
        self.trail = trail
        self.trail_decay = float(trail_decay)
        self.render_mode = render_mode
        self._max_steps_arg = max_steps
        self._init_seed = seed
        self._rng: np.random.Generator | None = None

        if apt == 1:
            self.possible_agents = ["player_0", "player_1"]
        else:
            self.possible_agents = [f"a_{i}" for i in range(apt)] + [f"b_{i}" for i in range(apt)]
        self._team = {a: (0 if i < apt else 1) for i, a in enumerate(self.possible_agents)}
        self._slot = {a: i % apt for i, a in enumerate(self.possible_agents)}
        self._opponents = {a: tuple(b for b in self.possible_agents if self._team[b] != self._team[a])
                           for a in self.possible_agents}
        (side, _, c), v = self.obs_layout(self.view_radius)
        self._side, self._k = side, side * side * c
        obs_space = spaces.Box(-1.0, 1.0, shape=(self._k + v,), dtype=np.float32)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.agents: list[str] = []
        self.level: Level | None = None
        self.positions: dict[str, tuple[int, int]] = {}
        self.cooldown: dict[str, int] = {}
        self.frozen: dict[str, int] = {}
        """Steps a tagged agent still waits on its spawn (its actions are ignored meanwhile)."""
        self.carrier: list[str | None] = [None, None]
        """Who carries team t's flag (an opponent), or None while it is at home."""
        self.captures = [0, 0]
        self.tags = [0, 0]
        self.flag_pickups = [0, 0]
        self.step_count = 0
        self.max_steps = 0
        self.outcome: dict[str, Any] | None = None
        self._done = False

    # ------------------------------------------------------------------ spaces / layout
    @staticmethod
    def obs_layout(view_radius: int = 4) -> tuple[tuple[int, int, int], int]:
        """``((2r+1, 2r+1, C), V)``: the window shape (channels-last) and the vector size."""
        w = 2 * int(view_radius) + 1
        return (w, w, NUM_CHANNELS), VECTOR_SIZE

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def team_of(self, agent: str) -> int:
        """0 for team A, 1 for team B."""
        return self._team[agent]

    def carrying(self, agent: str) -> bool:
        """True while ``agent`` carries the enemy flag."""
        return self.carrier[1 - self._team[agent]] == agent

    # ------------------------------------------------------------------ reset
    def _choose_level(self, options: dict | None) -> Level:
        rng = self._rng
        opts = options or {}
        if not isinstance(opts, dict):
            raise TypeError(f"options must be a dict or None, got {type(opts).__name__}")
        # other keys are ignored (PettingZoo's API test passes arbitrary options)
        if opts.get("level") is not None:
            level = opts["level"]
            if not isinstance(level, Level):
                raise TypeError(f"options['level'] must be a Level, got {type(level).__name__}")
            if not level.is_ctf:
                raise ValueError("options['level'] is a MazeRace map (one 'F'); CaptureTheFlag needs bases 'a' and 'b'")
        elif opts.get("knobs") is not None or opts.get("difficulty") is not None:
            knobs, difficulty = opts.get("knobs"), opts.get("difficulty")
            if knobs is None:
                knobs = knobs_for_difficulty(difficulty, family=self.family, agents_per_team=self.agents_per_team)
            elif isinstance(knobs, dict):
                knobs = Knobs.from_dict(knobs)
            elif not isinstance(knobs, Knobs):
                raise TypeError(f"options['knobs'] must be a Knobs or a dict, got {type(knobs).__name__}")
            level_seed = opts.get("level_seed")
            if level_seed is None:
                level_seed = int(rng.integers(2**31 - 1))
            level = self._generate(knobs, level_seed, difficulty)
        elif self.fixed_level is not None:
            level = self.fixed_level
        else:
            level = self._generate(self.knobs, int(rng.integers(2**31 - 1)), self.difficulty)
        if level.agents_per_team != self.agents_per_team:
            raise ValueError(
                f"level has {level.agents_per_team} agents per team; this env plays {self.agents_per_team}")
        return level

    @staticmethod
    def _generate(knobs: Knobs, level_seed: int, difficulty: float | None) -> Level:
        level = generate_ctf_level(knobs, level_seed)
        level.meta["level_seed"] = int(level_seed)
        if difficulty is not None:
            level.meta["difficulty"] = float(difficulty)
        return level

    def _level_info(self, level: Level) -> dict[str, Any]:
        meta = level.meta
        if "knobs" in meta:
            info = dict(meta["knobs"])
            info["level_seed"] = meta.get("level_seed", meta.get("seed"))
        else:
            info = {"family": meta.get("family", "custom"), "size": max(level.height, level.width),
                    "agents_per_team": level.agents_per_team}
        info.setdefault("family", meta.get("family", "custom"))
        info["height"], info["width"] = level.height, level.width
        info["max_steps"] = self.max_steps
        a, b = level.bases
        info["base_distance"] = int(level.distance_to_base(0)[b])
        for key in ("difficulty", "level_id", "name"):
            if key in meta:
                info[key] = meta[key]
        return info

    def reset(self, seed: int | None = None, options: dict | None = None):
        _check_seed(seed, "reset(seed=...)")
        if seed is not None:
            self._rng = np.random.default_rng(int(seed))
        elif self._rng is None:
            self._rng = np.random.default_rng(self._init_seed)
        level = self._choose_level(options)
        self.level = level
        if self._max_steps_arg is not None:
            self.max_steps = int(self._max_steps_arg)
        elif "knobs" in level.meta and level.meta["knobs"].get("max_steps") is not None:
            self.max_steps = int(level.meta["knobs"]["max_steps"])
        else:
            self.max_steps = ctf_default_max_steps(max(level.height, level.width))
        rad = self.view_radius
        self._templates = tuple(level.cached(("ctf_templates", t, rad), lambda lv, t=t: _Templates(lv, t, rad))
                                for t in (0, 1))
        self._walls = level.wall_rows()
        self._half = level.half_rows()
        self.agents = list(self.possible_agents)
        self.positions = {a: level.spawns[self._team[a]][self._slot[a]] for a in self.possible_agents}
        self.cooldown = {a: 0 for a in self.possible_agents}
        self.frozen = {a: 0 for a in self.possible_agents}
        self._waiting = 0  # how many agents have frozen > 0
        self.carrier = [None, None]
        self.captures = [0, 0]
        self.tags = [0, 0]
        self.flag_pickups = [0, 0]
        self.stalemates = 0
        self._both_away = 0
        self.step_count = 0
        self.outcome = None
        self._done = False
        h, w = level.height, level.width
        self._trail = {a: np.zeros((h + 2 * rad, w + 2 * rad), dtype=np.float32) for a in self.possible_agents}
        if self.trail:
            for a, (r, c) in self.positions.items():
                self._trail[a][r + rad, c + rad] = 1.0
        obs = {a: self._observe(a) for a in self.agents}
        infos = {a: {"team": self._team[a]} for a in self.agents}
        return obs, infos

    # ------------------------------------------------------------------ step
    def _validated(self, actions: dict) -> dict[str, int]:
        if self.level is None:
            raise RuntimeError("step() before reset(): call reset() first")
        if self._done:
            raise RuntimeError("step() after the episode ended (env.agents is empty): call reset() first")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> int, got {type(actions).__name__}")
        acts = {}
        team = self._team
        for a, act in actions.items():
            if type(act) is int and 0 <= act < NUM_ACTIONS and a in team:  # the common case, checked fast
                acts[a] = act
                continue
            if a not in team:
                raise ValueError(f"unknown agent {a!r} in actions; agents are {self.possible_agents}")
            if isinstance(act, (bool, np.bool_)):
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}")
            try:
                act = index(act)
            except TypeError:
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}") from None
            if not 0 <= act < NUM_ACTIONS:
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}")
            acts[a] = act
        return acts

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
        # outcome
        done = winner is not None
        truncated = not done and self.step_count >= self.max_steps
        if truncated:
            ca, cb = self.captures
            winner = 0 if ca > cb else (1 if cb > ca else None)
        obs = {a: self._observe(a) for a in names}
        infos = {a: {"team": team[a]} for a in names}
        if done or truncated:
            if winner is None:
                rewards = {a: 0.0 for a in names}
            else:
                rewards = {a: (1.0 if team[a] == winner else -1.0) for a in names}
            self.outcome = {
                "winner": "draw" if winner is None else TEAM_LETTERS[winner],
                "reason": "capture" if done else "timeout",
                "episode_length": self.step_count,
                "level": self._level_info(level),
                "tags": dict(zip(TEAM_LETTERS, self.tags)),
                "flag_pickups": dict(zip(TEAM_LETTERS, self.flag_pickups)),
                "captures": dict(zip(TEAM_LETTERS, self.captures)),
                "stalemates": self.stalemates,
            }
            for a in names:
                infos[a].update({k: (dict(v) if isinstance(v, dict) else v) for k, v in self.outcome.items()})
            self.agents = []
            self._done = True
        else:
            rewards = {a: 0.0 for a in names}
        terms = {a: done for a in names}
        truncs = {a: truncated for a in names}
        return obs, rewards, terms, truncs, infos

    # ------------------------------------------------------------------ observation
    def _observe(self, agent: str) -> np.ndarray:
        pos = self.positions
        r, c = pos[agent]
        t = self._team[agent]
        o = self._templates[t][(r, c)].copy()
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

    def render(self):
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.level is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            grid = "\n".join("".join(row) for row in self._char_grid())
            status = (f"step {self.step_count}/{self.max_steps}  captures A {self.captures[0]} B {self.captures[1]}  " +
                      "  ".join(f"{a}@{self.positions[a]} cd={self.cooldown[a]}" +
                                (" carrying" if self.carrying(a) else "") for a in self.possible_agents))
            if self.outcome:
                status += f"  -> winner {self.outcome['winner']} ({self.outcome['reason']})"
            return grid + "\n" + status + "\n"
        return _rgb(self._char_grid())

    def close(self) -> None:
        pass


def _check_seed(seed: Any, name: str) -> None:
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"{name} must be None or an int, got {seed!r}")


_COLOURS = {"#": (40, 40, 48), ".": (235, 235, 228), "a": (120, 150, 240), "b": (240, 130, 130),
            "X": (190, 200, 240), "Y": (240, 200, 200), "1": (40, 90, 220), "2": (210, 50, 50),
            "3": (240, 190, 20), "4": (240, 120, 20)}
CELL_PX = 8


def _rgb(grid: list[list[str]]) -> np.ndarray:
    """Colour each cell and scale it to CELL_PX x CELL_PX pixels: (H*8, W*8, 3) uint8."""
    img = np.array([[_COLOURS[ch] for ch in row] for row in grid], dtype=np.uint8)
    img = np.repeat(np.repeat(img, CELL_PX, axis=0), CELL_PX, axis=1)
    img[::CELL_PX, :, :] = (img[::CELL_PX, :, :] * 0.85).astype(np.uint8)
    img[:, ::CELL_PX, :] = (img[:, ::CELL_PX, :] * 0.85).astype(np.uint8)
    return img
