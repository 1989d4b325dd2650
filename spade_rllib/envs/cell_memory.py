"""`CellMemory`: what one agent has seen of a grid level this episode, cell by cell, and a planner on it.

Any grid game with an egocentric window can keep one per agent: ``reset`` at the episode's start, ``see`` after
every step with the agent's position and the wall layer of its own window (nothing else is ever written in),
then read ``grid`` (the memory as an image) and ``plan`` (shortest-path features). CaptureTheFlag uses it for
its ``cell_memory`` and ``plan`` options (``docs/ctf.md``, "Memory and planning").

The grid is allocentric: level cell (r, c) is grid cell (r, c) of a fixed ``side x side`` grid (levels up to
``side`` cells a side; a larger one is refused at ``reset``), so one model serves every map size. Channels
(``CHANNELS``, float32 in [0, 1]):

===  ============  ==========================================================================================
 0   open          1 where the agent has seen an open cell
 1   wall          1 where it has seen a wall (cells outside the level, seen through the window, read as wall)
 2   unseen        1 where it has seen nothing yet (1 - open - wall)
 3   self          1 on the agent's cell
 4   own base      1 on its own base (it spawns next to it)
 5   enemy base    1 on the enemy base: the observation's compass gives its direction and distance each step,
                   which pins it to one cell (no path information)
 6   visited       1 on every cell the agent stood on this episode
 7   opponent      ``SIGHTING_DECAY ** (steps since)`` where it last saw each opponent (the freshest per cell)
 8   flag carrier  the same for the opponent it last saw carrying its own flag; cleared when the flag is home
===  ============  ==========================================================================================

What is never in it: any cell outside the agent's past windows, any opponent it has not seen, paths.

``plan`` (``PLAN_SIZE`` = 15 floats) is a fixed planner on the same memory: breadth-first distances over the cells
not known to be walls (never-seen cells assumed open), towards three targets: the enemy base, the own base, and the
last sighting of the own flag's carrier (zeros while there is none). Per target: for each move (up, down, left,
right) the change of distance it brings, clipped to [-1, 1] (a move into a known wall reads +1), then the agent's
distance / 64, clipped to 1 (1 when unreachable). Distances are recomputed only when a new wall is seen (or the
target moves).
"""
from __future__ import annotations

import numpy as np

from spade_rllib.envs.jit import kernels

__all__ = ["CellMemory", "CHANNELS", "PLAN_SIZE", "PLAN_TARGETS", "SIGHTING_DECAY", "MAX_SIDE", "MIN_SIDE",
           "bfs_distances"]

CHANNELS = ("open", "wall", "unseen", "self", "own_base", "enemy_base", "visited", "opponent", "flag_carrier")
C_OPEN, C_WALL, C_UNSEEN, C_SELF, C_OWN_BASE, C_ENEMY_BASE, C_VISITED, C_OPPONENT, C_CARRIER = range(len(CHANNELS))
PLAN_TARGETS = ("enemy_base", "own_base", "flag_carrier")
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right: the level games' action order 1-4
PLAN_SIZE = len(PLAN_TARGETS) * (len(MOVES) + 1)
PLAN_DIST_SCALE = 64.0
SIGHTING_DECAY = 0.95
"""Per step, a sighting fades by this factor (half of it is gone after 13-14 steps)."""
MIN_SIDE, MAX_SIDE = 5, 64
UNREACHABLE = np.int32(1 << 20)


def _bfs(passable: np.ndarray, h: int, w: int, start: int, dist: np.ndarray, queue: np.ndarray) -> None:
    """Breadth-first fill of the flat int32 `dist` (pre-set to UNREACHABLE) from cell `start`; `passable` flat
    bool; `queue` a flat int32 scratch array of h * w cells. Plain loops: numba compiles them when installed."""
    dist[start] = 0
    queue[0] = start
    head, tail = 0, 1
    while head < tail:
        i = queue[head]
        head += 1
        d = dist[i] + 1
        r = i // w
        c = i - r * w
        if r > 0 and passable[i - w] and dist[i - w] > d:
            dist[i - w] = d
            queue[tail] = i - w
            tail += 1
        if r + 1 < h and passable[i + w] and dist[i + w] > d:
            dist[i + w] = d
            queue[tail] = i + w
            tail += 1
        if c > 0 and passable[i - 1] and dist[i - 1] > d:
            dist[i - 1] = d
            queue[tail] = i - 1
            tail += 1
        if c + 1 < w and passable[i + 1] and dist[i + 1] > d:
            dist[i + 1] = d
            queue[tail] = i + 1
            tail += 1


