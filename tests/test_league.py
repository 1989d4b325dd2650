"""League core: ids, config validation, PFSP / latest / uniform, snapshot rule, eviction, payoff,
ratings, slots, exploiters, table and metrics. No Ray."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from spade_rllib.core import ratings
from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig, MatchPlan, MemberId, Role, pfsp_weights
from spade_rllib.league.sampling import allocate_slots, win_rate_estimate


def weights(value: float = 0.0) -> dict[str, np.ndarray]:
    return {"layer.weight": np.full((2, 3), value, dtype=np.float32), "layer.bias": np.zeros(3, np.float32)}


def play(league: League, opponent: MemberId, wins: int = 0, draws: int = 0, losses: int = 0,
         learner: MemberId = MAIN) -> None:
    for score, n in ((1.0, wins), (0.5, draws), (0.0, losses)):
        for _ in range(n):
            league.record_result(learner, opponent, score)


# ------------------------------------------------------------------------------------------------
# ids
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("member, text", [
    (MemberId.main(), "main"),
    (MemberId.snapshot(3), "main_v3"),
    (MemberId.random(), "random"),
    (MemberId.bot("rusher_tagger"), "rusher_tagger"),
    (MemberId.main_exploiter(0), "main_exploiter_0"),
    (MemberId.main_exploiter(1, 2), "main_exploiter_1_v2"),
    (MemberId.league_exploiter(2), "league_exploiter_2"),
    (MemberId.league_exploiter(0, 5), "league_exploiter_0_v5"),
])
def test_member_id_string_form_round_trips(member, text):
    assert str(member) == text
    assert MemberId.parse(text) == member
    assert hash(MemberId.parse(text)) == hash(member)


def test_member_id_properties():
    assert MAIN.is_learner and not MAIN.has_weights
    assert RANDOM.is_frozen and not RANDOM.has_weights
    assert MemberId.snapshot(1).has_weights and MemberId.snapshot(1).learner == MAIN
    assert MemberId.main_exploiter(1, 2).learner == MemberId.main_exploiter(1)
    assert MAIN.snapshot_of(4) == MemberId.snapshot(4)
    assert MemberId.main_exploiter(0).snapshot_of(1) == MemberId.main_exploiter(0, 1)


@pytest.mark.parametrize("build", [
    lambda: MemberId(Role.SNAPSHOT, 0),
    lambda: MemberId(Role.MAIN, 2),
    lambda: MemberId(Role.RANDOM, index=1),
    lambda: MemberId.bot("main_v2"),
    lambda: MemberId.bot("Bad Name"),
    lambda: MemberId(Role.MAIN, name="x"),
    lambda: MemberId(Role.SNAPSHOT, -1),
])
def test_member_id_invalid(build):
    with pytest.raises(ValueError):
        build()


# ------------------------------------------------------------------------------------------------
# config
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [
    ("win_rate_threshold", 0.0), ("win_rate_threshold", 1.5), ("window", 0), ("window", 2.5),
    ("every_n_iterations", 0), ("min_iterations_between", -1), ("latest_ratio", -0.1),
    ("latest_ratio", 1.1), ("sampling", "pfps"), ("pfsp_weighting", "squared"), ("pfsp_window", 0),
    ("pfsp_prior_games", -1.0), ("max_size", 0), ("eviction", "newest"), ("keep_first", "yes"),
    ("include_random", 1), ("num_opponent_slots", 0), ("main_exploiters", -1), ("league_exploiters", -2),
    ("rating", "glicko"), ("elo_k", 0.0), ("elo_initial", float("nan")), ("openskill_model", "trueskill"),
])
def test_config_bad_values_name_field_and_value(field, value):
    with pytest.raises(ValueError) as info:
        LeagueConfig(**{field: value})
    message = str(info.value)
    # one wording (spade_rllib.core.validation): "key = value: wrong type, expected ..." / "...: out of range, allowed ..."
    assert f"league.{field} = {value!r}: " in message and ("allowed" in message or "expected" in message)


def test_config_suggestions_and_cross_field_rules():
    with pytest.raises(ValueError, match="did you mean 'pfsp'"):
        LeagueConfig(sampling="pfps")
    with pytest.raises(ValueError, match="did you mean 'latest_ratio'"):
        LeagueConfig.from_dict({"latest_ration": 0.3})
    with pytest.raises(ValueError, match="at least one"):
        LeagueConfig(win_rate_threshold=None, every_n_iterations=None)
    with pytest.raises(ValueError, match="max_size"):
        LeagueConfig(max_size=1, keep_first=True)
    config = LeagueConfig.from_dict({"latest_ratio": 0.3, "sampling": "uniform"})
    assert LeagueConfig.from_dict(config.to_dict()) == config


# ------------------------------------------------------------------------------------------------
# opponent distribution
# ------------------------------------------------------------------------------------------------
def test_pfsp_weighting_formulas():
    p = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(pfsp_weights(p, "hard"), (1 - p) ** 2)
    np.testing.assert_allclose(pfsp_weights(p, "variance"), p * (1 - p))
    np.testing.assert_allclose(pfsp_weights(p, "linear"), 1 - p)
    assert win_rate_estimate(0.0, 0, prior_games=1.0) == 0.5  # prior for a member without games
    assert win_rate_estimate(3.0, 3, prior_games=1.0) == pytest.approx(3.5 / 4)


def league_with_record(weighting: str, latest_ratio: float = 0.0, prior: float = 0.0) -> tuple[League, dict]:
    """random + 3 snapshots; main's win rates vs them: random 0.9, v1 0.75, v2 0.5, v3 0.25 (draws half)."""
    config = LeagueConfig(sampling="pfsp", pfsp_weighting=weighting, latest_ratio=latest_ratio,
                          pfsp_prior_games=prior, every_n_iterations=1, win_rate_threshold=None)
    league = League(config, seed=0)
    for it in (1, 2, 3):
        league.add_snapshot(weights(it), it)
    rates = {RANDOM: 0.9, MemberId.snapshot(1): 0.75, MemberId.snapshot(2): 0.5, MemberId.snapshot(3): 0.25}
    play(league, RANDOM, wins=9, losses=1)
    play(league, MemberId.snapshot(1), wins=2, draws=2)
    play(league, MemberId.snapshot(2), draws=4)
    play(league, MemberId.snapshot(3), wins=1, losses=3)
    return league, rates


