"""`agent.entropy_schedule`: RLlib's [[env_steps, value], ...] schedule for the entropy coefficient. Bad input is
one line before Ray; a run's learner follows the schedule over lifetime env steps."""
from __future__ import annotations

from pathlib import Path

import pytest

from spade_rllib.config.run_config import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("schedule,match", [
    (0.1, "wrong type"),
    ([], "wrong type"),
    ([[0, 0.1, 3]], r"entropy_schedule\[0\].*wrong type"),
    ([[1000, 0.1]], "must start at 0"),
    ([[0, 0.1], [500, 0.05], [500, 0.01]], r"entropy_schedule\[2\].*rise strictly"),
    ([[0, 0.1], [1000, -0.01]], "out of range"),
    ([[0, 0.1], [1000, float("nan")]], "not a finite number"),
    ([[0, True]], "wrong type"),
    ([[0.5, 0.1]], "wrong type"),
])
def test_a_bad_schedule_is_one_line_before_ray(schedule, match):
    with pytest.raises(ConfigError, match=match) as e:
        parse_config({"env": {"id": "kuhn_poker"}, "agent": {"entropy_schedule": schedule}})
    assert "\n" not in str(e.value) and "agent.entropy_schedule" in str(e.value)


def test_the_schedule_reaches_rllib_in_its_format():
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config({"env": {"id": "kuhn_poker"}, "agent": {"entropy_schedule": [[0, 0.2], [100000, 0.01]]}})
    assert build_algo_config(cfg).entropy_coeff == [[0, 0.2], [100000, 0.01]]
    assert build_algo_config(parse_config({"env": {"id": "kuhn_poker"}, "agent": {"entropy": 0.03}})).entropy_coeff == 0.03


@pytest.mark.ray
def test_the_learner_follows_the_schedule_over_env_steps(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = load_config(str(ROOT / "tune_configs" / "kuhn_league.yaml"), [
        "league.enabled=false", "evaluation.exploitability_interval=0", "training.num_env_runners=0",
        "training.num_envs_per_runner=8", "agent.train_batch_size=512", "agent.minibatch_size=256",
        "agent.entropy_schedule=[[0, 0.5], [1024, 0.0]]"])
    algo = build_algo_config(cfg).build_algo()
    try:
        used = [algo.train()["learners"]["main"]["trained_with"]["entropy_coeff"] for _ in range(4)]
    finally:
        algo.stop()
    # read before each update; the learner updates the coefficient after each one, at the lifetime env steps
    assert used[0] == pytest.approx(0.5)
    assert used[0] > used[1] > used[2] and used[3] == pytest.approx(0.0, abs=1e-9), used
