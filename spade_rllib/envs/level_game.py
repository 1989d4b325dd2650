"""LevelGame: the ParallelEnv base of the two-team grid games played on a :class:`Level`.

A subclass keeps its rules (``step``), its observation (``_observe``, ``NUM_CHANNELS``,
``VECTOR_SIZE``) and its glyphs (``_char_grid``, ``COLOURS``, ``_status``). The base owns what the
games share:

- constructor checks (level / difficulty / knobs, team size, view radius, ``max_steps``, seed,
  render mode) and the team layout (``possible_agents``, ``team_of``, spaces);
- the level of each episode (``reset(options={"level" | "knobs" + "level_seed" | "difficulty"})``,
  else the fixed level, else a new level from the env's seeded RNG) and its ``info["level"]``;
- seeding (``reset(seed=s)`` is fully deterministic), action validation (a missing action is noop;
  anything invalid raises ``ValueError`` and changes nothing), rendering (``"ansi"`` text or an
  ``(H*8, W*8, 3)`` uint8 ``"rgb_array"``) and ``close``.

Every bad argument is a one-line error: ``ValueError`` for a bad value, ``TypeError`` for a value of
the wrong type (a level that is not a ``Level``, a seed that is not an int, options that are not a dict).
"""
from __future__ import annotations

from operator import index
from typing import Any, Callable, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .generators import Knobs, knobs_for_difficulty
from .level import Level

__all__ = ["LevelGame", "CellTemplates", "game_metadata", "NOOP", "UP", "DOWN", "LEFT", "RIGHT", "TAG", "NUM_ACTIONS", "ACTION_NAMES",
           "MAX_VIEW_RADIUS", "CELL_PX", "check_seed", "check_int"]

NOOP, UP, DOWN, LEFT, RIGHT, TAG = range(6)
NUM_ACTIONS = 6
ACTION_NAMES = ("noop", "up", "down", "left", "right", "tag")
MAX_VIEW_RADIUS = 12
MAX_STEPS_LIMIT = 100_000
CELL_PX = 8


def check_seed(seed: Any, name: str) -> None:
    """A seed is None or an int (not a bool): else ``TypeError``."""
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"{name} must be None or an int, got {seed!r}")


