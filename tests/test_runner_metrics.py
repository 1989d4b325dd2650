"""The runner's buffered episode metrics reduce to what logging each episode through MetricsLogger gave (no Ray)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from ray.rllib.utils.metrics import EPISODE_LEN_MEAN, EPISODE_RETURN_MEAN
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from spade_rllib.core.outcome import RESULTS
from spade_rllib.rllib.sampling import LaneStepping


def _runner(num_env_runners: int):
    runner = LaneStepping.__new__(LaneStepping)
    runner.config = SimpleNamespace(num_env_runners=num_env_runners)
    runner.metrics = MetricsLogger()
    runner._episode_metric_buffer = {}
    return runner


def _per_episode(logger: MetricsLogger, win: int, ret: float, length: int, member: str, result) -> None:
    """The logging this buffer replaced: 3-5 `log_value` calls per episode."""
    logger.log_value(EPISODE_RETURN_MEAN, ret, window=win)
    logger.log_value(EPISODE_LEN_MEAN, length, window=win)
    if result is not None:
        for k in RESULTS:
            logger.log_value(("vs", member, k), 1.0 if k == result else 0.0, window=win)


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("num_env_runners, rounds", [(0, [5, 0, 450, 7]), (2, [150, 3]), (8, [40, 60])])
def test_buffered_episode_metrics_reduce_like_per_episode_logging(num_env_runners, rounds):
    rng = np.random.default_rng(num_env_runners)
    runner = _runner(num_env_runners)
    win = runner._metrics_window()
    old = MetricsLogger()
    for episodes in rounds:  # one sample round, then get_metrics(): flush + reduce
        for _ in range(episodes):
            ret = float("nan") if rng.random() < 0.02 else float(rng.normal())
            length = int(rng.integers(2, 40))
            member = str(rng.choice(["main", "main_v3", "bot:rusher"]))
            result = None if rng.random() < 0.1 else str(rng.choice(RESULTS))
            record = SimpleNamespace(learner_return=ret, length=length, learner_result=result)
            runner._log_episode_metrics(record, member)
            _per_episode(old, win, ret, length, member, result)
        runner.flush_episode_metrics()
        new_reduced, old_reduced = runner.metrics.reduce(compile=True), old.reduce(compile=True)
        assert _close(new_reduced, old_reduced), (new_reduced, old_reduced)
    assert not runner._episode_metric_buffer


def test_the_buffer_keeps_one_window_per_series():
    runner = _runner(0)
    for i in range(1000):
        runner._log_episode_metrics(SimpleNamespace(learner_return=float(i), length=1, learner_result="win"), "m")
    assert {len(v) for v in runner._episode_metric_buffer.values()} == {runner._metrics_window()}
    runner.flush_episode_metrics()
    assert runner.metrics.reduce(compile=True)[EPISODE_RETURN_MEAN] == pytest.approx(np.mean(range(800, 1000)))
