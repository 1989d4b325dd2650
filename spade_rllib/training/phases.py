"""Where one training iteration's wall time goes: named phases, timed on the driver.

`PhaseClock` adds up wall seconds per phase (`with clock.phase("learn"): ...`) and hands them out
once per iteration (`pop()`). `SpadePPO` reports them as `spade/phase_s/<phase>`; `iterations.log`,
the run summary and `bench/speed/train_speed.py --shipped-configs` read them from there.

The phases of `SpadePPO.step` (PHASES, in the order they run):
    sample_wait   waiting for the env runners' samples (with sample-ahead: only the wait that the
                  learner did not hide)
    learn         the learner update (GAE, every epoch and minibatch)
    weight_sync   main's weights to the env runners
    outcomes      draining the runners' episode outcome records
    components    the driver components (league, curriculum, self-play plan, draw watch) and the
                  broadcast of their updates; each component also gets a row of its own,
                  `component/<name>`, inside this one
    evaluation    the periodic evaluation games (`evaluation.interval`)
    heldout       launching / polling the held-out evaluation task
    checkpoint    writing the checkpoint Tune asked for after the previous iteration
    other         the rest of the iteration (RLlib's metrics reduction, result assembly)

Pure Python and numpy: no Ray, no torch.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Iterator, Mapping, Sequence

import numpy as np

from spade_rllib.artifacts.result_lookup import flatten

PHASES = ("sample_wait", "learn", "weight_sync", "outcomes", "components", "evaluation", "heldout", "checkpoint",
          "other")
COMPONENT_PREFIX = "component/"


class PhaseClock:
    """Wall seconds per phase since the last `pop()` (one owner: the algorithm's driver process)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + float(seconds)

    def pop(self, total_s: float) -> dict[str, float]:
        """This iteration's seconds per phase (every name of PHASES present), `other` = `total_s` minus
        the top-level phases; the clock starts afresh."""
        out = {name: 0.0 for name in PHASES}
        out.update(self.seconds)
        top = sum(out[name] for name in PHASES if name != "other")
        out["other"] = max(0.0, float(total_s) - top)
        self.seconds = {}
        return out


def phase_shares(phase_s: Mapping[str, float]) -> dict[str, float]:
    """Each phase of PHASES's share of their sum (the `component/<name>` rows are inside `components`)."""
    top = {k: float(v) for k, v in phase_s.items()
           if k in PHASES and isinstance(v, (int, float)) and math.isfinite(float(v))}
    total = sum(top.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in top.items()}


def phase_text(phase_s: Mapping[str, float], min_share: float = 0.01) -> str:
    """'learn 71%, sample_wait 12%, ...': the top-level phases of at least `min_share`, largest first."""
    shares = sorted(phase_shares(phase_s).items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v:.0%}" for k, v in shares if v >= min_share)


def phase_ms_text(phase_s: Mapping[str, float]) -> str:
    """'ms learn 212 sample_wait 3 ...': the top-level phases of one iteration that took 1 ms or more, in
    the order they run (iterations.log)."""
    parts = [f"{k} {1000 * float(phase_s[k]):.0f}" for k in PHASES
             if isinstance(phase_s.get(k), (int, float)) and 1000 * float(phase_s[k]) >= 1.0]
    return "ms " + " ".join(parts) if parts else ""


class PhaseTotals:
    """Seconds per phase summed over a run's iterations, and each iteration's env steps/s (the console's
    copy, read from the results; the summary prints it)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.rates: list[float] = []

    def add(self, phase_s: Mapping, rate: float | None) -> None:
        for k, v in flatten(phase_s).items():
            if isinstance(v, (int, float)) and math.isfinite(float(v)):
                self.seconds[k] = self.seconds.get(k, 0.0) + float(v)
        if rate is not None and math.isfinite(rate):
            self.rates.append(float(rate))


def rate_spread(rates: Sequence[float]) -> dict[str, float]:
    """p10 / median / p90 of per-iteration env steps/s (NaN where there are none)."""
    xs = [float(r) for r in rates if isinstance(r, (int, float)) and math.isfinite(r)]
    if not xs:
        return {"p10": math.nan, "median": math.nan, "p90": math.nan}
    p10, median, p90 = (float(q) for q in np.quantile(xs, (0.1, 0.5, 0.9)))
    return {"p10": p10, "median": median, "p90": p90}
