"""Across-seed statistics: mean with a Student-t interval, and the interquartile mean (IQM) with a
percentile-bootstrap interval, as rliable reports aggregate RL results (Agarwal et al. 2021,
"Deep RL at the Edge of the Statistical Precipice"); both intervals clipped to the metric's range.

    t_quantile(p, df)                  scipy.stats.t.ppf
    iqm(values)                        mean of the middle 50% (scipy.stats.trim_mean(x, 0.25), rliable's IQM)
    bootstrap_interval(values, stat)   percentile bootstrap over seeds (resampled with replacement)
    seed_interval(values, c, bounds)   all of the above for one group of seeds
    metric_bounds(key)                 (0, 1) for scores and rates, else None (unbounded)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from scipy import stats as _stats

N_BOOTSTRAP = 2000
"""Bootstrap resamples per interval."""
BOUNDED_SUFFIXES = ("score", "win_rate", "draw_rate", "loss_rate")


def t_quantile(p: float, df: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p = {p!r}: must be in (0, 1)")
    if df <= 0:
        raise ValueError(f"df = {df!r}: must be > 0")
    return float(_stats.t.ppf(p, df))


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df = {df!r}: must be > 0")
    return float(_stats.t.cdf(t, df))


def iqm(values: Sequence[float]) -> float:
    """Interquartile mean: the mean of the middle 50% of the values (rliable's aggregate)."""
    xs = np.asarray(values, dtype=float)
    return float(_stats.trim_mean(xs, proportiontocut=0.25)) if xs.size else math.nan


def bootstrap_interval(values: Sequence[float], stat: Callable[[np.ndarray], float] = iqm, confidence: float = 0.95,
                       n_boot: int = N_BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of `stat` over the values (seeds resampled with replacement); NaN for fewer
    than two values or `n_boot` < 1 (no bootstrap)."""
    xs = np.asarray(values, dtype=float)
    if xs.size < 2 or n_boot < 1:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, xs.size, size=(n_boot, xs.size))
    boots = np.array([stat(xs[row]) for row in idx])
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(boots, tail)), float(np.quantile(boots, 1.0 - tail))


def metric_bounds(key: str) -> Optional[tuple[float, float]]:
    """The range a metric can take: [0, 1] for scores and win/draw/loss rates, None when unbounded."""
    return (0.0, 1.0) if key.rstrip("/").endswith(BOUNDED_SUFFIXES) else None


def _clip(x: float, bounds: Optional[tuple[float, float]]) -> float:
    return x if bounds is None or math.isnan(x) else min(max(x, bounds[0]), bounds[1])


@dataclass(frozen=True)
class SeedInterval:
    n: int
    mean: float
    std: float
    """Sample standard deviation (ddof = 1); NaN for n < 2."""
    low: float
    """Student-t interval of the mean, clipped to `bounds`."""
    high: float
    confidence: float
    iqm: float = math.nan
    """Interquartile mean over the seeds."""
    iqm_low: float = math.nan
    """Percentile-bootstrap interval of the IQM, clipped to `bounds`."""
    iqm_high: float = math.nan
    bounds: Optional[tuple[float, float]] = None

    def describe(self, digits: int = 3) -> str:
        f = f"{{:.{digits}f}}"
        if self.n == 0:
            return "no finite values"
        if self.n < 2:
            return f"mean {f.format(self.mean)} (one seed: no interval)"
        clipped = f", clipped to [{self.bounds[0]:g}, {self.bounds[1]:g}]" if self.bounds else ""
        return (f"mean {f.format(self.mean)}, std {f.format(self.std)}, {self.confidence:.0%} CI "
                f"[{f.format(self.low)}, {f.format(self.high)}] (t); IQM {f.format(self.iqm)} "
                f"[{f.format(self.iqm_low)}, {f.format(self.iqm_high)}] (bootstrap); n={self.n}{clipped}")


def seed_interval(values: Sequence[float], confidence: float = 0.95, bounds: Optional[tuple[float, float]] = None,
                  n_boot: int = N_BOOTSTRAP, seed: int = 0) -> SeedInterval:
    """Mean, sample std and the two-sided t interval of the mean, plus the IQM and its bootstrap
    interval, over seeds (NaNs dropped); intervals clipped to `bounds` (the metric's range). `n_boot=0` skips the
    bootstrap (the IQM's interval is NaN) where only the t interval is shown."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return SeedInterval(0, math.nan, math.nan, math.nan, math.nan, confidence, bounds=bounds)
    mean = float(np.mean(xs))
    if n < 2:
        return SeedInterval(1, mean, math.nan, math.nan, math.nan, confidence, iqm=mean, bounds=bounds)
    std = float(np.std(xs, ddof=1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * std / math.sqrt(n)
    lo, hi = bootstrap_interval(xs, iqm, confidence, n_boot, seed)
    return SeedInterval(n, mean, std, _clip(mean - half, bounds), _clip(mean + half, bounds), confidence,
                        iqm=iqm(xs), iqm_low=_clip(lo, bounds), iqm_high=_clip(hi, bounds), bounds=bounds)