@pytest.mark.parametrize("weighting, formula", [
    ("hard", lambda p: (1 - p) ** 2), ("variance", lambda p: p * (1 - p)), ("linear", lambda p: 1 - p)])
def test_pfsp_distribution_follows_formula(weighting, formula):
    league, rates = league_with_record(weighting)
    expected = {m: formula(p) for m, p in rates.items()}
    total = sum(expected.values())
    got = league.opponent_distribution()
    assert set(got) == set(expected)
    for member, weight in expected.items():
        assert got[member] == pytest.approx(weight / total)


def test_pfsp_prior_for_members_without_games():
    config = LeagueConfig(pfsp_weighting="linear", latest_ratio=0.0, every_n_iterations=1)
    league = League(config, seed=0)
    league.add_snapshot(weights(), 1)
    play(league, RANDOM, wins=1)  # random: p = (1 + 0.5) / 2 = 0.75 -> weight 0.25; main_v1: 0.5 -> 0.5
    got = league.opponent_distribution()
    assert got[RANDOM] == pytest.approx(0.25 / 0.75)
    assert got[MemberId.snapshot(1)] == pytest.approx(0.5 / 0.75)


def test_latest_ratio_on_newest_snapshot():
    league, rates = league_with_record("variance", latest_ratio=0.6)
    base, _ = league_with_record("variance", latest_ratio=0.0)
    mixed, pool = league.opponent_distribution(), base.opponent_distribution()
    newest = MemberId.snapshot(3)
    assert league.newest_snapshot() == newest
    assert mixed[newest] == pytest.approx(0.6 + 0.4 * pool[newest])
    for member in rates:
        if member != newest:
            assert mixed[member] == pytest.approx(0.4 * pool[member])
    assert sum(mixed.values()) == pytest.approx(1.0)


