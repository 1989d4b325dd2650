"""Level generators for MazeRace and CaptureTheFlag: knobs, four families, and the difficulty scalar.

Every generated level is **point-symmetric** about its centre cell, which holds the flag; team B's
spawns are the mirror images ``(n-1-r, n-1-c)`` of team A's. BFS distances are symmetric too, so
both teams are exactly equally far from the flag (``Level.fairness() == 0``) by construction.

Families (``Knobs.family``):

* ``"open"``  - an open room with random wall blocks (``wall_density`` of the interior).
* ``"maze"``  - a perfect maze on the odd-coordinate lattice (randomised Kruskal on mirrored edge
  pairs; symmetry forces a few loops), then braided: each dead end is opened with probability
  ``braid``. For sizes 1 mod 4 the centre is a lattice pillar, so a 3x3 plaza is carved around it.
* ``"rooms"`` - rooms separated by wall lines every 4 cells, one door per wall segment, plus random
  blocks inside rooms (``wall_density`` of the room floor). Size 5 has no room lines and degenerates
  to ``"open"``.
* ``"halls"`` - rooms of uneven sizes: mirrored wall lines at random gaps (rooms 2-6 cells wide) and,
  with probability 1/2 per axis, one line through the centre (a "river" with doors); one door per wall
  segment (two from 6 cells), plus random blocks (``wall_density``). The shapes of the held-out maps
  ``twin_rooms``, ``crossroads`` and ``river``, never those maps. Sizes below 9 may have no line.

Random blocks (open, rooms) are placed in mirrored pairs and never disconnect the floor (a block
whose 8-neighbour ring would split its floor neighbours is skipped), so the achieved density can fall
slightly short of ``wall_density`` near 0.4 but is never above it.

Generation is one hook per family followed by post-conditions (valid, solvable, fair, spawns at
``flag_distance`` within :func:`flag_distance_tolerance`), with bounded rejection sampling
(``MAX_ATTEMPTS``) that fails loudly with ``RuntimeError``. All randomness comes from
``np.random.default_rng(seed)``: ``generate_level(knobs, seed)`` is a pure function.

CaptureTheFlag levels (:func:`generate_ctf_level`) use the same knobs and family hooks: the walls are
the same point-symmetric layouts, base ``a`` is put where MazeRace would put a spawn (path length
``flag_distance`` from the centre, upper half) and base ``b`` at its mirror image, so the bases are
about ``2 * flag_distance`` apart. Each team's spawns lie in its own half, ``CTF_SPAWN_OFFSET`` (2;
1 or 3 when the layout has no such cell) steps from the own base, mirrored for team B. The centre is
equally far from both bases (neutral), the halves are mirror images: fair by construction.

Difficulty (``knobs_for_difficulty``), ``d`` in [1, 10]:

==============  ==============================================================
knob            mapping
==============  ==============================================================
size            ``5 + 2 * floor(d / 2)`` (5+d rounded down to odd): 5, 7, 7, 9, 9, ..., 15
family          given, else ``open`` for d < 4, ``rooms`` for d < 7, ``maze`` from 7
wall_density    ``0.04 + 0.03 * (d - 1)`` (open; 0.04 .. 0.31); rooms use half of it
braid           ``0.6 - 0.06 * (d - 1)`` (maze; 0.6 .. 0.06: fewer loops is harder)
flag_distance   ``round((0.6 + 0.4 * (d - 1) / 9) * (size - 3))`` (open/rooms; up to the corner);
                mazes ``round((0.8 + 0.1 * (d - 1)) * (size - 3))``; always within
                [2, ``max_flag_distance(size, family, braid)``]
max_steps       None (derived from size: ``size * size // 2 + 4 * size``)
==============  ==============================================================
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from .level import NEIGHBOURS, Cell, Level, _bfs

__all__ = [
    "Knobs", "FAMILIES", "generate_level", "knobs_for_difficulty", "flag_distance_tolerance",
    "default_max_steps", "max_flag_distance", "MIN_SIZE", "MAX_SIZE", "MAX_ATTEMPTS",
    "generate_ctf_level", "ctf_default_max_steps", "CTF_SPAWN_OFFSET",
]

FAMILIES = ("open", "maze", "rooms", "halls")
MIN_SIZE, MAX_SIZE = 5, 25
MAX_WALL_DENSITY = 0.4
MAX_ATTEMPTS = 200
ROOM_PITCH = 4
CTF_SPAWN_OFFSET = 2


def default_max_steps(size: int) -> int:
    """Episode step limit derived from the level size: ``size * size // 2 + 4 * size``."""
    return size * size // 2 + 4 * size


