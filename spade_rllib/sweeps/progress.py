"""Compact live progress of a sweep: one line per trial result (a Tune `Callback`).

    [  63s] 2 running, 2 pending, 0 done | 3f1a_00001 iter 2 objective 0.625 | best 0.750 3f1a_00000 (agent.lr=0.001)

Picklable (module-level class) so `Tuner.restore` brings it back with the run config.
"""
from __future__ import annotations

import math
import time
from typing import Optional

from ray.tune import Callback

from spade_rllib.sweeps.trainable import OBJECTIVE, lookup, sweep_params

def fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def fmt_params(params: dict) -> str:
    return ", ".join(f"{k}={fmt_value(v)}" for k, v in params.items())


class SweepProgress(Callback):
    def __init__(self, mode: str = "max", printer=print):
        self.mode = mode
        self.printer = printer
        self.t0: Optional[float] = None
        self.best: Optional[tuple] = None  # (value, trial_id, params)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["printer"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.printer = print
        self.t0 = None

    def _counts(self, trials) -> str:
        running = sum(t.status == "RUNNING" for t in trials)
        pending = sum(t.status in ("PENDING", "PAUSED") for t in trials)
        done = sum(t.status == "TERMINATED" for t in trials)
        err = sum(t.status == "ERROR" for t in trials)
        return f"{running} running, {pending} pending, {done} done" + (f", {err} failed" if err else "")

    def _emit(self, trials, text: str) -> None:
        if self.t0 is None:
            self.t0 = time.time()
        best = ""
        if self.best is not None:
            v, tid, params = self.best
            best = f" | best {v:.3f} {tid}" + (f" ({fmt_params(params)})" if params else "")
        self.printer(f"[{time.time() - self.t0:5.0f}s] {self._counts(trials)} | {text}{best}", flush=True)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        value = lookup(result, OBJECTIVE)
        if isinstance(value, (int, float)) and not math.isnan(value):
            self._update_best(trials, trial, value)
        obj = f"{value:.3f}" if isinstance(value, (int, float)) and not math.isnan(value) else "n/a"
        self._emit(trials, f"{trial.trial_id} iter {int(result.get('training_iteration', 0))} objective {obj}")

    def _update_best(self, trials, trial, value: float) -> None:
        # Best over every trial's latest objective (a trial's value can go down).
        cands = []
        for t in trials:
            v = value if t is trial else lookup(t.last_result or {}, OBJECTIVE)
            if isinstance(v, (int, float)) and not math.isnan(v):
                cands.append((float(v), t))
        if not cands:
            return
        v, t = (max if self.mode == "max" else min)(cands, key=lambda c: c[0])
        self.best = (v, t.trial_id, sweep_params(t.config))

    def on_trial_start(self, iteration, trials, trial, **info):
        self._emit(trials, f"{trial.trial_id} started ({fmt_params(sweep_params(trial.config))})")

    def on_trial_complete(self, iteration, trials, trial, **info):
        it = int((trial.last_result or {}).get("training_iteration", 0))
        self._emit(trials, f"{trial.trial_id} done after {it} iterations")

    def on_trial_error(self, iteration, trials, trial, **info):
        self._emit(trials, f"{trial.trial_id} FAILED; see {trial.path}/error.txt")
