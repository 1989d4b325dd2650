"""The schedules of a config, checked before Ray: `agent.entropy_schedule`, `agent.teacher_schedule` and
`env.signal_schedule` (training-only signals of the env over lifetime env steps, `training.signal_schedule`).

Called by `config.preflight.check_config`; every failure is a one-line `ConfigError`.
"""
from __future__ import annotations

import inspect
import math
from typing import Optional

from spade_rllib.config.env_checks import env_factory
from spade_rllib.core.validation import ConfigError, did_you_mean, out_of_range, wrong_type
from spade_rllib.games.resolved_env import as_resolved


def check_signal_schedule(cfg) -> None:
    """`env.signal_schedule`: each name a training-only signal (`games.catalog.TRAINING_ONLY_KWARGS`) that the
    env's constructor takes and that is not also in `env.kwargs`, each schedule well formed, and every value one
    the env accepts (it builds with each)."""
    from spade_rllib.games.catalog import TRAINING_ONLY_KWARGS

    schedules = cfg.env.signal_schedule  # a mapping: the schema checked its type
    if not schedules:
        return
    allowed = sorted(TRAINING_ONLY_KWARGS)
    factory = env_factory(as_resolved(cfg.resolved_env or cfg.env.id))
    for name, points in schedules.items():
        key = f"env.signal_schedule.{name}"
        if name not in TRAINING_ONLY_KWARGS:
            raise ConfigError(f"{key}: not a training-only signal{did_you_mean(str(name), allowed)} "
                              f"(allowed: {', '.join(allowed)})")
        if name in cfg.env.kwargs:
            raise ConfigError(f"{key}: env.kwargs.{name} is set too; keep one (the schedule's first value is "
                              f"what the training envs start with)")
        if factory is None or name not in inspect.signature(factory).parameters:
            raise ConfigError(f"{key}: {cfg.env.id} does not take {name} (the training-only signals "
                              f"{', '.join(allowed)} are CaptureTheFlag-v0's)")
        check_schedule(key, points)
        for i, (_, value) in enumerate(points):
            try:
                factory(**{name: value})
            except (ValueError, TypeError) as e:
                raise ConfigError(f"{key}[{i}] = {points[i]!r}: {cfg.env.id} refuses it "
                                  f"({' '.join(str(e).split())})") from e


def check_schedule(key: str, schedule: Optional[list]) -> None:
    """A piecewise-linear schedule as RLlib takes it: [[0, v0], [t1, v1], ...], env steps integers >= 0 rising
    strictly from 0, values finite and >= 0 (None: no schedule)."""
    if schedule is None:
        return
    shape = "a list of [env_steps, value] pairs starting at [0, value], e.g. [[0, 0.1], [10000000, 0.01]]"
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise wrong_type(key, schedule, shape)
    last = -1
    for i, point in enumerate(schedule):
        at = f"{key}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2 or any(isinstance(x, bool) for x in point):
            raise wrong_type(at, point, shape)
        step, value = point
        if not isinstance(step, int) or not isinstance(value, (int, float)):
            raise wrong_type(at, point, "[integer env steps, number]")
        if not math.isfinite(value) or value < 0:
            raise out_of_range(at, point, "a value that is a finite number >= 0")
        if (i == 0 and step != 0) or step <= last:
            raise ConfigError(f"{at} = {point!r}: env steps must start at 0 and rise strictly "
                              f"(got {step} after {last if i else 'the start'})")
        last = step