def ctf_default_max_steps(size: int) -> int:
    """CaptureTheFlag's step limit from the level size: ``size * size // 2 + 8 * size`` (a rush to the
    enemy base and back takes about ``4 * flag_distance`` steps; the rest leaves room for retries)."""
    return size * size // 2 + 8 * size


def max_flag_distance(size: int, family: str = "open", braid: float = 0.0) -> int:
    """Largest ``flag_distance`` accepted, so that every accepted value is reliably generated:
    ``size - 3`` (centre to corner) for open/rooms; ``floor((2 - braid) * (size - 3))`` for mazes
    larger than 5 (loops shorten paths)."""
    if family == "maze" and size > 5:
        return int((2.0 - braid) * (size - 3))
    return max(2, size - 3)


def flag_distance_tolerance(flag_distance: int) -> int:
    """Allowed |actual - requested| spawn-to-flag distance: ``max(1, flag_distance // 5)``."""
    return max(1, flag_distance // 5)


@dataclass(frozen=True)
class Knobs:
    """The small set of numbers that drives a generator. Bad values raise ``ValueError``."""

    family: str = "open"
    """Generator family: "open" | "maze" | "rooms" | "halls"."""
    size: int = 11
    """Side of the square map, odd, 5..25."""
    wall_density: float = 0.1
    """Fraction of interior cells made walls (open, rooms), 0..0.4."""
    braid: float = 0.3
    """Probability of opening each maze dead end (maze), 0..1."""
    flag_distance: int | None = None
    """Spawn-to-flag path length (within ``flag_distance_tolerance``); None = as far as possible."""
    agents_per_team: int = 1
    """1 (1v1) or 2 (2v2)."""
    max_steps: int | None = None
    """Episode step limit; None = ``default_max_steps(size)``."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            from spade_rllib.core.validation import did_you_mean

            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}{did_you_mean(self.family, FAMILIES)}")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) \
                or not MIN_SIZE <= self.size <= MAX_SIZE or self.size % 2 == 0:
            raise ValueError(f"size must be an odd int in [{MIN_SIZE}, {MAX_SIZE}], got {self.size!r}")
        if not isinstance(self.wall_density, (int, float)) or not 0.0 <= self.wall_density <= MAX_WALL_DENSITY:
            raise ValueError(f"wall_density must be in [0, {MAX_WALL_DENSITY}], got {self.wall_density!r}")
        if not isinstance(self.braid, (int, float)) or not 0.0 <= self.braid <= 1.0:
            raise ValueError(f"braid must be in [0, 1], got {self.braid!r}")
        if self.flag_distance is not None:
            hi = max_flag_distance(int(self.size), self.family, float(self.braid))
            if isinstance(self.flag_distance, bool) or not isinstance(self.flag_distance, (int, np.integer)) \
                    or not 2 <= self.flag_distance <= hi:
                raise ValueError(
                    f"flag_distance must be None or an int in [2, {hi}] for a size-{self.size} {self.family!r} level "
                    f"(maze: depends on braid), "
                    f"got {self.flag_distance!r}")
        if self.agents_per_team not in (1, 2):
            raise ValueError(f"agents_per_team must be 1 or 2, got {self.agents_per_team!r}")
        if self.max_steps is not None and (
                isinstance(self.max_steps, bool) or not isinstance(self.max_steps, (int, np.integer))
                or not 1 <= self.max_steps <= 100_000):
            raise ValueError(f"max_steps must be None or an int in [1, 100000], got {self.max_steps!r}")
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "wall_density", float(self.wall_density))
        object.__setattr__(self, "braid", float(self.braid))
        if self.flag_distance is not None:
            object.__setattr__(self, "flag_distance", int(self.flag_distance))

    @property
    def effective_max_steps(self) -> int:
        """``max_steps`` or the size-derived default."""
        return self.max_steps if self.max_steps is not None else default_max_steps(self.size)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Knobs":
        """Build from a dict; extra keys (``difficulty``, ``level_id``...) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def knobs_for_difficulty(difficulty: float, family: str | None = None, agents_per_team: int = 1) -> Knobs:
    """Map one difficulty scalar in [1, 10] to knobs (table in the module docstring)."""
    if isinstance(difficulty, bool) or not isinstance(difficulty, (int, float, np.floating, np.integer)) \
            or not 1.0 <= float(difficulty) <= 10.0 or math.isnan(float(difficulty)):
        raise ValueError(f"difficulty must be a number in [1, 10], got {difficulty!r}")
    d = float(difficulty)
    size = 5 + 2 * int(math.floor(d / 2))
    if family is None:
        family = "open" if d < 4 else ("rooms" if d < 7 else "maze")
    if family == "maze":
        frac = 0.8 + 0.1 * (d - 1)
    else:
        frac = 0.6 + 0.4 * (d - 1) / 9
    braid = round(0.6 - 0.06 * (d - 1), 4)
    flag_distance = min(max(2, int(round(frac * (size - 3)))), max_flag_distance(size, family, braid))
    wall = 0.04 + 0.03 * (d - 1)
    return Knobs(
        family=family, size=size,
        wall_density=round(wall if family == "open" else wall / 2, 4),
        braid=braid,
        flag_distance=flag_distance, agents_per_team=agents_per_team,
    )


# ---------------------------------------------------------------------------- family hooks
def _mirror(n: int, r: int, c: int) -> Cell:
    return n - 1 - r, n - 1 - c


def _bordered(n: int) -> np.ndarray:
    walls = np.zeros((n, n), dtype=bool)
    walls[0, :] = walls[-1, :] = walls[:, 0] = walls[:, -1] = True
    return walls


_RING = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))