def _plan_features(dist: np.ndarray, r: int, c: int, out: np.ndarray) -> None:
    """`plan`'s features from the (targets, side, side) int32 distance fields at cell (r, c) into `out`."""
    t_count, s = dist.shape[0], dist.shape[1]
    for t in range(t_count):
        base = t * 5
        here = dist[t, r, c]
        if here >= UNREACHABLE:
            for m in range(4):
                out[base + m] = 0.0
            out[base + 4] = 1.0
            continue
        for m in range(4):
            nr = r - 1 if m == 0 else (r + 1 if m == 1 else r)
            nc = c - 1 if m == 2 else (c + 1 if m == 3 else c)
            there = dist[t, nr, nc] if 0 <= nr < s and 0 <= nc < s else UNREACHABLE
            out[base + m] = max(-1.0, min(1.0, float(there - here)))
        out[base + 4] = min(1.0, here / PLAN_DIST_SCALE)


def _kernels(compiled: bool = True) -> tuple:
    """(bfs, plan features): numba-compiled on first use (a few microseconds a call instead of ~100 on a 21x21
    grid; compiling costs ~1 s once per process, cached on disk); the same loops in Python without numba."""
    return kernels(_bfs, _plan_features) if compiled else (_bfs, _plan_features)


def bfs_distances(passable: np.ndarray, target: tuple[int, int], out: np.ndarray, compiled: bool = True) -> np.ndarray:
    """Breadth-first step counts from every cell of the ``(H, W)`` bool grid `passable` to `target` (4-connected),
    written into the C-contiguous int32 `out` of the same shape; ``UNREACHABLE`` where no path exists. The target
    counts as passable. ``compiled=False`` runs the same loops in plain Python (the tests compare the two)."""
    h, w = passable.shape
    flat = out.reshape(-1)
    flat.fill(UNREACHABLE)
    queue = np.empty(h * w, dtype=np.int32)
    _kernels(compiled)[0](np.ascontiguousarray(passable, dtype=np.bool_).reshape(-1), h, w,
                                      int(target[0]) * w + int(target[1]), flat, queue)
    return out


