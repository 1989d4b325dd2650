"""Prioritized level replay formulas (Jiang et al. 2021), as small composable functions.

Follows jaxued `level_sampler.py`:
    w_score     = rank weights: h(i) = (1 / rank(i)) ** (1 / beta), normalized
    w_staleness = (episode_count - timestamp(i)), normalized (uniform when all zero)
    P(i)        = (1 - rho) * w_score + rho * w_staleness
Ranks: 1 = highest score; ties keep buffer order (stable sort), as jaxued's argsort.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def rank_weights(scores: Sequence[float], temperature: float) -> np.ndarray:
    """(1 / rank) ** (1 / temperature), normalized; rank 1 is the highest score."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(scores.size, dtype=np.float64)
    ranks[order] = np.arange(1, scores.size + 1)
    weights = (1.0 / ranks) ** (1.0 / temperature)
    return weights / weights.sum()


def staleness_weights(timestamps: Sequence[int], episode_count: int) -> np.ndarray:
    """Episodes since each level was last played, normalized; uniform when all are fresh."""
    timestamps = np.asarray(timestamps, dtype=np.float64)
    if timestamps.size == 0:
        return timestamps
    staleness = episode_count - timestamps
    total = staleness.sum()
    return staleness / total if total > 0 else np.full(timestamps.size, 1.0 / timestamps.size)


def replay_probabilities(
    scores: Sequence[float], timestamps: Sequence[int], episode_count: int, temperature: float, staleness_coeff: float
) -> np.ndarray:
    """P(replay level i) = (1 - rho) * w_score + rho * w_staleness."""
    rho = staleness_coeff
    return (1 - rho) * rank_weights(scores, temperature) + rho * staleness_weights(timestamps, episode_count)


def learnability(successes: float, trials: float, prior: float = 0.0) -> float:
    """p (1 - p) with p = (successes + prior) / (trials + 2 prior); 0 when there are no trials."""
    if trials <= 0:
        return 0.0
    p = (successes + prior) / (trials + 2 * prior)
    return float(p * (1 - p))


def score_learnability(scores: Sequence[float], prior: float = 0.0) -> float:
    """Learnability of a level from main's per-game scores (1 win, 0.5 draw, 0 loss): the variance of
    the score, E[s^2] - E[s]^2, with `prior` pseudo-games won and `prior` lost. For wins and losses
    only it is exactly `learnability` = p(1-p) (s^2 = s); a level of draws only scores 0: nothing was
    decided there, so nothing is learnable yet."""
    scores = [float(s) for s in scores]
    if not scores or all(s == 0.5 for s in scores):
        return 0.0
    n = len(scores) + 2 * prior
    m1 = (sum(scores) + prior) / n
    m2 = (sum(s * s for s in scores) + prior) / n
    return float(max(m2 - m1 * m1, 0.0))


def positive_value_loss(rewards: Sequence[float], values: Sequence[float], gamma: float = 0.99,
                        lam: float = 0.95, last_value: float = 0.0) -> float:
    """Mean over an episode of max(GAE_t, 0): PLR's positive value loss score, for the glue to attach
    to an outcome as `positive_value_loss`. `values[t]` is V(s_t); `last_value` bootstraps a truncation."""
    rewards = np.asarray(rewards, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if rewards.shape != values.shape:
        raise ValueError(f"rewards and values must have the same length, got {rewards.shape} and {values.shape}")
    if rewards.size == 0:
        return 0.0
    next_values = np.append(values[1:], last_value)
    deltas = rewards + gamma * next_values - values
    advantages = np.empty_like(deltas)
    running = 0.0
    for t in range(deltas.size - 1, -1, -1):
        running = deltas[t] + gamma * lam * running
        advantages[t] = running
    return float(np.maximum(advantages, 0.0).mean())
