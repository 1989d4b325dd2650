"""Exact max-product value iteration on a 4-connected grid, and its gradient: the learned planner's fixed point.

The learned planner (`rllib/module.py`, `_ValueIteration`) iterates ``V = max(G, Q * max over the 4 neighbours of
V)`` for a goal map ``G`` and a discounted passability map ``Q`` (values in [0, 1), ``Q < 1``). Its fixed point is
``V(x) = max over paths x -> y of G(y) * prod of Q over the path's cells before y``: a shortest-path problem in
``-log`` space with cell costs ``-log Q(x) > 0`` and sources ``-log G(y)``, which Dijkstra's algorithm solves
exactly in ``O(n log n)`` per map, where unrolled rounds need one round per cell of the longest path (and all of
them forward and backward through autograd).

``solve(goal, q)`` returns the fixed point ``V`` with what ``gradient`` needs (each cell's successor on its best
path, -1 where ``G`` wins; the cells in the order they were settled); ``gradient(grad_v, v, q, succ, order)``
pushes a gradient on ``V`` back onto ``G`` and ``Q`` along the best paths (the subgradient the unrolled rounds
give once converged). Plain loops over float32 arrays of shape ``(maps, cells)`` with the grid's width given:
numba compiles them when installed (it is a declared dependency); ``compiled=False`` runs the same loops in
Python (the tests compare the two, and both with unrolled rounds).
"""
from __future__ import annotations

import math

import numpy as np

from spade_rllib.envs.jit import kernels

__all__ = ["solve", "gradient"]


