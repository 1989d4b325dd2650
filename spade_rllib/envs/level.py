"""Levels of MazeRace and CaptureTheFlag: the grid, flag or bases, spawns, ASCII I/O, validation, fairness.

ASCII format (one character per cell, rows separated by newlines)::

    #   wall
    .   floor
    F   the flag (exactly one; MazeRace maps)
    a   the base (and flag) of team A (exactly one; CaptureTheFlag maps)
    b   the base (and flag) of team B (exactly one; CaptureTheFlag maps)
    A   a spawn of team A (``player_0``'s team)
    B   a spawn of team B

A map is MazeRace-style (one ``F``) or CaptureTheFlag-style (one ``a`` and one ``b``), never both;
``level.is_ctf`` tells which.

Rules for hand-written maps:

* The map is rectangular (surrounding blank lines and common indentation are ignored, as is
  trailing whitespace on each line), at least 3x3; any size from 5x5 to 25x25 and beyond plays.
* The outer border is all walls.
* Team mode: one letter per agent, so a 2v2 map holds two ``A`` and two ``B``. Both teams have the
  same number of spawns. Agents are numbered in reading order (row by row, left to right): the
  first ``A`` is ``a_0`` (or ``player_0`` in 1v1), the second ``a_1``.
* The flag and every spawn are reachable from each other (4-neighbourhood moves). CTF maps: each
  base is reachable from the other team's spawns and from its own team's spawns, and by the game's
  movement rule: an agent enters its own base only while carrying the enemy flag, so every spawn
  must reach the enemy base without passing its own base (`#A.ab.B#` is refused: the blocking
  cell is the own base).

Any violation raises :class:`LevelError` naming the problem with ``line L, column C`` (1-based).

Fairness: a team's distances are the BFS path lengths from its spawns to the flag (CTF: to the
enemy base), sorted.
``Level.fairness()`` is the largest difference between the two teams' sorted distances (in 1v1
simply ``|d_A - d_B|``); 0 means fair. ``Level.from_ascii(text, max_unfairness=k)`` makes a map
whose fairness exceeds ``k`` an error; without it an unfair map loads and ``fairness()`` and
``report()`` tell how unfair it is. CTF maps also compare the spawn-to-own-base distances.
Generated levels are always fair (point-symmetric).

Per-level precomputation (BFS distance maps, the CTF half map, padded observation layers, per-cell
observation templates) is cached on the level object the first time it is needed, never per step.
"""
from __future__ import annotations

import textwrap
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Level", "LevelError", "Cell"]

Cell = tuple[int, int]

WALL, FLOOR, FLAG, SPAWN_A, SPAWN_B, BASE_A, BASE_B = "#", ".", "F", "A", "B", "a", "b"
ALLOWED = (WALL, FLOOR, FLAG, SPAWN_A, SPAWN_B, BASE_A, BASE_B)
MIN_SIDE = 3
MAX_SIDE = 256
"""Longest side of a map (rows or columns); larger maps are refused before they are parsed."""
NEIGHBOURS = ((-1, 0), (1, 0), (0, -1), (0, 1))


class LevelError(ValueError):
    """A map is malformed; the message names the problem and its ``line L, column C`` (1-based)."""

    def __init__(self, problem: str, row: int | None = None, col: int | None = None):
        self.problem = problem
        self.line = None if row is None else row + 1
        self.column = None if col is None else col + 1
        where = "" if row is None else f" at line {row + 1}, column {col + 1}"
        super().__init__(f"{problem}{where}")


def _bfs(walls: np.ndarray, start: Cell) -> np.ndarray:
    """BFS path lengths from ``start`` over floor cells (int32, -1 = wall or unreachable)."""
    h, w = walls.shape
    dist = np.full((h, w), -1, dtype=np.int32)
    if walls[start]:
        return dist
    wl = walls.tolist()
    d = [[-1] * w for _ in range(h)]
    d[start[0]][start[1]] = 0
    q = deque([start])
    while q:
        r, c = q.popleft()
        nd = d[r][c] + 1
        for dr, dc in NEIGHBOURS:
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w and not wl[rr][cc] and d[rr][cc] < 0:
                d[rr][cc] = nd
                q.append((rr, cc))
    dist[:] = d
    return dist


