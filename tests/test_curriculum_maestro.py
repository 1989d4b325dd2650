"""MAESTRO's joint curriculum, pure core and glue without Ray: one PLR buffer per co-player (levels are
drawn per opponent), regret moves the buffers and the co-player distribution, exact state round trip,
the level source tags (level, opponent) pairs, the curriculum component hands the co-player regret to
the league, and the league mixes it into main's plan."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spade_rllib.curriculum import CurriculumLevelSource, LevelSpec, make_strategy, sample_level
from spade_rllib.curriculum.maestro import MaestroStrategy, value_key
from spade_rllib.league import League, LeagueConfig
from spade_rllib.league.member_ids import MemberId
from spade_rllib.core.outcome import EpisodeOutcome


def spec(i: int) -> LevelSpec:
    return LevelSpec.generated({"family": "open", "size": 9, "wall_density": 0.1}, seed=i)


def outcome(level: LevelSpec, opponent: str, pvl: float | None = None, winner: str = "B") -> dict:
    return {"winner": winner, "reason": "flag" if winner in "AB" else "timeout", "length": 5, "level": level.summary(),
            "level_spec": level.to_dict(), "main_team": 0, "opponent": opponent, "positive_value_loss": pvl}


def maestro(**maestro_params) -> MaestroStrategy:
    return make_strategy({"strategy": "maestro", "maestro": {"capacity": 4, **maestro_params},
                          "plr": {"score": "positive_value_loss", "replay_prob": 1.0, "min_fill": 0.5,
                                  "staleness_coeff": 0.0, "temperature": 0.1}}, seed=0)


A_LEVELS = [spec(i) for i in range(3)]
B_LEVELS = [spec(i) for i in range(10, 13)]


def filled(**maestro_params) -> MaestroStrategy:
    s = maestro(**maestro_params)
    s.update([outcome(lv, "bot:rusher", pvl=0.1 * (k + 1)) for k, lv in enumerate(A_LEVELS)])
    s.update([outcome(lv, "main_v2", pvl=0.01 * (k + 1)) for k, lv in enumerate(B_LEVELS)])
    return s


def draws(s, opponent, n=200, seed=1):
    rng = np.random.default_rng(seed)
    state = s.sampling_state()
    return [sample_level(state, rng, opponent=opponent).level_id for _ in range(n)]


def test_levels_are_drawn_from_the_opponents_own_buffer():
    s = filled()
    a_ids, b_ids = {lv.level_id for lv in A_LEVELS}, {lv.level_id for lv in B_LEVELS}
    assert set(draws(s, "bot:rusher")) <= a_ids
    assert set(draws(s, "main_v2")) <= b_ids
    fresh = set(draws(s, "random", n=50))  # no buffer for random yet: new levels only
    assert not fresh & (a_ids | b_ids) and len(fresh) > 1
    assert s.sampling_state()["kind"] == "joint"
    assert s.metrics()["curriculum/coplayers"] == 2.0 and s.metrics()["curriculum/buffer_size"] == 6.0


def test_regret_moves_the_buffer_and_the_coplayer_draw():
    s = filled(coplayer_staleness_coeff=0.0)  # regret alone (staleness would favour rusher, met 4 games ago)
    top = A_LEVELS[2].level_id  # highest positive value loss against rusher
    counts = {lv: draws(s, "bot:rusher", 400).count(lv) for lv in {x.level_id for x in A_LEVELS}}
    assert max(counts, key=counts.get) == top
    prio = s.coplayer_priority()
    assert prio["bot:rusher"] > prio["main_v2"] and sum(prio.values()) == pytest.approx(1.0)
    # main now has a lot to learn against main_v2 on one level: that co-player and that level move up
    s.update([outcome(B_LEVELS[0], "main_v2", pvl=5.0)])
    assert s.coplayer_regret()["main_v2"] == 5.0
    assert s.coplayer_priority()["main_v2"] > s.coplayer_priority()["bot:rusher"]
    counts = {lv: draws(s, "main_v2", 400).count(lv) for lv in {x.level_id for x in B_LEVELS}}
    assert max(counts, key=counts.get) == B_LEVELS[0].level_id
    assert s.coplayer_priority(candidates={"bot:rusher"}) == {"bot:rusher": 1.0}


def test_same_level_keeps_one_score_per_opponent():
    s = maestro()
    s.update([outcome(A_LEVELS[0], "bot:rusher", pvl=0.9), outcome(A_LEVELS[0], "random", pvl=0.0)])
    assert s.buffers["bot:rusher"].entries[0].score == 0.9
    assert s.buffers["random"].entries[0].score == 0.0


def test_state_round_trip_is_exact_and_strict_json():
    s = filled()
    s.update([outcome(A_LEVELS[1], "mirror", pvl=0.3, winner="draw")])
    state = json.loads(json.dumps(s.state_dict(), allow_nan=False))
    t = maestro()
    t.load_state_dict(state)
    assert t.state_dict() == s.state_dict()
    assert t.sampling_state() == s.sampling_state() and t.coplayer_priority() == s.coplayer_priority()
    assert [t.sample(opponent="bot:rusher").level_id for _ in range(20)] == \
        [s.sample(opponent="bot:rusher").level_id for _ in range(20)]
    with pytest.raises(ValueError, match="max_coplayers"):
        maestro(max_coplayers=1).load_state_dict(state)


def test_least_recently_met_coplayer_is_dropped():
    s = maestro(max_coplayers=2)
    s.update([outcome(A_LEVELS[0], "a"), outcome(A_LEVELS[0], "b"), outcome(A_LEVELS[0], "a"), outcome(A_LEVELS[0], "c")])
    assert list(s.buffers) == ["a", "c"] and s.dropped_coplayers == 1


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match=r"curriculum\.maestro\.coplayer_mix"):
        make_strategy({"strategy": "maestro", "maestro": {"coplayer_mix": 1.5}})
    with pytest.raises(ValueError, match="did you mean 'capacity'"):
        make_strategy({"strategy": "maestro", "maestro": {"capasity": 4}})


def test_level_source_picks_per_opponent_and_tags_the_pair():
    s = filled()
    source = CurriculumLevelSource(s.sampling_state(), seed=3, version=1, level_builder=lambda sp: sp.level_id)
    assert source.opponent_aware
    opts = source.reset_options((0, 1, 2), opponent="bot:rusher")
    assert opts["level_spec"]["level_id"] in {lv.level_id for lv in A_LEVELS}
    assert opts["level_id"] == value_key(opts["level_spec"]["level_id"], "bot:rusher")
    assert source.reset_options((0, 1, 2), opponent="bot:rusher") == opts  # a pure function of key and opponent
    plain = CurriculumLevelSource(make_strategy({"strategy": "plr"}).sampling_state(), level_builder=lambda sp: sp.level_id)
    assert not plain.opponent_aware


def test_component_attaches_pair_values_and_hands_regret_to_the_league():
    from spade_rllib.curriculum.curriculum_config import CurriculumConfig
    from spade_rllib.rllib.components import COPLAYER_PRIORITY, DriverContext
    from spade_rllib.rllib.curriculum_component import CurriculumComponent

    config = CurriculumConfig.from_dict({"strategy": "maestro", "maestro": {"capacity": 4, "coplayer_mix": 0.25},
                                         "plr": {"score": "positive_value_loss"}})
    comp = CurriculumComponent(config, "MazeRace-v0", seed=0)
    lv = A_LEVELS[0]
    sums = {value_key(lv.level_id, "bot:rusher"): (2.0, 4), value_key(lv.level_id, "random"): (0.0, 4), lv.level_id: (9.0, 1)}
    ctx = DriverContext(iteration=1, env_steps_lifetime=0, main_weights=dict, num_runners=0, level_value_loss=sums)
    comp.update([EpisodeOutcome.of(outcome(lv, "bot:rusher")), EpisodeOutcome.of(outcome(lv, "random"))], ctx)
    assert comp.strategy.buffers["bot:rusher"].entries[0].pvl == 0.5  # 2.0 / 4 steps of that pair
    assert comp.strategy.buffers["random"].entries[0].pvl == 0.0
    priority, mix = ctx.extra[COPLAYER_PRIORITY]
    assert mix == 0.25 and priority["bot:rusher"] > priority["random"]


def test_league_mixes_coplayer_regret_into_mains_distribution():
    league = League(LeagueConfig(bots=("rusher", "defender"), sampling="uniform", latest_ratio=0.0, self_play_ratio=0.5,
                                 reference_floor=0.0), seed=0)
    base = league.opponent_distribution()
    rusher = MemberId.bot("rusher")
    league.set_coplayer_priority({rusher: 1.0}, 0.5)
    mixed = league.opponent_distribution()
    pool_share = 0.5  # self_play_ratio keeps its share; the regret mix moves the pool's
    assert mixed[MemberId.parse("main")] == pytest.approx(base[MemberId.parse("main")])
    assert mixed[rusher] == pytest.approx(pool_share * (0.5 * (1 / 3) + 0.5))
    assert sum(mixed.values()) == pytest.approx(1.0)
    league.set_coplayer_priority({rusher: 1.0}, 0.0)
    assert league.opponent_distribution() == pytest.approx(base)
    plan = league.plan(1)  # the plan follows the mixed distribution
    assert sum(e.probability for e in plan.entries) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="co-player mix"):
        league.set_coplayer_priority({}, 2.0)