class CellMemory:
    """One agent's memory of a level (see the module docstring). ``side``: the grid's cells a side (levels up to
    that size), or 0: each level's own size, for planning only (no fixed-size ``grid``); ``radius``: the view
    radius of the agent's window ((2r+1) cells a side)."""

    def __init__(self, side: int, radius: int):
        if isinstance(side, bool) or not isinstance(side, (int, np.integer)) or not (
                side == 0 or MIN_SIDE <= side <= MAX_SIDE):
            raise ValueError(f"cell memory side must be 0 (the level's size) or an int in [{MIN_SIDE}, {MAX_SIDE}] "
                             f"(cells), got {side!r}")
        self.fixed, self.radius = bool(side), int(radius)
        self._allocate(int(side) or MIN_SIDE)

    def _allocate(self, side: int) -> None:
        self.side = s = side
        self._known = np.zeros((2, s, s), dtype=np.float32)  # open, wall
        self._visited = np.zeros((s, s), dtype=np.float32)
        self._dist = np.zeros((len(PLAN_TARGETS), s, s), dtype=np.int32)
        self._targets: list[tuple[int, int] | None] = [None] * len(PLAN_TARGETS)
        self._fresh = [False] * len(PLAN_TARGETS)  # the distance field matches the walls and the target
        self._sightings: dict[str, tuple[int, int, int]] = {}  # key -> (row, column, step)
        self.pos = (0, 0)
        self.step = 0

    def reset(self, level_shape: tuple[int, int], own_base: tuple[int, int], enemy_base: tuple[int, int]) -> None:
        """Forget everything: a new episode on a level of `level_shape` (height, width)."""
        h, w = level_shape
        if not self.fixed and max(h, w) != self.side:
            self._allocate(max(h, w))
        if h > self.side or w > self.side:
            raise ValueError(f"cell_memory={self.side} holds levels up to {self.side}x{self.side} cells; this level is "
                             f"{h}x{w} (set cell_memory to at least {max(h, w)})")
        self._known.fill(0.0)
        self._visited.fill(0.0)
        self._sightings.clear()
        self._targets = [tuple(enemy_base), tuple(own_base), None]
        self._fresh = [False] * len(PLAN_TARGETS)
        self.own_base, self.enemy_base = tuple(own_base), tuple(enemy_base)
        self.step = 0

    def see(self, pos: tuple[int, int], wall_window: np.ndarray, step: int,
            sightings: dict[str, tuple[int, int]] | None = None, flag_home: bool = True,
            carrier: str | None = None) -> None:
        """The agent stands on `pos` at `step` and sees `wall_window` ((2r+1, 2r+1), 1 on walls and outside the
        level, centred on `pos`); `sightings`: the opponents in its window by name and cell. `carrier`: the name of
        the opponent carrying the agent's own flag when that one is in the window; `flag_home`: the own flag is
        at its base (the carrier sighting is dropped)."""
        s, rad = self.side, self.radius
        r, c = pos
        self.pos, self.step = (int(r), int(c)), int(step)
        r0, c0 = r - rad, c - rad
        gr0, gc0 = max(0, r0), max(0, c0)
        gr1, gc1 = min(s, r0 + 2 * rad + 1), min(s, c0 + 2 * rad + 1)
        seen = np.asarray(wall_window)[gr0 - r0:gr1 - r0, gc0 - c0:gc1 - c0] > 0.5
        wall = self._known[1, gr0:gr1, gc0:gc1]
        if (seen & (wall < 0.5)).any():  # a new wall: the distance fields are stale
            self._fresh = [False] * len(PLAN_TARGETS)
        wall[...] = seen
        self._known[0, gr0:gr1, gc0:gc1] = ~seen
        self._visited[r, c] = 1.0
        if flag_home:
            self._sightings.pop("flag", None)
        for name, (orr, oc) in (sightings or {}).items():
            self._sightings[name] = (int(orr), int(oc), self.step)
            if name == carrier:
                self._sightings["flag"] = self._sightings[name]
        flag = self._sightings.get("flag")
        target = None if flag is None else (flag[0], flag[1])
        if target != self._targets[2]:
            self._targets[2] = target
            self._fresh[2] = False

    # ------------------------------------------------------------------ reading
    def grid(self, out: np.ndarray | None = None) -> np.ndarray:
        """The memory as a ``(side, side, len(CHANNELS))`` float32 image (written into `out` when given)."""
        s = self.side
        if not self.fixed:
            raise TypeError("this CellMemory plans only (side 0): give it a side to read its grid")
        if out is None:
            out = np.empty((s, s, len(CHANNELS)), dtype=np.float32)
        out[...] = 0.0
        out[..., C_OPEN] = self._known[0]
        out[..., C_WALL] = self._known[1]
        out[..., C_UNSEEN] = 1.0 - self._known[0] - self._known[1]
        out[self.pos[0], self.pos[1], C_SELF] = 1.0
        out[self.own_base[0], self.own_base[1], C_OWN_BASE] = 1.0
        out[self.enemy_base[0], self.enemy_base[1], C_ENEMY_BASE] = 1.0
        out[..., C_VISITED] = self._visited
        for key, (sr, sc, at) in self._sightings.items():
            ch = C_CARRIER if key == "flag" else C_OPPONENT
            out[sr, sc, ch] = max(out[sr, sc, ch], SIGHTING_DECAY ** (self.step - at))
        return out

    def distances(self, target: int, compiled: bool = True) -> np.ndarray:
        """The ``(side, side)`` int32 step counts to ``PLAN_TARGETS[target]`` over cells not known to be walls
        (``UNREACHABLE`` where none; all ``UNREACHABLE`` while that target is unknown)."""
        if not self._fresh[target]:
            goal = self._targets[target]
            if goal is None:
                self._dist[target].fill(UNREACHABLE)
            else:
                bfs_distances(self._known[1] < 0.5, goal, self._dist[target], compiled)
            self._fresh[target] = True
        return self._dist[target]

    def plan(self, out: np.ndarray | None = None, compiled: bool = True) -> np.ndarray:
        """The ``PLAN_SIZE`` planner features (module docstring), written into `out` when given."""
        if out is None:
            out = np.empty(PLAN_SIZE, dtype=np.float32)
        for t in range(len(PLAN_TARGETS)):
            self.distances(t, compiled)
        _kernels(compiled)[1](self._dist, self.pos[0], self.pos[1], out)
        return out
