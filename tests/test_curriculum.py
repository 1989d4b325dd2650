"""Curriculum core: config validation, level specs, threshold / uniform / fixed rules, state round-trips.

Pure Python: no env, no Ray (difficulty -> knobs comes from a stand-in `knobs_fn`)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from spade_rllib.curriculum import (
    CurriculumConfig,
    LevelSpec,
    ThresholdStrategy,
    make_strategy,
    sample_level,
)


def fake_knobs(difficulty, family, agents_per_team):
    """Stand-in for knobs_for_difficulty (same shape of output, no env import)."""
    return {"family": family or "open", "size": 5 + 2 * int(difficulty // 2),
            "wall_density": round(0.04 + 0.03 * (difficulty - 1), 4), "agents_per_team": agents_per_team}


def outcome(spec: LevelSpec | None = None, winner="A", reason=None, **extra):
    reason = reason or ("flag" if winner in ("A", "B") else "timeout")
    out = {"winner": winner, "reason": reason, "length": 10, "main_team": None, "opponent": None,
           "level": spec.summary() if spec else {}, "level_spec": spec.to_dict() if spec else None}
    out.update(extra)
    return out


def threshold(**params):
    base = {"min_episodes": 20, "window": 50}
    base.update(params)
    return make_strategy({"strategy": "threshold", "threshold": base}, seed=0, knobs_fn=fake_knobs)


def play(strategy, n, **kw):
    """n episodes on levels sampled from the strategy, all with the same result."""
    for _ in range(n):
        strategy.update([outcome(strategy.sample(), **kw)])


def same(a, b):
    """Equality that treats NaN == NaN (metrics and JSON'd state hold NaN for unknown values)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# ---------------------------------------------------------------- config

def test_no_ray_import():
    code = ("import sys, spade_rllib.curriculum as c; c.make_strategy({'strategy': 'plr'}, seed=0).sample(); "
            "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_config_defaults_match_spec():
    cfg = CurriculumConfig()
    t, p = cfg.threshold, cfg.plr
    assert (t.up_threshold, t.up_factor, t.down_threshold, t.down_factor) == (0.8, 1.2, 0.3, 0.9)
    assert (p.temperature, p.staleness_coeff, p.replay_prob, p.min_fill) == (0.3, 0.3, 0.5, 0.5)
    assert CurriculumConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("section, match", [
    ({"strategy": "plrr"}, r"curriculum\.strategy = 'plrr'.*did you mean 'plr'"),
    ({"threshold": {"up_factor": 0.5}}, r"curriculum\.threshold\.up_factor = 0\.5.*\(1\.0, 100\.0\]"),
    ({"threshold": {"down_factor": 1.5}}, r"curriculum\.threshold\.down_factor = 1\.5.*\(0\.0, 1\.0\)"),
    ({"threshold": {"min": 5, "max": 2}}, r"curriculum\.threshold\.min = 5"),
    ({"threshold": {"signal": "wins"}}, r"curriculum\.threshold\.signal = 'wins'"),
    ({"plr": {"temperature": 0}}, r"curriculum\.plr\.temperature = 0.*\(0\.0, 1000\.0\]"),
    ({"plr": {"min_fill": 1.5}}, r"curriculum\.plr\.min_fill = 1\.5.*\[0\.0, 1\.0\]"),
    ({"plr": {"capacity": 2.5}}, r"curriculum\.plr\.capacity = 2\.5.*integer"),
    ({"uniform": {"size": [9, 7]}}, r"curriculum\.uniform\.size = \(9, 7\).*low <= high"),
    ({"uniform": {"families": ["opne"]}}, r"curriculum\.uniform\.families\[0\] = 'opne'.*did you mean 'open'"),
    ({"fixed": {"difficulty": 11}}, r"curriculum\.fixed\.difficulty = 11.*\[1\.0, 10\.0\]"),
    ({"agents_per_team": 3}, r"curriculum\.agents_per_team = 3: not allowed; allowed: 1, 2"),
    ({"threshhold": {}}, r"curriculum\.threshhold: unknown key \(did you mean 'threshold'\?\)"),
    ({"plr": {"beta": 0.3}}, r"curriculum\.plr\.beta: unknown key"),
])
def test_config_errors_name_field_value_and_range(section, match):
    with pytest.raises(ValueError, match=match):
        CurriculumConfig.from_dict(section)


# ---------------------------------------------------------------- level specs

def test_level_spec_round_trip_and_stable_id():
    spec = LevelSpec.generated({"family": "maze", "size": np.int64(9), "braid": 0.25}, seed=7, difficulty=3.0)
    again = LevelSpec.generated({"braid": 0.25, "size": 9, "family": "maze"}, seed=7)
    assert spec.level_id == again.level_id and spec.level_id.startswith("gen-")
    assert LevelSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert LevelSpec.generated({"family": "maze", "size": 9, "braid": 0.25}, seed=8).level_id != spec.level_id
    grid = LevelSpec.grid("\n###\n#F#\n###\n\n", name="x")
    assert grid.ascii == "###\n#F#\n###" and grid.level_id.startswith("grid-")
    assert LevelSpec.from_dict(grid.to_dict()) == grid
    bad = dict(spec.to_dict(), seed=8)
    with pytest.raises(ValueError, match="level_id"):
        LevelSpec.from_dict(bad)


# ---------------------------------------------------------------- threshold

def test_threshold_rises_after_min_episodes_of_high_completion():
    s = threshold()
    assert s.difficulty == 1.0
    play(s, 19, winner="A")
    assert s.difficulty == 1.0  # not enough episodes yet
    play(s, 1, winner="B")
    assert s.difficulty == pytest.approx(1.2)
    assert len(s.window) == 0 and s.episodes_since_change == 0  # the window restarts at the new difficulty
    play(s, 20, winner="A")
    assert s.difficulty == pytest.approx(1.44)


def test_threshold_falls_on_low_completion_and_holds_in_between():
    s = threshold(initial=5.0, signal="completion")
    play(s, 20, winner="draw")  # timeouts: completion 0 < 0.3
    assert s.difficulty == pytest.approx(4.5)
    for i in range(40):  # completion 0.5: between the thresholds -> no change
        s.update([outcome(s.sample(), winner="A" if i % 2 else "draw")])
    assert s.difficulty == pytest.approx(4.5)


def test_threshold_clamps_to_min_and_max():
    s = threshold(min=2.0, max=2.2, initial=2.0, signal="completion")
    play(s, 40, winner="A")
    assert s.difficulty == 2.2
    play(s, 60, winner="draw")
    assert s.difficulty == 2.0


def test_threshold_strict_thresholds():
    s = threshold(up_threshold=0.5, down_threshold=0.2, min_episodes=4, window=4, signal="completion")
    for w in ["A", "draw", "A", "draw"]:  # exactly 0.5: not above -> no change
        s.update([outcome(s.sample(), winner=w)])
    assert s.difficulty == 1.0


def test_threshold_ignores_outcomes_from_an_older_difficulty():
    s = threshold(min_episodes=5, window=5, signal="completion")
    old_specs = [s.sample() for _ in range(10)]  # sampled at d=1, still "in flight"
    play(s, 5, winner="A")
    assert s.difficulty == pytest.approx(1.2)
    s.update([outcome(spec, winner="draw") for spec in old_specs])
    assert s.difficulty == pytest.approx(1.2) and len(s.window) == 0 and s.stale_outcomes == 10
    assert s.metrics()["curriculum/completion_rate"] == pytest.approx(5 / 15)


# The default signal: main's score (win 1, draw 0.5, loss 0) against the opponent it met, from its
# own seat. Hand-made sequences: a level main always wins, always loses, wins half the time.

def test_threshold_defaults_are_the_seed_rule_on_main_score():
    p = CurriculumConfig().threshold
    assert (p.signal, p.up_threshold, p.down_threshold, p.up_factor, p.down_factor, p.min, p.max) == \
        ("score", 0.8, 0.3, 1.2, 0.9, 1.0, 10.0)


@pytest.mark.parametrize("main_team", [0, 1])
def test_threshold_score_main_always_wins_rises(main_team):
    s = threshold(initial=5.0)
    winner = "AB"[main_team]
    play(s, 20, winner=winner, main_team=main_team)
    assert s.difficulty == pytest.approx(6.0) and s.metrics()["curriculum/signal"] == 1.0


@pytest.mark.parametrize("main_team", [0, 1])
def test_threshold_score_main_always_loses_falls(main_team):
    s = threshold(initial=5.0)
    play(s, 20, winner="AB"[1 - main_team], main_team=main_team)  # the other seat wins every flag race
    assert s.difficulty == pytest.approx(4.5)
    assert s.metrics()["curriculum/main_score"] == 0.0


def test_threshold_score_half_wins_and_draws_hold():
    s = threshold(initial=5.0)
    for i in range(60):  # main (seat B) wins every other game, loses the rest: score 0.5
        s.update([outcome(s.sample(), winner="B" if i % 2 else "A", main_team=1)])
    assert s.difficulty == 5.0
    play(s, 60, winner="draw", main_team=1)  # all draws: 0.5 too (completion would read 0 and fall)
    assert s.difficulty == 5.0 and s.signal_value(outcome(winner="draw")) == 0.5


def test_threshold_completion_reads_both_seats_so_it_cannot_fall_in_mirror_play():
    """Why completion was replaced: main losing every race still completes every level."""
    s = threshold(initial=5.0, signal="completion")
    play(s, 20, winner="B", main_team=0)
    assert s.difficulty == pytest.approx(6.0)


def test_threshold_win_rate_and_return_signals():
    s = threshold(signal="win_rate", min_episodes=10, window=10)
    play(s, 10, winner="B", main_team=1)  # main sits in seat B and wins
    assert s.difficulty == pytest.approx(1.2)
    s = threshold(signal="win_rate", min_episodes=10, window=10, initial=5.0)
    play(s, 10, winner="A", main_team=1)  # main loses every game
    assert s.difficulty == pytest.approx(4.5)
    s = threshold(signal="return", min_episodes=10, window=10, up_threshold=0.5, down_threshold=-0.5)
    play(s, 10, winner="draw", returns={"A": 0.9, "B": -0.9})  # shaped return of main (seat A)
    assert s.difficulty == pytest.approx(1.2)
    assert s.signal_value(outcome(winner="B")) == -1.0  # no returns: +1 win / -1 loss / 0 draw


def test_threshold_batch_equals_one_by_one():
    a, b = (threshold(min_episodes=3, window=5, signal="completion"),
            threshold(min_episodes=3, window=5, signal="completion"))
    winners = ["A"] * 7 + ["draw", "A"] * 4 + ["draw"] * 8 + ["B", "A", "draw"] * 3
    outcomes = [outcome(winner=w) for w in winners]  # no level difficulty: every outcome counts
    for o in outcomes:
        a.update([o])
    b.update(outcomes)
    assert a.changes >= 3 and same(a.state_dict(), b.state_dict())


def test_threshold_sampling_state_and_metrics():
    s = make_strategy({"strategy": "threshold", "families": ["open", "maze"]}, seed=1, knobs_fn=fake_knobs)
    state = s.sampling_state()
    assert state["kind"] == "difficulty" and state["difficulty"] == 1.0
    assert [c["family"] for c in state["candidates"]] == ["open", "maze"]
    json.dumps(state)  # broadcastable as plain data
    specs = [s.sample() for _ in range(50)]
    assert {sp.knobs["family"] for sp in specs} == {"open", "maze"}
    assert all(sp.difficulty == 1.0 for sp in specs)
    s.update([outcome(sp, winner="A") for sp in specs[:4]])
    m = s.metrics()
    assert m["curriculum/difficulty"] == 1.0 and m["curriculum/completion_rate"] == 1.0
    assert m["curriculum/size_mean"] == 5.0 and m["curriculum/wall_density_mean"] == pytest.approx(0.04)
    assert math.isnan(m["curriculum/flag_distance_mean"])  # fake knobs carry no flag distance


# ---------------------------------------------------------------- uniform, fixed

def test_uniform_draws_within_ranges():
    cfg = {"strategy": "uniform", "uniform": {"families": ["open", "maze"], "size": [8, 13],
                                              "wall_density": [0.1, 0.2], "braid": [0.5, 0.6],
                                              "flag_distance_frac": [0.5, 1.0]}}
    s = make_strategy(cfg, seed=3)
    specs = [s.sample() for _ in range(300)]
    sizes = {sp.knobs["size"] for sp in specs}
    assert sizes == {9, 11, 13}
    for sp in specs:
        k = sp.knobs
        if k["family"] == "maze":
            assert 0.5 <= k["braid"] <= 0.6 and "wall_density" not in k
        else:
            assert 0.1 <= k["wall_density"] <= 0.2
        assert max(2, round(0.5 * (k["size"] - 3))) <= k["flag_distance"] <= k["size"] - 3
    assert len({sp.level_id for sp in specs}) == 300
    s.update([outcome(sp, winner="draw") for sp in specs[:10]])
    assert math.isnan(s.metrics()["curriculum/difficulty"]) and s.metrics()["curriculum/completion_rate"] == 0.0


def test_fixed_never_moves():
    s = make_strategy({"strategy": "fixed", "fixed": {"difficulty": 7.5}}, seed=0, knobs_fn=fake_knobs)
    play(s, 100, winner="A")
    assert s.difficulty == 7.5 and s.sample().difficulty == 7.5
    assert s.metrics()["curriculum/difficulty"] == 7.5


# ---------------------------------------------------------------- sampling state, determinism, round-trip

@pytest.mark.parametrize("kind", ["threshold", "plr", "uniform", "fixed"])
def test_state_dict_round_trip_is_exact(kind):
    cfg = {"strategy": kind, "threshold": {"min_episodes": 5, "window": 8},
           "plr": {"capacity": 6, "min_fill": 0.5, "replay_prob": 0.7}}
    s = make_strategy(cfg, seed=11, knobs_fn=fake_knobs)
    rng = np.random.default_rng(0)
    for i in range(40):
        spec = s.sample()
        s.update([outcome(spec, winner=["A", "B", "draw"][int(rng.integers(3))])])
    state = json.loads(json.dumps(s.state_dict()))  # checkpoint-able as plain JSON
    t = make_strategy(cfg, seed=999, knobs_fn=fake_knobs)
    t.load_state_dict(state)
    assert same(t.state_dict(), s.state_dict())
    assert same(t.metrics(), s.metrics())
    assert same(t.sampling_state(), s.sampling_state())
    for _ in range(25):  # identical next samples and identical evolution
        a, b = s.sample(), t.sample()
        assert a == b
        o = outcome(a, winner="A")
        s.update([o])
        t.update([o])
    assert same(t.state_dict(), s.state_dict())


def test_load_state_dict_rejects_other_kind():
    s = make_strategy({"strategy": "uniform"}, seed=0)
    t = make_strategy({"strategy": "threshold"}, seed=0, knobs_fn=fake_knobs)
    with pytest.raises(ValueError, match="'threshold' curriculum state into a 'uniform'"):
        s.load_state_dict(t.state_dict())


@pytest.mark.parametrize("kind", ["threshold", "plr", "uniform"])
def test_sample_equals_sample_level_of_sampling_state(kind):
    s = make_strategy({"strategy": kind}, seed=5, knobs_fn=fake_knobs)
    state = s.sampling_state()
    r1, r2 = np.random.default_rng(42), np.random.default_rng(42)
    assert [s.sample(r1) for _ in range(5)] == [sample_level(state, r2) for _ in range(5)]
    assert s.sampling_state() == state  # sampling with a caller RNG leaves the strategy untouched


def test_sample_level_rejects_unknown_state():
    with pytest.raises(ValueError, match="kind 'bogus'"):
        sample_level({"format": 1, "kind": "bogus"}, np.random.default_rng(0))
    with pytest.raises(ValueError, match="format 2"):
        sample_level({"format": 2, "kind": "plr"}, np.random.default_rng(0))


def test_update_rejects_single_dict():
    s = make_strategy({"strategy": "uniform"}, seed=0)
    with pytest.raises(TypeError, match="list of outcome dicts"):
        s.update(outcome(s.sample()))


def test_threshold_is_a_strategy_class():
    assert isinstance(make_strategy(None, seed=0, knobs_fn=fake_knobs), ThresholdStrategy)


def test_state_dict_is_strict_json_and_initial_sampling_state():
    from spade_rllib.curriculum import initial_sampling_state

    s = make_strategy({"strategy": "uniform"}, seed=0)
    s.update([outcome(winner="A")])  # no level info: unknown knobs
    json.dumps(s.state_dict(), allow_nan=False)
    cfg = {"strategy": "threshold", "threshold": {"initial": 3.0}}
    assert initial_sampling_state(cfg, knobs_fn=fake_knobs) == \
        make_strategy(cfg, seed=5, knobs_fn=fake_knobs).sampling_state()
