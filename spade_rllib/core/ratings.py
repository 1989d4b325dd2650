"""Rating math shared by the league (online, per game) and evaluation (offline, over all results).

Pure numpy (plus the ``openskill`` package for OpenSkill); no Ray, no scipy, no global RNG.

Scores are always from the first player's point of view: ``1.0`` win, ``0.5`` draw, ``0.0`` loss
(``SCORE_WIN``, ``SCORE_DRAW``, ``SCORE_LOSS``). A draw counts as half a win everywhere.

Contents
--------
- **Online Elo, as Unity ML-Agents computes it** (``ghost/trainer.py`` / ``ghost/controller.py``):
  expected score ``E_a = 10^(R_a/400) / (10^(R_a/400) + 10^(R_b/400))``, change
  ``K * (S_a - E_a)`` added to ``a`` and subtracted from ``b`` (zero-sum). ML-Agents starts every
  player at 1200. :func:`elo_expected_score`, :func:`elo_update`.
- **OpenSkill** (Weng-Lin; Plackett-Luce by default) wrapped so that a rating is a plain
  ``(mu, sigma)`` tuple that checkpoints trivially. :class:`OpenSkillRater`.
- **Bradley-Terry maximum-likelihood Elo** over a whole set of results, with a small L2 (Gaussian)
  prior on the log-strengths so that unbeaten or winless players still get a finite rating.
  Fitted by damped Newton iterations. Anchored to mean ``BT_ANCHOR_RATING`` (or one named player).
  :func:`fit_bradley_terry_elo`.
- **Bootstrap 95 % intervals** for that fit, resampling games with replacement from a seeded
  generator. :func:`bootstrap_bradley_terry_elo`.

Results are passed as parallel arrays ``(a, b, score_a[, count])``: player indices, the score of
``a`` against ``b`` and optionally how many identical games that row stands for. Payoff matrices
convert with :func:`games_from_payoff`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

SCORE_WIN = 1.0
SCORE_DRAW = 0.5
SCORE_LOSS = 0.0

ELO_BASE = 10.0
"""Elo odds base: a gap of ``ELO_SCALE`` points means ``ELO_BASE``-to-1 odds."""
ELO_SCALE = 400.0
"""Elo points per factor ``ELO_BASE`` in odds."""
ELO_DEFAULT_K = 16.0
"""Default K factor (points moved by a fully unexpected result)."""
ELO_DEFAULT_INITIAL = 1200.0
"""ML-Agents' ``initial_elo`` default."""

BT_ANCHOR_RATING = 1000.0
"""Bradley-Terry fits are shifted so the mean (or the anchor player) sits here."""
BT_DEFAULT_L2 = 0.01
"""L2 penalty on natural-log strengths: a N(0, 10^2) prior, about +-1700 Elo; keeps fits finite."""
BT_MAX_ITERATIONS = 100
BT_TOLERANCE = 1e-10
"""Stop when the largest Newton step (natural-log units) is below this."""
BT_LINE_SEARCH_SHRINK = 0.5
BT_LINE_SEARCH_STEPS = 30
BT_OBJECTIVE_SLACK = 1e-12
"""Relative round-off allowed when a Newton step is checked for not decreasing the objective."""

BOOTSTRAP_DEFAULT_SAMPLES = 200
BOOTSTRAP_DEFAULT_CONFIDENCE = 0.95

NATURAL_TO_ELO = ELO_SCALE / math.log(ELO_BASE)
"""Elo points per natural-log unit of odds (about 173.7)."""

OPENSKILL_MODELS = ("plackett_luce", "bradley_terry_full", "bradley_terry_part",
                    "thurstone_mosteller_full", "thurstone_mosteller_part")
OPENSKILL_ORDINAL_Z = 3.0
"""Conservative OpenSkill score: ``mu - z * sigma``."""


def _check_score(score: float) -> float:
    score = float(score)
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score = {score!r} is out of range; allowed: 0.0 (loss) .. 1.0 (win), 0.5 is a draw")
    return score


