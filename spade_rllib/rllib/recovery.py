"""Checkpoints by time, trial retries, and what a failure cost: Tune callbacks of a training run.

* `TimedCheckpoints(every_s)`: besides `training.checkpoint_every` iterations, a trial is checkpointed
  after the first result that comes `training.checkpoint_every_s` seconds (wall clock) after its last
  checkpoint or its start, so what a fault can lose is bounded in minutes on any cluster. It sets
  Tune's `should_checkpoint` on that result (`Callback.on_trial_result` may change the result in place;
  Tune's controller then saves the trial).
* `RecoveryLedger(reached)`: follows every trial's lifetime env steps. A result whose iteration began
  below the most the trial had reached, or the first after a restore (`iterations_since_restore` 1
  past iteration 1), means the trial went back to a checkpoint (a Tune retry under
  `training.max_failures`, or a `--resume` of a run that had reached `reached` env steps): the
  difference is the work lost and redone (0 from the newest checkpoint). `lines()` are the summary's.
* `max_failures(cfg, attached)`: `training.max_failures`, else 0 on the embedded Ray (a failure there
  is a bug a retry repeats) and `CLUSTER_MAX_FAILURES` attached to a cluster (a lost node or learner).
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ray.tune import Callback
from ray.tune.result import SHOULD_CHECKPOINT

from spade_rllib.artifacts.result_lookup import result_value

LIFETIME = "env_runners/num_env_steps_sampled_lifetime"
THIS_ITERATION = "env_runners/num_env_steps_sampled"
CLUSTER_MAX_FAILURES = 3
"""Retries of a trial attached to a cluster when `training.max_failures` is null."""


def max_failures(cfg: Any, attached: bool) -> int:
    """Tune's `FailureConfig(max_failures)` for a run of `cfg` (see the module docstring)."""
    value = cfg.training.max_failures
    if value is not None:
        return int(value)
    return CLUSTER_MAX_FAILURES if attached else 0


class TimedCheckpoints(Callback):
    """Checkpoint a trial when `every_s` seconds passed since its last checkpoint (or its start)."""

    def __init__(self, every_s: float, clock=time.monotonic):
        self.every_s = float(every_s)
        self.clock = clock
        self.last: dict[str, float] = {}

    def on_trial_start(self, iteration, trials, trial, **info):
        self.last[trial.trial_id] = self.clock()

    def on_trial_result(self, iteration, trials, trial, result, **info):
        now = self.clock()
        since = now - self.last.setdefault(trial.trial_id, now)
        if since >= self.every_s and not result.get("done"):
            result[SHOULD_CHECKPOINT] = True

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        self.last[trial.trial_id] = self.clock()


@dataclass(frozen=True)
class Setback:
    """One return to a checkpoint: the env steps the trial had reached and those it went back to."""

    trial_id: str
    reached: int
    restarted_at: int
    seconds: float
    """Wall seconds from the last result before the setback to the first one after it."""

    @property
    def lost(self) -> int:
        return self.reached - self.restarted_at


class RecoveryLedger(Callback):
    """Records every `Setback` of every trial (see the module docstring)."""

    def __init__(self, reached: int = 0, clock=time.time):
        self.start_reached = int(reached)
        self.clock = clock
        self.peak: dict[str, int] = {}
        self.last_seen: dict[str, float] = {}
        self.setbacks: list[Setback] = []
        self.retries = 0

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.retries += 1

    def on_trial_result(self, iteration, trials, trial, result, **info):
        lifetime = result_value(result, LIFETIME, None)
        if not isinstance(lifetime, (int, float)) or math.isnan(lifetime):
            return
        now = self.clock()
        this_iteration = result_value(result, THIS_ITERATION, 0) or 0
        began = int(lifetime) - int(this_iteration if not math.isnan(this_iteration) else 0)
        peak = self.peak.get(trial.trial_id, self.start_reached)
        restored = result.get("iterations_since_restore") == 1 and (result.get("training_iteration") or 0) > 1
        if began < peak or restored:  # restored from the newest checkpoint: a setback of 0 env steps
            last = self.last_seen.get(trial.trial_id)
            self.setbacks.append(Setback(trial.trial_id, max(peak, began), began, 0.0 if last is None else now - last))
        self.peak[trial.trial_id] = max(peak, int(lifetime))
        self.last_seen[trial.trial_id] = now

    def lost(self) -> int:
        return sum(s.lost for s in self.setbacks)

    def lines(self) -> list[str]:
        """The summary's lines: one per setback, none when nothing was lost."""
        out = []
        for s in self.setbacks:
            out.append(f"recovered:     went back to the checkpoint at {s.restarted_at:,d} env steps after reaching "
                       f"{s.reached:,d}: {s.lost:,d} env steps lost and redone"
                       + (f" ({s.seconds:,.0f} s from the last result before to the first after)" if s.seconds else ""))
        if self.retries:
            out.append(f"trial retries: {self.retries} (training.max_failures)")
        return out


ITERATION_LINE = re.compile(r"^iter\s+\d+ \| steps\s+([\d,]+)")
"""A line of the trial's `iterations.log` (`console.LOG_FILE`), which the console writes straight into the
trial dir: it survives a killed driver, whose `result.json` may never reach the storage."""


def reached_env_steps(trial_dir: Optional[Path]) -> int:
    """The most lifetime env steps a trial reported (its `result.json`, one JSON result per line, else its
    `iterations.log`); 0 when neither can be read. A `--resume` compares its checkpoint with this."""
    if trial_dir is None:
        return 0
    best = _reached_in_results(Path(trial_dir) / "result.json")
    try:
        with open(Path(trial_dir) / "iterations.log") as f:
            for line in f:
                m = ITERATION_LINE.match(line)
                if m:
                    best = max(best, int(m.group(1).replace(",", "")))
    except OSError:
        pass
    return best


def _reached_in_results(path: Path) -> int:
    best = 0
    try:
        with open(path) as f:
            for line in f:
                try:
                    value = result_value(json.loads(line), LIFETIME, None)
                except ValueError:  # a line cut short by the killed driver
                    continue
                if isinstance(value, (int, float)) and not math.isnan(value):
                    best = max(best, int(value))
    except OSError:
        return 0
    return best


def recovery_callbacks(cfg: Any, resumed_from: Optional[str] = None) -> list:
    """[RecoveryLedger (reached: what the resumed run had reached), TimedCheckpoints when configured]."""
    trial_dir = Path(resumed_from).parent if resumed_from else None
    out: list = [RecoveryLedger(reached_env_steps(trial_dir))]
    if cfg.training.checkpoint_every_s:
        out.append(TimedCheckpoints(cfg.training.checkpoint_every_s))
    return out


__all__ = ["CLUSTER_MAX_FAILURES", "RecoveryLedger", "Setback", "TimedCheckpoints", "max_failures",
           "reached_env_steps", "recovery_callbacks"]