def _can_block(walls: np.ndarray, r: int, c: int) -> bool:
    """True if walling (r, c) cannot disconnect the floor: its floor 4-neighbours are linked
    through one run of floor cells around its 8-neighbour ring (consecutive ring cells touch)."""
    ring = [not walls[r + dr, c + dc] for dr, dc in _RING]
    orth = [i for i in (1, 3, 5, 7) if ring[i]]
    if len(orth) <= 1:
        return True
    if all(ring):
        return True
    start = ring.index(False)  # walk the ring from a wall; count runs of floor that hold a 4-neighbour
    runs, in_run, has_orth = 0, False, False
    for k in range(1, 9):
        i = (start + k) % 8
        if ring[i]:
            if not in_run:
                in_run, has_orth = True, False
            has_orth |= i in (1, 3, 5, 7)
        elif in_run:
            in_run = False
            runs += has_orth
    return runs <= 1


def _scatter_blocks(walls: np.ndarray, density: float, rng: np.random.Generator, allowed: np.ndarray) -> None:
    """Wall about ``density`` of the allowed cells, in mirrored pairs, never disconnecting the floor.

    Cells are tried in random order (first half only; the mirror image follows); a cell whose blocking
    could cut the floor (``_can_block``) is skipped, so very high densities may fall a little short.
    """
    n = walls.shape[0]
    c0 = n // 2
    if density <= 0:
        return
    rows, cols = np.nonzero(allowed)
    cand = [(r, c) for r, c in zip(rows.tolist(), cols.tolist()) if r * n + c < c0 * n + c0]
    target_pairs = int(round(density * int(allowed.sum()) / 2))
    placed = 0
    for i in rng.permutation(len(cand)).tolist():
        if placed >= target_pairs:
            break
        r, c = cand[i]
        mr, mc = _mirror(n, r, c)
        if walls[r, c] or walls[mr, mc] or not _can_block(walls, r, c):
            continue
        walls[r, c] = True
        if not _can_block(walls, mr, mc):
            walls[r, c] = False
            continue
        walls[mr, mc] = True
        placed += 1


