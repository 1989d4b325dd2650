"""Across-seed statistics without scipy: mean, sample standard deviation, Student-t confidence interval.

    t_quantile(p, df)          inverse CDF of Student's t (bisection on the CDF, which is the
                               regularized incomplete beta function: Numerical Recipes `betacf`)
    seed_interval(values, c)   mean +- t_{(1+c)/2, n-1} * s / sqrt(n)

Known values it reproduces (scipy.stats.t.ppf): t(0.975, 1) = 12.7062, t(0.975, 4) = 2.7764,
t(0.975, 9) = 2.2622, t(0.975, 30) = 2.0423.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df = {df!r}: must be > 0")
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p = {p!r}: must be in (0, 1)")
    if df <= 0:
        raise ValueError(f"df = {df!r}: must be > 0")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class SeedInterval:
    n: int
    mean: float
    std: float
    """Sample standard deviation (ddof = 1); NaN for n < 2."""
    low: float
    high: float
    confidence: float

    def describe(self, digits: int = 3) -> str:
        f = f"{{:.{digits}f}}"
        if self.n == 0:
            return "no finite values"
        if self.n < 2:
            return f"mean {f.format(self.mean)} (one seed: no interval)"
        return (f"mean {f.format(self.mean)}, std {f.format(self.std)}, {self.confidence:.0%} CI "
                f"[{f.format(self.low)}, {f.format(self.high)}] (t, n={self.n})")


def seed_interval(values: Sequence[float], confidence: float = 0.95) -> SeedInterval:
    """Mean, sample std and the two-sided Student-t interval of the mean over seeds (NaNs dropped)."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return SeedInterval(0, math.nan, math.nan, math.nan, math.nan, confidence)
    mean = sum(xs) / n
    if n < 2:
        return SeedInterval(1, mean, math.nan, math.nan, math.nan, confidence)
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * std / math.sqrt(n)
    return SeedInterval(n, mean, std, mean - half, mean + half, confidence)
