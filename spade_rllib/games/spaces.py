"""Which action spaces the package trains: the one check, used by the game-loop adapter and preflight.

`check_action_space(space, who)` raises `UnsupportedSpace` (one line naming the agent, the space and
what is allowed) for a space the module cannot act in; `check_env_action_spaces(env)` applies it to
every agent of a PettingZoo env (or the one action space of a Gymnasium env). Supported:
`Discrete` (a categorical policy) and a float `Box` of any shape (a diagonal Gaussian policy over its
flattened entries; actions are clipped to its bounds). No Ray, no torch.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

SUPPORTED_ACTION_SPACES = ("Discrete", "float Box")


class UnsupportedSpace(ValueError):
    """An env space the package cannot train; the message is one line."""


def check_action_space(space: Any, who: str = "the env") -> None:
    """`space` is an action space the module can act in; `UnsupportedSpace` otherwise."""
    if isinstance(space, gym.spaces.Discrete):
        return
    if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating) and space.shape:
        return
    raise UnsupportedSpace(f"{who} has action space {space}: only {' and '.join(SUPPORTED_ACTION_SPACES)} "
                           "action spaces are supported")


def check_env_action_spaces(env: Any) -> None:
    """Every agent's action space of a PettingZoo env (the action space of a Gymnasium env) is supported."""
    agents = getattr(env, "possible_agents", None)
    if agents is None:
        check_action_space(env.action_space, "the env")
        return
    for agent in agents:
        check_action_space(env.action_space(agent), f"agent {agent!r}")


__all__ = ["SUPPORTED_ACTION_SPACES", "UnsupportedSpace", "check_action_space", "check_env_action_spaces"]
