"""Opponent-sampling formulas: PFSP weightings, win-rate estimate, mixing, slot allocation.

Small pure functions, each checkable against its source:

- AlphaStar (Vinyals et al. 2019, "Prioritized fictitious self-play"), with ``p`` the learner's
  win rate against a member: ``hard`` (1-p)^2, ``variance`` p(1-p), ``linear`` 1-p.
- ML-Agents' ``play_against_latest_model_ratio``: :func:`mix_latest`.
- Residual resampling onto K opponent slots: :func:`allocate_slots`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

PRIOR_WIN_RATE = 0.5
"""Win rate assumed before any game (with ``prior_games`` pseudo-games)."""
HARD_EXPONENT = 2.0
FLOOR_TOLERANCE = 1e-12
"""Added before flooring expected slot counts so 2.9999999 (rounding of 3) floors to 3."""

PFSP_WEIGHTINGS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "hard": lambda p: (1.0 - p) ** HARD_EXPONENT,
    "variance": lambda p: p * (1.0 - p),
    "linear": lambda p: 1.0 - p,
}


def pfsp_weights(win_rates: Sequence[float], weighting: str) -> np.ndarray:
    """Unnormalised PFSP weights of members from the learner's win rates ``p`` against them."""
    if weighting not in PFSP_WEIGHTINGS:
        raise ValueError(f"pfsp_weighting = {weighting!r} is not valid; allowed: {', '.join(PFSP_WEIGHTINGS)}")
    return PFSP_WEIGHTINGS[weighting](np.asarray(win_rates, dtype=float))


def win_rate_estimate(score_sum: float, games: int, prior_games: float) -> float:
    """``(score_sum + 0.5 * prior_games) / (games + prior_games)``; draws count 0.5 in ``score_sum``."""
    if games + prior_games <= 0:
        return PRIOR_WIN_RATE
    return (score_sum + PRIOR_WIN_RATE * prior_games) / (games + prior_games)


def normalise(weights: np.ndarray) -> np.ndarray:
    """Weights -> probabilities; all-zero weights become uniform."""
    weights = np.asarray(weights, dtype=float)
    total = weights.sum()
    if total <= 0:
        return np.full(weights.shape, 1.0 / weights.size)
    return weights / total


def mix_latest(pool_probabilities: np.ndarray, latest_index: int | None, latest_ratio: float) -> np.ndarray:
    """``latest_ratio`` on the newest snapshot, ``1 - latest_ratio`` spread as ``pool_probabilities``."""
    if latest_index is None:
        return np.asarray(pool_probabilities, dtype=float)
    mixed = (1.0 - latest_ratio) * np.asarray(pool_probabilities, dtype=float)
    mixed[latest_index] += latest_ratio
    return mixed


def allocate_slots(masses: np.ndarray, num_slots: int, rng: np.random.Generator) -> np.ndarray:
    """How many of ``num_slots`` slots each member gets, ``E[count_m] = num_slots * mass_m / sum(mass)``.

    Residual resampling: ``floor`` of the expectation deterministically, the remainder by
    systematic sampling on the fractional parts (each member gets at most one extra slot).
    Unbiased, so over many iterations each member gets its share of episodes.
    """
    masses = np.asarray(masses, dtype=float)
    expected = num_slots * masses / masses.sum()
    counts = np.floor(expected + FLOOR_TOLERANCE).astype(np.int64)
    remaining = num_slots - int(counts.sum())
    if remaining > 0:
        residual = np.clip(expected - counts, 0.0, None)
        residual = residual * (remaining / residual.sum())  # sums to `remaining`, each < 1 (up to rounding)
        edges = np.cumsum(residual)
        points = rng.random() + np.arange(remaining)
        extra = np.searchsorted(edges, points, side="right")
        np.add.at(counts, np.minimum(extra, masses.size - 1), 1)
    return counts