def test_uniform_sampling_and_early_league():
    config = LeagueConfig(sampling="uniform", latest_ratio=0.5, every_n_iterations=1)
    league = League(config, seed=0)
    assert league.opponent_distribution() == {RANDOM: 1.0}  # no snapshot yet: the pool only
    league.add_snapshot(weights(), 1)
    league.add_snapshot(weights(), 2)
    got = league.opponent_distribution()
    assert got[RANDOM] == pytest.approx(0.5 / 3)
    assert got[MemberId.snapshot(1)] == pytest.approx(0.5 / 3)
    assert got[MemberId.snapshot(2)] == pytest.approx(0.5 + 0.5 / 3)
    mirror = League(LeagueConfig(include_random=False), seed=0)
    assert mirror.opponent_distribution() == {MAIN: 1.0}  # empty pool: mirror self-play


def test_self_play_ratio_and_bot_members():
    config = LeagueConfig(sampling="uniform", latest_ratio=0.5, self_play_ratio=0.4, every_n_iterations=1,
                          bots=["rusher", "hybrid"])
    league = League(config, seed=0)
    rusher, hybrid = MemberId.bot("rusher"), MemberId.bot("hybrid")
    assert league.pool() == [RANDOM, rusher, hybrid] and not league.snapshots()
    assert league.opponent_distribution() == pytest.approx({MAIN: 0.4, RANDOM: 0.2, rusher: 0.2, hybrid: 0.2})
    league.add_snapshot(weights(), 1)
    got = league.opponent_distribution()
    assert got[MAIN] == pytest.approx(0.4) and got[MemberId.snapshot(1)] == pytest.approx(0.6 * (0.5 + 0.5 / 4))
    assert sum(got.values()) == pytest.approx(1.0)
    entries = {str(e.opponent): e.opponent_slot for e in league.plan(2).entries}
    assert entries["main"] is None and entries["hybrid"] is None and entries["main_v1"] is not None
    play(league, hybrid, losses=3)  # bots are rated members: main's Elo falls, the bot's rises
    assert league.rating(hybrid) > config.elo_initial > league.rating(MAIN)
    restored = League(config, seed=1)
    restored.load_state_dict(league.state_dict())
    assert restored.pool() == league.pool() and restored.rating(hybrid) == league.rating(hybrid)
    with pytest.raises(ValueError, match="self_play_ratio = 1.0: out of range"):
        LeagueConfig(every_n_iterations=1, self_play_ratio=1.0)


def test_hard_pfsp_against_fully_beaten_pool_falls_back_to_uniform():
    config = LeagueConfig(pfsp_weighting="hard", pfsp_prior_games=0.0, latest_ratio=0.0, every_n_iterations=1)
    league = League(config, seed=0)
    league.add_snapshot(weights(), 1)
    play(league, RANDOM, wins=5)
    play(league, MemberId.snapshot(1), wins=5)
    assert league.opponent_distribution() == {RANDOM: 0.5, MemberId.snapshot(1): 0.5}


# ------------------------------------------------------------------------------------------------
# snapshot rule
# ------------------------------------------------------------------------------------------------
def test_snapshot_threshold_over_window_with_draws_as_half():
    league = League(LeagueConfig(win_rate_threshold=0.7, window=10, min_iterations_between=0), seed=0)
    play(league, RANDOM, wins=9)
    assert not league.should_snapshot(5)  # fewer than `window` games
    play(league, RANDOM, losses=1)
    assert league.should_snapshot(5)  # 9 / 10
    play(league, RANDOM, losses=3)  # last 10: 6 wins + 4 losses = 0.6
    assert not league.should_snapshot(5)
    play(league, RANDOM, wins=1)  # 6 wins + 4 losses = 0.6 of the last 10... plus one: 0.6 still
    assert league.win_rate() == pytest.approx(0.6) and not league.should_snapshot(5)
    fresh = League(LeagueConfig(win_rate_threshold=0.7, window=10, min_iterations_between=0), seed=0)
    play(fresh, RANDOM, wins=4, draws=6)  # 4 + 3 = 7 / 10: draws count as half a win
    assert fresh.win_rate() == pytest.approx(0.7) and fresh.should_snapshot(1)
    fresh.add_snapshot(weights(), 1)
    assert fresh.win_rate() is None and not fresh.should_snapshot(9)  # window cleared at a snapshot
    assert fresh.events()[-1] == {"iteration": 1, "kind": "snapshot", "member": "main_v1",
                                  "reason": "win_rate_threshold"}


