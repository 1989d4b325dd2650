"""The maps a config names, checked before Ray: `env.level_file`, the held-out maps and the cell memory that holds them.

* `read_level`: an ASCII map file into a `Level`; errors name key, file, line and column.
* `check_heldout_levels` / `check_final_heldout`: each held-out map loads as the held-out evaluation will load it,
  and at least one fits `evaluation.final_heldout_max_size`.
* `check_cell_memory_fits`: `env.kwargs.cell_memory` holds the largest level the run plays.

Called by `config.preflight.check_config`; every failure is a one-line `ConfigError`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from spade_rllib.core.validation import ConfigError


MAX_MAP_BYTES = 1 << 20
"""Largest map file read (1 MiB; the largest map, `envs.level.MAX_SIDE` squared cells, is far smaller)."""


def read_level(path: str, key: str, max_unfairness: Optional[int] = None):
    """Parse an ASCII map file into a `Level`; `ConfigError` naming key, file, line and column."""
    from spade_rllib.envs import Level, LevelError

    p = Path(os.path.expanduser(path))
    try:
        if p.is_file() and p.stat().st_size > MAX_MAP_BYTES:
            raise ConfigError(f"{key} = {path!r}: {p.stat().st_size:,d} bytes; a map file is at most {MAX_MAP_BYTES:,d}")
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{key} = {path!r}: cannot read the map ({e.__class__.__name__}: {e})") from e
    try:
        return Level.from_ascii(text, max_unfairness=max_unfairness)
    except LevelError as e:
        raise ConfigError(f"{key} = {path!r}: bad map in {p}: {' '.join(str(e).split())}") from e


def check_heldout_levels(paths: list, env_id: str, key: str = "evaluation.heldout_levels", max_size: int = 0,
                         size_key: str = "evaluation.final_heldout_max_size") -> None:
    """Each held-out map loads as the held-out evaluation will load it (a map of this game; errors name
    the file), and with `max_size` at least one map has at most that many rows and columns."""
    if not paths:
        return
    from spade_rllib.curriculum.heldout_maps import heldout_map_files, load_heldout_levels

    try:
        files = heldout_map_files(paths)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{key} = {paths!r}: {' '.join(str(e).split())}") from e
    for f in files:
        try:
            load_heldout_levels([f], env_id=env_id)  # a MazeRace map cannot play CTF, nor the reverse
        except (OSError, ValueError) as e:
            raise ConfigError(f"{key}: bad map in {f}: {' '.join(str(e).split())}") from e
    try:
        levels = load_heldout_levels(paths)  # two maps of the same name, across directories
    except (OSError, ValueError) as e:
        raise ConfigError(f"{key} = {paths!r}: {' '.join(str(e).split())}") from e
    if max_size:
        sizes = sorted(max(level.height, level.width) for level in levels.values())
        if not any(s <= max_size for s in sizes):
            raise ConfigError(f"{size_key} = {max_size}: out of range, it leaves none of the {len(sizes)} maps of {key} "
                              f"(the smallest is {sizes[0]} cells on its longer side); allowed 0 (every map) or >= {sizes[0]}")


def check_cell_memory_fits(cfg) -> None:
    """A level game's `env.kwargs.cell_memory` (the grid's cells a side) holds every level the run plays: the
    curriculum's largest size and every held-out map (they are played in full after training)."""
    side = dict(cfg.env.kwargs).get("cell_memory") if isinstance(cfg.env.kwargs, dict) else None
    if not side or isinstance(side, bool) or not isinstance(side, int):
        return
    largest: list[tuple[int, str]] = []
    if cfg.curriculum.enabled:
        largest.append((int(cfg.curriculum.uniform.size[1]), "curriculum.uniform.size"))
    for key in ("heldout_levels", "final_heldout_levels"):
        paths = getattr(cfg.evaluation, key)
        if paths:
            from spade_rllib.curriculum.heldout_maps import load_heldout_levels

            for name, level in load_heldout_levels(paths).items():
                largest.append((max(level.height, level.width), f"map {name} of evaluation.{key}"))
    if largest:
        size, where = max(largest)
        if size > side:
            raise ConfigError(f"env.kwargs.cell_memory = {side}: smaller than the largest level this run plays "
                              f"({size}x{size}, {where}); allowed >= {size} (did you mean cell_memory: {size}?)")


def check_final_heldout(ev, env_id: str) -> None:
    """`evaluation.final_heldout_levels` (with `final_heldout_max_size`) checked now, as the held-out
    line after training will load it (`check_heldout_levels`), not after the whole budget."""
    check_heldout_levels(ev.final_heldout_levels, env_id, key="evaluation.final_heldout_levels",
                         max_size=ev.final_heldout_max_size)
