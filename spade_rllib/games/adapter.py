"""The one game-loop API: every supported env behind one small turn-based interface.

Used by the vectorized env runner, preflight (a reset and a step before Ray starts), the curriculum
wrapper, the match engine (evaluation, replays) and `play`.

`Game` wraps one env copy: a Gymnasium env (one agent), a PettingZoo `ParallelEnv` (the level games MazeRace and CaptureTheFlag; all
live agents act each step) or a PettingZoo AEC env (connect four; one agent acts per step).

    game.reset(seed, options) -> {agent: obs}          agents that must act now
    game.step({agent: action}) -> StepResult            next agents' obs, rewards since last step, done

Observations come out as flat float32 vectors. When the env has an action mask (a Dict obs with
`observation` + `action_mask`, like PettingZoo classic), the mask is appended as the last
`num_actions` entries (see `SpadeModule`). Actions: `Discrete` (an int) or a float `Box` (a flat float
vector of `num_actions` = the Box's size; `action_box` is that flat Box). The game clips a Box action
to the space's bounds and reshapes it before the env sees it, so callers may pass an unclipped
Gaussian sample. Teams: `game.teams` is a tuple of agent tuples, index 0
= team A, resolved by `spade_rllib.games.teams.resolve_teams` from the config's `env.teams` /
`env.mode`, else the env's `team_of`, else one team per agent; any number of agents and teams.
Gymnasium envs have one team of one agent.

Agents may end before the episode does (PettingZoo: an agent terminated or truncated while others
play on) and may join late (an agent of `possible_agents` first seen mid-episode): `StepResult.ended`
names the agents whose own episode ended at that step, with their last obs in `final_obs`; they
no longer act. The AEC adapter steps such agents with `None`, as PettingZoo requires.

`make_game_factory(env_id, kwargs, opening_plies, teams=, mode=)` returns a zero-argument callable that builds one
`Game`; the runner calls it once per env copy. `opening_plies > 0` (turn-based games only) starts
every episode after a uniform number in [0, opening_plies] of uniformly random legal moves. No Ray,
no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import gymnasium as gym
import numpy as np

from spade_rllib.games.env_ids import LEVEL_KIND, env_api, module_object
from spade_rllib.games.resolved_env import ResolvedEnv, as_resolved
from spade_rllib.games.spaces import UnsupportedSpace, check_action_space, check_env_action_spaces
from spade_rllib.games.teams import Teams, resolve_teams

SINGLE_AGENT_ID = "agent_0"
# Level games' reset options; any other key a level source returns goes into the outcome record.
LEVEL_RESET_KEYS = ("level", "knobs", "level_seed", "difficulty")


@dataclass
class StepResult:
    obs: dict  # agent -> flat obs, for the agents that must act next (empty when done)
    rewards: dict  # agent -> reward received since the previous step
    done: bool  # the episode is over (terminated or truncated)
    truncated: bool  # ended by a time limit rather than a terminal state
    final_obs: dict = field(default_factory=dict)  # agent -> last obs, when done (and for `ended` agents)
    info: dict = field(default_factory=dict)  # final info (level games: winner, reason, level, counters, ...)
    ended: dict = field(default_factory=dict)  # agent -> truncated?, agents whose own episode ended this step while others play on


def _flat_obs_space(space: gym.Space) -> tuple[int, int, Callable[[Any], np.ndarray]]:
    """(feature size, mask size, flatten fn) for an observation space."""
    if isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces:
        inner = space["observation"] if "observation" in space.spaces else space["observations"]
        key = "observation" if "observation" in space.spaces else "observations"
        feat = int(np.prod(inner.shape))
        mask = int(np.prod(space["action_mask"].shape))

        def flatten(o):
            return np.concatenate([np.asarray(o[key], np.float32).reshape(-1), np.asarray(o["action_mask"], np.float32).reshape(-1)])

        return feat, mask, flatten
    if isinstance(space, gym.spaces.Box):
        size = int(np.prod(space.shape))

        def flatten_box(o):
            # The level games already return flat float32 vectors: skip the copy-free but not call-free asarray/reshape.
            if type(o) is np.ndarray and o.dtype == np.float32 and o.ndim == 1:
                return o
            return np.asarray(o, np.float32).reshape(-1)

        return size, 0, flatten_box
    if isinstance(space, gym.spaces.Discrete):
        n = int(space.n)
        eye = np.eye(n, dtype=np.float32)
        return n, 0, lambda o: eye[int(o)]
    raise ValueError(f"observation space {space} is not supported (need Box, Discrete, or Dict with action_mask)")


def action_codec(space: gym.Space) -> tuple[int, Optional[gym.spaces.Box], Callable[[Any], Any]]:
    """(num_actions, flat float32 Box or None, to-env fn) for an action space: `Discrete` (the fn is
    `int`, plus the space's `start`) or a float `Box` (the fn clips a flat vector to the bounds and
    reshapes it to the space's shape and dtype). `UnsupportedSpace` (one line) for anything else."""
    check_action_space(space)
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return int(space.n), None, (int if not start else (lambda a: int(a) + start))
    if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating) and space.shape:
        shape, dtype = space.shape, space.dtype
        low = np.asarray(space.low, np.float32).reshape(-1)
        high = np.asarray(space.high, np.float32).reshape(-1)
        box = gym.spaces.Box(low, high, (low.size,), np.float32)

        def to_env(a):
            return np.clip(np.asarray(a, np.float32).reshape(-1), low, high).reshape(shape).astype(dtype, copy=False)

        return int(low.size), box, to_env
    raise UnsupportedSpace(f"action space {space} is not supported")  # check_action_space lets through only the two above


