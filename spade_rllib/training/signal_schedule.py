"""Training-only signals over lifetime env steps: pure Python, no Ray.

`env.signal_schedule` maps a game's training-only signal (a constructor argument of
`games.catalog.TRAINING_ONLY_KWARGS`, e.g. CaptureTheFlag's `new_cell_reward`) to a piecewise-linear schedule
in RLlib's format, ``[[0, v0], [t1, v1], ...]``: linear between points, ``v_last`` after the last one. The
training envs are built with ``v0``; every iteration the driver sends the values at the run's lifetime env steps
to the env runners (`rllib.signal_schedule_component`), which set them on their training envs. Evaluation envs
never have the signals, so a schedule changes what main learns from, never what it is scored on.
"""
from __future__ import annotations

from typing import Mapping, Sequence


def value_at(points: Sequence[Sequence[float]], env_steps: float) -> float:
    """The schedule's value at `env_steps`: linear between points, the first value before the first point and
    the last value after the last one (RLlib's `PiecewiseSchedule` with the last value as outside value)."""
    if not points:
        raise ValueError("a schedule needs at least one [env_steps, value] point")
    t0, v0 = points[0]
    if env_steps <= t0:
        return float(v0)
    for (t_a, v_a), (t_b, v_b) in zip(points, points[1:]):
        if env_steps < t_b:
            return float(v_a + (v_b - v_a) * (env_steps - t_a) / (t_b - t_a))
    return float(points[-1][1])


def values_at(schedules: Mapping[str, Sequence[Sequence[float]]], env_steps: float) -> dict[str, float]:
    """{signal: its value at `env_steps`} for every schedule."""
    return {name: value_at(points, env_steps) for name, points in schedules.items()}


def initial_values(schedules: Mapping[str, Sequence[Sequence[float]]]) -> dict[str, float]:
    """{signal: its value at env step 0}: what the training envs are built with."""
    return values_at(schedules, 0)


__all__ = ["initial_values", "value_at", "values_at"]