def test_snapshot_every_n_and_min_gap():
    league = League(LeagueConfig(win_rate_threshold=None, every_n_iterations=3, min_iterations_between=1), seed=0)
    assert [league.should_snapshot(i) for i in range(5)] == [False, False, False, True, True]
    league.add_snapshot(weights(), 3)
    assert [league.should_snapshot(i) for i in range(3, 8)] == [False, False, False, True, True]
    gap = League(LeagueConfig(win_rate_threshold=0.5, window=2, min_iterations_between=4), seed=0)
    gap.add_snapshot(weights(), 10)
    play(gap, RANDOM, wins=2)
    assert [gap.should_snapshot(i) for i in (11, 13, 14)] == [False, False, True]
    assert gap.snapshot_reason(14) == "win_rate_threshold"


# ------------------------------------------------------------------------------------------------
# pool size and eviction
# ------------------------------------------------------------------------------------------------
def test_eviction_oldest_keeps_first_and_newest():
    league = League(LeagueConfig(max_size=3, eviction="oldest", keep_first=True, every_n_iterations=1), seed=0)
    for it in range(1, 6):
        league.add_snapshot(weights(it), it)
    assert league.snapshots() == [MemberId.snapshot(1), MemberId.snapshot(4), MemberId.snapshot(5)]
    assert league.state.counters["evictions"] == 2
    assert [e["member"] for e in league.events() if e["kind"] == "eviction"] == ["main_v2", "main_v3"]
    plain = League(LeagueConfig(max_size=2, eviction="oldest", keep_first=False, every_n_iterations=1), seed=0)
    for it in range(1, 5):
        plain.add_snapshot(weights(it), it)
    assert plain.snapshots() == [MemberId.snapshot(3), MemberId.snapshot(4)]
    assert plain.pool() == [RANDOM, MemberId.snapshot(3), MemberId.snapshot(4)]  # random is not counted


def test_eviction_lowest_rated():
    league = League(LeagueConfig(max_size=3, eviction="lowest_rated", keep_first=True, every_n_iterations=1),
                    seed=0)
    for it in (1, 2, 3):
        league.add_snapshot(weights(it), it)
    play(league, MemberId.snapshot(2), wins=10)  # v2 drops lowest
    play(league, MemberId.snapshot(1), wins=20)  # v1 drops lower still, but it is the first: kept
    play(league, MemberId.snapshot(3), wins=3)
    assert league.rating(MemberId.snapshot(1)) < league.rating(MemberId.snapshot(2)) < \
        league.rating(MemberId.snapshot(3))
    newest = league.add_snapshot(weights(4), 4)
    assert league.snapshots() == [MemberId.snapshot(1), MemberId.snapshot(3), newest]
    # an in-flight result against the evicted member is counted, not rated
    league.record_result(MAIN, MemberId.snapshot(2), 1.0)
    assert league.state.counters["stale_games"] == 1
    assert league.payoff(MAIN, MemberId.snapshot(2)) == (11, 0, 0)


def test_weights_are_copied_and_read_only():
    league = League(LeagueConfig(every_n_iterations=1), seed=0)
    source = weights(1.0)
    member = league.add_snapshot(source, 1)
    source["layer.weight"][:] = 7.0
    stored = league.weights(member)
    assert float(stored["layer.weight"][0, 0]) == 1.0
    with pytest.raises(ValueError):
        stored["layer.weight"][0, 0] = 3.0
    with pytest.raises(KeyError, match="main_v1"):
        league.weights(RANDOM)