def _gen_open(k: Knobs, rng: np.random.Generator) -> np.ndarray:
    walls = _bordered(k.size)
    allowed = ~walls
    allowed[k.size // 2, k.size // 2] = False  # the flag
    _scatter_blocks(walls, k.wall_density, rng, allowed)
    return walls


def _gen_maze(k: Knobs, rng: np.random.Generator) -> np.ndarray:
    n = k.size
    walls = np.ones((n, n), dtype=bool)
    cells = [(r, c) for r in range(1, n, 2) for c in range(1, n, 2)]
    for r, c in cells:
        walls[r, c] = False
    parent = {cell: cell for cell in cells}

    def find(x: Cell) -> Cell:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = [((r, c), (r, c + 2)) for r, c in cells if c + 2 < n - 1] + \
            [((r, c), (r + 2, c)) for r, c in cells if r + 2 < n - 1]
    order = rng.permutation(len(edges)).tolist()
    for i in order:
        (a, b) = edges[i]
        ma, mb = _mirror(n, *a), _mirror(n, *b)
        if find(a) != find(b) or find(ma) != find(mb):
            for (u, v) in ((a, b), (ma, mb)):
                walls[(u[0] + v[0]) // 2, (u[1] + v[1]) // 2] = False
                ru, rv = find(u), find(v)
                if ru != rv:
                    parent[ru] = rv
    c0 = n // 2
    if c0 % 2 == 0:  # centre is a lattice pillar: carve a 3x3 plaza around it
        walls[c0 - 1:c0 + 2, c0 - 1:c0 + 2] = False
    # braid: open dead ends (and their mirror images) with probability braid
    if k.braid > 0:
        for r, c in cells:
            if (r * n + c) > (n * n) // 2:
                continue
            nbrs = [(r + dr, c + dc) for dr, dc in NEIGHBOURS]
            closed = [(rr, cc) for rr, cc in nbrs if walls[rr, cc]]
            if len(closed) == 3 and rng.random() < k.braid:
                inner = [(rr, cc) for rr, cc in closed if 0 < rr < n - 1 and 0 < cc < n - 1]
                if inner:
                    rr, cc = inner[int(rng.integers(len(inner)))]
                    walls[rr, cc] = False
                    walls[_mirror(n, rr, cc)] = False
    return walls


def _gen_rooms(k: Knobs, rng: np.random.Generator) -> np.ndarray:
    n = k.size
    c0 = n // 2
    walls = _bordered(n)
    lines = sorted({c0 + s for s in range(ROOM_PITCH // 2, c0, ROOM_PITCH)} |
                   {c0 - s for s in range(ROOM_PITCH // 2, c0, ROOM_PITCH)})
    lines = [x for x in lines if 1 < x < n - 2]
    for x in lines:
        walls[x, :] = True
        walls[:, x] = True
    bounds = [0] + lines + [n - 1]
    spans = [(bounds[i] + 1, bounds[i + 1] - 1) for i in range(len(bounds) - 1)]
    # one door per wall segment; a segment and its mirror image share one mirrored door
    done: set[tuple[int, int, bool]] = set()
    for x in lines:
        for si, (lo, hi) in enumerate(spans):
            for horizontal in (True, False):
                if (x, si, horizontal) in done:
                    continue
                done.add((n - 1 - x, len(spans) - 1 - si, horizontal))
                pos = int(rng.integers(lo, hi + 1))
                r, c = (x, pos) if horizontal else (pos, x)
                walls[r, c] = False
                walls[_mirror(n, r, c)] = False
    allowed = ~walls  # doors and the cells in front of them are never blocked: _can_block refuses them
    allowed[c0, c0] = False
    _scatter_blocks(walls, k.wall_density, rng, allowed)
    return walls


def _hall_lines(n: int, rng: np.random.Generator) -> list[int]:
    """Wall lines across one axis for ``halls``: mirrored pairs walked in from the border with rooms of 2-6
    cells between them, and with probability 1/2 one line through the centre (the "river")."""
    c0 = n // 2
    central = bool(rng.random() < 0.5)
    last_ok = c0 - 3 if central else c0 - 2  # the room(s) around the centre keep >= 2 (>= 3 without the line)
    lines, x = [], 0
    while True:
        x += int(rng.integers(3, 8))
        if x > last_ok:
            break
        lines += [x, n - 1 - x]
    return sorted(lines + ([c0] if central else []))


def _gen_halls(k: Knobs, rng: np.random.Generator) -> np.ndarray:
    n = k.size
    c0 = n // 2
    walls = _bordered(n)
    row_lines, col_lines = _hall_lines(n, rng), _hall_lines(n, rng)
    for x in row_lines:
        walls[x, :] = True
    for y in col_lines:
        walls[:, y] = True
    # doors: every wall segment between two crossings gets one (two from 6 cells), mirrored with its image
    for horizontal, lines, across in ((True, row_lines, col_lines), (False, col_lines, row_lines)):
        bounds = [0] + across + [n - 1]
        segments = list(zip(bounds[:-1], bounds[1:]))
        done: set[tuple[int, int]] = set()  # a segment's mirror image gets its doors from it, not its own
        for x in lines:
            for si, (lo, hi) in enumerate(segments):
                cells = list(range(lo + 1, hi))
                if not cells or (x, si) in done:
                    continue
                done.add((n - 1 - x, len(segments) - 1 - si))
                for pos in rng.choice(cells, size=min(len(cells), 1 if len(cells) < 6 else 2), replace=False).tolist():
                    r, c = (x, pos) if horizontal else (pos, x)
                    walls[r, c] = False
                    walls[_mirror(n, r, c)] = False
    walls[c0, c0] = False  # the flag cell (a door when a centre line runs through it)
    allowed = ~walls  # doors and the cells in front of them are never blocked: _can_block refuses them
    allowed[c0, c0] = False
    _scatter_blocks(walls, k.wall_density, rng, allowed)
    return walls


_FAMILY_HOOKS = {"open": _gen_open, "maze": _gen_maze, "rooms": _gen_rooms, "halls": _gen_halls}


# ---------------------------------------------------------------------------- spawns and the driver
def _pick_spawns(dist: np.ndarray, k: Knobs, rng: np.random.Generator) -> tuple[Cell, ...] | None:
    """Team A's spawn cells at the wanted distance (None if the layout cannot satisfy the knobs)."""
    n = dist.shape[0]
    c0 = n // 2
    # team A spawns in the first half in reading order (upper half); team B gets the mirror images
    cand = [(r, c) for r, c in zip(*np.nonzero(dist > 0)) if r * n + c < c0 * n + c0]
    if len(cand) < k.agents_per_team:
        return None
    dvals = np.array([dist[r, c] for r, c in cand])
    if k.flag_distance is None:
        target, tol = int(dvals.max()), max(1, int(dvals.max()) // 5)
    else:
        target, tol = k.flag_distance, flag_distance_tolerance(k.flag_distance)
    ok = [i for i in np.nonzero(np.abs(dvals - target) <= tol)[0].tolist()]
    if not ok:
        return None
    # prefer exact matches, then the closest; random among equals
    ok.sort(key=lambda i: (abs(int(dvals[i]) - target), float(rng.random())))
    chosen: list[Cell] = []
    for i in ok:
        r, c = int(cand[i][0]), int(cand[i][1])
        chosen.append((r, c))
        if len(chosen) == k.agents_per_team:
            return tuple(chosen)
    return None


def _check_args(knobs: Knobs, seed: int) -> None:
    """The generators' one-line errors for a wrong knobs object or seed."""
    if not isinstance(knobs, Knobs):
        raise TypeError(f"knobs must be a Knobs, got {type(knobs).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")


def _candidates(knobs: Knobs, seed: int):
    """(attempt, rng, walls, BFS distance from the centre) for each of ``MAX_ATTEMPTS`` wall layouts of the
    family, the centre cell open; one rng for the whole search, so a level is a function of ``(knobs, seed)``.
    The caller checks the arguments first (a generator runs only when iterated)."""
    rng = np.random.default_rng(int(seed))
    c0 = knobs.size // 2
    hook = _FAMILY_HOOKS[knobs.family]
    for attempt in range(MAX_ATTEMPTS):
        walls = hook(knobs, rng)
        walls[c0, c0] = False
        yield attempt, rng, walls, _bfs(walls, (c0, c0))


def generate_level(knobs: Knobs, seed: int) -> Level:
    """Generate a valid, solvable, fair level; deterministic in ``(knobs, seed)``."""
    _check_args(knobs, seed)
    n = knobs.size
    c0 = n // 2
    for attempt, rng, walls, dist in _candidates(knobs, seed):
        spawns_a = _pick_spawns(dist, knobs, rng)
        if spawns_a is None:
            continue
        walls = walls | (dist < 0)  # fill pockets nobody can reach
        spawns_b = tuple(_mirror(n, r, c) for r, c in spawns_a)
        level = Level(walls, (c0, c0), (spawns_a, spawns_b), meta={
            "family": knobs.family, "seed": int(seed), "knobs": knobs.to_dict(), "attempts": attempt + 1})
        # post-conditions
        assert level.fairness() == 0, "generator produced an unfair level"
        d = level.team_distances()[0]
        if knobs.flag_distance is not None:
            tol = flag_distance_tolerance(knobs.flag_distance)
            assert all(abs(x - knobs.flag_distance) <= tol for x in d), (d, knobs)
        return level
    raise RuntimeError(
        f"could not generate a {knobs.family!r} level for {knobs} with seed {seed} in {MAX_ATTEMPTS} attempts; "
        f"lower flag_distance or wall_density")


# ---------------------------------------------------------------------------- CaptureTheFlag levels
def _pick_ctf_spawns(dist_own: np.ndarray, half: np.ndarray, base: Cell, k: Knobs,
                     rng: np.random.Generator, open_way: np.ndarray | None = None) -> tuple[Cell, ...] | None:
    """Team A's spawns: floor cells in A's half, ``CTF_SPAWN_OFFSET`` steps from base a (else 1, 3),
    from which the enemy base is reachable without entering base a (``open_way``: the game's rule
    that an agent enters its own base only while carrying)."""
    usable = (half == 0) if open_way is None else ((half == 0) & open_way)
    for offset in (CTF_SPAWN_OFFSET, 1, 3):
        rows, cols = np.nonzero((dist_own == offset) & usable)
        cells = [(int(r), int(c)) for r, c in zip(rows.tolist(), cols.tolist()) if (r, c) != base]
        if len(cells) >= k.agents_per_team:
            order = rng.permutation(len(cells)).tolist()
            return tuple(cells[i] for i in order[:k.agents_per_team])
    return None


def generate_ctf_level(knobs: Knobs, seed: int) -> Level:
    """Generate a valid, fair, point-symmetric CaptureTheFlag level; deterministic in ``(knobs, seed)``.

    ``knobs.flag_distance`` is the path length from the centre to each base (see the module docstring).
    """
    _check_args(knobs, seed)
    n = knobs.size
    one = Knobs(**{**knobs.to_dict(), "agents_per_team": 1})
    for attempt, rng, walls, dist in _candidates(knobs, seed):
        picked = _pick_spawns(dist, one, rng)
        if picked is None:
            continue
        walls = walls | (dist < 0)
        base_a = picked[0]
        base_b = _mirror(n, *base_a)
        da, db = _bfs(walls, base_a), _bfs(walls, base_b)
        half = np.where(da < db, 0, np.where(db < da, 1, -1))
        half[walls] = -1
        closed = walls.copy()
        closed[base_a] = True
        spawns_a = _pick_ctf_spawns(da, half, base_a, knobs, rng, open_way=_bfs(closed, base_b) >= 0)
        if spawns_a is None:
            continue
        spawns_b = tuple(_mirror(n, r, c) for r, c in spawns_a)
        level = Level(walls, None, (spawns_a, spawns_b), meta={
            "family": knobs.family, "seed": int(seed), "knobs": knobs.to_dict(), "attempts": attempt + 1,
            "game": "ctf"}, bases=(base_a, base_b))
        assert level.fairness() == 0, "generator produced an unfair CTF level"
        return level
    raise RuntimeError(
        f"could not generate a {knobs.family!r} CTF level for {knobs} with seed {seed} in {MAX_ATTEMPTS} attempts; "
        f"lower flag_distance or wall_density")
