"""The one env-kind classifier: which family an env id belongs to, and its canonical spelling.

Bottom floor beside `envs/` (it reads the registry of `spade_rllib.envs`, nothing above), so the
config, the RLlib glue and the Ray-free policy loader all classify ids the same way. Validating an
id (does the PettingZoo module import, is the Gymnasium id registered) is the config's job.
"""
from __future__ import annotations

import re
from typing import Literal, Optional

MAZERACE_ID = "MazeRace-v0"
CTF_ID = "CaptureTheFlag-v0"
LEVEL_KIND = "level"
EnvKind = Literal["level", "pettingzoo", "gymnasium"]
"""'level': a level game of this package (`spade_rllib.envs.ENV_IDS`: MazeRace-v0, CaptureTheFlag-v0;
ASCII maps, generated levels, scripted bots); 'pettingzoo': an import path 'pkg.module:env_name';
'gymnasium': anything else (a Gymnasium registry id)."""


def spade_env_ids() -> tuple[str, ...]:
    """Ids registered in `spade_rllib.envs` (MazeRace-v0 and the other games of this package)."""
    from spade_rllib.envs import ENV_IDS  # noqa: PLC0415 - the env package is the registry's owner

    return tuple(ENV_IDS)


def env_kind(env_id: str) -> EnvKind:
    """The family of `env_id` (syntactic plus the package registry; it does not import the env)."""
    if env_id in spade_env_ids():
        return LEVEL_KIND
    if ":" in env_id and not env_id.startswith("gymnasium"):
        return "pettingzoo"
    return "gymnasium"


def is_level_game(env_id: Optional[str]) -> bool:
    """True for the level games of this package (they share levels, curricula, held-out maps, bots)."""
    return env_id is not None and env_kind(str(env_id)) == LEVEL_KIND


def canonical_env_id(env_id: Optional[str]) -> Optional[str]:
    """One spelling per env: registered names ("MazeRace-v0"), import paths
    ("pettingzoo.classic:connect_four_v3" -> "connect_four_v3") and wrapper-prefixed names
    ("spade/MazeRace-v0") map to the id the policy loader and evaluation use. Unknown ids come back
    unchanged (after the import path's module part)."""
    if env_id is None:
        return None
    text = str(env_id)
    low = text.lower()
    for spade_id in spade_env_ids():
        if spade_id.lower() in low:
            return spade_id
    if "mazerace" in low or "maze_race" in low:
        return MAZERACE_ID
    if "capturetheflag" in low or "capture_the_flag" in low:
        return CTF_ID
    if re.search(r"connect_four(_v\d+)?", low):
        return "connect_four_v3"
    return text.split(":")[-1]


__all__ = ["CTF_ID", "LEVEL_KIND", "MAZERACE_ID", "EnvKind", "is_level_game", "canonical_env_id", "env_kind", "spade_env_ids"]
