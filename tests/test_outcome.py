"""`EpisodeOutcome`: the learner's view of one finished episode, built from an env's final info."""
from __future__ import annotations

import dataclasses
import math

import pytest

from spade_rllib.core.outcome import COUNTER_NAMES, MAIN, TEAM_LETTERS, EpisodeOutcome, winner_from_returns


def test_learner_result_score_and_return_from_either_seat():
    win_b = EpisodeOutcome(winner="B", learner_team=1, returns=(-1.0, 1.0))
    assert (win_b.learner_letter, win_b.learner_result, win_b.learner_score, win_b.learner_return) == ("B", "win", 1.0, 1.0)
    loss = EpisodeOutcome(winner="B", learner_team=0)
    assert (loss.learner_result, loss.learner_score, loss.learner_return) == ("loss", 0.0, -1.0)  # no returns: -1
    draw = EpisodeOutcome(winner="draw", learner_team=1)
    assert (draw.learner_result, draw.learner_score, draw.learner_return) == ("draw", 0.5, 0.0)
    alone = EpisodeOutcome(winner=None, returns=(3.0,))
    assert (alone.learner_result, alone.learner_score, alone.learner_return) == (None, None, 3.0)
    seatless = EpisodeOutcome(winner="A", learner_team=None)  # a wrapper outside the trainer: read from team A
    assert seatless.learner_result == "win" and seatless.learner == MAIN


def test_records_are_frozen_and_checked():
    outcome = EpisodeOutcome(winner="A")
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.winner = "B"  # type: ignore[misc]
    assert outcome.with_fields(opponent="main_v1").opponent == "main_v1" and outcome.opponent is None
    for bad in ("x", "A1", "", "winner"):
        with pytest.raises(ValueError, match="winner"):
            EpisodeOutcome(winner=bad)
    with pytest.raises(ValueError, match="winner"):
        EpisodeOutcome(winner="C", returns=(1.0, 0.0))  # two teams: A or B
    with pytest.raises(ValueError, match="learner_team"):
        EpisodeOutcome(winner="A", learner_team=-1)
    with pytest.raises(ValueError, match="learner_team"):
        EpisodeOutcome(winner="A", learner_team=7, returns=(1.0, 0.0))


def test_any_number_of_teams():
    """Eight agents, each its own team (pursuit_v5's default): team index 7 and winner 'H' are valid."""
    from spade_rllib.core.outcome import team_index, team_letter

    returns = tuple(float(r) for r in (0, 1, 2, 3, 4, 5, 6, 9))
    outcome = EpisodeOutcome.from_final_info({}, team_returns=returns, learner_team=7)
    assert (outcome.winner, outcome.learner_result, outcome.learner_return) == ("H", "win", 9.0)
    assert EpisodeOutcome.from_final_info({}, team_returns=returns, learner_team=4).learner_result == "loss"
    assert [team_letter(t) for t in (0, 25, 26, 27, 701, 702)] == ["A", "Z", "AA", "AB", "ZZ", "AAA"]
    assert all(team_index(team_letter(t)) == t for t in range(800))
    assert team_index("draw") is None and team_index("a") is None
    # a foreign env's own "winner" (an agent id) does not break the record: the returns decide
    assert EpisodeOutcome.from_final_info({"winner": "pursuer_3"}, team_returns=(1.0, 2.0)).winner == "B"
    assert EpisodeOutcome.from_final_info({"success": True}, team_returns=(1.0,)).success is True


def test_from_final_info_reads_the_env_contract_and_counters():
    info = {"winner": "B", "reason": "capture", "episode_length": 42,
            "level": {"size": 9, "difficulty": 3.0, "level_id": "gen-abc"},
            "tags": {"A": 2, "B": 5}, "flag_pickups": {"A": 1, "B": 2}, "captures": {"A": 0, "B": 1},
            "team": 0}
    outcome = EpisodeOutcome.from_final_info(info, team_returns=(-1.0, 1.0), learner_team=1, opponent="main_v2")
    assert (outcome.winner, outcome.reason, outcome.length, outcome.difficulty, outcome.level_id) == ("B", "capture", 42, 3.0, "gen-abc")
    assert outcome.counters == {"tags": (2, 5), "flag_pickups": (1, 2), "captures": (0, 1)}
    assert outcome.counter("tags") == (5, 2) and outcome.counter("captures") == (1, 0)  # (learner's side, opponent's)
    assert outcome.with_fields(learner_team=0).counter("tags") == (2, 5)
    maze = EpisodeOutcome.from_final_info({"winner": "A", "reason": "flag", "episode_length": 7, "level": {}},
                                          team_returns=(1.0, -1.0), learner_team=0)
    assert maze.counters == {} and all(maze.counter(name) == (0, 0) for name in COUNTER_NAMES)


def test_from_final_info_without_env_winner_and_with_a_curriculum_spec():
    outcome = EpisodeOutcome.from_final_info({}, team_returns=(0.5, 0.5), length=9, truncated=True,
                                             level_spec={"level_id": "gen-1", "knobs": {}, "seed": 1, "difficulty": 2.0})
    assert (outcome.winner, outcome.reason, outcome.length) == ("draw", "timeout", 9)
    assert outcome.difficulty == 2.0 and outcome.level_id == "gen-1"  # one place: outcome.level
    assert winner_from_returns((0.0, 1.0)) == "B" and winner_from_returns((2.0, 1.0, 2.0)) == "draw"


def test_of_reads_the_documented_dict_vocabulary():
    record = {"winner": "A", "main_team": 1, "opponent": "main_v3", "length": 11, "returns": {"A": 1.0, "B": -1.0},
              "level_spec": {"level_id": "gen-2", "knobs": {}, "seed": 3, "difficulty": 4.0}, "opponent_swapped": True,
              "heldout_level": "pillars", "positive_value_loss": 0.25, "learner": "main_exploiter_0"}
    outcome = EpisodeOutcome.of(record)
    assert (outcome.learner_team, outcome.learner_result, outcome.learner_return) == (1, "loss", -1.0)
    assert (outcome.opponent, outcome.opponent_swapped, outcome.heldout_level) == ("main_v3", True, "pillars")
    assert (outcome.difficulty, outcome.level_id, outcome.positive_value_loss) == (4.0, "gen-2", 0.25)
    assert outcome.learner == "main_exploiter_0" and EpisodeOutcome.of(outcome) is outcome
    assert EpisodeOutcome.of({"winner": "B", "return": 0.7, "main_team": 1}).learner_return == 0.7
    assert math.isnan(EpisodeOutcome.of({"winner": "B", "returns": {"B": 1.0}}).returns[0])
    assert EpisodeOutcome.of({"winner": "B", "returns": {"B": 1.0}}).learner_return == -1.0  # A's return unknown
    with pytest.raises(TypeError):
        EpisodeOutcome.of(["A"])  # type: ignore[arg-type]
    assert TEAM_LETTERS[:2] == ("A", "B")