def _solve(goal, q, w, v, succ, order, heap_d, heap_i):
    """Per map m: Dijkstra from every cell's goal value in -log space. Writes v (float32), succ (int32: the
    neighbour a cell's best path continues to, -1 where its own goal value wins or nothing is reached), order
    (int32: settled cells, first to last, -1 after the last); heap_d / heap_i scratch of 5 * cells entries."""
    maps, n = goal.shape
    h = n // w
    dist = np.empty(n, dtype=np.float64)
    done = np.zeros(n, dtype=np.bool_)
    for m in range(maps):
        size = 0
        for x in range(n):
            done[x] = False
            succ[m, x] = -1
            order[m, x] = -1
            g = goal[m, x]
            dist[x] = -math.log(g) if g > 0.0 else math.inf
            if g > 0.0:
                heap_d[size] = dist[x]
                heap_i[size] = x
                size += 1
        for top in range(size // 2 - 1, -1, -1):  # heapify the sources at once
            top_d, top_i = heap_d[top], heap_i[top]
            k = top
            while True:
                c = 2 * k + 1
                if c >= size:
                    break
                if c + 1 < size and heap_d[c + 1] < heap_d[c]:
                    c += 1
                if heap_d[c] >= top_d:
                    break
                heap_d[k] = heap_d[c]
                heap_i[k] = heap_i[c]
                k = c
            heap_d[k] = top_d
            heap_i[k] = top_i
        settled = 0
        while size > 0:
            d, u = heap_d[0], heap_i[0]
            size -= 1  # pop: sift the last entry down from the root
            last_d, last_i = heap_d[size], heap_i[size]
            k = 0
            while True:
                c = 2 * k + 1
                if c >= size:
                    break
                if c + 1 < size and heap_d[c + 1] < heap_d[c]:
                    c += 1
                if heap_d[c] >= last_d:
                    break
                heap_d[k] = heap_d[c]
                heap_i[k] = heap_i[c]
                k = c
            heap_d[k] = last_d
            heap_i[k] = last_i
            if done[u] or d > dist[u]:
                continue
            done[u] = True
            order[m, settled] = u
            settled += 1
            r = u // w
            col = u - r * w
            for j in range(4):  # a neighbour x of u may continue its path through u
                if j == 0:
                    if r == 0:
                        continue
                    x = u - w
                elif j == 1:
                    if r + 1 >= h:
                        continue
                    x = u + w
                elif j == 2:
                    if col == 0:
                        continue
                    x = u - 1
                else:
                    if col + 1 >= w:
                        continue
                    x = u + 1
                if done[x] or q[m, x] <= 0.0:
                    continue
                nd = d - math.log(q[m, x])
                if nd < dist[x]:
                    dist[x] = nd
                    succ[m, x] = u
                    k = size
                    size += 1
                    while k > 0 and heap_d[(k - 1) // 2] > nd:
                        heap_d[k] = heap_d[(k - 1) // 2]
                        heap_i[k] = heap_i[(k - 1) // 2]
                        k = (k - 1) // 2
                    heap_d[k] = nd
                    heap_i[k] = x
        for x in range(n):
            v[m, x] = math.exp(-dist[x]) if dist[x] < math.inf else 0.0


def _gradient(grad_v, v, q, succ, order, grad_goal, grad_q):
    """Per map: the gradient on v pushed back along the best paths, latest-settled cell first (a cell's
    successor was settled before it, so each cell has all its gradient when its turn comes)."""
    maps, n = grad_v.shape
    acc = np.empty(n, dtype=np.float64)
    for m in range(maps):
        for x in range(n):
            acc[x] = grad_v[m, x]
            grad_goal[m, x] = 0.0
            grad_q[m, x] = 0.0
        for k in range(n - 1, -1, -1):
            x = order[m, k]
            if x < 0:
                continue
            g = acc[x]
            if g == 0.0:
                continue
            s = succ[m, x]
            if s < 0:
                grad_goal[m, x] = g
            else:
                grad_q[m, x] = g * v[m, s]
                acc[s] += g * q[m, x]
        for x in range(n):  # never settled: nothing reaches it (v = G = 0 there)
            if v[m, x] == 0.0 and acc[x] != 0.0 and succ[m, x] < 0:
                grad_goal[m, x] = acc[x]


def _kernels(compiled: bool) -> tuple:
    return kernels(_solve, _gradient) if compiled else (_solve, _gradient)


def solve(goal: np.ndarray, q: np.ndarray, width: int, compiled: bool = True) -> tuple:
    """The fixed point of ``V = max(G, Q * max over neighbours of V)`` for each of the ``(maps, cells)`` float32
    maps `goal` (G, in [0, 1]) and `q` (Q, in [0, 1)), cells row-major ``width`` a row: (v, succ, order)."""
    goal = np.ascontiguousarray(goal, dtype=np.float32)
    q = np.ascontiguousarray(q, dtype=np.float32)
    if goal.shape != q.shape or goal.ndim != 2 or goal.shape[1] % width:
        raise ValueError(f"goal {goal.shape} and q {q.shape}: expected the same (maps, cells) with cells a multiple "
                         f"of the width {width}")
    maps, n = goal.shape
    v = np.empty((maps, n), dtype=np.float32)
    succ = np.empty((maps, n), dtype=np.int32)
    order = np.empty((maps, n), dtype=np.int32)
    heap_d = np.empty(5 * n + 1, dtype=np.float64)
    heap_i = np.empty(5 * n + 1, dtype=np.int64)
    _kernels(compiled)[0](goal, q, int(width), v, succ, order, heap_d, heap_i)
    return v, succ, order


def gradient(grad_v: np.ndarray, v: np.ndarray, q: np.ndarray, succ: np.ndarray, order: np.ndarray,
             compiled: bool = True) -> tuple:
    """(d loss / d goal, d loss / d q) from d loss / d v and what `solve` returned (float32, like `grad_v`)."""
    grad_v = np.ascontiguousarray(grad_v, dtype=np.float32)
    grad_goal = np.empty_like(grad_v)
    grad_q = np.empty_like(grad_v)
    _kernels(compiled)[1](grad_v, v, np.ascontiguousarray(q, dtype=np.float32), succ, order, grad_goal, grad_q)
    return grad_goal, grad_q
