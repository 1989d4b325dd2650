"""Every curriculum signal, judged from main's side on hand-made outcome sequences: a level main
always wins, always loses, wins half the time (from either seat). Pure Python, no env."""
from __future__ import annotations

import pytest

from spade_rllib.curriculum import LevelSpec, make_strategy, score_learnability
from spade_rllib.curriculum.plr import learnability

ALWAYS_WIN, ALWAYS_LOSE, HALF = (LevelSpec.generated({"family": "open", "size": 9, "wall_density": 0.1}, seed=i)
                                 for i in range(3))


def game(level: LevelSpec, result: str, main_team: int, **extra) -> dict:
    """One game on `level` from main's seat `main_team`; result is main's: win | loss | draw."""
    winner = {"win": "AB"[main_team], "loss": "AB"[1 - main_team], "draw": "draw"}[result]
    return {"winner": winner, "reason": "timeout" if result == "draw" else "flag", "length": 5,
            "level": level.summary(), "level_spec": level.to_dict(), "main_team": main_team,
            "opponent": "bot:rusher", **extra}


def sequence(n: int = 8) -> list[dict]:
    """n games per level, main alternating seats; HALF: main wins every other game."""
    out = []
    for i in range(n):
        seat = i % 2
        out += [game(ALWAYS_WIN, "win", seat), game(ALWAYS_LOSE, "loss", seat),
                game(HALF, "win" if (i // 2) % 2 else "loss", seat)]
    return out


def plr_scores(**params) -> dict[str, float]:
    s = make_strategy({"strategy": "plr", "plr": {"prior": 0.0, **params}}, seed=0)
    s.update(sequence())
    return {e.spec["level_id"]: e.score for e in s.entries}


def test_learnability_is_p_times_1_minus_p_of_main_wins_whatever_the_seat():
    scores = plr_scores()
    assert scores[ALWAYS_WIN.level_id] == 0.0
    assert scores[ALWAYS_LOSE.level_id] == 0.0
    assert scores[HALF.level_id] == pytest.approx(0.25)  # the only level worth replaying


def test_learnability_with_the_prior_ranks_the_same():
    scores = plr_scores(prior=1.0)
    assert scores[HALF.level_id] == pytest.approx(0.25)
    assert scores[ALWAYS_WIN.level_id] == pytest.approx(scores[ALWAYS_LOSE.level_id]) == pytest.approx(0.09)  # 9/10 * 1/10


def test_score_learnability_counts_draws_half_and_a_drawn_level_is_not_learnable():
    assert score_learnability([1, 0, 1, 0]) == learnability(2, 4) == 0.25
    assert score_learnability([0.5] * 6) == 0.0
    assert score_learnability([1, 0.5]) == pytest.approx(0.0625)  # E[s^2] - E[s]^2 = 0.625 - 0.5625


def test_seat_a_share_is_not_read():
    """Main wins every game on ALWAYS_WIN from alternating seats: team A's share of wins is 1/2, so
    the old seat-balance score rated it the most learnable level. From main's side it scores 0."""
    s = make_strategy({"strategy": "plr", "plr": {"prior": 0.0}}, seed=0)
    s.update([game(ALWAYS_WIN, "win", i % 2) for i in range(8)])
    assert s.entries[0].score == 0.0


def test_positive_value_loss_score_is_the_levels_value_from_the_learner():
    s = make_strategy({"strategy": "plr", "plr": {"score": "positive_value_loss"}}, seed=0)
    s.update([game(ALWAYS_WIN, "win", 0, positive_value_loss=0.02), game(ALWAYS_LOSE, "loss", 1, positive_value_loss=0.3),
              game(HALF, "win", 0), game(HALF, "loss", 1, positive_value_loss=0.1)])
    scores = {e.spec["level_id"]: e.score for e in s.entries}
    assert scores == {ALWAYS_WIN.level_id: 0.02, ALWAYS_LOSE.level_id: 0.3, HALF.level_id: 0.1}
    assert s.missing_values == 1


@pytest.mark.parametrize("strategy", ["threshold", "plr", "accel", "uniform", "fixed"])
def test_every_strategy_reports_main_score(strategy):
    s = make_strategy({"strategy": strategy}, seed=0, knobs_fn=lambda d, f, n: {"family": "open", "size": 7})
    s.update([game(ALWAYS_WIN, "win", 1), game(ALWAYS_LOSE, "loss", 0), game(HALF, "draw", 1)])
    assert s.metrics()["curriculum/main_score"] == pytest.approx(0.5)  # (1 + 0 + 0.5) / 3


def test_mirror_games_do_not_judge_main():
    """Main against itself scores 0.5 on average whatever the level: no signal to act on."""
    s = make_strategy({"strategy": "threshold", "threshold": {"initial": 5.0}}, seed=0,
                      knobs_fn=lambda d, f, n: {"family": "open", "size": 7})
    s.update([dict(game(ALWAYS_LOSE, "loss", i % 2), opponent="mirror") for i in range(40)])
    assert s.difficulty == 5.0 and s.mirror_outcomes == 40 and len(s.window) == 0
    s.update([game(ALWAYS_LOSE, "loss", i % 2) for i in range(20)])  # the same results against a bot
    assert s.difficulty == pytest.approx(4.5)
    p = make_strategy({"strategy": "plr", "plr": {"prior": 0.0}}, seed=0)
    p.update([dict(game(HALF, "win" if i % 2 else "loss", 0), opponent="mirror") for i in range(4)])
    assert p.entries[0].history == [] and p.entries[0].score == 0.0 and p.entries[0].plays == 4