class Game:
    """Base: subclasses set `teams`, `obs_size`, `mask_size`, `num_actions`, `raw_env` (and
    `action_box`, `_to_env` through `_set_action_space`; `team_names`, `cooperative`)."""

    teams: tuple[tuple[str, ...], ...]
    team_names: tuple[str, ...] = ()
    cooperative: bool = False  # every agent in one team: the learner plays them all, nobody wins
    obs_size: int
    mask_size: int
    num_actions: int
    raw_env: Any
    is_level_game: bool = False  # a level game of this package: takes level reset options
    action_box: Optional[gym.spaces.Box] = None  # the flat float32 Box of a continuous game; None: Discrete
    _to_env: Callable[[Any], Any] = staticmethod(int)

    def _set_action_space(self, space: gym.Space) -> None:
        self.num_actions, self.action_box, self._to_env = action_codec(space)
        if self.action_box is not None and self.mask_size:
            raise ValueError(f"an action mask needs a Discrete action space, got {space}")

    @property
    def continuous(self) -> bool:
        """Box actions (a float vector per agent) rather than Discrete."""
        return self.action_box is not None

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> dict:
        raise NotImplementedError

    def step(self, actions: dict) -> StepResult:
        raise NotImplementedError

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(a for team in self.teams for a in team)

    def agent_shape(self, agent: str) -> tuple[int, int, int]:
        """(obs size, mask size, number of actions) of one agent (agents of role games differ)."""
        return getattr(self, "agent_shapes", {}).get(agent, (self.obs_size, self.mask_size, self.num_actions))

    def observation_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-np.inf, np.inf, (self.obs_size,), np.float32)

    def action_space(self) -> gym.spaces.Space:
        """Discrete(num_actions), or the flat float32 Box of a continuous game."""
        return self.action_box if self.action_box is not None else gym.spaces.Discrete(self.num_actions)

    def random_action(self, obs: np.ndarray, rng: np.random.Generator, agent: Optional[str] = None) -> Any:
        """A uniformly random legal action (Box: uniform within finite bounds, standard normal where unbounded)."""
        box = self.action_box
        if box is None:
            legal = self.legal_actions(obs, agent)
            return int(legal[rng.integers(len(legal))])
        finite = np.isfinite(box.low) & np.isfinite(box.high)
        low, high = np.where(finite, box.low, 0.0), np.where(finite, box.high, 0.0)
        return np.where(finite, rng.uniform(low, high), rng.standard_normal(box.shape)).astype(np.float32)

    def legal_actions(self, obs: np.ndarray, agent: Optional[str] = None) -> np.ndarray:
        """Indices of legal actions for an obs from this game (Discrete games; of `agent`, where agents' spaces differ)."""
        _, mask_size, num_actions = (self.mask_size, self.mask_size, self.num_actions) if agent is None else self.agent_shape(agent)
        if mask_size:
            return np.flatnonzero(obs[-mask_size:] > 0.5)
        return np.arange(num_actions)