# ------------------------------------------------------------------------------------------------
# results: payoff, ratings, outcome records
# ------------------------------------------------------------------------------------------------
def test_record_outcomes_and_payoff_counts():
    league = League(LeagueConfig(every_n_iterations=1), seed=0)
    snap = league.add_snapshot(weights(), 1)
    outcomes = [
        {"winner": "A", "main_team": 0, "opponent": "main_v1"},   # main wins from seat 0
        {"winner": "A", "main_team": 1, "opponent": "main_v1"},   # main loses from seat 1
        {"winner": "B", "main_team": 1, "opponent": snap},        # main wins from seat 1
        {"winner": "draw", "main_team": 0, "opponent": "random"},
        {"winner": "A", "main_team": None, "opponent": None},     # not a league game
    ]
    assert league.record_many(outcomes) == 4
    assert league.payoff(MAIN, snap) == (2, 0, 1)
    assert league.payoff(snap, MAIN) == (1, 0, 2)
    assert league.payoff(MAIN, RANDOM) == (0, 1, 0)
    league.record_result(snap, MAIN, 1.0)  # generic pair, seen from the snapshot
    assert league.payoff(MAIN, snap) == (2, 0, 2)
    assert league.games(snap) == 4 and league.games(MAIN) == 5
    assert league.main_win_rate_vs(snap) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="winner"):
        league.record({"winner": "C", "main_team": 0, "opponent": "random"})
    with pytest.raises(ValueError, match="score"):
        league.record_result(MAIN, RANDOM, 0.7)


def test_league_elo_is_zero_sum_and_snapshot_inherits_rating():
    config = LeagueConfig(every_n_iterations=1, elo_k=16.0, elo_initial=1200.0)
    league = League(config, seed=0)
    play(league, RANDOM, wins=5, losses=1)
    assert league.rating(MAIN) + league.rating(RANDOM) == pytest.approx(2400.0)
    assert league.rating(MAIN) > 1200.0
    snap = league.add_snapshot(weights(), 1)
    assert league.rating(snap) == league.rating(MAIN)
    before = league.rating(MAIN) + league.rating(snap)
    play(league, snap, wins=3, draws=2, losses=1)
    assert league.rating(MAIN) + league.rating(snap) == pytest.approx(before)
    expected_main, _ = ratings.elo_update(league.rating(MAIN), league.rating(snap), 1.0, 16.0)
    league.record_result(MAIN, snap, 1.0)
    assert league.rating(MAIN) == pytest.approx(expected_main)


def test_openskill_rating_option():
    league = League(LeagueConfig(rating="openskill", every_n_iterations=1), seed=0)
    start = league.rating(MAIN)
    play(league, RANDOM, wins=3)
    assert league.rating(MAIN) > start > league.rating(RANDOM)
    snap = league.add_snapshot(weights(), 1)
    assert league.state.skill[snap] == league.state.skill[MAIN]


def test_metrics_and_table(tmp_path):
    league = League(LeagueConfig(every_n_iterations=1), seed=0)
    snap = league.add_snapshot(weights(), 1)
    play(league, snap, wins=3, losses=1)
    play(league, RANDOM, wins=2)
    metrics = league.metrics()
    assert metrics["league/size"] == 2.0 and metrics["league/snapshots"] == 1.0
    assert metrics["league/main_rating"] == league.rating(MAIN)
    assert metrics["league/win_rate_vs/main_v1"] == pytest.approx(0.75)
    assert metrics["league/games_vs/random"] == 2.0
    assert metrics["league/snapshots_total"] == 1.0
    assert all(isinstance(v, float) for v in metrics.values())
    fresh = League(LeagueConfig(), seed=0).metrics()
    assert np.isnan(fresh["league/main_win_rate"]) and np.isnan(fresh["league/win_rate_vs/random"])
    rows = league.table()
    assert [r["rating"] for r in rows] == sorted((r["rating"] for r in rows), reverse=True)
    by_member = {r["member"]: r for r in rows}
    assert by_member["main_v1"]["games"] == 4 and by_member["main_v1"]["main_win_rate"] == pytest.approx(0.75)
    assert by_member["main"]["main_win_rate"] is None
    path = tmp_path / "league.csv"
    league.write_table_csv(path)
    with open(path) as handle:
        read = list(csv.DictReader(handle))
    assert list(read[0]) == ["member", "rating", "games", "main_win_rate", "main_plan_p"]
    assert {r["member"] for r in read} == {"main", "main_v1", "random"}


