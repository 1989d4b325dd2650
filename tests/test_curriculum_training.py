"""The curriculum's signals in real training runs (SpadePPO, local runner, tiny MLP, ~10 s each):
the threshold rule on main's score rises against a weak fixed bot and falls against a strong one
(seed defaults: > 0.8 x1.2, < 0.3 x0.9), and PLR's positive value loss reaches the driver from the
GAE connector for the levels main played."""
from __future__ import annotations

import math

import pytest

from spade_rllib.config.run_config import parse_config

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def run_config(opponent: str, curriculum: dict) -> dict:
    return {
        "experiment": {"name": "t", "seed": 3},
        "env": {"id": "MazeRace-v0"},
        # lr high enough that main beats the random bot on small levels within a few iterations
        "agent": {"lr": 0.003, "train_batch_size": 1024, "minibatch_size": 256, "epochs": 4, "model": {"hidden": [32]}},
        "training": {"num_envs_per_runner": 16, "num_env_runners": 0},
        "self_play": {"opponent_mix": {opponent: 1.0}},  # every training game against this one fixed bot
        "curriculum": {"enabled": True, **curriculum},
        "evaluation": {"interval": 0},
    }


def curriculum_of(algo):
    return next(c for c in algo.components if c.name == "curriculum")


@pytest.mark.parametrize("opponent, start, direction", [("random", 1.0, "rises"), ("bot:rusher", 5.0, "falls")])
def test_threshold_on_main_score_moves_both_ways(ray_session, opponent, start, direction):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(run_config(opponent, {"strategy": "threshold", "threshold": {"initial": start}}))
    assert cfg.curriculum.to_core().threshold.signal == "score"  # the default signal, seed thresholds
    algo = build_algo_config(cfg).build_algo()
    try:
        strategy = curriculum_of(algo).strategy
        seen = [strategy.difficulty]
        for _ in range(40):
            result = algo.train()
            seen.append(strategy.difficulty)
            moved = seen[-1] >= start * 1.2 ** 2 - 1e-9 if direction == "rises" else seen[-1] <= start * 0.9 ** 2 + 1e-9
            if moved:
                break
        assert moved, f"difficulty {direction[:-1]} expected against {opponent}; went {seen}"
        steps = [b / a for a, b in zip(seen, seen[1:]) if b != a]
        assert steps and all(abs(s - (1.2 if direction == "rises" else 0.9)) < 1e-9 for s in steps), seen
        score = result["curriculum"]["main_score"] if "curriculum" in result else strategy.metrics()["curriculum/main_score"]
        assert (score > 0.5) if direction == "rises" else (score < 0.3), score
    finally:
        algo.stop()


def test_plr_positive_value_loss_comes_from_the_learner(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(run_config("random", {"strategy": "plr", "plr": {"score": "positive_value_loss", "capacity": 64}}))
    algo = build_algo_config(cfg).build_algo()
    try:
        for _ in range(2):
            algo.train()
        strategy = curriculum_of(algo).strategy
        pvls = [e.pvl for e in strategy.entries]
        assert len(pvls) > 10 and all(p is not None and p >= 0 and math.isfinite(p) for p in pvls)
        assert len({round(p, 6) for p in pvls}) > 5  # per level, not one number for all
        # only outcomes of levels whose episode straddled an iteration boundary lack a value
        assert strategy.missing_values < 0.1 * strategy.episode_count
        assert [e.score for e in strategy.entries] == pvls
    finally:
        algo.stop()
