"""Rating math: online Elo (ML-Agents), OpenSkill wrapper, Bradley-Terry ML Elo with bootstrap intervals."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_rllib.core import ratings
rating_values = st.floats(min_value=-1000, max_value=4000, allow_nan=False)
score_values = st.sampled_from([ratings.SCORE_WIN, ratings.SCORE_DRAW, ratings.SCORE_LOSS])


# ------------------------------------------------------------------------------------------------
# online Elo
# ------------------------------------------------------------------------------------------------
def test_elo_expected_score_reference_values():
    assert ratings.elo_expected_score(1200, 1200) == pytest.approx(0.5)
    assert ratings.elo_expected_score(1600, 1200) == pytest.approx(10 / 11)


def test_elo_ml_agents_reference_update():
    # equal ratings, a win: K * (1 - 0.5)
    assert ratings.elo_update(1200.0, 1200.0, 1.0, k=16.0) == pytest.approx((1208.0, 1192.0))


@settings(max_examples=60, deadline=None)
@given(rating_values, rating_values, score_values, st.floats(min_value=1, max_value=64))
def test_elo_zero_sum_and_symmetric(ra, rb, score, k):
    new_a, new_b = ratings.elo_update(ra, rb, score, k)
    assert new_a + new_b == pytest.approx(ra + rb, abs=1e-9)
    # the same game seen from b's side gives the same ratings
    flipped_b, flipped_a = ratings.elo_update(rb, ra, 1.0 - score, k)
    assert (flipped_a, flipped_b) == pytest.approx((new_a, new_b), abs=1e-9)
    assert ratings.elo_expected_score(ra, rb) + ratings.elo_expected_score(rb, ra) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(rating_values, rating_values)
def test_elo_winner_gains_loser_loses(ra, rb):
    new_a, new_b = ratings.elo_update(ra, rb, ratings.SCORE_WIN)
    assert new_a > ra and new_b < rb
    new_a, new_b = ratings.elo_update(ra, rb, ratings.SCORE_LOSS)
    assert new_a < ra and new_b > rb


def test_elo_draw_pulls_ratings_together():
    assert ratings.elo_update(1000.0, 1000.0, 0.5) == (1000.0, 1000.0)
    new_a, new_b = ratings.elo_update(1400.0, 1000.0, 0.5)
    assert new_a < 1400.0 and new_b > 1000.0


def test_elo_rejects_bad_score():
    with pytest.raises(ValueError, match="score"):
        ratings.elo_update(1000.0, 1000.0, 1.5)


# ------------------------------------------------------------------------------------------------
# OpenSkill
# ------------------------------------------------------------------------------------------------
def test_openskill_win_loss_draw():
    rater = ratings.OpenSkillRater()
    start = rater.initial()
    (mu_a, sigma_a), (mu_b, sigma_b) = rater.rate(start, start, ratings.SCORE_WIN)
    assert mu_a > start[0] > mu_b and sigma_a < start[1]
    (mu_a, _), (mu_b, _) = rater.rate(start, start, ratings.SCORE_DRAW)
    assert mu_a == pytest.approx(start[0]) and mu_b == pytest.approx(start[0])
    (mu_a, _), (mu_b, _) = rater.rate(start, start, ratings.SCORE_LOSS)
    assert mu_a < start[0] < mu_b


def test_openskill_rate_games_orders_players():
    rater = ratings.OpenSkillRater("bradley_terry_full")
    mu, sigma = rater.rate_games(3, [0, 0, 1, 0, 1], [1, 2, 2, 1, 2], [1, 1, 1, 1, 1])
    assert mu.shape == sigma.shape == (3,)
    assert mu[0] > mu[1] > mu[2]
    assert ratings.openskill_ordinal(mu[0], sigma[0]) == pytest.approx(mu[0] - 3 * sigma[0])


def test_openskill_unknown_model_hint():
    with pytest.raises(ValueError, match="plackett_luce"):
        ratings.OpenSkillRater("placket_luce")


# ------------------------------------------------------------------------------------------------
# Bradley-Terry maximum likelihood Elo
# ------------------------------------------------------------------------------------------------
TRUE_ELO = np.array([700.0, 900.0, 1000.0, 1100.0, 1300.0])  # mean 1000


def synthetic_games(true_elo, n_games, seed, draw_rate=0.0):
    rng = np.random.default_rng(seed)
    n = len(true_elo)
    a = rng.integers(0, n, n_games)
    b = (a + rng.integers(1, n, n_games)) % n
    p_win = 1.0 / (1.0 + 10.0 ** ((true_elo[b] - true_elo[a]) / 400.0))
    u = rng.random(n_games)
    win = u < p_win * (1 - draw_rate)
    draw = ~win & (u < p_win * (1 - draw_rate) + draw_rate)
    score = np.where(win, 1.0, np.where(draw, 0.5, 0.0))
    return a, b, score


def test_bt_recovers_known_ordering_and_intervals_contain_truth():
    a, b, score = synthetic_games(TRUE_ELO, 6000, seed=1)
    fit = ratings.bootstrap_bradley_terry_elo(len(TRUE_ELO), a, b, score, n_bootstrap=200, seed=7)
    assert list(np.argsort(fit.rating)) == list(range(len(TRUE_ELO)))
    assert fit.rating.mean() == pytest.approx(ratings.BT_ANCHOR_RATING)
    assert np.all(fit.lower <= fit.rating) and np.all(fit.rating <= fit.upper)
    assert np.all(fit.lower <= TRUE_ELO) and np.all(TRUE_ELO <= fit.upper), (fit.lower, fit.upper)
    assert np.all(fit.upper - fit.lower < 80.0)


def test_bt_bootstrap_is_seeded():
    a, b, score = synthetic_games(TRUE_ELO, 500, seed=2)
    first = ratings.bootstrap_bradley_terry_elo(5, a, b, score, n_bootstrap=30, seed=3)
    again = ratings.bootstrap_bradley_terry_elo(5, a, b, score, n_bootstrap=30, seed=3)
    other = ratings.bootstrap_bradley_terry_elo(5, a, b, score, n_bootstrap=30, seed=4)
    np.testing.assert_array_equal(first.lower, again.lower)
    np.testing.assert_array_equal(first.upper, again.upper)
    assert not np.array_equal(first.lower, other.lower)


def test_bt_finite_with_unbeaten_player_and_anchor():
    # player 0 won every game, player 2 lost every game
    a = [0, 0, 1, 0]
    b = [1, 2, 2, 1]
    elo = ratings.fit_bradley_terry_elo(3, a, b, [1, 1, 1, 1])
    assert np.all(np.isfinite(elo)) and elo[0] > elo[1] > elo[2]
    anchored = ratings.fit_bradley_terry_elo(3, a, b, [1, 1, 1, 1], anchor=2, anchor_rating=1000.0)
    assert anchored[2] == pytest.approx(1000.0)
    np.testing.assert_allclose(anchored - anchored[2], elo - elo[2], atol=1e-9)


def test_bt_draws_count_as_half_wins_and_order_free():
    one_each = ratings.fit_bradley_terry_elo(2, [0, 0], [1, 1], [1.0, 0.0])
    two_draws = ratings.fit_bradley_terry_elo(2, [0, 0], [1, 1], [0.5, 0.5])
    np.testing.assert_allclose(one_each, two_draws, atol=1e-9)
    np.testing.assert_allclose(one_each, [1000.0, 1000.0], atol=1e-9)
    a, b, score = synthetic_games(TRUE_ELO, 300, seed=5, draw_rate=0.2)
    swapped = ratings.fit_bradley_terry_elo(5, b, a, 1.0 - score)
    np.testing.assert_allclose(ratings.fit_bradley_terry_elo(5, a, b, score), swapped, atol=1e-8)


def test_bt_payoff_counts_equal_expanded_games():
    wins = np.array([[0, 3, 1], [1, 0, 2], [0, 0, 0]])
    draws = np.array([[0, 1, 0], [0, 0, 1], [2, 0, 0]])
    losses = np.array([[0, 0, 2], [1, 0, 0], [1, 3, 0]])
    a, b, score, count = ratings.games_from_payoff(wins, draws, losses)
    assert count.sum() == wins.sum() + draws.sum() + losses.sum()
    expanded = [np.repeat(x, count) for x in (a, b, score)]
    np.testing.assert_allclose(ratings.fit_bradley_terry_elo(3, a, b, score, count),
                               ratings.fit_bradley_terry_elo(3, *expanded), atol=1e-8)


def test_bt_player_without_games_sits_at_mean():
    elo = ratings.fit_bradley_terry_elo(3, [0], [1], [1.0])
    assert elo[2] == pytest.approx(elo.mean())
    assert math.isfinite(elo[0])


@pytest.mark.parametrize("kwargs, match", [
    ({"a": [0], "b": [0], "score_a": [1.0]}, "different players"),
    ({"a": [0], "b": [3], "score_a": [1.0]}, "indices"),
    ({"a": [0], "b": [1], "score_a": [2.0]}, "score_a"),
    ({"a": [0, 1], "b": [1], "score_a": [1.0]}, "one length"),
])
def test_bt_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ratings.fit_bradley_terry_elo(2, **kwargs)
    with pytest.raises(ValueError, match="l2"):
        ratings.fit_bradley_terry_elo(2, [0], [1], [1.0], l2=0.0)
