"""ACCEL's level editor: a few small, fair edits of a MazeRace or CaptureTheFlag `Level`. Pure numpy.

Edits (each keeps the map point-symmetric when it was, and is kept only when the result is a valid
level as fair as its parent, `Level.fairness() <= parent's`, so a fair parent gives a fair child):

  wall_pair     toggle one interior cell and its mirror (H-1-r, W-1-c) together: add or remove a
                symmetric pair of walls (never on the border, a spawn, the flag or a base);
  spread        CTF: move base `a` one step to a floor neighbour farther (by path) from base `b`, and
                base `b` to the mirror cell, so the bases move apart. MazeRace: move the two spawns the
                same way one step farther from the flag (longer flag-spawn distance).

An edit that breaks validity or fairness is undone and another drawn; `mutate` tries at most
`MAX_TRIES_PER_EDIT` per requested edit and returns None when no edit succeeded at all. Randomness
only from the caller's generator, so a mutation is a pure function of (level, rng state).
"""
from __future__ import annotations

import numpy as np

from spade_rllib.envs.level import NEIGHBOURS, Level, LevelError

EDIT_KINDS = ("wall_pair", "spread")
SPREAD_SHARE = 0.25  # share of edit draws that spread bases / spawns (the rest toggle wall pairs)
MAX_TRIES_PER_EDIT = 20


def mirror(level: Level, cell: tuple[int, int]) -> tuple[int, int]:
    """The cell's point mirror through the map's centre."""
    return level.height - 1 - cell[0], level.width - 1 - cell[1]


def _special_cells(level: Level) -> set[tuple[int, int]]:
    cells = {s for team in level.spawns for s in team}
    cells |= set(level.bases) if level.is_ctf else {level.flag}
    return cells


def _rebuild(level: Level, walls: np.ndarray, flag=None, spawns=None, bases=None) -> Level | None:
    """The edited level if it is valid and no less fair than `level`, else None."""
    try:
        child = Level(walls, flag if not level.is_ctf else None,
                      spawns if spawns is not None else level.spawns, {"family": "edited"},
                      bases=(bases if bases is not None else level.bases) if level.is_ctf else None)
    except LevelError:
        return None
    return child if child.fairness() <= level.fairness() else None


def toggle_wall_pair(level: Level, rng: np.random.Generator) -> Level | None:
    """Add or remove a wall at a random interior cell and at its mirror; None when the result is invalid or unfair."""
    h, w = level.height, level.width
    if h < 3 or w < 3:
        return None
    cell = (int(rng.integers(1, h - 1)), int(rng.integers(1, w - 1)))
    pair = {cell, mirror(level, cell)}
    if pair & _special_cells(level):
        return None
    walls = np.array(level.walls, copy=True)
    value = not walls[cell]
    for r, c in pair:
        walls[r, c] = value
    return _rebuild(level, walls, flag=level.flag)


def spread(level: Level, rng: np.random.Generator) -> Level | None:
    """CTF: bases one step apart; MazeRace: spawns one step farther from the flag (1v1 maps; mirrored)."""
    if level.is_ctf:
        mover, anchor_dist = level.bases[0], level.distance_to_base(1)
    else:
        if level.agents_per_team != 1:
            return None
        mover, anchor_dist = level.spawns[0][0], level.distance_to_flag()
    here = int(anchor_dist[mover])
    options = []
    for dr, dc in NEIGHBOURS:
        cell = (mover[0] + dr, mover[1] + dc)
        if 0 <= cell[0] < level.height and 0 <= cell[1] < level.width and not level.walls[cell] \
                and int(anchor_dist[cell]) > here and cell not in _special_cells(level):
            options.append(cell)
    if not options:
        return None
    new = options[int(rng.integers(len(options)))]
    twin = mirror(level, new)
    if twin == new or level.walls[twin] or twin in _special_cells(level) - {mirror(level, mover)}:
        return None
    if level.is_ctf:
        return _rebuild(level, np.array(level.walls), bases=(new, twin))
    return _rebuild(level, np.array(level.walls), flag=level.flag, spawns=((new,), (twin,)))


def mutate(level: Level, rng: np.random.Generator, edits: int = 3) -> Level | None:
    """`edits` successful fair edits of `level` (fewer when few succeed); None when none succeeded."""
    done = 0
    current = level
    for _ in range(edits):
        for _ in range(MAX_TRIES_PER_EDIT):
            edit = spread if rng.random() < SPREAD_SHARE else toggle_wall_pair
            child = edit(current, rng)
            if child is not None:
                current, done = child, done + 1
                break
    return current if done else None


__all__ = ["EDIT_KINDS", "mirror", "mutate", "spread", "toggle_wall_pair"]