def _check_border(walls: np.ndarray) -> None:
    h, w = walls.shape
    if h < MIN_SIDE or w < MIN_SIDE:
        raise LevelError(f"map is {h}x{w}; it must be at least {MIN_SIDE}x{MIN_SIDE}", 0, 0)
    for r in range(h):
        for c in range(w):
            if (r in (0, h - 1) or c in (0, w - 1)) and not walls[r, c]:
                raise LevelError("open outer border: border cells must be '#'", r, c)


def _check_spawns(walls: np.ndarray, spawns, taken: set[Cell], what: str) -> None:
    """Both teams have spawns, equally many, on floor, on distinct cells (also distinct from ``taken``)."""
    h, w = walls.shape
    for team, name in ((0, "A"), (1, "B")):
        if not spawns[team]:
            raise LevelError(f"missing spawns: team {name} has no '{name}' cell", 0, 0)
    if len(spawns[0]) != len(spawns[1]):
        r, c = spawns[1][-1] if len(spawns[1]) > len(spawns[0]) else spawns[0][-1]
        raise LevelError(
            f"teams have different numbers of spawns (A: {len(spawns[0])}, B: {len(spawns[1])})", r, c)
    seen = set(taken)
    for team in spawns:
        for (r, c) in team:
            if not (0 <= r < h and 0 <= c < w) or walls[r, c]:
                raise LevelError("spawn is outside the map or on a wall", min(max(r, 0), h - 1), min(max(c, 0), w - 1))
            if (r, c) in seen:
                raise LevelError(f"two spawns (or a spawn and {what}) share a cell", r, c)
            seen.add((r, c))


def _validate(walls: np.ndarray, flag: Cell, spawns: tuple[tuple[Cell, ...], tuple[Cell, ...]]) -> np.ndarray:
    """Check border, spawns and reachability; return the BFS distance map from the flag."""
    h, w = walls.shape
    _check_border(walls)
    fr, fc = flag
    if not (0 <= fr < h and 0 <= fc < w) or walls[fr, fc]:
        raise LevelError("flag is outside the map or on a wall", min(max(fr, 0), h - 1), min(max(fc, 0), w - 1))
    _check_spawns(walls, spawns, {flag}, "the flag")
    dist = _bfs(walls, flag)
    reachable = [dist[s] >= 0 for t in spawns for s in t]
    if not any(reachable):
        raise LevelError("flag unreachable: no spawn can reach it", fr, fc)
    for team in spawns:
        for (r, c) in team:
            if dist[r, c] < 0:
                raise LevelError("spawn unreachable: no path from this spawn to the flag", r, c)
    return dist


def _validate_ctf(walls: np.ndarray, bases: tuple[Cell, Cell], spawns) -> tuple[np.ndarray, np.ndarray]:
    """CTF maps: border, bases, spawns, reachability; return the BFS maps from base A and base B."""
    h, w = walls.shape
    _check_border(walls)
    for (r, c) in bases:
        if not (0 <= r < h and 0 <= c < w) or walls[r, c]:
            raise LevelError("base is outside the map or on a wall", min(max(r, 0), h - 1), min(max(c, 0), w - 1))
    if bases[0] == bases[1]:
        raise LevelError("the two bases share a cell", *bases[1])
    _check_spawns(walls, spawns, set(bases), "a base")
    dists = (_bfs(walls, bases[0]), _bfs(walls, bases[1]))
    for team, name in ((0, "A"), (1, "B")):
        other = 1 - team
        enemy = "ab"[other]
        if not any(dists[other][s] >= 0 for s in spawns[team]):
            raise LevelError(f"base unreachable: no spawn of team {name} can reach base '{enemy}'", *bases[other])
        for s in spawns[team]:
            if dists[other][s] < 0:
                raise LevelError(f"spawn unreachable: no path from this team {name} spawn to base '{enemy}'", *s)
            if dists[team][s] < 0:
                raise LevelError(f"spawn unreachable: no path from this team {name} spawn to its own base", *s)
        # The movement rule: an agent enters its own base only while carrying the enemy flag, so on
        # the way out the own base is a wall (the way home from the enemy base is open).
        closed = walls.copy()
        closed[bases[team]] = True
        out = _bfs(closed, bases[other])
        for s in spawns[team]:
            if out[s] < 0:
                raise LevelError(f"unwinnable map: team {name}'s spawn at line {s[0] + 1}, column {s[1] + 1} reaches "
                                 f"base '{enemy}' only through its own base '{name.lower()}', which an agent enters "
                                 "only while carrying the enemy flag; blocking cell", *bases[team])
    return dists


