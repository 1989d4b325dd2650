"""Players of an evaluation pool: scripted bots and RLModules from checkpoints.

A `PlayerSpec` is a small picklable description (what Ray tasks receive); `build_player` turns it
into a `Player` inside the process that plays. Loaded policies are cached per process, so a Ray
worker loads each checkpoint once however many games it plays.

Every player answers `act(env, agent, obs, action_mask, rng) -> action` (an int; for a `Box` action
space a float32 array, clipped to the bounds):
- `env` is the live env (bots read its full state), `agent` the agent to move;
- `obs` the agent's own observation; `action_mask` the legal actions or None;
- `rng` a `numpy.random.Generator` seeded per game and seat (the only randomness used).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from spade_rllib.games import bot_names, default_bot_names, is_level_game, make_bot
from spade_rllib.players.policy import Policy, load_policy

GENERIC_BOTS = ("random",)
BOT_KIND = "bot"
MODULE_KIND = "module"


def bots_for_env(env_id: str) -> tuple[str, ...]:
    """The scripted reference players of a game (its `GameSpec.bots`); `random` for a game without bots."""
    return bot_names(env_id) or GENERIC_BOTS


def default_bots_for_env(env_id: str) -> tuple[str, ...]:
    """The bots played when none are named (its `GameSpec.default_bots`, else every bot); `random` for a
    game without bots."""
    return default_bot_names(env_id) or GENERIC_BOTS


@dataclass(frozen=True)
class PlayerSpec:
    """What a player is; picklable and hashable. `player_id` is unique within a pool."""

    player_id: str
    """Display id used in every table ("main", "run_b/main", "snap_3", "rusher")."""
    kind: str
    """"bot" or "module"."""
    name: str
    """Bot name, or module / league member id inside the checkpoint."""
    checkpoint: str | None = None
    """Checkpoint directory of a module player; None for bots."""
    run: str | None = None
    """Label of the run the module comes from; None for bots."""
    deterministic: bool = True
    """Module players: argmax (True) or sample from the policy."""


class Player(Protocol):
    spec: PlayerSpec

    def act(self, env: Any, agent: str, obs: Any, action_mask: np.ndarray | None,
            rng: np.random.Generator) -> int: ...

    def new_game(self, seed: int) -> None: ...


class RandomPlayer:
    """Uniform over the legal actions (the mask), or over the whole action space (a `Box` of the live
    env: uniform within its bounds, standard normal on unbounded entries)."""

    def __init__(self, spec: PlayerSpec, num_actions: int):
        self.spec = spec
        self.num_actions = num_actions

    def new_game(self, seed: int) -> None:
        pass

    def act(self, env, agent, obs, action_mask, rng):
        if action_mask is not None:
            legal = np.flatnonzero(np.asarray(action_mask) > 0)
            return int(rng.choice(legal))
        space = _action_space(env, agent)
        if isinstance(space, gym.spaces.Box):
            low, high = (np.asarray(x, np.float64).reshape(-1) for x in (space.low, space.high))
            finite = np.isfinite(low) & np.isfinite(high)
            draw = np.where(finite, rng.uniform(np.where(finite, low, 0.0), np.where(finite, high, 0.0)),
                            rng.standard_normal(low.shape))
            return draw.astype(np.float32)
        return int(rng.integers(self.num_actions))


def _action_space(env, agent):
    """The action space of `agent` in a live env (PettingZoo: `action_space(agent)`; Gymnasium: the attribute)."""
    space = getattr(env, "action_space", None)
    return space(agent) if callable(space) else space


class BotPlayer:
    """A scripted bot of the game (`spade_rllib.games.make_bot`), re-seeded every game."""

    def __init__(self, spec: PlayerSpec, env_id: str):
        self.spec = spec
        self.env_id = env_id
        self._bot = None

    def new_game(self, seed: int) -> None:
        self._bot = make_bot(self.spec.name, seed=int(seed), env_id=self.env_id)

    def act(self, env, agent, obs, action_mask, rng) -> int:
        if self._bot is None:
            self.new_game(int(rng.integers(2**31)))
        return int(self._bot.act(env, agent))


class ModulePlayer:
    """A trained RLModule (or league snapshot) behind `spade_rllib.players.policy.Policy`. A recurrent
    policy keeps one state per agent it moves, from zeros at each `new_game`."""

    def __init__(self, spec: PlayerSpec, policy: Policy):
        self.spec = spec
        self.policy = policy
        if policy.uses_prev_reward:
            raise ValueError(f"module player {spec.player_id!r} was trained with lstm_use_prev_reward; "
                             "evaluation games do not feed rewards to players")
        self._states: dict[str, dict] = {}

    def new_game(self, seed: int) -> None:
        self._states = {}
        draw = getattr(self.policy, "new_game", None)  # the league as a player draws its member per game
        if draw is not None:
            draw(seed)

    def act(self, env, agent, obs, action_mask, rng) -> int:
        if not self.policy.recurrent:
            return self.policy.act(obs, action_mask=action_mask, deterministic=self.spec.deterministic, rng=rng)
        state = self._states.get(agent) or self.policy.initial_state()
        action, self._states[agent] = self.policy.step(obs, state, action_mask=action_mask,
                                                       deterministic=self.spec.deterministic, rng=rng)
        return action


_POLICY_CACHE: dict[tuple[str, str], Policy] = {}


def cached_policy(checkpoint: str, module_id: str) -> Policy:
    """Load once per process (Ray workers play many games with the same modules)."""
    key = (str(checkpoint), module_id)
    if key not in _POLICY_CACHE:
        _POLICY_CACHE[key] = load_policy(checkpoint, module_id)
    return _POLICY_CACHE[key]


def build_player(spec: PlayerSpec, env_id: str, num_actions: int) -> Player:
    """Turn a spec into a live player for `env_id` (whose action space has `num_actions`)."""
    if spec.kind == MODULE_KIND:
        if spec.checkpoint is None:
            raise ValueError(f"module player {spec.player_id!r} has no checkpoint")
        return ModulePlayer(spec, cached_policy(spec.checkpoint, spec.name))
    if spec.kind != BOT_KIND:
        raise ValueError(f"player kind = {spec.kind!r} is unknown; allowed: {BOT_KIND}, {MODULE_KIND}")
    if spec.name == "random" and not is_level_game(env_id):
        return RandomPlayer(spec, num_actions)
    if spec.name not in bots_for_env(env_id):
        raise ValueError(f"bot {spec.name!r} does not play {env_id}; {env_id} has: {', '.join(bots_for_env(env_id))}")
    return BotPlayer(spec, env_id)
