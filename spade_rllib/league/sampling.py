"""Opponent-sampling formulas: PFSP weightings, win-rate estimate, mixing, slot allocation.

Small pure functions, each checkable against its source:

- AlphaStar (Vinyals et al. 2019, "Prioritized fictitious self-play"), with ``p`` the learner's
  win rate against a member: ``hard`` (1-p)^2 (main agents: focus on the opponents it still loses
  to), ``variance`` p(1-p) (exploiters, or a main that is losing: opponents near its level),
  ``linear_capped`` min(0.5, 1-p) (league exploiters in the pseudocode), and ``linear`` 1-p.
- ML-Agents' ``play_against_latest_model_ratio``: :func:`mix_latest`.
- A floor for fixed references (random, scripted bots): :func:`reference_floor`. PFSP ``hard``
  drives a beaten opponent's weight to zero; the floor keeps weak references in the mix so that
  blunders they punish (a missed win, an unblocked threat) stay in the training data.
- Residual resampling onto K opponent slots: :func:`allocate_slots`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

PRIOR_WIN_RATE = 0.5
"""Win rate assumed before any game (with ``prior_games`` pseudo-games)."""
HARD_EXPONENT = 2.0
LINEAR_CAP = 0.5
"""AlphaStar's ``linear_capped``: every member the learner scores <= 0.5 against weighs the same."""
FLOOR_TOLERANCE = 1e-12
"""Added before flooring expected slot counts so 2.9999999 (rounding of 3) floors to 3."""

PFSP_WEIGHTINGS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "hard": lambda p: (1.0 - p) ** HARD_EXPONENT,
    "variance": lambda p: p * (1.0 - p),
    "linear": lambda p: 1.0 - p,
    "linear_capped": lambda p: np.minimum(LINEAR_CAP, 1.0 - p),
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


def reference_floor(probabilities: np.ndarray, is_reference: Sequence[bool], floor: float) -> np.ndarray:
    """Each reference gets at least ``floor / n_references`` of the games (so ``floor`` together).

    References below that share are raised to it; every other entry (references above it included)
    is scaled by one common factor to make room, never below the share for a reference (water
    filling). ``floor`` in [0, 1]; 0 or no reference returns the normalised input.
    """
    probabilities = normalise(probabilities)
    reference = np.asarray(is_reference, dtype=bool)
    if floor <= 0 or not reference.any():
        return probabilities
    share = floor / reference.sum()
    floored = reference & (probabilities < share)
    while True:
        rest = probabilities[~floored].sum()
        if rest <= 0:
            return normalise(np.where(floored, share, 0.0))
        scale = (1.0 - share * floored.sum()) / rest  # <= 1: the floored entries were below `share`
        out = np.where(floored, share, probabilities * scale)
        newly = reference & ~floored & (out < share)
        if not newly.any():
            return out
        floored |= newly


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
