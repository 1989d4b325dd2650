"""OpenSpielEnv: a PettingZoo AEC env over any two-player zero-sum turn-based OpenSpiel game.

A thin env of our own over ``pyspiel`` (not Shimmy: its OpenSpiel wrapper counts chance nodes against
the step limit and truncates Kuhn games, and its Leduc observation drops the betting history).

- **Agents**: ``player_0`` (OpenSpiel player 0) and ``player_1``; ``agent_selection`` is the player to move.
- **Observation** (per agent): ``{"observation": information_state_tensor(agent), "action_mask": legal}``,
  float32 features of the game's information-state tensor (Kuhn 11, Leduc 30) and an int8 mask over
  ``num_distinct_actions`` (Kuhn 2: pass/bet; Leduc 3: fold/call/raise). The information state tensor
  distinguishes every information state (Kuhn 12, Leduc 936): the observation is the exact info state.
- **Chance** nodes are sampled inside the env with its own RNG (``reset(seed=...)`` seeds it), using
  the game's chance outcome probabilities; agents never see a chance node.
- **Rewards**: zero until the end; at the terminal state each agent gets its ``state.returns()``
  (chips won or lost; they sum to 0). Every agent terminates then; nothing is truncated.
- **Info** at the end: ``{"returns": [r0, r1]}``.

Pure core: numpy, gymnasium, pettingzoo and pyspiel (imported when an env is built; `require_pyspiel`
refuses in one line when it is missing). No Ray, no torch.
"""
from __future__ import annotations

import functools
from typing import Any, Optional

import gymnasium as gym
import numpy as np
from pettingzoo import AECEnv

OPENSPIEL_PREFIX = "openspiel:"
"""Catalog ids ``openspiel:<name>`` name any two-player zero-sum turn-based OpenSpiel game."""
INSTALL_HINT = "pip install 'spade_rllib[openspiel]' (or pip install open_spiel)"
NUM_PLAYERS = 2


class OpenSpielMissing(ValueError):
    """pyspiel is not installed; the message is one line with the install command."""


def require_pyspiel(what: str = "this game") -> Any:
    """The ``pyspiel`` module, or `OpenSpielMissing` (one line) naming `what` and how to install it."""
    try:
        import pyspiel
    except ImportError as e:
        raise OpenSpielMissing(f"{what} needs OpenSpiel, which is not installed: {INSTALL_HINT}") from e
    return pyspiel


@functools.lru_cache(maxsize=32)
def load_game(name: str) -> Any:
    """The pyspiel game `name` (cached), refused in one line unless it is a two-player zero-sum sequential
    game with an information-state tensor."""
    pyspiel = require_pyspiel(f"OpenSpiel game {name!r}")
    names = pyspiel.registered_names()
    if name.split("(")[0] not in names:  # checked first: pyspiel prints every game's name on a failed load
        import difflib

        close = difflib.get_close_matches(name.split("(")[0], names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"OpenSpiel game {name!r} is unknown{hint}; list them: python -c \"import pyspiel; "
                         "print(pyspiel.registered_names())\"")
    try:
        game = pyspiel.load_game(name)
    except Exception as e:
        raise ValueError(f"OpenSpiel game {name!r} cannot be loaded: {' '.join(str(e).split())[:200]}") from e
    kind = game.get_type()
    problems = []
    if game.num_players() != NUM_PLAYERS:
        problems.append(f"{game.num_players()} players (need 2)")
    if kind.utility != pyspiel.GameType.Utility.ZERO_SUM:
        problems.append(f"utility {kind.utility.name} (need ZERO_SUM)")
    if kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        problems.append(f"dynamics {kind.dynamics.name} (need SEQUENTIAL: turn-based)")
    if not kind.provides_information_state_tensor:
        problems.append("no information_state_tensor")
    if problems:
        raise ValueError(f"OpenSpiel game {name!r} is not supported: {', '.join(problems)}; allowed: two-player "
                         "zero-sum turn-based games with an information-state tensor (e.g. kuhn_poker, leduc_poker)")
    return game


