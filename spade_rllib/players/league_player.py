"""The league as a player, from a checkpoint: ``league:uniform``, ``league:plan``, ``league:nash`` (and
``league:average``, the league distilled into one network: `spade_rllib.players.league_average`).

`load_policy(checkpoint, "league:<mode>")` (so `play --module league:nash`, and every tool that loads
a module by id) returns a `MixturePolicy`: the league's members weighted as `spade_rllib.league.mixture`
says (``uniform``: main and its snapshots, fictitious play; ``plan``: main's matchmaking distribution;
``nash``: the Nash equilibrium of the meta-game among the pool).

How it plays:

- On an OpenSpiel game (Kuhn, Leduc, ``openspiel:<name>``): the exact reach-weighted average strategy
  (`spade_rllib.games.exploitability.average_table`), looked up by information state; it samples its
  action even when asked for argmax (a mixed strategy's value is in the mixing).
- Elsewhere (CaptureTheFlag, Connect Four, ...): one member drawn per game (`reset` / `new_game`), which
  then plays as asked (argmax or sampled). That is the same mixture in expectation.

`spade_rllib.players.exploitability_report` scores a checkpoint's main, members and mixtures exactly.

Ray-free (torch through `spade_rllib.players.policy`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from spade_rllib.artifacts.checkpoint_layout import PolicyLoadError, league_state, resolve_checkpoint
from spade_rllib.league.member_ids import MAIN, RANDOM
from spade_rllib.league.mixture import MIXTURE_MODES, check_mode, mixture_weights
from spade_rllib.core.outcome import MAIN as MAIN_MODULE

LEAGUE_MODULE_PREFIX = "league:"
AVERAGE_MODE = "average"
"""``league:average``: the league as one network distilled from a mixture (`spade_rllib.players.league_average`)."""
LEAGUE_MODES = (*MIXTURE_MODES, AVERAGE_MODE)
LEAGUE_MODULE_IDS = tuple(f"{LEAGUE_MODULE_PREFIX}{m}" for m in LEAGUE_MODES)


def league_mode(module_id: Any) -> Optional[str]:
    """"nash" for "league:nash" (any of `LEAGUE_MODES`); None for any other module id; PolicyLoadError for a bad
    mode (one line, did-you-mean)."""
    text = str(module_id)
    if not text.startswith(LEAGUE_MODULE_PREFIX):
        return None
    mode = text[len(LEAGUE_MODULE_PREFIX):]
    if mode not in LEAGUE_MODES:
        import difflib

        close = difflib.get_close_matches(mode, LEAGUE_MODES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PolicyLoadError(f"module {text!r}: league mode {mode!r} is not valid{hint}; allowed: "
                              f"{', '.join(LEAGUE_MODES)}")
    return mode


def checkpoint_league(checkpoint: str | Path):
    """The `League` stored in a checkpoint (its config and state); PolicyLoadError when it has none."""
    from spade_rllib.league import League, LeagueConfig

    info = resolve_checkpoint(checkpoint)
    state = league_state(info)
    if state is None:
        raise PolicyLoadError(f"{info.path} holds no league (a run without league.enabled, or a role game's "
                              f"leagues): the league cannot play as one player; use --module main")
    league = League(LeagueConfig.from_dict(state["config"]))
    league.load_state_dict(state)
    return league


def openspiel_game(env_id: Optional[str]) -> Optional[str]:
    from spade_rllib.games import find_game

    spec = find_game(env_id) if env_id else None
    return None if spec is None else spec.openspiel_game


def policy_fn(policy: Any):
    """The `exploitability.PolicyFn` of a loaded policy (None: uniform random)."""
    from spade_rllib.games.exploitability import logits_policy, uniform_policy

    if policy is None:
        return uniform_policy
    return logits_policy(lambda obs: policy.logits_batch(list(obs)))


@dataclass
class Member:
    """One member of a mixture: its id, its policy (None: uniform random) and weight."""

    member: str
    policy: Any
    weight: float


class MixturePolicy:
    """The league as one player (see the module docstring); quacks like `spade_rllib.players.policy.Policy`."""

    recurrent = False
    uses_prev_reward = False
    continuous = False

    def __init__(self, mode: str, members: list[Member], env_id: Optional[str], checkpoint: Optional[Path] = None,
                 seed: int = 0):
        if not members:
            raise PolicyLoadError(f"league:{mode}: the mixture has no members")
        self.mode = mode
        self.module_id = f"{LEAGUE_MODULE_PREFIX}{mode}"
        self.members = members
        self.env_id = env_id
        self.checkpoint = checkpoint
        self.base = next(m.policy for m in members if m.policy is not None) if any(
            m.policy is not None for m in members) else None
        if self.base is None:
            raise PolicyLoadError(f"league:{mode}: no member with weights (only random)")
        self.num_actions = self.base.num_actions
        self.feature_size = self.base.feature_size
        self.masked = self.base.masked
        self.observation_space = self.base.observation_space
        self.action_space = self.base.action_space
        self.weights = np.asarray([m.weight for m in members], np.float64)
        self._rng = np.random.default_rng(seed)
        self._current = 0
        self.table: Optional[np.ndarray] = None  # [S, A] exact average strategy (OpenSpiel games)
        self._row_of: dict[bytes, int] = {}
        game_name = openspiel_game(env_id)
        if game_name is not None:
            from spade_rllib.games.exploitability import average_table, info_states, table_of

            states = info_states(game_name)
            tables = np.stack([table_of(policy_fn(m.policy), game_name) for m in members])
            self.table = average_table(states, tables, self.weights)
            self._row_of = {states.tensors[i].tobytes(): i for i in range(states.size)}
        self.reset()

    # -- episodes ------------------------------------------------------------------------------
    def new_game(self, seed: int) -> None:
        """Start a game with its own seed (evaluation): draws the member that plays it."""
        self._rng = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        """Start a new game: draw the member that plays it (drawn-member mixtures)."""
        self._current = int(self._rng.choice(len(self.members), p=self.weights / self.weights.sum()))

    def initial_state(self) -> dict:
        return {}

    @property
    def current_member(self) -> str:
        return self.members[self._current].member

    # -- acting --------------------------------------------------------------------------------
    def action_probabilities(self, obs: Any, action_mask: Any = None) -> Optional[np.ndarray]:
        """The exact averaged strategy at this observation's information state (OpenSpiel games), else None."""
        if self.table is None:
            return None
        features, mask = self.base._split(obs, action_mask)
        row = self._row_of.get(np.asarray(features, np.float32).tobytes())
        if row is None:
            raise ValueError(f"league:{self.mode}: the observation is no information state of {self.env_id}")
        return self.table[row]

    def act(self, obs: Any, action_mask: Any = None, deterministic: bool = True,
            rng: Optional[np.random.Generator] = None) -> int:
        rng = rng if rng is not None else self._rng
        probs = self.action_probabilities(obs, action_mask)
        if probs is not None:
            return int(rng.choice(len(probs), p=probs / probs.sum()))
        member = self.members[self._current]
        if member.policy is None:  # random: uniform over legal actions
            _, mask = self.base._split(obs, action_mask)
            legal = np.flatnonzero(mask > 0) if mask is not None else np.arange(self.num_actions)
            return int(legal[rng.integers(len(legal))])
        return int(member.policy.act(obs, action_mask=action_mask, deterministic=deterministic, rng=rng))

    def act_batch(self, obs_batch, action_masks=None, deterministic: bool = True, rng=None, states=None):
        masks = list(action_masks) if action_masks is not None else [None] * len(obs_batch)
        return np.asarray([self.act(o, m, deterministic, rng) for o, m in zip(obs_batch, masks)])

    def step(self, obs: Any, state: dict, action_mask: Any = None, deterministic: bool = True, rng=None, reward=None):
        return self.act(obs, action_mask, deterministic, rng), state

    def __repr__(self) -> str:
        return (f"MixturePolicy({self.module_id}, "
                + ", ".join(f"{m.member} {m.weight:.3f}" for m in self.members) + ")")


