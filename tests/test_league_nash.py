"""The Nash meta-solver (league.sampling: nash): the LP and the league's meta-game. Pure core, no Ray."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig, MemberId
from spade_rllib.league.nash import zero_sum_nash

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


def test_rock_paper_scissors_gives_a_third_each():
    nash = zero_sum_nash(RPS)
    assert np.allclose(nash.strategy, 1 / 3, atol=1e-9)
    assert nash.value == pytest.approx(0.0, abs=1e-9)


def test_a_dominated_member_gets_zero():
    # RPS plus a fourth member that every RPS member beats (a strictly dominated strategy).
    a = np.zeros((4, 4))
    a[:3, :3] = RPS
    a[3, :3], a[:3, 3] = -0.5, 0.5
    nash = zero_sum_nash(a)
    assert nash.strategy[3] == 0.0
    assert np.allclose(nash.strategy[:3], 1 / 3, atol=1e-9)


def test_a_dominant_member_takes_everything_and_asymmetric_values():
    a = np.array([[0.0, 0.4, 0.6], [-0.4, 0.0, 0.2], [-0.6, -0.2, 0.0]])
    assert np.allclose(zero_sum_nash(a).strategy, [1.0, 0.0, 0.0])
    matching = np.array([[1.0, -1.0], [-1.0, 1.0]]) + 2.0  # matching pennies shifted: value 2
    nash = zero_sum_nash(matching)
    assert np.allclose(nash.strategy, 0.5) and nash.value == pytest.approx(2.0)


@pytest.mark.parametrize("bad", [np.zeros((0, 2)), np.zeros(3), np.array([[0.0, np.nan], [0.0, 0.0]])])
def test_bad_matrices_refused(bad):
    with pytest.raises(ValueError):
        zero_sum_nash(bad)


def _weights(k: int) -> dict:
    return {"w": np.full(2, float(k))}


def test_league_meta_game_from_snapshot_rows_and_nash_plan():
    """main_v1 beats random; main_v2 beats v1 but loses to random: a cycle random > v2 > v1 > random."""
    league = League(LeagueConfig(sampling="nash", latest_ratio=0.0, every_n_iterations=1, win_rate_threshold=None,
                                 pfsp_window=20))  # the snapshot's row: main's last 20 games per opponent
    for _ in range(20):
        league.record_result(MAIN, RANDOM, 1.0)
    v1 = league.add_snapshot(_weights(1), 1)
    for _ in range(20):
        league.record_result(MAIN, v1, 1.0)
        league.record_result(MAIN, RANDOM, 0.0)
    v2 = league.add_snapshot(_weights(2), 2)
    pool = league.pool()
    assert pool == [RANDOM, v1, v2]
    game = league.meta_game()
    assert np.allclose(game, -game.T)
    assert game[1, 0] == 1.0 and game[2, 1] == 1.0 and game[2, 0] == -1.0
    dist = league.opponent_distribution(MAIN)
    assert sum(dist.values()) == pytest.approx(1.0)
    assert np.allclose([dist[m] for m in pool], 1 / 3, atol=1e-9)  # RPS-like cycle
    plan = league.plan(3)
    assert {str(m) for (_, m) in plan.probabilities()} == {"random", "main_v1", "main_v2"}


def test_dominated_snapshot_gets_no_games_and_meta_payoff_checkpointed():
    league = League(LeagueConfig(sampling="nash", latest_ratio=0.0, every_n_iterations=1, win_rate_threshold=None))
    for _ in range(10):
        league.record_result(MAIN, RANDOM, 0.5)
    v1 = league.add_snapshot(_weights(1), 1)  # even with random
    for _ in range(10):
        league.record_result(MAIN, v1, 1.0)
        league.record_result(MAIN, RANDOM, 1.0)
    v2 = league.add_snapshot(_weights(2), 2)  # beats both
    dist = league.opponent_distribution(MAIN)
    assert dist.get(v2, 0.0) == pytest.approx(1.0) and dist.get(v1, 0.0) == 0.0 and dist.get(RANDOM, 0.0) == 0.0
    league.set_meta_payoff(v1, v2, 1.0)  # an exact value overrides: now v1 beats v2
    with pytest.raises(ValueError, match="out of range"):
        league.set_meta_payoff(v1, v2, float("nan"))
    restored = League(league.config)
    restored.load_state_dict(league.state_dict())
    assert np.array_equal(restored.meta_game(), league.meta_game())
    assert restored.nash_distribution() == league.nash_distribution()
    assert isinstance(MemberId.parse("main_v2"), MemberId)


def test_nash_is_a_valid_sampling_choice_and_typos_refused():
    assert LeagueConfig(sampling="nash").sampling == "nash"
    with pytest.raises(ValueError, match="nash"):
        LeagueConfig(sampling="nahs")