def _half_map(da: np.ndarray, db: np.ndarray) -> np.ndarray:
    """int8 (H, W): 0 = team A's half (closer to base a by path length), 1 = B's, -1 = tie / wall."""
    half = np.full(da.shape, -1, dtype=np.int8)
    ok = (da >= 0) & (db >= 0)
    half[ok & (da < db)] = 0
    half[ok & (db < da)] = 1
    half.setflags(write=False)
    return half


@dataclass(frozen=True, eq=False)
class Level:
    """One map: MazeRace (``flag``) or CaptureTheFlag (``bases``, ``flag`` None). Equality and hash go
    by the ASCII text (``meta`` is not compared)."""

    walls: np.ndarray
    """bool (H, W); True = wall. Stored read-only."""
    flag: Cell | None
    """(row, col) of the flag (MazeRace); None on CTF maps."""
    spawns: tuple[tuple[Cell, ...], tuple[Cell, ...]]
    """Spawn cells: index 0 team A, 1 team B; one cell per agent, in reading order."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance: generator family, seed, knobs, difficulty (may be empty)."""
    bases: tuple[Cell, Cell] | None = None
    """(base of team A, base of team B) on CTF maps; None on MazeRace maps."""

    def __post_init__(self) -> None:
        walls = np.array(self.walls, dtype=bool, copy=True)
        if walls.ndim != 2:
            raise LevelError(f"walls must be a 2-D array, got shape {walls.shape}")
        walls.setflags(write=False)
        if (self.flag is None) == (self.bases is None):
            raise LevelError("a level has either a flag (MazeRace) or two bases (CaptureTheFlag), not both or neither")
        if len(self.spawns) != 2:
            raise LevelError(f"spawns must hold 2 teams, got {len(self.spawns)}")
        spawns = tuple(tuple(sorted((int(r), int(c)) for r, c in team)) for team in self.spawns)
        object.__setattr__(self, "walls", walls)
        object.__setattr__(self, "spawns", spawns)
        object.__setattr__(self, "meta", dict(self.meta))
        if self.bases is None:
            flag = (int(self.flag[0]), int(self.flag[1]))
            object.__setattr__(self, "flag", flag)
            dist = _validate(walls, flag, spawns)
            dist.setflags(write=False)
            object.__setattr__(self, "_dist", dist)
            object.__setattr__(self, "_base_dist", None)
        else:
            if len(self.bases) != 2:
                raise LevelError(f"bases must hold 2 cells (team A, team B), got {len(self.bases)}")
            bases = tuple((int(r), int(c)) for r, c in self.bases)
            object.__setattr__(self, "bases", bases)
            dists = _validate_ctf(walls, bases, spawns)
            for d in dists:
                d.setflags(write=False)
            object.__setattr__(self, "_dist", None)
            object.__setattr__(self, "_base_dist", dists)
        object.__setattr__(self, "_cache", {})

    # ----------------------------------------------------------------- shape
    @property
    def height(self) -> int:
        return int(self.walls.shape[0])

    @property
    def width(self) -> int:
        return int(self.walls.shape[1])

    @property
    def agents_per_team(self) -> int:
        return len(self.spawns[0])

    @property
    def is_ctf(self) -> bool:
        """True for a CaptureTheFlag map (two bases), False for a MazeRace map (one flag)."""
        return self.bases is not None

    # ----------------------------------------------------------------- ASCII
    @classmethod
    def from_ascii(cls, text: str, max_unfairness: int | None = None, meta: dict | None = None) -> "Level":
        """Parse a map (see the module docstring). ``max_unfairness`` makes unfair maps an error."""
        if max_unfairness is not None and (not isinstance(max_unfairness, int) or max_unfairness < 0):
            raise ValueError(f"max_unfairness must be None or an int >= 0, got {max_unfairness!r}")
        if len(text) > 4 * (MAX_SIDE + 1) * MAX_SIDE:  # indentation and trailing blanks allowed, but not megabytes
            raise LevelError(f"map text is {len(text):,d} characters; a map is at most {MAX_SIDE}x{MAX_SIDE} cells", 0, 0)
        lines = [ln.rstrip() for ln in textwrap.dedent(text.replace("\r\n", "\n")).split("\n")]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        if not lines:
            raise LevelError("empty map", 0, 0)
        width = len(lines[0])
        if len(lines) > MAX_SIDE or max(len(ln) for ln in lines) > MAX_SIDE:
            raise LevelError(f"map is {len(lines)}x{max(len(ln) for ln in lines)}; at most {MAX_SIDE}x{MAX_SIDE}", 0, 0)
        for r, ln in enumerate(lines):
            if len(ln) != width:
                raise LevelError(
                    f"not rectangular: line has {len(ln)} characters, line 1 has {width}", r, min(len(ln), width))
        walls = np.zeros((len(lines), width), dtype=bool)
        flags: list[Cell] = []
        bases: tuple[list[Cell], list[Cell]] = ([], [])
        spawns: tuple[list[Cell], list[Cell]] = ([], [])
        mixed = "a map is MazeRace-style (one 'F') or CaptureTheFlag-style (one 'a' and one 'b'), not both"
        for r, ln in enumerate(lines):
            for c, ch in enumerate(ln):
                if ch == WALL:
                    walls[r, c] = True
                elif ch == FLAG:
                    if bases[0] or bases[1]:
                        raise LevelError(f"flag on a CTF map: {mixed}", r, c)
                    flags.append((r, c))
                    if len(flags) == 2:
                        raise LevelError("two flags: a map holds exactly one 'F'", r, c)
                elif ch in (BASE_A, BASE_B):
                    if flags:
                        raise LevelError(f"base on a MazeRace map: {mixed}", r, c)
                    team = 0 if ch == BASE_A else 1
                    bases[team].append((r, c))
                    if len(bases[team]) == 2:
                        raise LevelError(f"duplicate base: a map holds exactly one {ch!r}", r, c)
                elif ch == SPAWN_A:
                    spawns[0].append((r, c))
                elif ch == SPAWN_B:
                    spawns[1].append((r, c))
                elif ch != FLOOR:
                    raise LevelError(f"unknown character {ch!r} (allowed: {' '.join(ALLOWED)})", r, c)
        if bases[0] or bases[1]:
            for team, ch in ((0, BASE_A), (1, BASE_B)):
                if not bases[team]:
                    raise LevelError(f"missing base: a CTF map holds exactly one {ch!r}", 0, 0)
            level = cls(walls, None, (tuple(spawns[0]), tuple(spawns[1])), dict(meta or {}),
                        bases=(bases[0][0], bases[1][0]))
        elif not flags:
            raise LevelError("zero flags: a map holds exactly one 'F' (or, for CaptureTheFlag, one 'a' and one 'b')",
                             0, 0)
        else:
            level = cls(walls, flags[0], (tuple(spawns[0]), tuple(spawns[1])), dict(meta or {}))
        if max_unfairness is not None:
            unfair = level.fairness()
            if unfair > max_unfairness:
                far = max((s for t in level.spawns for s in t), key=level._spawn_key)
                what = "to the enemy base and own base" if level.is_ctf else "to the flag"
                raise LevelError(
                    f"unfair map: team distances {what} {level.team_distances()} differ by {unfair} "
                    f"(max_unfairness={max_unfairness}); farthest spawn", *far)
        return level

    def _spawn_key(self, s: Cell) -> int:
        if self._dist is not None:
            return int(self._dist[s])
        return max(int(self._base_dist[0][s]), int(self._base_dist[1][s]))

    def to_ascii(self) -> str:
        """The map as text, rows joined by ``\\n`` (no trailing newline); ``from_ascii`` inverts it."""
        grid = [[WALL if w else FLOOR for w in row] for row in self.walls.tolist()]
        if self.bases is None:
            grid[self.flag[0]][self.flag[1]] = FLAG
        else:
            for (r, c), ch in zip(self.bases, (BASE_A, BASE_B)):
                grid[r][c] = ch
        for team, ch in ((0, SPAWN_A), (1, SPAWN_B)):
            for r, c in self.spawns[team]:
                grid[r][c] = ch
        return "\n".join("".join(row) for row in grid)

    def __str__(self) -> str:
        return self.to_ascii()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Level) and self.to_ascii() == other.to_ascii()

    def __hash__(self) -> int:
        return hash(self.to_ascii())

    def __reduce__(self):
        return (_rebuild, (self.to_ascii(), self.meta))

    # ----------------------------------------------------------------- distances / fairness
    def distance_to_flag(self) -> np.ndarray:
        """BFS path length to the flag per cell (int32 (H, W), -1 = wall or unreachable); cached, read-only.
        CTF maps have no single flag: ``ValueError`` (use ``distance_to_base``)."""
        if self._dist is None:
            raise ValueError("a CaptureTheFlag level has two bases and no single flag; use distance_to_base(team)")
        return self._dist

    def distance_to_base(self, team: int) -> np.ndarray:
        """CTF: BFS path length to team ``team``'s base (0 = A, 1 = B) per cell; cached, read-only."""
        if self._base_dist is None:
            raise ValueError("a MazeRace level has no bases; use distance_to_flag()")
        return self._base_dist[team]

    def half(self) -> np.ndarray:
        """CTF: int8 (H, W) half map: 0 = team A's half (closer to base a by path length), 1 = B's,
        -1 = equally far (neutral) or wall; cached, read-only."""
        return self.cached("half", lambda lv: _half_map(*lv._base_dist_checked()))

    def _base_dist_checked(self) -> tuple[np.ndarray, np.ndarray]:
        if self._base_dist is None:
            raise ValueError("a MazeRace level has no bases or halves")
        return self._base_dist

    def team_distances(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Sorted spawn-to-flag distances of team A and team B (CTF: spawn to the enemy base)."""
        if self._dist is None:
            return tuple(tuple(sorted(int(self._base_dist[1 - t][s]) for s in team))  # type: ignore[return-value]
                         for t, team in enumerate(self.spawns))
        return tuple(tuple(sorted(int(self._dist[s]) for s in team)) for team in self.spawns)  # type: ignore[return-value]

    def home_distances(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """CTF: sorted spawn-to-own-base distances of team A and team B."""
        bd = self._base_dist_checked()
        return tuple(tuple(sorted(int(bd[t][s]) for s in team))  # type: ignore[return-value]
                     for t, team in enumerate(self.spawns))

    def fairness(self) -> int:
        """Spread of the teams' distances to the flag: max over i of |A_i - B_i| (sorted); 0 = fair.
        CTF: the larger of that spread for spawn-to-enemy-base and for spawn-to-own-base distances."""
        pairs = [self.team_distances()] + ([self.home_distances()] if self.is_ctf else [])
        return max(abs(a - b) for da, db in pairs for a, b in zip(da, db))

    def report(self) -> str:
        """One-line summary of size, distances and fairness, for validating hand-written maps."""
        da, db = self.team_distances()
        verdict = "fair" if self.fairness() == 0 else f"UNFAIR by {self.fairness()}"
        if self.is_ctf:
            ha, hb = self.home_distances()
            (ar, ac), (br, bc) = self.bases
            return (f"{self.height}x{self.width}, {self.agents_per_team} per team, base a at line {ar + 1} column "
                    f"{ac + 1}, base b at line {br + 1} column {bc + 1}, distances to the enemy base A={list(da)} "
                    f"B={list(db)}, to the own base A={list(ha)} B={list(hb)}: {verdict}")
        return (f"{self.height}x{self.width}, {self.agents_per_team} per team, flag at line {self.flag[0] + 1} "
                f"column {self.flag[1] + 1}, distances A={list(da)} B={list(db)}: {verdict}")

    # ----------------------------------------------------------------- per-level caches for env and bots
    def cached(self, key: Any, build) -> Any:
        """Return ``self._cache[key]``, building it once with ``build(self)``."""
        cache = self._cache
        if key not in cache:
            cache[key] = build(self)
        return cache[key]

    def dist_rows(self) -> list[list[int]]:
        """The distance map as nested Python lists of ints (fast scalar lookups); cached."""
        return self.cached("dist_rows", lambda lv: lv.distance_to_flag().tolist())

    def base_dist_rows(self, team: int) -> list[list[int]]:
        """CTF: ``distance_to_base(team)`` as nested Python lists of ints; cached."""
        return self.cached(("base_dist_rows", team), lambda lv: lv.distance_to_base(team).tolist())

    def half_rows(self) -> list[list[int]]:
        """CTF: ``half()`` as nested Python lists of ints; cached."""
        return self.cached("half_rows", lambda lv: lv.half().tolist())

    def wall_rows(self) -> list[list[bool]]:
        """The wall grid as nested Python lists of bools; cached."""
        return self.cached("wall_rows", lambda lv: lv.walls.tolist())


def _rebuild(text: str, meta: dict) -> Level:
    return Level.from_ascii(text, meta=meta)
