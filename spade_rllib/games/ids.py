"""Env ids: which family an id belongs to, its canonical spelling, and the one parser of "pkg.mod:env".

Three families (`EnvKind`): "level" (a level game of the catalog: ASCII maps, generated levels,
curricula, scripted bots), "pettingzoo" (an import path ``"pkg.module:env_name"``) and "gymnasium"
(anything else: a Gymnasium registry id). Classifying an id is syntactic plus the catalog; it
imports nothing. `import_env_module` resolves a PettingZoo path at the point of use: it imports the
named module, as Gymnasium entry points do, from `sys.path` as it is (the working directory is not
put in front).
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Literal, NamedTuple, Optional

from spade_rllib.games.catalog import find_game, level_game_ids

LEVEL_KIND = "level"
EnvKind = Literal["level", "pettingzoo", "gymnasium"]


class EnvPath(NamedTuple):
    """A PettingZoo import path ``"module:attribute"`` split in two."""

    module: str
    attr: str


def parse_env_path(env_id: str) -> EnvPath:
    """``"pettingzoo.classic:connect_four_v3"`` -> ``EnvPath("pettingzoo.classic", "connect_four_v3")``;
    ValueError (one line) when either side is empty."""
    module, sep, attr = str(env_id).partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"env id {env_id!r}: expected a PettingZoo path 'pkg.module:env_name', "
                         "e.g. 'pettingzoo.classic:connect_four_v3'")
    return EnvPath(module, attr)


def import_env_module(env_id: str) -> Any:
    """The object a PettingZoo path (or a Gymnasium entry point) ``"module:attr"`` names: imports the
    named module, as Gymnasium entry points do (`import_module`). ImportError / AttributeError propagate."""
    path = parse_env_path(env_id)
    return getattr(import_module(path.module), path.attr)


def import_module(name: str) -> Any:
    """`importlib.import_module(name)` with the working directory, which ``python -m`` puts first on
    `sys.path`, moved last for this import: a stray ``pettingzoo.py`` in it cannot shadow the
    installed package."""
    saved = list(sys.path)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[:] = sys.path[1:] + sys.path[:1]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def spade_env_ids() -> tuple[str, ...]:
    """The level games of the catalog (MazeRace-v0, CaptureTheFlag-v0, ...)."""
    return level_game_ids()


def env_kind(env_id: str) -> EnvKind:
    """The family of `env_id` (syntactic plus the catalog; it imports nothing)."""
    spec = find_game(env_id)
    if spec is not None and spec.is_level_game:
        return LEVEL_KIND
    if ":" in str(env_id) and not str(env_id).startswith("gymnasium"):
        return "pettingzoo"
    return "gymnasium"


def is_level_game(env_id: Optional[str]) -> bool:
    """True for the level games of the catalog."""
    return env_id is not None and env_kind(str(env_id)) == LEVEL_KIND


def canonical_env_id(env_id: Optional[str]) -> Optional[str]:
    """The catalog id of `env_id`: itself, an alias (``"pettingzoo.classic:connect_four_v3"``), or an id
    behind a wrapper prefix or import path (``"spade/MazeRace-v0"``, ``"pkg:MazeRace-v0"``). An id the
    catalog does not know comes back as its last path component."""
    if env_id is None:
        return None
    text = str(env_id)
    spec = find_game(text)
    if spec is None:
        tail = text.rpartition(":")[2].rpartition("/")[2]
        spec = find_game(tail)
        if spec is None:
            return tail
    return spec.id


__all__ = ["LEVEL_KIND", "EnvKind", "EnvPath", "canonical_env_id", "env_kind", "import_env_module", "import_module", "is_level_game",
           "parse_env_path", "spade_env_ids"]