class GymGame(Game):
    def __init__(self, env: gym.Env):
        check_action_space(env.action_space)
        self.raw_env = env
        self.teams = ((SINGLE_AGENT_ID,),)
        feat, mask, self._flatten = _flat_obs_space(env.observation_space)
        self.obs_size, self.mask_size = feat + mask, mask
        self._set_action_space(env.action_space)

    def reset(self, seed=None, options=None):
        obs, _ = self.raw_env.reset(seed=seed, options=options)
        return {SINGLE_AGENT_ID: self._flatten(obs)}

    def step(self, actions):
        obs, r, term, trunc, info = self.raw_env.step(self._to_env(actions[SINGLE_AGENT_ID]))
        o = self._flatten(obs)
        done = bool(term or trunc)
        return StepResult(
            obs={} if done else {SINGLE_AGENT_ID: o},
            rewards={SINGLE_AGENT_ID: float(r)},
            done=done,
            truncated=bool(trunc and not term),
            final_obs={SINGLE_AGENT_ID: o} if done else {},
            info=info if done else {},
        )


def _set_teams(game: Game, env: Any, agents: list[str], teams: Any, mode: str) -> None:
    resolved: Teams = resolve_teams(agents, teams, mode, env)
    game.teams, game.team_names, game.cooperative = resolved.members, resolved.names, resolved.cooperative


def _info_of(infos: dict) -> dict:
    """The final info to report: the one naming a `winner`, else the first agent's."""
    info = next((infos[a] for a in infos if isinstance(infos[a], dict) and "winner" in infos[a]), None)
    if info is None:
        info = next(iter(infos.values()), {}) if infos else {}
    return info if isinstance(info, dict) else {}


def _agent_spaces(game: Game, env: Any, agents: list[str]) -> dict[str, Callable[[Any], np.ndarray]]:
    """Each agent's flatten fn; sets `game.agent_shapes` ({agent: (obs size, mask size, actions)}) and
    the first agent's shape as `game.obs_size`, `mask_size`, `num_actions` (agents of one role share it)."""
    flatten_of: dict[str, Callable[[Any], np.ndarray]] = {}
    shapes: dict[str, tuple[int, int, int]] = {}
    for agent in agents:
        feat, mask, flatten_of[agent] = _flat_obs_space(env.observation_space(agent))
        shapes[agent] = (feat + mask, mask, action_codec(env.action_space(agent))[0])
    game.agent_shapes = shapes
    game.obs_size, game.mask_size, game.num_actions = shapes[agents[0]]
    return flatten_of


class ParallelGame(Game):
    """A PettingZoo ParallelEnv; every live agent acts each step."""

    def __init__(self, env: Any, is_level_game: bool = False, teams: Any = None, mode: str = "auto"):
        self.raw_env = env
        self.is_level_game = is_level_game
        agents = list(env.possible_agents)
        _set_teams(self, env, agents, teams, mode)
        check_env_action_spaces(env)
        self._flatten_of = _agent_spaces(self, env, agents)
        self._set_action_space(env.action_space(agents[0]))  # agents of one role share it
        self._last_obs: dict = {}

    def reset(self, seed=None, options=None):
        obs, _ = self.raw_env.reset(seed=seed, options=options)
        self._last_obs = {a: self._flatten_of[a](o) for a, o in obs.items()}
        return dict(self._last_obs)

    def step(self, actions):
        obs, rew, term, trunc, infos = self.raw_env.step({a: self._to_env(x) for a, x in actions.items()})
        flat = {a: self._flatten_of[a](o) for a, o in obs.items()}
        self._last_obs.update(flat)
        live = [a for a in flat if not (term.get(a, False) or trunc.get(a, False))]
        rewards = {a: float(r) for a, r in rew.items()}
        done = not live or not self.raw_env.agents
        if done:
            any_term = any(term.values())
            return StepResult({}, rewards, True, not any_term, dict(self._last_obs), _info_of(infos))
        # Agents that stopped while others play on: their own episode ends here (PettingZoo drops
        # them from `env.agents`; they get no further obs).
        ended = {a: not term.get(a, False) for a in actions if a not in live}
        return StepResult({a: flat[a] for a in live}, rewards, False, False,
                          final_obs={a: self._last_obs[a] for a in ended if a in self._last_obs}, ended=ended)