# ---------------------------------------------------------------------------------------------
# Online Elo (ML-Agents)
# ---------------------------------------------------------------------------------------------
def elo_expected_score(rating: float, opponent_rating: float) -> float:
    """Expected score of ``rating`` against ``opponent_rating`` (probability of winning, draws half)."""
    own = ELO_BASE ** (rating / ELO_SCALE)
    other = ELO_BASE ** (opponent_rating / ELO_SCALE)
    return own / (own + other)


def elo_change(rating: float, opponent_rating: float, score: float, k: float = ELO_DEFAULT_K) -> float:
    """Points ``rating`` gains (negative: loses) from one game with ``score``; the opponent moves by minus this."""
    return k * (_check_score(score) - elo_expected_score(rating, opponent_rating))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = ELO_DEFAULT_K) -> tuple[float, float]:
    """Zero-sum Elo update after one game; returns the new ``(rating_a, rating_b)``."""
    change = elo_change(rating_a, rating_b, score_a, k)
    return rating_a + change, rating_b - change


# ---------------------------------------------------------------------------------------------
# OpenSkill
# ---------------------------------------------------------------------------------------------
def _openskill_model(name: str):
    from openskill import models  # local import: only needed when OpenSkill is used

    classes = {
        "plackett_luce": models.PlackettLuce,
        "bradley_terry_full": models.BradleyTerryFull,
        "bradley_terry_part": models.BradleyTerryPart,
        "thurstone_mosteller_full": models.ThurstoneMostellerFull,
        "thurstone_mosteller_part": models.ThurstoneMostellerPart,
    }
    if name not in classes:
        from spade_rllib.core.validation import did_you_mean

        raise ValueError(f"openskill model = {name!r} is unknown{did_you_mean(name, OPENSKILL_MODELS)}; "
                         f"allowed: {', '.join(OPENSKILL_MODELS)}")
    return classes[name]()


