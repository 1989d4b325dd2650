"""Build environments from a versioned string id: ``make_env("CaptureTheFlag-v0", difficulty=3)``."""
from __future__ import annotations

import difflib
from typing import Any, Callable

from .ctf import CaptureTheFlag
from .maze_race import MazeRace

__all__ = ["make_env", "ENV_IDS", "register"]

_REGISTRY: dict[str, Callable[..., Any]] = {"MazeRace-v0": MazeRace, "CaptureTheFlag-v0": CaptureTheFlag}
ENV_IDS: list[str] = list(_REGISTRY)
"""Registered ids (updated in place by ``register``)."""


def register(env_id: str, factory: Callable[..., Any]) -> None:
    """Add an id (``Name-vN``); refuses to overwrite an existing one."""
    if env_id in _REGISTRY:
        raise ValueError(f"env id {env_id!r} is already registered")
    _REGISTRY[env_id] = factory
    ENV_IDS.append(env_id)


def make_env(env_id: str, **kwargs: Any):
    """Instantiate a registered env; unknown ids get a did-you-mean and the list of valid ids."""
    try:
        factory = _REGISTRY[env_id]
    except KeyError as e:
        close = difflib.get_close_matches(str(env_id), list(_REGISTRY), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown env id {env_id!r}.{hint} Registered ids: {sorted(_REGISTRY)}") from e
    return factory(**kwargs)
