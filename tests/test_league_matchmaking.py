"""Statistical matchmaking tests: observed matchup frequencies follow the configured distribution
(chi-square, fixed seeds), and main plays both seats equally."""
from __future__ import annotations

import math

import numpy as np

from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig, MemberId

CHI_SQUARE_Z = 3.090232  # standard normal quantile for a 0.001 false-alarm rate


def chi_square_critical(degrees_of_freedom: int, z: float = CHI_SQUARE_Z) -> float:
    """Wilson-Hilferty approximation of the chi-square upper quantile (no scipy)."""
    k = degrees_of_freedom
    return k * (1.0 - 2.0 / (9.0 * k) + z * math.sqrt(2.0 / (9.0 * k))) ** 3


def chi_square(observed: dict, expected_probabilities: dict, n: int) -> tuple[float, int]:
    assert set(observed) <= set(expected_probabilities), set(observed) - set(expected_probabilities)
    statistic = 0.0
    for key, p in expected_probabilities.items():
        expected = n * p
        assert expected >= 5, f"test too small for chi-square: {key} expects {expected}"
        statistic += (observed.get(key, 0) - expected) ** 2 / expected
    return statistic, len(expected_probabilities) - 1


def test_chi_square_helper_matches_known_quantiles():
    # scipy.stats.chi2.ppf(0.999, k) for k = 3, 10: 16.266, 29.588
    assert abs(chi_square_critical(3) - 16.266) < 0.3
    assert abs(chi_square_critical(10) - 29.588) < 0.3


def build_league(num_snapshots: int, slots: int, **overrides) -> League:
    config = LeagueConfig(num_opponent_slots=slots, max_size=20, every_n_iterations=1,
                          **{"sampling": "pfsp", "pfsp_weighting": "variance", "latest_ratio": 0.4, **overrides})
    league = League(config, seed=11)
    for it in range(1, num_snapshots + 1):
        league.add_snapshot({"w": np.full(2, float(it))}, it)
    rng = np.random.default_rng(5)
    for member in league.pool():  # varied win rates so PFSP weights differ
        for score in rng.choice([0.0, 0.5, 1.0], size=12):
            league.record_result(MAIN, member, float(score))
    return league


def test_matchups_follow_configured_distribution_within_one_plan():
    league = build_league(num_snapshots=3, slots=4)
    distribution = league.opponent_distribution()
    plan = league.plan(1)
    n = 20000
    observed: dict = {}
    for episode in range(n):
        stream = episode % 4
        matchup = plan.matchup(episode // 4, stream)
        observed[matchup.opponent] = observed.get(matchup.opponent, 0) + 1
    statistic, dof = chi_square(observed, distribution, n)
    assert statistic < chi_square_critical(dof), (statistic, observed, distribution)


def test_matchups_follow_configured_distribution_over_a_run_with_more_snapshots_than_slots():
    league = build_league(num_snapshots=6, slots=2, latest_ratio=0.25)
    distribution = league.opponent_distribution()  # constant: no results are recorded below
    n = 6000
    observed: dict = {}
    slot_opponents = set()
    for iteration in range(n):  # one episode per plan: each episode's marginal is the distribution
        plan = league.plan(iteration)
        assert len(plan.slots) == 2
        matchup = plan.matchup(0, iteration % 3)
        if matchup.opponent.has_weights:
            assert plan.slots[matchup.opponent_slot] == matchup.opponent
            slot_opponents.add(matchup.opponent)
        observed[matchup.opponent] = observed.get(matchup.opponent, 0) + 1
    assert slot_opponents == set(league.snapshots())
    statistic, dof = chi_square(observed, distribution, n)
    assert statistic < chi_square_critical(dof), (statistic, observed, distribution)


def test_main_plays_both_seats_equally():
    league = build_league(num_snapshots=2, slots=4)
    plan = league.plan(3)
    for stream in (0, 1, 5):
        seats = [plan.matchup(episode, stream).learner_seat for episode in range(1001)]
        assert abs(seats.count(0) - seats.count(1)) <= 1
        assert all(a != b for a, b in zip(seats, seats[1:]))  # alternates along a stream
    # per opponent the seats are balanced too (binomial, 4 sigma)
    per_opponent: dict = {}
    for episode in range(8000):
        matchup = plan.matchup(episode, 0)
        counts = per_opponent.setdefault(matchup.opponent, [0, 0])
        counts[matchup.learner_seat] += 1
        assert matchup.opponent_seat == 1 - matchup.learner_seat
    for opponent, (seat0, seat1) in per_opponent.items():
        total = seat0 + seat1
        assert abs(seat0 - total / 2) <= 4 * math.sqrt(total / 4), (opponent, seat0, seat1)


def test_plans_differ_between_iterations_but_not_between_calls():
    league = build_league(num_snapshots=2, slots=4)
    first, second = league.plan(1), league.plan(2)
    assert first.seed != second.seed
    assert [first.matchup(i) for i in range(20)] == [first.matchup(i) for i in range(20)]
    assert RANDOM in {m.opponent for m in (first.matchup(i) for i in range(500))}
    assert MemberId.snapshot(2) in {m.opponent for m in (first.matchup(i) for i in range(500))}


def test_league_table_shows_main_plan_probabilities(tmp_path):
    """league.csv's main_plan_p is main's matchmaking distribution: PFSP `hard` puts more weight on the
    snapshot main loses to, and the column sums to 1 over the pool (no mirror share here)."""
    from spade_rllib.league import format_table, read_table

    config = LeagueConfig(num_opponent_slots=2, max_size=20, every_n_iterations=1, sampling="pfsp",
                          pfsp_weighting="hard", latest_ratio=0.0, include_random=False)
    league = League(config, seed=3)
    league.add_snapshot({"w": np.zeros(2)}, 1)
    league.add_snapshot({"w": np.ones(2)}, 2)
    beaten, strong = league.pool()
    for _ in range(20):
        league.record_result(MAIN, beaten, 1.0)
        league.record_result(MAIN, strong, 0.0)
    rows = {row["member"]: row for row in league.table()}
    assert rows[str(strong)]["main_plan_p"] > 0.9 > 0.1 > rows[str(beaten)]["main_plan_p"]
    assert math.isclose(sum(r["main_plan_p"] for r in rows.values()), 1.0)
    path = tmp_path / "league.csv"
    league.write_table_csv(path)
    assert "main_plan_p" in format_table(read_table(path))
