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

from operator import index
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .generators import Knobs, default_max_steps, generate_level, knobs_for_difficulty
from .level import Level

__all__ = ["MazeRace", "NOOP", "UP", "DOWN", "LEFT", "RIGHT", "TAG", "NUM_ACTIONS"]

NOOP, UP, DOWN, LEFT, RIGHT, TAG = range(6)
NUM_ACTIONS = 6
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
MAX_VIEW_RADIUS = 12


def _static_layers(level: Level, radius: int) -> np.ndarray:
    """Padded (H+2r, W+2r, C) float32: wall, flag and raw flag distance; dynamic channels zero."""
    h, w = level.height, level.width
    pad = np.zeros((h + 2 * radius, w + 2 * radius, NUM_CHANNELS), dtype=np.float32)
    pad[..., CH_WALL] = 1.0
    pad[radius:radius + h, radius:radius + w, CH_WALL] = level.walls
    pad[level.flag[0] + radius, level.flag[1] + radius, CH_FLAG] = 1.0
    dist = level.distance_to_flag()
    pad[..., CH_DIST] = _FAR
    pad[radius:radius + h, radius:radius + w, CH_DIST] = np.where(dist >= 0, dist, _FAR)
    return pad


class _Templates(dict):
    """Per (level, radius): lazily built observation template per cell (window + static vector)."""

    def __init__(self, level: Level, radius: int):
        super().__init__()
        self.level, self.radius = level, radius
        self.pad = _static_layers(level, radius)
        self.dist = level.dist_rows()
        w = 2 * radius + 1
        self.k = w * w * NUM_CHANNELS
        self.n = self.k + VECTOR_SIZE

    def __missing__(self, cell: tuple[int, int]) -> np.ndarray:
        r, c = cell
        rad, dist = self.radius, self.dist
        w = 2 * rad + 1
        win = self.pad[r:r + w, c:c + w].copy()
        d = dist[r][c]
        win[..., CH_DIST] = np.clip((win[..., CH_DIST] - d) / (2 * rad), -1.0, 1.0)
        out = np.zeros(self.n, dtype=np.float32)
        out[:self.k] = win.ravel()
        fr, fc = self.level.flag
        k = self.k
        out[k + V_FLAG_DR] = max(-1.0, min(1.0, (fr - r) / POS_SCALE))
        out[k + V_FLAG_DC] = max(-1.0, min(1.0, (fc - c) / POS_SCALE))
        out[k + V_OWN_DIST] = min(1.0, d / DIST_SCALE)
        for i, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
            nd = dist[r + dr][c + dc]
            out[k + V_DOWNHILL + i] = 1.0 if 0 <= nd < d else 0.0
        out.setflags(write=False)
        self[cell] = out
        return out


