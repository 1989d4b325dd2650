"""The all-draw collapse watch (pure core and its driver component) and CTF's `draw_reward`."""
from __future__ import annotations

import json
import math

import pytest

from spade_rllib.training.draw_watch import DrawWatch, DrawWatchConfig
from spade_rllib.rllib.draw_watch_component import DrawWatchComponent


def game(opponent: str, winner: str, captures=(0, 0), learner: str = "main") -> dict:
    return {"winner": winner, "reason": "timeout" if winner == "draw" else "flag", "main_team": 0, "learner": learner,
            "opponent": opponent, "captures": {"A": captures[0], "B": captures[1]}}


def test_collapse_needs_mirror_draws_and_no_captures():
    w = DrawWatch(DrawWatchConfig(window=14, min_games=10))
    assert not w.update([game("mirror", "A", captures=(1, 0))] * 14)  # main attacks: peak 1 capture per game
    assert w.metrics()["draws/main_peak_captures_per_game"] == 1.0
    assert not w.update([game("mirror", "draw")] * 13)  # 13/14 mirror draws: below 0.95
    assert w.update([game("mirror", "draw")])  # main has stopped attacking: enters the collapse, True once
    assert not w.update([game("bot:rusher", "draw")] * 2)
    w = DrawWatch(DrawWatchConfig(window=50, min_games=10))
    w.load_state_dict({"games": [[True, True, 0, 0]] * 14, "collapsed_iterations": 1, "collapses": 1,
                       "peak_captures": 1.0})
    assert not w.update([game("bot:rusher", "draw")] * 2)
    m = w.metrics()
    assert m["draws/collapsed"] == 1.0 and m["draws/collapsed_iterations"] == 2.0
    assert m["draws/mirror_draw_rate"] == 1.0 and m["draws/captures_per_game"] == 0.0
    assert not w.update([game("bot:rusher", "B", captures=(0, 1))] * 10)  # rusher captures against main:
    assert w.metrics()["draws/collapsed"] == 1.0  # still the collapse (main does not attack)
    assert w.metrics()["draws/main_captures_per_game"] == 0.0 and w.metrics()["draws/captures_per_game"] > 0.3
    assert not w.update([game("mirror", "A", captures=(1, 0))] * 10)  # main captures again: out of it
    assert w.metrics()["draws/collapsed"] == 0.0 and w.metrics()["draws/collapsed_iterations"] == 0.0
    assert w.metrics()["draws/mirror_draw_rate"] == pytest.approx(14 / 24)
    assert w.metrics()["draws/main_captures_per_game"] == pytest.approx(10 / 36)


def test_a_main_that_never_captured_is_no_collapse():
    # early on large levels: every mirror game a draw because main cannot yet reach the flag
    w = DrawWatch(DrawWatchConfig(window=50, min_games=10))
    assert not any(w.update([game("mirror", "draw")] * 10) for _ in range(6))
    assert w.metrics()["draws/collapsed"] == 0.0 and w.metrics()["draws/main_peak_captures_per_game"] == 0.0
    # an env without capture counters: the mirror draws alone call it
    v = DrawWatch(DrawWatchConfig(window=50, min_games=10))
    plain = {"winner": "draw", "reason": "timeout", "main_team": 0, "learner": "main", "opponent": "mirror"}
    assert v.update([plain] * 10)


def test_decided_mirror_games_are_no_collapse_and_exploiters_are_ignored():
    w = DrawWatch(DrawWatchConfig(window=100, min_games=5))
    w.update([game("mirror", "draw")] * 10 + [game("mirror", "B", captures=(0, 1))] * 2)
    assert w.metrics()["draws/collapsed"] == 0.0  # 10/12 < 0.95
    w.update([game("main", "draw", learner="main_exploiter_0")] * 50)
    assert len(w.games) == 12


def test_state_round_trip_and_component():
    w = DrawWatch()
    w.update([game("mirror", "draw"), {"winner": "A", "reason": "flag", "main_team": 1, "opponent": "random"}])
    state = json.loads(json.dumps(w.state_dict(), allow_nan=False))
    v = DrawWatch()
    v.load_state_dict(state)
    assert v.state_dict() == w.state_dict() and math.isnan(v.games[1][2])
    comp = DrawWatchComponent()
    assert set(comp.initial_metrics()) == set(w.metrics()) and comp.runner_update(True) is None
    assert comp.update([game("mirror", "draw")])["draws/draw_rate"] == 1.0


def test_ctf_draw_reward():
    from spade_rllib.envs import CaptureTheFlag

    env = CaptureTheFlag(difficulty=1, draw_reward=-0.25, max_steps=3)
    env.reset(seed=0)
    for _ in range(3):
        _, rewards, _, truncations, infos = env.step({a: 0 for a in env.agents})
    assert all(truncations.values()) and infos["player_0"]["winner"] == "draw"
    assert rewards == {"player_0": -0.25, "player_1": -0.25}
    with pytest.raises(ValueError, match="draw_reward"):
        CaptureTheFlag(draw_reward=0.5)