class OpenSkillRater:
    """OpenSkill (Weng-Lin) for two-player games; ratings are plain ``(mu, sigma)`` tuples.

    ``model``: one of ``OPENSKILL_MODELS``; the package's defaults (mu 25, sigma 25/3) apply.
    """

    def __init__(self, model: str = "plackett_luce"):
        self.model_name = model
        self._model = _openskill_model(model)

    def initial(self) -> tuple[float, float]:
        """The rating of a new player."""
        return float(self._model.mu), float(self._model.sigma)

    def rate(self, rating_a: tuple[float, float], rating_b: tuple[float, float], score_a: float
             ) -> tuple[tuple[float, float], tuple[float, float]]:
        """New ``((mu_a, sigma_a), (mu_b, sigma_b))`` after one game; ``score_a`` 1 win, 0.5 draw, 0 loss."""
        score_a = _check_score(score_a)
        if score_a == SCORE_DRAW:
            ranks = [0, 0]
        elif score_a > SCORE_DRAW:
            ranks = [0, 1]
        else:
            ranks = [1, 0]
        team_a = [self._model.rating(mu=rating_a[0], sigma=rating_a[1])]
        team_b = [self._model.rating(mu=rating_b[0], sigma=rating_b[1])]
        (new_a,), (new_b,) = self._model.rate([team_a, team_b], ranks=ranks)
        return (float(new_a.mu), float(new_a.sigma)), (float(new_b.mu), float(new_b.sigma))

    def rate_games(self, n_players: int, a: Sequence[int], b: Sequence[int], score_a: Sequence[float]
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Rate games in the given order; returns ``(mu, sigma)`` arrays of shape ``(n_players,)``."""
        ratings = [self.initial() for _ in range(n_players)]
        for i, j, s in zip(np.asarray(a), np.asarray(b), np.asarray(score_a, dtype=float)):
            ratings[i], ratings[j] = self.rate(ratings[i], ratings[j], s)
        mu = np.array([r[0] for r in ratings], dtype=float)
        sigma = np.array([r[1] for r in ratings], dtype=float)
        return mu, sigma


def openskill_ordinal(mu: float, sigma: float, z: float = OPENSKILL_ORDINAL_Z) -> float:
    """Conservative single-number OpenSkill score ``mu - z * sigma``."""
    return mu - z * sigma


# ---------------------------------------------------------------------------------------------
# Bradley-Terry maximum likelihood
# ---------------------------------------------------------------------------------------------
def games_from_payoff(wins: np.ndarray, draws: np.ndarray, losses: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Payoff matrices ``(n, n)`` (row player's wins/draws/losses against column) -> ``(a, b, score_a, count)``.

    Only non-zero cells produce rows; ``count`` says how many games each row stands for.
    """
    wins, draws, losses = (np.asarray(m, dtype=np.int64) for m in (wins, draws, losses))
    if not wins.shape == draws.shape == losses.shape or wins.ndim != 2 or wins.shape[0] != wins.shape[1]:
        raise ValueError(f"payoff matrices must be square and of one shape; got {wins.shape}, {draws.shape}, "
                         f"{losses.shape}")
    rows_a, rows_b, rows_s, rows_c = [], [], [], []
    for matrix, score in ((wins, SCORE_WIN), (draws, SCORE_DRAW), (losses, SCORE_LOSS)):
        i, j = np.nonzero(matrix)
        rows_a.append(i)
        rows_b.append(j)
        rows_s.append(np.full(i.shape, score))
        rows_c.append(matrix[i, j])
    return (np.concatenate(rows_a), np.concatenate(rows_b), np.concatenate(rows_s), np.concatenate(rows_c))


def _pair_totals(n_players: int, a: np.ndarray, b: np.ndarray, score_a: np.ndarray, count: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``points[i, j]``: i's total score against j; ``games[i, j]``: games between i and j (symmetric)."""
    points = np.zeros((n_players, n_players))
    played = np.zeros((n_players, n_players))
    np.add.at(points, (a, b), score_a * count)
    np.add.at(points, (b, a), (1.0 - score_a) * count)
    np.add.at(played, (a, b), count)
    return points, played + played.T


def _bt_objective(theta: np.ndarray, points: np.ndarray, l2: float) -> float:
    diff = theta[:, None] - theta[None, :]
    return float(-(points * np.logaddexp(0.0, -diff)).sum() - 0.5 * l2 * theta @ theta)


def _bt_newton(points: np.ndarray, games: np.ndarray, l2: float, theta: np.ndarray) -> np.ndarray:
    """Maximise the penalised BT log-likelihood (natural-log strengths) by damped Newton."""
    n = theta.shape[0]
    identity = np.eye(n)
    objective = _bt_objective(theta, points, l2)
    for _ in range(BT_MAX_ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))  # p[i, j] = P(i beats j)
        gradient = (points - games * p).sum(axis=1) - l2 * theta
        weight = games * p * (1.0 - p)
        neg_hessian = np.diag(weight.sum(axis=1)) - weight + l2 * identity  # positive definite for l2 > 0
        step = np.linalg.solve(neg_hessian, gradient)
        scale = 1.0
        for _ in range(BT_LINE_SEARCH_STEPS):
            candidate = theta + scale * step
            candidate_objective = _bt_objective(candidate, points, l2)
            if candidate_objective >= objective - BT_OBJECTIVE_SLACK * abs(objective):
                break
            scale *= BT_LINE_SEARCH_SHRINK
        theta, objective = candidate, candidate_objective
        if np.max(np.abs(scale * step)) < BT_TOLERANCE:
            break
    return theta


def _anchor(elo: np.ndarray, anchor: int | None, anchor_rating: float) -> np.ndarray:
    reference = elo.mean() if anchor is None else elo[anchor]
    return elo - reference + anchor_rating


def _validate_games(n_players, a, b, score_a, count):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    score_a = np.asarray(score_a, dtype=float)
    count = np.ones(a.shape, dtype=float) if count is None else np.asarray(count, dtype=float)
    if not a.shape == b.shape == score_a.shape == count.shape or a.ndim != 1:
        raise ValueError(f"a, b, score_a and count must be 1-D and of one length; got shapes {a.shape}, "
                         f"{b.shape}, {score_a.shape}, {count.shape}")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_players):
        raise ValueError(f"player indices must lie in 0..{n_players - 1}")
    if np.any(a == b):
        raise ValueError("a game needs two different players (a == b found)")
    if score_a.size and (score_a.min() < 0.0 or score_a.max() > 1.0):
        raise ValueError("score_a must lie in 0.0 (loss) .. 1.0 (win)")
    if count.size and count.min() < 0:
        raise ValueError("count must be non-negative")
    return a, b, score_a, count