LoadFn = Callable[..., Any]
"""`spade_rllib.players.policy.load_policy` (handed in: the loader calls this module, not the other way round)."""


def load_league_policy(checkpoint: str | Path, mode: str, load: LoadFn, env_id: Optional[str] = None,
                       seed: int = 0) -> MixturePolicy:
    """The league of `checkpoint` as one player (`league:<mode>`), its members loaded by `load(path, module_id,
    env_id=)`; PolicyLoadError (one line) without a league. (``average``, one network, is
    `spade_rllib.players.league_average.load_average_policy`'s.)"""
    check_mode(mode)
    info = resolve_checkpoint(checkpoint)
    league = checkpoint_league(info.path)
    main = load(info.path, MAIN_MODULE, env_id=env_id)
    env_id = env_id or main.env_id
    members = [Member(str(m), main if m == MAIN else None if m == RANDOM else load(info.path, str(m), env_id=env_id), w)
               for m, w in mixture_weights(league, mode).items()]
    return MixturePolicy(mode, members, env_id, checkpoint=info.path, seed=seed)


__all__ = ["AVERAGE_MODE", "LEAGUE_MODES", "LEAGUE_MODULE_IDS", "LEAGUE_MODULE_PREFIX", "Member", "MixturePolicy", "checkpoint_league", "league_mode",
           "load_league_policy", "openspiel_game", "policy_fn"]
