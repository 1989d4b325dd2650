"""Checkpointing: state_dict / load_state_dict round-trip exactly, and a restored league makes the
same next matchmaking decisions (plans, slots, matchups, snapshots, evictions)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig, MemberId
from spade_rllib.testing.state_equality import assert_exactly_equal



def busy_league(config: LeagueConfig) -> League:
    """A league with history: snapshots, evictions, results of every kind, plans made."""
    league = League(config, seed=123)
    rng = np.random.default_rng(9)
    for iteration in range(1, 9):
        plan = league.plan(iteration)
        for episode in range(40):
            matchup = plan.matchup(episode, episode % 2)
            score = float(rng.choice([0.0, 0.5, 1.0], p=[0.3, 0.2, 0.5]))
            league.record_result(matchup.learner, matchup.opponent, score)
        if league.should_snapshot(iteration):
            league.add_snapshot({"w": rng.normal(size=(3, 2)).astype(np.float32), "step": np.array(iteration)},
                                iteration)
    return league


CONFIGS = {
    "pfsp_elo": LeagueConfig(max_size=3, num_opponent_slots=2, every_n_iterations=2, window=20,
                             win_rate_threshold=0.55, eviction="lowest_rated"),
    "uniform_openskill": LeagueConfig(max_size=2, keep_first=False, sampling="uniform", rating="openskill",
                                      every_n_iterations=1),
    "exploiters": LeagueConfig(main_exploiters=1, league_exploiters=1, every_n_iterations=2, max_size=4),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_state_dict_round_trip_is_exact(name):
    config = CONFIGS[name]
    league = busy_league(config)
    assert league.state.counters["snapshots"] >= 2
    saved = league.state_dict()
    restored = League(config, seed=999)  # a different seed: everything must come from the state
    restored.load_state_dict(pickle.loads(pickle.dumps(saved)))
    assert_exactly_equal(restored.state_dict(), saved)
    assert restored.table() == league.table()
    assert_exactly_equal(restored.metrics(), league.metrics())
    assert restored.opponent_distribution() == league.opponent_distribution()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_restored_league_makes_identical_next_decisions(name):
    config = CONFIGS[name]
    original = busy_league(config)
    restored = League(config, seed=0)
    restored.load_state_dict(original.state_dict())
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    for iteration in range(9, 14):
        plan_a, plan_b = original.plan(iteration), restored.plan(iteration)
        assert plan_a == plan_b
        assert [plan_a.matchup(i, 1) for i in range(30)] == [plan_b.matchup(i, 1) for i in range(30)]
        for league, rng, plan in ((original, rng_a, plan_a), (restored, rng_b, plan_b)):
            for episode in range(30):
                matchup = plan.matchup(episode)
                league.record_result(matchup.learner, matchup.opponent, float(rng.choice([0.0, 1.0])))
        assert original.should_snapshot(iteration) == restored.should_snapshot(iteration)
        if original.should_snapshot(iteration):
            weights = {"w": np.full((3, 2), iteration, np.float32)}
            assert original.add_snapshot(weights, iteration) == restored.add_snapshot(weights, iteration)
    assert_exactly_equal(original.state_dict(), restored.state_dict())


def test_restored_weights_are_independent_read_only_copies():
    league = busy_league(CONFIGS["pfsp_elo"])
    saved = league.state_dict()
    restored = League(CONFIGS["pfsp_elo"])
    restored.load_state_dict(saved)
    member = restored.snapshots()[0]
    assert restored.weights(member)["w"] is not league.weights(member)["w"]
    assert not restored.weights(member)["w"].flags.writeable


def test_load_rejects_unknown_version():
    league = League(LeagueConfig())
    saved = league.state_dict()
    saved["version"] = 99
    with pytest.raises(ValueError, match="version"):
        League(LeagueConfig()).load_state_dict(saved)


def test_fresh_league_state():
    league = League(LeagueConfig(), seed=1)
    assert league.members() == [MAIN, RANDOM]
    assert league.state_dict()["members"][0] == {"id": "main", "created_at": 0, "weights": None}
    assert MemberId.parse(league.state_dict()["members"][1]["id"]) == RANDOM