def fit_bradley_terry_elo(n_players: int, a: Sequence[int], b: Sequence[int], score_a: Sequence[float],
                          count: Sequence[float] | None = None, *, l2: float = BT_DEFAULT_L2,
                          anchor: int | None = None, anchor_rating: float = BT_ANCHOR_RATING) -> np.ndarray:
    """Bradley-Terry maximum-likelihood Elo of ``n_players`` from all results; shape ``(n_players,)``.

    ``P(i beats j) = 1 / (1 + 10^((R_j - R_i)/400))``; a draw is half a win and half a loss.
    ``l2`` > 0 is a Gaussian prior on natural-log strengths so the fit is finite with unbeaten
    players. Ratings are shifted so their mean (or ``anchor``'s rating) equals ``anchor_rating``.
    A player without games sits at the mean.
    """
    if l2 <= 0:
        raise ValueError(f"l2 = {l2!r} is out of range; allowed: l2 > 0 (keeps the fit finite)")
    a, b, score_a, count = _validate_games(n_players, a, b, score_a, count)
    points, games = _pair_totals(n_players, a, b, score_a, count)
    theta = _bt_newton(points, games, l2, np.zeros(n_players))
    return _anchor(theta * NATURAL_TO_ELO, anchor, anchor_rating)


@dataclass(frozen=True)
class EloFit:
    """A Bradley-Terry Elo fit with bootstrap percentile intervals; arrays of shape ``(n_players,)``."""

    rating: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float
    n_bootstrap: int


def bootstrap_bradley_terry_elo(n_players: int, a: Sequence[int], b: Sequence[int], score_a: Sequence[float],
                                count: Sequence[float] | None = None, *,
                                n_bootstrap: int = BOOTSTRAP_DEFAULT_SAMPLES,
                                confidence: float = BOOTSTRAP_DEFAULT_CONFIDENCE, seed: int = 0,
                                l2: float = BT_DEFAULT_L2, anchor: int | None = None,
                                anchor_rating: float = BT_ANCHOR_RATING) -> EloFit:
    """:func:`fit_bradley_terry_elo` plus percentile bootstrap intervals (games resampled with replacement).

    Deterministic in ``seed`` (a ``numpy.random.Generator`` of its own). With an ``anchor`` player,
    that player's interval is a point by construction; the default mean anchor avoids that.
    """
    if n_bootstrap < 1:
        raise ValueError(f"n_bootstrap = {n_bootstrap!r} is out of range; allowed: >= 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence = {confidence!r} is out of range; allowed: 0 < confidence < 1")
    a, b, score_a, count = _validate_games(n_players, a, b, score_a, count)
    rating = fit_bradley_terry_elo(n_players, a, b, score_a, count, l2=l2, anchor=anchor,
                                   anchor_rating=anchor_rating)
    rng = np.random.default_rng(seed)
    total = int(round(count.sum()))
    probabilities = count / count.sum() if total > 0 else count
    warm_start = (rating - rating.mean()) / NATURAL_TO_ELO
    samples = np.empty((n_bootstrap, n_players))
    for k in range(n_bootstrap):
        resampled = rng.multinomial(total, probabilities).astype(float) if total > 0 else count
        points, games = _pair_totals(n_players, a, b, score_a, resampled)
        theta = _bt_newton(points, games, l2, warm_start.copy())
        samples[k] = _anchor(theta * NATURAL_TO_ELO, anchor, anchor_rating)
    tail = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return EloFit(rating=rating, lower=lower, upper=upper, confidence=confidence, n_bootstrap=n_bootstrap)