# ------------------------------------------------------------------------------------------------
# plans and slots
# ------------------------------------------------------------------------------------------------
def test_plan_with_few_members_is_the_distribution_and_serialises():
    league, _ = league_with_record("variance", latest_ratio=0.3)
    plan = league.plan(4)
    merged = {opponent: p for (learner, opponent), p in plan.probabilities().items()}
    for member, p in league.opponent_distribution().items():
        assert merged[member] == pytest.approx(p)
    assert sorted(s for s in plan.slots if s is not None) == league.snapshots()
    assert all(e.opponent_slot is None for e in plan.entries if not e.opponent.has_weights)
    copy = MatchPlan.from_dict(plan.to_dict())
    assert copy == plan
    assert [copy.matchup(i, 3) for i in range(50)] == [plan.matchup(i, 3) for i in range(50)]
    assert plan.matchup(7, 2) == plan.matchup(7, 2)


def test_slots_bounded_and_stable():
    config = LeagueConfig(num_opponent_slots=3, max_size=10, sampling="uniform", latest_ratio=0.2,
                          every_n_iterations=1)
    league = League(config, seed=0)
    league.add_snapshot(weights(), 1)
    first = league.plan(1)
    league.add_snapshot(weights(), 2)
    second = league.plan(2)
    assert second.slots[first.slots.index(MemberId.snapshot(1))] == MemberId.snapshot(1)  # did not move
    for it in range(3, 8):
        league.add_snapshot(weights(it), it)
    plan = league.plan(8)
    assert len(plan.slots) == 3 and all(s is not None for s in plan.slots)
    assert sum(plan.probabilities().values()) == pytest.approx(1.0)
    slot_weights = league.slot_weights(plan)
    assert len(slot_weights) == 3 and all(w is league.weights(s) for w, s in zip(slot_weights, plan.slots))
    rng = np.random.default_rng(0)
    masses = np.array([0.5, 0.2, 0.2, 0.1])
    counts = np.array([allocate_slots(masses, 3, rng) for _ in range(4000)])
    assert np.all(counts.sum(axis=1) == 3)
    np.testing.assert_allclose(counts.mean(axis=0), 3 * masses, atol=0.03)


# ------------------------------------------------------------------------------------------------
# AlphaStar roles
# ------------------------------------------------------------------------------------------------
def test_exploiters():
    config = LeagueConfig(main_exploiters=1, league_exploiters=1, every_n_iterations=1, latest_ratio=0.5)
    league = League(config, seed=0)
    main_exploiter, league_exploiter = MemberId.main_exploiter(0), MemberId.league_exploiter(0)
    assert league.learners() == [MAIN, main_exploiter, league_exploiter]
    assert league.opponent_distribution(main_exploiter) == {MAIN: 1.0}
    assert league.opponent_distribution(league_exploiter) == {RANDOM: 1.0}
    play(league, MAIN, wins=4, learner=main_exploiter)
    assert league.win_rate(main_exploiter) == 1.0 and league.rating(main_exploiter) == 1200.0  # learners: unrated
    assert league.resets_after_snapshot(main_exploiter) and not league.resets_after_snapshot(league_exploiter)
    snap = league.add_snapshot(weights(), 1, learner=main_exploiter)
    assert snap == MemberId.main_exploiter(0, 1) and snap in league.pool()
    assert league.newest_snapshot(MAIN) is None
    assert set(league.opponent_distribution(MAIN)) == {RANDOM, snap}
    plan = league.plan(2)
    learners = {}
    for (learner, _), p in plan.probabilities().items():
        learners[learner] = learners.get(learner, 0.0) + p
    assert learners == pytest.approx({MAIN: 1 / 3, main_exploiter: 1 / 3, league_exploiter: 1 / 3})
    with pytest.raises(ValueError, match="not a learner"):
        league.add_snapshot(weights(), 2, learner=snap)


def test_league_core_imports_no_ray():
    import subprocess
    import sys

    code = ("import sys, spade_rllib.league, spade_rllib.core.ratings; "
            "bad = [m for m in sys.modules if m == 'ray' or m.startswith('ray.')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