class AECGame(Game):
    """A PettingZoo AEC env; the selected agent acts each step. Rewards are read after every move.

    `opening_plies` N > 0: each reset plays k ~ U{0..N} uniformly random legal moves before the first
    observation is handed out (a game that ends inside its opening is replayed): self-play with a
    near-deterministic policy visits a handful of openings, and positions off that path are never
    trained otherwise (docs/connect_four.md). The moves come from the game's own RNG, seeded by `reset(seed)`.
    """

    def __init__(self, env: Any, opening_plies: int = 0, teams: Any = None, mode: str = "auto"):
        if isinstance(opening_plies, bool) or not isinstance(opening_plies, int) or opening_plies < 0:
            raise ValueError(f"opening_plies must be an int >= 0, got {opening_plies!r}")
        self.opening_plies = opening_plies
        self._rng = np.random.default_rng()
        self.raw_env = env
        agents = list(env.possible_agents)
        _set_teams(self, env, agents, teams, mode)
        self._ended: set = set()  # agents whose own episode already ended (stepped with None)
        check_env_action_spaces(env)
        self._flatten_of = _agent_spaces(self, env, agents)
        self._set_action_space(env.action_space(agents[0]))  # agents of one role share it

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.raw_env.reset(seed=seed, options=options)
        while self.opening_plies and not self._play_opening():
            self.raw_env.reset(options=options)
        self._ended = set()
        a = self.raw_env.agent_selection
        return {a: self._flatten_of[a](self.raw_env.observe(a))}

    def _play_opening(self) -> bool:
        """k ~ U{0..opening_plies} random legal moves; False when the game ended on the way."""
        env = self.raw_env
        for _ in range(int(self._rng.integers(self.opening_plies + 1))):
            legal = self.legal_actions(self._flatten_of[env.agent_selection](env.observe(env.agent_selection)))
            if not len(legal):
                return False
            env.step(self._to_env(legal[self._rng.integers(len(legal))]))
            if not env.agents or any(env.terminations.values()) or any(env.truncations.values()):
                return False
        return True

    def _is_over(self, agent: str) -> bool:
        env = self.raw_env
        return bool(env.terminations.get(agent, False) or env.truncations.get(agent, False))

    def step(self, actions):
        env = self.raw_env
        (agent, action), = actions.items()
        env.step(self._to_env(action))
        rewards: dict = {}
        for a, r in env.rewards.items():
            if r:
                rewards[a] = float(r)
        ended: dict = {}
        final: dict = {}
        # Dead agents: PettingZoo accepts only `step(None)` from them; their own episode ends here.
        while env.agents and self._is_over(env.agent_selection) and not all(self._is_over(a) for a in env.agents):
            dead = env.agent_selection
            if dead not in self._ended:
                self._ended.add(dead)
                ended[dead] = not env.terminations.get(dead, False)
                final[dead] = self._flatten_of[dead](env.observe(dead))
            env.step(None)
            for a, r in env.rewards.items():
                if r and a in env.agents:
                    rewards[a] = rewards.get(a, 0.0) + float(r)
        done = not env.agents or all(self._is_over(a) for a in env.agents)
        if done:
            any_term = any(env.terminations.values())
            final = {a: self._flatten_of[a](env.observe(a)) for a in env.possible_agents
                     if a in env.observation_spaces and a not in self._ended}
            return StepResult({}, rewards, True, not any_term, final, _info_of(dict(env.infos)))
        nxt = env.agent_selection
        return StepResult({nxt: self._flatten_of[nxt](env.observe(nxt))}, rewards, False, False, final_obs=final, ended=ended)


API_CHOICES = ("auto", "aec", "parallel")


