"""What a kickstarting teacher (`agent.teacher`) costs, measured before training starts (no Ray, no torch).

The env runner asks the teacher bot for its action at every step the learners act (`rllib/sampling.py`), on the
runner's own clock: a bot that searches (an MCTS bot on Connect Four) costs milliseconds a step, which the run pays
for its whole length. `measure_teacher(cfg)` plays `PROBE_STEPS` steps of one env copy with random legal actions,
timing the teacher's `act` for every acting agent; `check_teacher_cost(cfg)` prints that cost per learner step (and
what it comes to over `training.stop.env_steps`, when set) in one line, and refuses the run (`ConfigError`) past
`agent.teacher_max_ms`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from spade_rllib.core.validation import ConfigError

PROBE_STEPS = 24
"""Teacher calls timed (after one untimed call, which may build caches)."""
PROBE_SECONDS = 20.0
"""The probe stops early after this many seconds of teacher calls (a teacher slower than that is refused anyway)."""


@dataclass(frozen=True)
class TeacherCost:
    teacher: str
    calls: int
    ms_per_step: float
    """Median milliseconds of one `act` call."""

    def line(self, env_steps: Optional[int]) -> str:
        total = ""
        if env_steps:
            seconds = self.ms_per_step * env_steps / 1000.0
            spent = f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min" if seconds < 7200 else f"{seconds / 3600:,.1f} h"
            total = f"; about {spent} of teacher calls over training.stop.env_steps = {env_steps:,d}"
        return (f"teacher {self.teacher!r}: {self.ms_per_step:.3f} ms per learner step (median of {self.calls} calls "
                f"measured before training){total}")


def measure_teacher(cfg, steps: int = PROBE_STEPS, clock: Callable[[], float] = time.perf_counter) -> TeacherCost:
    """Time `cfg.agent.teacher`'s `act` on `steps` steps of one env copy played with random legal actions."""
    from spade_rllib.config.run_config import resolved_env_of
    from spade_rllib.games import make_bot
    from spade_rllib.games.adapter import game_factory_for
    from spade_rllib.rllib.env_description import env_kwargs_for

    name = cfg.agent.teacher
    game = game_factory_for(resolved_env_of(cfg), env_kwargs_for(cfg), cfg.to_dict()["env"])()
    rng = np.random.default_rng(cfg.experiment.seed)
    bots: dict = {}
    obs = game.reset(seed=int(cfg.experiment.seed))
    times: list[float] = []
    warm = False
    spent = 0.0
    while len(times) < steps and spent < PROBE_SECONDS:
        actions = {}
        for agent, o in obs.items():
            bot = bots.get(agent)
            if bot is None:
                bot = bots[agent] = make_bot(name, seed=len(bots), env_id=cfg.env.id)
            t0 = clock()
            try:
                bot.act(game.raw_env, agent)
            except Exception as e:  # training would ask it the same at its first step
                raise ConfigError(f"agent.teacher = {name!r}: the bot fails on {cfg.env.id} before training "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:200]})") from e
            took = clock() - t0
            spent += took
            if warm:
                times.append(took)
            warm = True
            actions[agent] = game.random_action(o, rng, agent)
        result = game.step(actions)
        obs = result.obs
        if result.done or not obs:
            bots = {}
            obs = game.reset(seed=int(rng.integers(2**31)))
    return TeacherCost(name, len(times), 1000.0 * float(np.median(times)) if times else 0.0)


def check_teacher_cost(cfg, out=None, steps: int = PROBE_STEPS,
                       clock: Callable[[], float] = time.perf_counter) -> Optional[TeacherCost]:
    """With `agent.teacher`: measure it, print its cost per learner step (to `out`, default stdout), refuse past
    `agent.teacher_max_ms`."""
    if not cfg.agent.teacher:
        return None
    cost = measure_teacher(cfg, steps, clock)
    limit = cfg.agent.teacher_max_ms
    if limit is not None and cost.ms_per_step > limit:
        raise ConfigError(f"agent.teacher = {cost.teacher!r}: {cost.ms_per_step:.3f} ms per learner step (median of "
                          f"{cost.calls} calls), past agent.teacher_max_ms = {limit:g}; raise the limit, or choose a "
                          "cheaper teacher")
    print(cost.line(cfg.training.stop.env_steps), file=out or sys.stdout, flush=True)
    return cost


__all__ = ["PROBE_STEPS", "TeacherCost", "check_teacher_cost", "measure_teacher"]
