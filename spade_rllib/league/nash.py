"""The Nash equilibrium of a two-player zero-sum matrix game: PSRO's meta-solver (a small linear program).

``zero_sum_nash(A)``: ``A[i, j]`` is the row player's payoff when row strategy i meets column strategy j
(the column player gets ``-A[i, j]``). The row player's maximin mixed strategy x solves

    maximise v  subject to  sum_i x_i A[i, j] >= v for every column j,  sum_i x_i = 1,  x >= 0,

solved with ``scipy.optimize.linprog`` (HiGHS). A league's meta-game is symmetric (``A = -A.T``, the
same members on both sides), so x is also the column player's equilibrium and v = 0; any matrix is
accepted. Strictly dominated strategies get probability 0 in every equilibrium; where several
equilibria exist, the LP returns one of them (HiGHS's vertex). Pure core: numpy and scipy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SUPPORT_TOLERANCE = 1e-9
"""Probabilities below this are set to 0 (LP round-off) before renormalising."""


@dataclass(frozen=True)
class MatrixNash:
    """One equilibrium strategy of the row player and the game's value."""

    strategy: np.ndarray
    """[n] probabilities over the rows (sum 1)."""
    value: float
    """The row player's guaranteed expected payoff (0 for a symmetric zero-sum game)."""


def zero_sum_nash(payoff: np.ndarray) -> MatrixNash:
    """The row player's maximin strategy of the zero-sum game `payoff` [n, m] (see the module docstring).
    ValueError (one line) for an empty, non-2-D or non-finite matrix."""
    from scipy.optimize import linprog

    a = np.asarray(payoff, np.float64)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"payoff matrix must be 2-D and non-empty; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("payoff matrix has NaN or infinite entries")
    n, m = a.shape
    if n == 1:
        return MatrixNash(np.ones(1), float(a.min()))
    # Variables (x_1..x_n, v); minimise -v.  For each column j: v - sum_i x_i A[i, j] <= 0.
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-a.T, np.ones((m, 1))])
    a_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * n + [(None, None)]
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=np.ones(1), bounds=bounds, method="highs")
    if not result.success:  # pragma: no cover - a bounded feasible LP always solves
        raise RuntimeError(f"the meta-game LP failed: {result.message}")
    x = np.clip(result.x[:n], 0.0, None)
    x[x < SUPPORT_TOLERANCE] = 0.0
    return MatrixNash(x / x.sum(), float(result.x[-1]))


__all__ = ["MatrixNash", "zero_sum_nash"]