def _build_raw(env: ResolvedEnv, kwargs: dict, api: str) -> Any:
    """The raw env of `env`; `api` "parallel" / "aec" picks a PettingZoo module's `parallel_env()` /
    `env()` (a ParallelEnv is wrapped turn by turn for "aec"), "auto" builds what the id names."""
    entry = env.resolved_entry()
    if api == "auto":
        return entry.make(**dict(kwargs or {}))
    env_id = env.id
    if api == "parallel" and entry.api == "aec" and entry.ref.form == "module":
        fn = getattr(module_object(entry.ref.module, entry.ref.attr), "parallel_env", None)
        if not callable(fn):
            raise ValueError(f"env.api = 'parallel': {env_id} has no parallel_env(); use env.api: aec")
        return fn(**kwargs)
    raw = entry.make(**kwargs)
    built = env_api(raw)
    if api == "aec" and built == "parallel":
        from pettingzoo.utils.conversions import parallel_to_aec

        return parallel_to_aec(raw)
    if api == "parallel" and built != "parallel":
        raise ValueError(f"env.api = 'parallel': {env_id} builds a {built} env, not a ParallelEnv; use env.api: auto")
    return raw


def wrap_env(env: Any, is_level_game: bool = False, opening_plies: int = 0, env_id: str = "the env", *,
             teams: Any = None, mode: str = "auto") -> Game:
    """The `Game` over a built env, by its API (Gymnasium, PettingZoo Parallel or AEC); `teams`, `mode`:
    the config's `env.teams` / `env.mode` (`spade_rllib.games.teams`)."""
    if is_level_game:
        return ParallelGame(env, is_level_game=True, teams=teams, mode=mode)
    api = env_api(env)
    if api == "gymnasium":
        if opening_plies:
            raise ValueError(f"random opening plies need a turn-based (AEC) PettingZoo env; {env_id} is a Gymnasium env")
        return GymGame(env)
    if api == "parallel":
        if opening_plies:
            raise ValueError(f"random opening plies need a turn-based (AEC) PettingZoo env; {env_id} is a ParallelEnv")
        return ParallelGame(env, teams=teams, mode=mode)
    if api != "aec":
        raise ValueError(f"{env_id} built a {type(env).__name__}, which is neither a PettingZoo AEC/Parallel env "
                         "nor a Gymnasium env")
    return AECGame(env, opening_plies, teams=teams, mode=mode)


def _make_foreign(env: ResolvedEnv, kwargs: dict, opening_plies: int = 0, teams: Any = None, mode: str = "auto",
                  api: str = "auto") -> Game:
    """A `Game` over the env an id names (`ids.resolve_env`: registry id, module, class or factory)."""
    return wrap_env(_build_raw(env, kwargs, api), opening_plies=opening_plies, env_id=env.id, teams=teams, mode=mode)


def make_game_factory(env: Union[str, ResolvedEnv], kwargs: Optional[dict] = None, opening_plies: int = 0, *,
                      teams: Any = None, mode: str = "auto", api: str = "auto") -> Callable[[], Game]:
    """A zero-argument callable building one `Game` for this env id and constructor kwargs
    (`opening_plies`: random opening moves per episode, turn-based PettingZoo games only; `teams`,
    `mode`: the config's `env.teams` / `env.mode`, see `spade_rllib.games.teams`; `api`: a PettingZoo
    module's "aec" `env()` or "parallel" `parallel_env()`, "auto" = what the id names)."""
    kwargs = dict(kwargs or {})
    env = as_resolved(env)  # an id string is read once here; a `ResolvedEnv` is taken as it is
    env_id, kind = env.id, env.kind
    if opening_plies and kind != "pettingzoo":
        raise ValueError(f"random opening plies need a turn-based (AEC) PettingZoo env; {env_id} is a {kind} env")
    if api not in API_CHOICES:
        raise ValueError(f"env.api = {api!r} is not valid; allowed: {', '.join(API_CHOICES)}")
    if kind == LEVEL_KIND:

        def make() -> Game:
            return ParallelGame(env.spec.make_env(**kwargs), is_level_game=True, teams=teams, mode=mode)

        return make
    return lambda: _make_foreign(env, kwargs, opening_plies, teams, mode, api)


def game_factory_for(env: Union[str, ResolvedEnv], kwargs: Optional[dict], env_section: Optional[dict],
                     opening_plies: int = 0) -> Callable[[], Game]:
    """`make_game_factory` with the teams, mode and api of a resolved config's `env:` section (a dict)."""
    env_section = env_section or {}
    return make_game_factory(env, kwargs, opening_plies, teams=env_section.get("teams") or None,
                             mode=env_section.get("mode") or "auto", api=env_section.get("api") or "auto")
