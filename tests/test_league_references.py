"""League matchmaking that keeps weak references in the mix: AlphaStar PFSP weightings, the reference
floor, scripted bots as pool members, and exploiters' own weighting. Hand-made payoff rows; no Ray."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.league import MAIN, RANDOM, League, LeagueConfig, MemberId, pfsp_weights
from spade_rllib.rllib.league_component import LeagueComponent
from spade_rllib.league.sampling import reference_floor

V1, V2 = MemberId.snapshot(1), MemberId.snapshot(2)
TACTICAL, LOOKAHEAD = MemberId.bot("tactical"), MemberId.bot("lookahead")


def weights(value: float) -> dict[str, np.ndarray]:
    return {"layer.weight": np.full((2, 3), value, dtype=np.float32)}


def play(league: League, opponent: MemberId, wins: int = 0, losses: int = 0, learner: MemberId = MAIN) -> None:
    for score, n in ((1.0, wins), (0.0, losses)):
        for _ in range(n):
            league.record_result(learner, opponent, score)


def beaten_references(**overrides) -> League:
    """Main has beaten random (and the bots) every game, scores 0.5 against v1 and 0.2 against v2."""
    config = LeagueConfig(**{"sampling": "pfsp", "pfsp_weighting": "hard", "latest_ratio": 0.0, "pfsp_prior_games": 0.0,
                             "every_n_iterations": 1, "win_rate_threshold": None, **overrides})
    league = League(config, seed=0)
    league.add_snapshot(weights(1), 1)
    league.add_snapshot(weights(2), 2)
    for reference in league.pool():
        if not reference.has_weights:
            play(league, reference, wins=10)
    play(league, V1, wins=5, losses=5)
    play(league, V2, wins=2, losses=8)
    return league


# ------------------------------------------------------------------------------------------------
# formulas
# ------------------------------------------------------------------------------------------------
def test_alphastar_weightings_pinned():
    p = [0.0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(pfsp_weights(p, "hard"), [1.0, 0.5625, 0.25, 0.0625, 0.0])
    np.testing.assert_allclose(pfsp_weights(p, "variance"), [0.0, 0.1875, 0.25, 0.1875, 0.0])
    np.testing.assert_allclose(pfsp_weights(p, "linear_capped"), [0.5, 0.5, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(pfsp_weights(p, "linear"), [1.0, 0.75, 0.5, 0.25, 0.0])


@pytest.mark.parametrize("probabilities, is_reference, floor, expected", [
    ([0.02, 0.49, 0.49], [True, False, False], 0.1, [0.1, 0.45, 0.45]),           # raised, the rest scaled
    ([0.3, 0.2, 0.5], [True, False, False], 0.1, [0.3, 0.2, 0.5]),                # already above: unchanged
    ([0.0, 0.3, 0.7], [True, True, False], 0.2, [0.1, 0.27, 0.63]),               # one of two raised
    ([0.0, 0.16, 0.84], [True, True, False], 0.3, [0.15, 0.15, 0.70]),            # scaling pushes the 2nd under
    ([0.0, 0.0, 1.0], [True, True, False], 1.0, [0.5, 0.5, 0.0]),                 # floor 1: references only
    ([0.0, 0.0, 1.0], [True, True, False], 0.0, [0.0, 0.0, 1.0]),                 # off
    ([0.2, 0.8], [False, False], 0.5, [0.2, 0.8]),                                # no reference
    ([0.0, 0.0, 2.0], [True, False, False], 0.1, [0.1, 0.0, 0.9]),                # unnormalised input
])
def test_reference_floor_pinned(probabilities, is_reference, floor, expected):
    np.testing.assert_allclose(reference_floor(np.array(probabilities), is_reference, floor), expected, atol=1e-12)


def test_reference_floor_properties():
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(2, 8))
        p = rng.dirichlet(np.full(n, 0.3))
        ref = rng.random(n) < 0.4
        floor = float(rng.random())
        out = reference_floor(p, ref, floor)
        assert out.sum() == pytest.approx(1.0) and (out >= 0).all()
        if ref.any():
            assert (out[ref] >= floor / ref.sum() - 1e-12).all()
            others = ~ref & (p > 0)
            if others.sum() >= 2:  # the non-references keep their relative odds
                ratio = out[others] / p[others]
                np.testing.assert_allclose(ratio, ratio[0])
        else:
            np.testing.assert_allclose(out, p)


# ------------------------------------------------------------------------------------------------
# the league
# ------------------------------------------------------------------------------------------------
def test_hard_pfsp_starves_a_beaten_random_unless_floored():
    got = beaten_references().opponent_distribution()
    # hard: random (1-1)^2 = 0 (dropped), v1 (1-0.5)^2 = 0.25, v2 (1-0.2)^2 = 0.64
    assert got == pytest.approx({V1: 0.25 / 0.89, V2: 0.64 / 0.89})
    floored = beaten_references(reference_floor=0.2).opponent_distribution()
    assert floored == pytest.approx({RANDOM: 0.2, V1: 0.8 * 0.25 / 0.89, V2: 0.8 * 0.64 / 0.89})


def test_floor_holds_against_latest_ratio_and_is_shared_by_bots():
    league = beaten_references(reference_floor=0.3, latest_ratio=0.5, bots=("tactical", "lookahead"))
    assert league.pool() == [RANDOM, TACTICAL, LOOKAHEAD, V1, V2]
    got = league.opponent_distribution()
    for reference in (RANDOM, TACTICAL, LOOKAHEAD):
        assert got[reference] == pytest.approx(0.1)
    # the rest keeps its proportions: 0.5 latest (v2) + 0.5 * PFSP over v1, v2, scaled into 0.7
    assert got[V1] == pytest.approx(0.7 * 0.5 * 0.25 / 0.89)
    assert got[V2] == pytest.approx(0.7 * (0.5 + 0.5 * 0.64 / 0.89))
    plan = league.plan(3)
    bot_entries = [e for e in plan.entries if e.opponent == TACTICAL]
    assert len(bot_entries) == 1 and bot_entries[0].opponent_slot is None  # no weights, no slot
    assert bot_entries[0].probability == pytest.approx(0.1)


def test_league_exploiters_use_their_own_weighting():
    league = League(LeagueConfig(league_exploiters=1, pfsp_prior_games=0.0, every_n_iterations=1,
                                 win_rate_threshold=None), seed=0)
    explorer = MemberId.league_exploiter(0)
    assert league.config.exploiter_pfsp_weighting == "variance"  # AlphaStar: variance for exploiters
    league.add_snapshot(weights(1), 1)
    for learner in (MAIN, explorer):
        play(league, RANDOM, wins=9, losses=1, learner=learner)  # p = 0.9
        play(league, V1, wins=5, losses=5, learner=learner)       # p = 0.5
    # variance: random 0.09, v1 0.25; main keeps hard: random 0.01, v1 0.25 (then latest_ratio 0.5 on v1)
    assert league.opponent_distribution(explorer) == pytest.approx({RANDOM: 0.09 / 0.34, V1: 0.25 / 0.34})
    assert league.opponent_distribution(MAIN)[RANDOM] == pytest.approx(0.5 * 0.01 / 0.26)


def test_bots_rate_round_trip_and_count_from_outcome_records():
    league = beaten_references(bots=("tactical",))
    assert league.rating(TACTICAL) < league.config.elo_initial  # beaten 10 times
    restored = League(league.config)
    restored.load_state_dict(league.state_dict())
    assert restored.pool() == league.pool() and restored.rating(TACTICAL) == league.rating(TACTICAL)

    component = LeagueComponent(LeagueConfig(bots=("tactical",), reference_floor=0.5))
    assert component.opponent_plan.probabilities("main") == pytest.approx({"random": 0.5, "bot:tactical": 0.5})
    counts = component.record_outcomes([
        {"winner": "A", "main_team": 0, "opponent": "bot:tactical"},   # a pool member: recorded
        {"winner": "A", "main_team": 0, "opponent": "bot:lookahead"},  # not in league.bots: ignored
    ])
    assert counts == {MAIN: {TACTICAL: 1}} and component.counters["ignored_games"] == 1


@pytest.mark.parametrize("key, value", [
    ("reference_floor", -0.1), ("reference_floor", 1.5), ("exploiter_pfsp_weighting", "varience"),
    ("bots", "tactical"), ("bots", ["random"]), ("bots", ["tactical", "tactical"]), ("bots", ["Tactical"]),
])
def test_new_settings_are_validated(key, value):
    with pytest.raises(ValueError, match=f"league.{key}"):
        LeagueConfig.from_dict({key: value})


def test_run_config_checks_bot_names_for_the_env():
    from spade_rllib.config.run_config import ConfigError, parse_config

    env = {"id": "pettingzoo.classic:connect_four_v3"}
    cfg = parse_config({"env": env, "league": {"enabled": True, "bots": ["tactical"], "reference_floor": 0.2}})
    assert cfg.league.to_core().bots == ("tactical",)
    with pytest.raises(ConfigError, match=r"league.bots\[0\] = 'bot:rusher'"):
        parse_config({"env": env, "league": {"bots": ["rusher"]}})
