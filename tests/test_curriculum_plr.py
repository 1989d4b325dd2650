"""Prioritized level replay: exact sampling probabilities on a hand-computed buffer, scoring,
the replacement rule, min_fill, and replay of stored levels. Pure Python, no env."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from spade_rllib.curriculum import (
    LevelSpec,
    PLRStrategy,
    learnability,
    make_strategy,
    positive_value_loss,
    rank_weights,
    sample_level,
    staleness_weights,
)


def spec(i: int) -> LevelSpec:
    return LevelSpec.generated({"family": "open", "size": 9, "wall_density": 0.1}, seed=i)


def outcome(level: LevelSpec, winner: str, **extra):
    return {"winner": winner, "reason": "flag" if winner in "AB" else "timeout", "length": 5,
            "level": level.summary(), "level_spec": level.to_dict(), "main_team": None, "opponent": None, **extra}


def plr(**params) -> PLRStrategy:
    return make_strategy({"strategy": "plr", "plr": params}, seed=0)


X, Y, Z, W, V = (spec(i) for i in range(5))


def hand_buffer(**params) -> PLRStrategy:
    """Six games on three levels (prior 0 so scores are raw p(1-p)):
        ep 1: X won by A   ep 2: Y won by A   ep 3: Z won by A
        ep 4: Y won by A   ep 5: X won by B   ep 6: Y won by B
    X: [A, B]    p = 1/2  score 1/4   last played ep 5
    Y: [A, A, B] p = 2/3  score 2/9   last played ep 6
    Z: [A]       p = 1    score 0     last played ep 3
    """
    s = plr(capacity=4, prior=0.0, **params)
    s.update([outcome(X, "A"), outcome(Y, "A"), outcome(Z, "A"), outcome(Y, "A"), outcome(X, "B"), outcome(Y, "B")])
    return s


def test_hand_buffer_scores_and_timestamps():
    s = hand_buffer()
    assert [e.spec["level_id"] for e in s.entries] == [X.level_id, Y.level_id, Z.level_id]
    assert [e.score for e in s.entries] == pytest.approx([1 / 4, 2 / 9, 0.0])
    assert [e.timestamp for e in s.entries] == [5, 6, 3] and s.episode_count == 6


def test_exact_replay_probabilities_temperature_half():
    """beta = 0.5, rho = 0.3 (default):
    ranks X=1, Y=2, Z=3 -> w_score = (1/r)^(1/0.5) = [1, 1/4, 1/9] / (49/36) = [36/49, 9/49, 4/49]
    staleness = 6 - [5, 6, 3] = [1, 0, 3]        -> w_stale = [1/4, 0, 3/4]
    P = 0.7 * w_score + 0.3 * w_stale
      X = 0.7*36/49 + 0.3*1/4 = 18/35 + 3/40 = 165/280 = 33/56
      Y = 0.7*9/49            = 9/70       =  36/280
      Z = 0.7*4/49 + 0.3*3/4  = 2/35 + 9/40 =  79/280
    """
    s = hand_buffer(temperature=0.5)
    expected = [Fraction(33, 56), Fraction(9, 70), Fraction(79, 280)]
    assert sum(expected) == 1
    assert s.replay_probabilities() == pytest.approx([float(f) for f in expected], abs=1e-12)
    state = s.sampling_state()
    assert state["probs"] == pytest.approx([float(f) for f in expected], abs=1e-12)
    assert state["levels"] == [X.to_dict(), Y.to_dict(), Z.to_dict()] and state["can_replay"]


def test_exact_replay_probabilities_defaults():
    """beta = 0.3 (default): w_score ~ r^(-1/0.3) = [1, 2^(-10/3), 3^(-10/3)]
                            = [1, 0.0992125657, 0.0256800472] / 1.1248926129
                            = [0.8889737460, 0.0881973662, 0.0228288878]
    P = 0.7 * w_score + 0.3 * [1/4, 0, 3/4]
      X = 0.7 * 0.8889737460 + 0.075 = 0.6972816222
      Y = 0.7 * 0.0881973662         = 0.0617381564
      Z = 0.7 * 0.0228288878 + 0.225 = 0.2409802214
    """
    s = hand_buffer()
    h = [1.0, 2 ** (-10 / 3), 3 ** (-10 / 3)]
    w_score = [x / sum(h) for x in h]
    expected = [0.7 * w_score[0] + 0.3 / 4, 0.7 * w_score[1], 0.7 * w_score[2] + 0.3 * 3 / 4]
    assert s.replay_probabilities() == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx([0.6972816222, 0.0617381564, 0.2409802214], abs=1e-9)


def test_sampling_follows_the_probabilities():
    s = hand_buffer(temperature=0.5, replay_prob=1.0)
    state = s.sampling_state()
    rng = np.random.default_rng(123)
    n = 20_000
    ids = [sample_level(state, rng).level_id for _ in range(n)]
    freq = [ids.count(lv.level_id) / n for lv in (X, Y, Z)]
    assert freq == pytest.approx([33 / 56, 9 / 70, 79 / 280], abs=0.015)


def test_formulas():
    assert rank_weights([0.1, 0.3, 0.2], 1.0) == pytest.approx(np.array([1 / 3, 1, 1 / 2]) / (11 / 6))
    assert rank_weights([0.5, 0.5], 1.0) == pytest.approx([2 / 3, 1 / 3])  # ties: buffer order
    assert staleness_weights([3, 3], 3) == pytest.approx([0.5, 0.5])  # all fresh: uniform
    assert learnability(1, 2) == 0.25 and learnability(0, 0) == 0.0 and learnability(2, 2) == 0.0
    assert learnability(1, 1, prior=1.0) == pytest.approx(2 / 9)
    # one-step episode: GAE = r - V
    assert positive_value_loss([1.0], [0.25]) == pytest.approx(0.75)
    assert positive_value_loss([0.0], [0.5]) == 0.0
    # two steps, gamma = lam = 1: deltas [0 + 0.5 - 0.2, 1 - 0.5] = [0.3, 0.5] -> GAE [0.8, 0.5]
    assert positive_value_loss([0.0, 1.0], [0.2, 0.5], gamma=1.0, lam=1.0) == pytest.approx(0.65)


def test_learnability_draws_and_completion_mode():
    s = plr(prior=1.0)
    s.update([outcome(X, "draw"), outcome(Y, "A"), outcome(Y, "B")])
    assert s.entries[0].score == 0.0  # only draws: nothing decided, nothing learnable yet
    assert s.entries[1].score == pytest.approx(0.25)  # (1 + 1) / (2 + 2)
    c = plr(prior=0.0, learnability_p="completion")
    c.update([outcome(X, "draw"), outcome(X, "A"), outcome(X, "B"), outcome(X, "draw")])
    assert c.entries[0].score == pytest.approx(0.25)  # p = 2/4 completions


def test_level_window_forgets_old_games():
    s = plr(prior=0.0, level_window=2)
    s.update([outcome(X, "A"), outcome(X, "B"), outcome(X, "B")])
    assert s.entries[0].history == [0.0, 0.0] and s.entries[0].score == 0.0


def test_positive_value_loss_score():
    s = plr(score="positive_value_loss")
    s.update([outcome(X, "A", positive_value_loss=0.4), outcome(Y, "A")])
    assert s.entries[0].score == 0.4 and s.entries[1].score == 0.0 and s.missing_values == 1
    s.update([outcome(X, "B", positive_value_loss=0.1)])  # replays take the latest estimate
    assert s.entries[0].score == 0.1


def test_replacement_rule():
    s = plr(capacity=2, prior=1.0)
    s.update([outcome(X, "draw"), outcome(Y, "A")])  # scores 0, 2/9: buffer full
    s.update([outcome(Z, "draw")])  # score 0, not higher than the lowest (0): rejected
    assert [e.spec["level_id"] for e in s.entries] == [X.level_id, Y.level_id]
    s.update([outcome(W, "B")])  # 2/9 > 0: replaces the lowest-scored entry X
    assert [e.spec["level_id"] for e in s.entries] == [W.level_id, Y.level_id]
    s.update([outcome(V, "A")])  # 2/9, equal to the lowest: rejected (must be strictly higher)
    assert [e.spec["level_id"] for e in s.entries] == [W.level_id, Y.level_id]
    assert len(s.entries) == 2


def test_min_fill_gates_replay():
    s = plr(capacity=4, min_fill=0.5, replay_prob=1.0)
    s.update([outcome(X, "A")])
    assert not s.can_replay and not s.sampling_state()["can_replay"]
    assert all(s.sample().level_id != X.level_id for _ in range(50))  # 1 < 0.5 * 4: new levels only
    s.update([outcome(Y, "A")])
    assert s.can_replay
    assert {s.sample().level_id for _ in range(50)} <= {X.level_id, Y.level_id}  # replay_prob 1: buffer only


def test_replay_prob_mixes_new_and_replayed():
    s = hand_buffer(replay_prob=0.5)
    rng = np.random.default_rng(0)
    buffered = {X.level_id, Y.level_id, Z.level_id}
    picks = [s.sample(rng).level_id in buffered for _ in range(4000)]
    assert np.mean(picks) == pytest.approx(0.5, abs=0.03)


def test_replayed_level_is_exact_and_metrics():
    s = hand_buffer(replay_prob=1.0)
    again = s.sample()
    assert again in (X, Y, Z) and LevelSpec.from_dict(again.to_dict()) == again
    s.update([outcome(again, "A"), outcome(spec(99), "A")])
    m = s.metrics()
    assert m["curriculum/buffer_size"] == 4.0
    assert m["curriculum/score_max"] == pytest.approx(max(e.score for e in s.entries))
    assert m["curriculum/score_mean"] == pytest.approx(np.mean([e.score for e in s.entries]))
    assert m["curriculum/replay_share"] == pytest.approx(4 / 8)  # Y, X, Y replays + `again` in 8 games
    assert math.isnan(m["curriculum/difficulty"])


def test_outcome_without_spec_is_counted_not_stored():
    s = plr()
    s.update([{"winner": "A", "reason": "flag", "length": 3, "level": {"size": 9}}])
    assert s.entries == [] and s.unreplayable == 1 and s.metrics()["curriculum/size_mean"] == 9.0


def test_load_rejects_buffer_bigger_than_capacity():
    big = hand_buffer()
    small = plr(capacity=2)
    with pytest.raises(ValueError, match="holds 3 levels but curriculum.plr.capacity is 2"):
        small.load_state_dict(big.state_dict())
