"""Build environments from a versioned string id: ``make_env("CaptureTheFlag-v0", difficulty=3)``."""
from __future__ import annotations

import difflib
from typing import Any, Callable

from .ctf import CaptureTheFlag
from .generators import generate_ctf_level, generate_level
from .maze_race import MazeRace

__all__ = ["make_env", "ENV_IDS", "register", "env_class", "level_generator"]

_REGISTRY: dict[str, Callable[..., Any]] = {"MazeRace-v0": MazeRace, "CaptureTheFlag-v0": CaptureTheFlag}
ENV_IDS: list[str] = list(_REGISTRY)
"""Registered ids (updated in place by ``register``)."""


# The generator each level game builds `Knobs` levels with (the curriculum and the runner's level pool).
_GENERATORS: dict[str, Callable[..., Any]] = {"MazeRace-v0": generate_level, "CaptureTheFlag-v0": generate_ctf_level}


def env_class(env_id: str) -> Any:
    """The class (or factory) registered under `env_id` (e.g. for its static `obs_layout`)."""
    _check_id(env_id)
    return _REGISTRY[env_id]


def level_generator(env_id: str) -> Callable[..., Any]:
    """`(knobs, seed) -> Level` for a level game (`generate_level` for MazeRace-v0, `generate_ctf_level` for CTF)."""
    _check_id(env_id)
    if env_id not in _GENERATORS:
        raise ValueError(f"env id {env_id!r} has no level generator; games with one: {sorted(_GENERATORS)}")
    return _GENERATORS[env_id]


def _check_id(env_id: str) -> None:
    """Raise the registry's one-line error for an unknown id."""
    if env_id not in _REGISTRY:
        close = difflib.get_close_matches(str(env_id), list(_REGISTRY), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown env id {env_id!r}.{hint} Registered ids: {sorted(_REGISTRY)}")


def register(env_id: str, factory: Callable[..., Any]) -> None:
    """Add an id (``Name-vN``); refuses to overwrite an existing one."""
    if env_id in _REGISTRY:
        raise ValueError(f"env id {env_id!r} is already registered")
    _REGISTRY[env_id] = factory
    ENV_IDS.append(env_id)


def make_env(env_id: str, **kwargs: Any):
    """Instantiate a registered env; unknown ids get a did-you-mean and the list of valid ids."""
    _check_id(env_id)
    return _REGISTRY[env_id](**kwargs)