def check_int(name: str, v: Any, lo: int, hi: int) -> None:
    """An int (not a bool) in ``[lo, hi]``: else ``ValueError``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")


def game_metadata(name: str) -> dict[str, Any]:
    """The PettingZoo ``metadata`` of a level game called `name` (``"Name-vN"``)."""
    return {"name": name, "render_modes": ["ansi", "rgb_array"], "render_fps": 8, "is_parallelizable": True}


class CellTemplates(dict):
    """Per level (and whatever else the game keys it by): the observation template of each cell,
    built lazily by the game's ``fill(cell, out)`` and then read-only. ``pad`` is the level padded by
    the view radius on every side, channels-last; channel 0 is walls (1 on walls and outside the map)."""

    def __init__(self, level: Level, radius: int, channels: int, vector_size: int):
        super().__init__()
        self.level, self.radius = level, radius
        h, w = level.height, level.width
        self.pad = np.zeros((h + 2 * radius, w + 2 * radius, channels), dtype=np.float32)
        self.pad[..., 0] = 1.0
        self.inner = self.pad[radius:radius + h, radius:radius + w]
        self.inner[..., 0] = level.walls
        self.side = 2 * radius + 1
        self.k = self.side * self.side * channels
        self.n = self.k + vector_size

    def window(self, cell: tuple[int, int]) -> np.ndarray:
        """The padded window centred on `cell` (a view into ``pad``)."""
        r, c = cell
        return self.pad[r:r + self.side, c:c + self.side]

    def fill(self, cell: tuple[int, int], out: np.ndarray) -> None:
        raise NotImplementedError

    def __missing__(self, cell: tuple[int, int]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        self.fill(cell, out)
        out.setflags(write=False)
        self[cell] = out
        return out


class LevelGame(ParallelEnv):
    """Base of the level games; see the module docstring. A game declares itself in its class line::

        class MazeRace(LevelGame, name="MazeRace-v0", channels=6, vector_size=16, ctf_levels=False,
                       generator=generate_level, default_max_steps=default_max_steps): ...
    """

    metadata: ClassVar[dict[str, Any]] = game_metadata("LevelGame-v0")
    NUM_CHANNELS: ClassVar[int] = 0
    VECTOR_SIZE: ClassVar[int] = 0
    CTF_LEVELS: ClassVar[bool] = False
    """True: the game plays CTF maps (bases ``a``/``b``); False: MazeRace maps (one flag ``F``)."""
    draw_reward: float = 0.0
    """Reward of every agent when an episode ends in a draw (a game may take it as a keyword)."""
    COLOURS: ClassVar[dict[str, tuple[int, int, int]]] = {}
    INFO_KEYS: ClassVar[tuple[str, ...]] = ("difficulty", "level_id")
    """Level meta keys copied into ``info["level"]`` when present."""

    def __init__(self, level: Level | None = None, difficulty: float | None = None, knobs: Knobs | None = None,
                 agents_per_team: int | None = None, seed: int | None = None, view_radius: int = 4,
                 max_steps: int | None = None, render_mode: str | None = None, family: str | None = None,
                 int_params: tuple[tuple[str, Any, int, int], ...] = ()):
        given = [n for n, v in (("level", level), ("difficulty", difficulty), ("knobs", knobs)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"pass at most one of level, difficulty, knobs; got {given}")
        if level is not None:
            self._check_level_kind(level, "level")
        if knobs is not None and not isinstance(knobs, Knobs):
            raise TypeError(f"knobs must be a Knobs, got {type(knobs).__name__}")
        if agents_per_team is not None and (isinstance(agents_per_team, bool) or agents_per_team not in (1, 2)):
            raise ValueError(f"agents_per_team must be 1 or 2, got {agents_per_team!r}")
        for name, v, lo, hi in (("view_radius", view_radius, 1, MAX_VIEW_RADIUS),) + tuple(int_params):
            check_int(name, v, lo, hi)
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                                      or not 1 <= max_steps <= MAX_STEPS_LIMIT):
            raise ValueError(f"max_steps must be None or an int in [1, {MAX_STEPS_LIMIT}], got {max_steps!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        check_seed(seed, "seed")

        game = self.metadata["name"].split("-v")[0]
        implied = level.agents_per_team if level is not None else (knobs.agents_per_team if knobs is not None else None)
        if implied is not None and implied not in (1, 2):
            raise ValueError(f"level has {implied} spawns per team; {game} plays 1 or 2 agents per team")
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
        self.step_count = 0
        self.max_steps = 0
        self.outcome: dict[str, Any] | None = None

    # ------------------------------------------------------------------ hooks for the game
    def __init_subclass__(cls, name: str | None = None, channels: int | None = None, vector_size: int | None = None,
                          ctf_levels: bool | None = None, generator: Callable[[Knobs, int], Level] | None = None,
                          default_max_steps: Callable[[int], int] | None = None, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if name is not None:
            cls.metadata = game_metadata(name)
        if channels is not None:
            cls.NUM_CHANNELS = channels
        if vector_size is not None:
            cls.VECTOR_SIZE = vector_size
        if ctf_levels is not None:
            cls.CTF_LEVELS = ctf_levels
        if generator is not None:
            cls.generator = staticmethod(generator)
        if default_max_steps is not None:
            cls.default_max_steps = staticmethod(default_max_steps)

    @staticmethod
    def generator(knobs: Knobs, seed: int) -> Level:
        """``(knobs, seed) -> Level``: the game's level generator."""
        raise NotImplementedError

    @staticmethod
    def default_max_steps(size: int) -> int:
        """The episode length of a level of this size when neither ``max_steps`` nor the knobs say."""
        raise NotImplementedError

    def _level_extra(self, level: Level, info: dict[str, Any]) -> None:
        """Add the game's own entries to ``info["level"]``."""

    def _char_grid(self) -> list[list[str]]:
        raise NotImplementedError

    def _status(self) -> str:
        """The ansi status line after ``step t/T``: the game's per-agent state."""
        return ""

    # ------------------------------------------------------------------ spaces / layout
    @classmethod
    def obs_layout(cls, view_radius: int = 4) -> tuple[tuple[int, int, int], int]:
        """``((2r+1, 2r+1, C), V)``: the window shape (channels-last) and the vector size."""
        w = 2 * int(view_radius) + 1
        return (w, w, cls.NUM_CHANNELS), cls.VECTOR_SIZE

    @classmethod
    def map_layout(cls, **kwargs) -> tuple[int, int, int] | None:
        """The shape ``(B, B, C)`` of a memory map the observation ends with under these env kwargs, or None
        (the default: no map)."""
        return None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def team_of(self, agent: str) -> int:
        """0 for team A, 1 for team B."""
        return self._team[agent]

    # ------------------------------------------------------------------ levels
    def _check_level_kind(self, level: Any, name: str) -> None:
        if not isinstance(level, Level):
            raise TypeError(f"{name} must be a Level, got {type(level).__name__}")
        if level.is_ctf and not self.CTF_LEVELS:
            raise ValueError(f"{name} is a CaptureTheFlag map (bases 'a'/'b'); {self.metadata['name'].split('-v')[0]} "
                             "needs one flag 'F'")
        if not level.is_ctf and self.CTF_LEVELS:
            raise ValueError(f"{name} is a MazeRace map (one 'F'); {self.metadata['name'].split('-v')[0]} "
                             "needs bases 'a' and 'b'")

    def _choose_level(self, options: dict | None) -> Level:
        rng = self._rng
        opts = {} if options is None else options
        if not isinstance(opts, dict):
            raise TypeError(f"options must be a dict or None, got {type(opts).__name__}")
        # other keys are ignored (PettingZoo's API test passes arbitrary options)
        if opts.get("level") is not None:
            level = opts["level"]
            self._check_level_kind(level, "options['level']")
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
            level = self._generate(knobs, int(level_seed), difficulty)
        elif self.fixed_level is not None:
            level = self.fixed_level
        else:
            level = self._generate(self.knobs, int(rng.integers(2**31 - 1)), self.difficulty)
        if level.agents_per_team != self.agents_per_team:
            raise ValueError(
                f"level has {level.agents_per_team} agents per team; this env plays {self.agents_per_team}")
        return level

    def _generate(self, knobs: Knobs, level_seed: int, difficulty: float | None) -> Level:
        level = self.generator(knobs, level_seed)
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
        self._level_extra(level, info)
        for key in self.INFO_KEYS:
            if key in meta:
                info[key] = meta[key]
        return info

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Seed, choose this episode's level, place the agents on their spawns; ``(obs, infos)``."""
        level = self._begin_reset(seed, options)
        self._start_episode(level)
        obs = {a: self._observe(a) for a in self.agents}
        infos = {a: {"team": self._team[a]} for a in self.agents}
        return obs, infos

    def _start_episode(self, level: Level) -> None:
        """The game's own per-episode state (the base has placed the agents and reset the clocks)."""

    def _observe(self, agent: str) -> np.ndarray:
        raise NotImplementedError

    def _begin_reset(self, seed: int | None, options: dict | None) -> Level:
        check_seed(seed, "reset(seed=...)")
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
            self.max_steps = self.default_max_steps(max(level.height, level.width))
        self._walls = level.wall_rows()
        self.agents = list(self.possible_agents)
        self.positions = {a: level.spawns[self._team[a]][self._slot[a]] for a in self.possible_agents}
        self.cooldown = {a: 0 for a in self.possible_agents}
        self.step_count = 0
        self.outcome = None
        return level

    # ------------------------------------------------------------------ actions
    def _validated(self, actions: Any) -> dict[str, int]:
        """The given actions as ints, checked before any state changes (missing agents are noop)."""
        if self.level is None:
            raise RuntimeError("step() before reset(): call reset() first")
        if not self.agents:
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

    # ------------------------------------------------------------------ rendering
    def render(self):
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.level is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            grid = "\n".join("".join(row) for row in self._char_grid())
            status = f"step {self.step_count}/{self.max_steps}  " + self._status()
            if self.outcome:
                status += f"  -> winner {self.outcome['winner']} ({self.outcome['reason']})"
            return grid + "\n" + status + "\n"
        return self._rgb(self._char_grid())

    def _rgb(self, grid: list[list[str]]) -> np.ndarray:
        """Colour each cell and scale it to CELL_PX x CELL_PX pixels: (H*8, W*8, 3) uint8."""
        img = np.array([[self.COLOURS[ch] for ch in row] for row in grid], dtype=np.uint8)
        img = np.repeat(np.repeat(img, CELL_PX, axis=0), CELL_PX, axis=1)
        img[::CELL_PX, :, :] = (img[::CELL_PX, :, :] * 0.85).astype(np.uint8)
        img[:, ::CELL_PX, :] = (img[:, ::CELL_PX, :] * 0.85).astype(np.uint8)
        return img

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ step result
    def _step_result(self, done: bool, truncated: bool, winner: str = "draw", reason: str = "",
                     extra: Callable[[], dict[str, Any]] | None = None):
        """The 5-tuple of ``step``. On the final step (`done` or `truncated`) the winner ("A" | "B" |
        "draw") gets +1 per agent, the other team -1 (a draw: ``draw_reward`` to everyone, 0 by default), and ``self.outcome`` (winner, reason,
        episode_length, level and `extra()`) goes into every agent's info; ``env.agents`` empties."""
        names, team = self.possible_agents, self._team
        obs = {a: self._observe(a) for a in names}
        infos = {a: {"team": team[a]} for a in names}
        if done or truncated:
            if winner == "draw":
                rewards = {a: float(self.draw_reward) for a in names}
            else:
                wt = 0 if winner == "A" else 1
                rewards = {a: (1.0 if team[a] == wt else -1.0) for a in names}
            self.outcome = {"winner": winner, "reason": reason, "episode_length": self.step_count,
                            "level": self._level_info(self.level)}
            if extra is not None:
                self.outcome.update(extra())
            for a in names:
                infos[a].update({k: (dict(v) if isinstance(v, dict) else v) for k, v in self.outcome.items()})
            self.agents = []
        else:
            rewards = {a: 0.0 for a in names}
        return obs, rewards, {a: done for a in names}, {a: truncated for a in names}, infos