def agent_name(player: int) -> str:
    return f"player_{int(player)}"


class OpenSpielEnv(AECEnv):
    """A PettingZoo AEC env over the OpenSpiel game `game_name` (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "openspiel_v0", "is_parallelizable": False}

    def __init__(self, game_name: str = "kuhn_poker", render_mode: Optional[str] = None):
        super().__init__()
        if render_mode not in (None, "ansi", "rgb_array"):
            raise ValueError(f"render_mode = {render_mode!r} is not valid; allowed: None, 'ansi', 'rgb_array'")
        self.game_name = str(game_name)
        self.game = load_game(self.game_name)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": f"openspiel:{self.game_name}"}
        self.possible_agents = [agent_name(p) for p in range(NUM_PLAYERS)]
        self.num_actions = int(self.game.num_distinct_actions())
        self.feature_size = int(self.game.information_state_tensor_size())
        space = gym.spaces.Dict({
            "observation": gym.spaces.Box(-np.inf, np.inf, (self.feature_size,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (self.num_actions,), np.int8),
        })
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(self.num_actions) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.state = None

    def observation_space(self, agent: str) -> gym.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ game loop
    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = self.game.new_initial_state()
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._advance()
        self._accumulate_rewards()

    def _advance(self) -> None:
        """Sample chance nodes until a player must move or the game ends; set the agent to move / the returns."""
        state = self.state
        while state.is_chance_node():
            state.apply_action(self._chance_outcome(state.chance_outcomes()))
        if state.is_terminal():
            returns = [float(r) for r in state.returns()]
            for p, agent in enumerate(self.possible_agents):
                self.rewards[agent] = returns[p]
                self.terminations[agent] = True
                self.infos[agent] = {"returns": returns}
            self.agent_selection = self.possible_agents[0]
            return
        self.agent_selection = agent_name(state.current_player())

    def _chance_outcome(self, outcomes: list) -> int:
        """One outcome drawn from `outcomes` ((action, probability), ...) by inverting their cumulative sum
        with one uniform draw (about 25x cheaper than ``Generator.choice(p=...)`` per chance node)."""
        u = self._rng.random() * sum(p for _, p in outcomes)
        acc = 0.0
        for action, p in outcomes:
            acc += p
            if u < acc:
                return int(action)
        return int(outcomes[-1][0])  # u landed on the total through rounding

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        legal = self.state.legal_actions()
        action = int(action)
        if action not in legal:
            raise ValueError(f"action {action} is illegal for {agent} in {self.game_name}; legal: {legal}")
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self.state.apply_action(action)
        self._advance()
        self._accumulate_rewards()

    def observe(self, agent: str) -> dict:
        player = self.possible_agents.index(agent)
        features = np.asarray(self.state.information_state_tensor(player), np.float32)
        mask = np.zeros(self.num_actions, np.int8)
        if not self.state.is_terminal() and self.state.current_player() == player:
            mask[self.state.legal_actions(player)] = 1
        return {"observation": features, "action_mask": mask}

    def render(self) -> Any:
        """``ansi``: OpenSpiel's text of the state; ``rgb_array``: that text drawn on a white frame (replay GIFs)."""
        if self.render_mode is None or self.state is None:
            return None
        text = str(self.state)
        if self.render_mode == "ansi":
            return text
        from PIL import Image, ImageDraw

        lines = text.splitlines() or [""]
        image = Image.new("RGB", (8 + 7 * max(len(line) for line in lines), 8 + 14 * len(lines)), "white")
        ImageDraw.Draw(image).multiline_text((4, 4), text, fill="black", spacing=2)
        return np.asarray(image)

    def close(self) -> None:
        pass


__all__ = ["INSTALL_HINT", "OPENSPIEL_PREFIX", "OpenSpielEnv", "OpenSpielMissing", "agent_name", "load_game",
           "require_pyspiel"]
