"""The league as a player: its mixture weights (pure core) and `MixturePolicy` (torch, no Ray)."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig
from spade_rllib.league.mixture import MIXTURE_MODES, check_mode, mixture_weights


def _league(**kw) -> League:
    config = dict(sampling="uniform", latest_ratio=0.0, every_n_iterations=1, win_rate_threshold=None,
                  include_random=True, pfsp_window=10)
    config.update(kw)
    return League(LeagueConfig(**config))


def _w(k):
    return {"w": np.full(2, float(k))}


def test_uniform_is_main_and_its_snapshots():
    league = _league()
    assert mixture_weights(league, "uniform") == {MAIN: 1.0}
    v1 = league.add_snapshot(_w(1), 1)
    v2 = league.add_snapshot(_w(2), 2)
    assert mixture_weights(league, "uniform") == pytest.approx({v1: 1 / 3, v2: 1 / 3, MAIN: 1 / 3})
    assert mixture_weights(league, "uniform", include_main=False) == pytest.approx({v1: 0.5, v2: 0.5})
    assert RANDOM not in mixture_weights(league, "uniform")  # a reference, not a learned strategy


def test_plan_is_mains_matchmaking_distribution():
    league = _league(latest_ratio=0.5, self_play_ratio=0.2)
    v1 = league.add_snapshot(_w(1), 1)
    plan = league.opponent_distribution(MAIN)
    weights = mixture_weights(league, "plan")
    assert weights == pytest.approx(plan) and set(weights) == {MAIN, RANDOM, v1}


def test_nash_over_the_pool():
    league = _league(sampling="nash")
    for _ in range(10):
        league.record_result(MAIN, RANDOM, 1.0)
    v1 = league.add_snapshot(_w(1), 1)  # v1 beats random: the equilibrium plays v1 only
    assert mixture_weights(league, "nash") == pytest.approx({v1: 1.0})


def test_mode_typos_refused():
    assert check_mode("nash") == "nash" and MIXTURE_MODES == ("uniform", "plan", "nash")
    with pytest.raises(ValueError, match="did you mean 'nash'"):
        mixture_weights(_league(), "nsah")