class MazeRace(ParallelEnv):
    """Two teams race to one flag; see the module docstring for the full manual."""

    metadata = {"name": "MazeRace-v0", "render_modes": ["ansi", "rgb_array"], "render_fps": 8,
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
        stun_steps: int = 3,
        tag_cooldown: int = 5,
        render_mode: str | None = None,
        family: str | None = None,
    ):
        given = [n for n, v in (("level", level), ("difficulty", difficulty), ("knobs", knobs)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"pass at most one of level, difficulty, knobs; got {given}")
        if level is not None and not isinstance(level, Level):
            raise TypeError(f"level must be a Level, got {type(level).__name__}")
        if level is not None and level.is_ctf:
            raise ValueError("level is a CaptureTheFlag map (bases 'a'/'b'); MazeRace needs one flag 'F'")
        if knobs is not None and not isinstance(knobs, Knobs):
            raise TypeError(f"knobs must be a Knobs, got {type(knobs).__name__}")
        if agents_per_team is not None and agents_per_team not in (1, 2):
            raise ValueError(f"agents_per_team must be 1 or 2, got {agents_per_team!r}")
        for name, v, lo, hi in (("view_radius", view_radius, 1, MAX_VIEW_RADIUS), ("stun_steps", stun_steps, 0, 1000),
                                ("tag_cooldown", tag_cooldown, 0, 1000)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                                      or not 1 <= max_steps <= 100_000):
            raise ValueError(f"max_steps must be None or an int in [1, 100000], got {max_steps!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be None or an int, got {seed!r}")

        # which team size: explicit, else from the level / knobs, else 1
        implied = level.agents_per_team if level is not None else (knobs.agents_per_team if knobs is not None else None)
        if implied is not None and implied not in (1, 2):  # a 3v3 map: refused like agents_per_team=3 (issue 16)
            raise ValueError(f"the level has {implied} agents per team; MazeRace plays 1 or 2 per team")
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
        self.stun_steps = int(stun_steps)
        self.tag_cooldown = int(tag_cooldown)
        self.render_mode = render_mode
        self._max_steps_arg = max_steps
        self._init_seed = seed
        self._rng: np.random.Generator | None = None

        if apt == 1:
            self.possible_agents = ["player_0", "player_1"]
        else:
            self.possible_agents = [f"a_{i}" for i in range(apt)] + [f"b_{i}" for i in range(apt)]
        self._team = {a: (0 if i < apt else 1) for i, a in enumerate(self.possible_agents)}
        self._opponents = {a: tuple(b for b in self.possible_agents if self._team[b] != self._team[a])
                           for a in self.possible_agents}
        self._mates = {a: tuple(b for b in self.possible_agents if b != a and self._team[b] == self._team[a])
                       for a in self.possible_agents}
        (w, _, c), v = self.obs_layout(self.view_radius)
        self._w, self._k = w, w * w * c
        n = self._k + v
        obs_space = spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.agents: list[str] = []
        self.level: Level | None = None
        self.positions: dict[str, tuple[int, int]] = {}
        self.stun: dict[str, int] = {}
        self.cooldown: dict[str, int] = {}
        self.step_count = 0
        self.max_steps = 0
        self.outcome: dict[str, Any] | None = None

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

    # ------------------------------------------------------------------ reset
    def _choose_level(self, options: dict | None) -> Level:
        rng = self._rng
        opts = options or {}
        # other keys are ignored (PettingZoo's API test passes arbitrary options)
        if opts.get("level") is not None:
            level = opts["level"]
            if not isinstance(level, Level):
                raise TypeError(f"options['level'] must be a Level, got {type(level).__name__}")
            if level.is_ctf:
                raise ValueError("options['level'] is a CaptureTheFlag map (bases 'a'/'b'); MazeRace needs one flag 'F'")
        elif opts.get("knobs") is not None or opts.get("difficulty") is not None:
            knobs, difficulty = opts.get("knobs"), opts.get("difficulty")
            if knobs is None:
                knobs = knobs_for_difficulty(difficulty, family=self.family, agents_per_team=self.agents_per_team)
            elif isinstance(knobs, dict):
                knobs = Knobs.from_dict(knobs)
            level_seed = opts.get("level_seed")
            if level_seed is None:
                level_seed = int(rng.integers(2**31 - 1))
            level = self._generate(knobs, int(level_seed), difficulty)
        elif self.fixed_level is not None:
            level = self.fixed_level
        else:
            level = self._generate(self.knobs, int(rng.integers(2**31 - 1)), self.difficulty)
        if level.agents_per_team != self.agents_per_team:
            raise ValueError(f"level has {level.agents_per_team} agents per team; this env plays {self.agents_per_team}")
        return level

    @staticmethod
    def _generate(knobs: Knobs, level_seed: int, difficulty: float | None) -> Level:
        level = generate_level(knobs, level_seed)
        level.meta["level_seed"] = level_seed
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
        info["flag_distance_actual"] = level.team_distances()[0][0]
        if "difficulty" in meta:
            info["difficulty"] = meta["difficulty"]
        if "level_id" in meta:
            info["level_id"] = meta["level_id"]
        return info

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"reset(seed=...) must be None or an int, got {seed!r}")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng(self._init_seed)
        level = self._choose_level(options)
        self.level = level
        if self._max_steps_arg is not None:
            self.max_steps = int(self._max_steps_arg)
        elif "knobs" in level.meta and level.meta["knobs"].get("max_steps") is not None:
            self.max_steps = int(level.meta["knobs"]["max_steps"])
        else:
            self.max_steps = default_max_steps(max(level.height, level.width))
        self._templates = level.cached(("obs_templates", self.view_radius),
                                       lambda lv: _Templates(lv, self.view_radius))
        self._dist = level.dist_rows()
        self._walls = level.wall_rows()
        self._level_info_cache = None
        self.agents = list(self.possible_agents)
        apt = self.agents_per_team
        self.positions = {a: level.spawns[self._team[a]][i % apt] for i, a in enumerate(self.possible_agents)}
        self.stun = {a: 0 for a in self.agents}
        self.cooldown = {a: 0 for a in self.agents}
        self.step_count = 0
        self.outcome = None
        obs = {a: self._observe(a) for a in self.agents}
        infos = {a: {"team": self._team[a]} for a in self.agents}
        return obs, infos

    # ------------------------------------------------------------------ step
    def step(self, actions: dict[str, int]):
        if self.level is None:
            raise RuntimeError("step() before reset(): call reset() first")
        if not self.agents:  # as CaptureTheFlag and PettingZoo's own envs: a finished episode is not stepped
            raise RuntimeError("step() after the episode ended (env.agents is empty): call reset() first")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> int, got {type(actions).__name__}")
        for a in actions:
            if a not in self._team:
                raise ValueError(f"unknown agent {a!r} in actions; agents are {self.possible_agents}")
        names = self.possible_agents
        pos, stun, cd, team = self.positions, self.stun, self.cooldown, self._team
        acts = {}
        for a in names:
            act = actions.get(a, NOOP)
            if isinstance(act, (bool, np.bool_)):
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}")
            try:
                act = index(act)
            except TypeError as e:
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}") from e
            if not 0 <= act < NUM_ACTIONS:
                raise ValueError(f"action for {a} must be an int in [0, {NUM_ACTIONS - 1}], got {act!r}")
            acts[a] = act
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
        if teams_at_flag:
            done = True
            if len(teams_at_flag) == 2:
                winner, reason = "draw", "both_flag"
            else:
                winner, reason = ("A", "B")[teams_at_flag.pop()], "flag"
        elif self.step_count >= self.max_steps:
            truncated = True
            winner, reason = "draw", "timeout"
        obs = {a: self._observe(a) for a in names}
        infos = {a: {"team": team[a]} for a in names}
        if done or truncated:
            if winner == "draw":
                rewards = {a: 0.0 for a in names}
            else:
                wt = 0 if winner == "A" else 1
                rewards = {a: (1.0 if team[a] == wt else -1.0) for a in names}
            self.outcome = {"winner": winner, "reason": reason, "episode_length": self.step_count,
                            "level": self._level_info(self.level)}
            for a in names:
                infos[a].update(self.outcome)
                infos[a]["level"] = dict(self.outcome["level"])
            self.agents = []
        else:
            rewards = {a: 0.0 for a in names}
        terms = {a: done for a in names}
        truncs = {a: truncated for a in names}
        return obs, rewards, terms, truncs, infos

    # ------------------------------------------------------------------ observation
    def _observe(self, agent: str) -> np.ndarray:
        pos = self.positions
        r, c = pos[agent]
        o = self._templates[(r, c)].copy()
        k, w, rad = self._k, self._w, self.view_radius
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

    def render(self):
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.level is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            grid = "\n".join("".join(row) for row in self._char_grid())
            status = (f"step {self.step_count}/{self.max_steps}  " +
                      "  ".join(f"{a}@{self.positions[a]} stun={self.stun[a]} cd={self.cooldown[a]}"
                                for a in self.possible_agents))
            if self.outcome:
                status += f"  -> winner {self.outcome['winner']} ({self.outcome['reason']})"
            return grid + "\n" + status + "\n"
        return _rgb(self._char_grid())

    def close(self) -> None:
        pass


_COLOURS = {"#": (40, 40, 48), ".": (235, 235, 228), "F": (240, 190, 20), "A": (40, 90, 220),
            "a": (130, 160, 230), "B": (210, 50, 50), "b": (230, 150, 150)}
CELL_PX = 8


def _rgb(grid: list[list[str]]) -> np.ndarray:
    """Colour each cell and scale it to CELL_PX x CELL_PX pixels: (H*8, W*8, 3) uint8."""
    img = np.array([[_COLOURS[ch] for ch in row] for row in grid], dtype=np.uint8)
    img = np.repeat(np.repeat(img, CELL_PX, axis=0), CELL_PX, axis=1)
    img[::CELL_PX, :, :] = (img[::CELL_PX, :, :] * 0.85).astype(np.uint8)
    img[:, ::CELL_PX, :] = (img[:, ::CELL_PX, :] * 0.85).astype(np.uint8)
    return img
