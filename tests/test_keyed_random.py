"""keyed_uniform: the per-episode matchmaking draw (pure function of its integer keys)."""
import numpy as np

from spade_rllib.core.keyed_random import keyed_uniform
from spade_rllib.league.match_plan import MatchPlan, PlanEntry
from spade_rllib.league.member_ids import MemberId
from spade_rllib.rllib.plan import OpponentPlan


def test_same_keys_same_draw_and_any_key_changes_it():
    assert keyed_uniform(3, 1, 7) == keyed_uniform(3, 1, 7)
    draws = {keyed_uniform(3, 1, 7), keyed_uniform(4, 1, 7), keyed_uniform(3, 2, 7), keyed_uniform(3, 1, 8),
             keyed_uniform(3, 7, 1), keyed_uniform(3, 1, 7, 0)}
    assert len(draws) == 6
    assert 0.0 <= keyed_uniform(-1, 2**70) < 1.0


def test_consecutive_episodes_are_uniform_and_streams_uncorrelated():
    n = 20_000
    a = np.array([keyed_uniform(0, 0, 0, e) for e in range(n)])
    b = np.array([keyed_uniform(0, 0, 1, e) for e in range(n)])
    for u in (a, b):
        counts = np.histogram(u, bins=20, range=(0.0, 1.0))[0]
        chi2 = float(((counts - n / 20) ** 2 / (n / 20)).sum())
        assert chi2 < 45.0, chi2  # 19 degrees of freedom: p ~ 0.001
        assert abs(float(np.corrcoef(u[:-1], u[1:])[0, 1])) < 0.03  # episode e says nothing of e + 1
    assert abs(float(np.corrcoef(a, b)[0, 1])) < 0.03


def test_plans_draw_each_matchup_at_its_probability():
    plan = OpponentPlan(entries=(("mirror", 0.6), ("random", 0.1), ("bot:rusher", 0.3)), seed=5)
    picks = [plan.pick((1, e % 64, e // 64)) for e in range(20_000)]
    for opp, p in (("mirror", 0.6), ("random", 0.1), ("bot:rusher", 0.3)):
        assert abs(picks.count(opp) / len(picks) - p) < 0.015, (opp, picks.count(opp))
    assert picks == [plan.pick((1, e % 64, e // 64)) for e in range(20_000)]  # pure
    other = OpponentPlan(entries=plan.entries, seed=6)
    assert picks != [other.pick((1, e % 64, e // 64)) for e in range(20_000)]  # the seed mixes in


def test_the_league_plan_draws_each_entry_at_its_probability():
    main, a, b = MemberId.main(), MemberId.snapshot(1), MemberId.snapshot(2)
    plan = MatchPlan(seed=11, iteration=3, entries=(PlanEntry(main, a, 0, 0.25), PlanEntry(main, b, 1, 0.75)),
                     slots=(a, b))
    opponents = [plan.matchup(e, s).opponent for e in range(5_000) for s in range(4)]
    assert abs(opponents.count(a) / len(opponents) - 0.25) < 0.015
