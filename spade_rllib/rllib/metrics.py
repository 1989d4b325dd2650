"""The trainer's result metrics, from `EpisodeOutcome` records to flat "a/b/c" keys.

* `win_rates` (W/D/L, score, games and mean length per opponent), `placeholder_win_rates` (NaN columns
  from iteration 1), `team_returns` (one-team games: return, no W/D/L), `counter_means` (the env's
  counters, CTF's tags and captures), `role_metrics` (a role main's W/D/L plus its returns);
* `nest_into`: flat keys into RLlib's nested result dict.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Optional

import numpy as np

from spade_rllib.core.outcome import RESULTS, EpisodeOutcome


def outcome_summary(outcomes: Iterable[EpisodeOutcome]) -> dict:
    """The learner's W/D/L per opponent: {opponent: (wins, draws, losses)} (one-team records skipped)."""
    table: dict[str, list[int]] = {}
    for outcome in map(EpisodeOutcome.of, outcomes):
        result = outcome.learner_result
        if result is None:
            continue
        table.setdefault(str(outcome.opponent), [0, 0, 0])[RESULTS.index(result)] += 1
    return {k: tuple(v) for k, v in table.items()}


def win_rates(outcomes: Iterable[EpisodeOutcome], prefix: str) -> dict:
    """Flat metrics {prefix/<opp>/win_rate, draw_rate, loss_rate, score, games, mean_length}; score = win + draw/2."""
    outcomes = [EpisodeOutcome.of(o) for o in outcomes]
    out: dict[str, Any] = {}
    lengths: dict[str, list[int]] = {}
    for outcome in outcomes:
        lengths.setdefault(str(outcome.opponent), []).append(outcome.length)
    for opp, (w, d, l) in outcome_summary(outcomes).items():
        n = max(1, w + d + l)
        out[f"{prefix}/{opp}/win_rate"] = w / n
        out[f"{prefix}/{opp}/draw_rate"] = d / n
        out[f"{prefix}/{opp}/loss_rate"] = l / n
        out[f"{prefix}/{opp}/score"] = (w + 0.5 * d) / n
        out[f"{prefix}/{opp}/games"] = w + d + l
        ls = lengths.get(opp, [])
        out[f"{prefix}/{opp}/mean_length"] = sum(ls) / len(ls) if ls else math.nan
    return out


TEAM = "team"
"""Metric key of a one-team (cooperative or single-agent) game's evaluation: `<prefix>/team/...`."""


def team_returns(outcomes: Iterable[EpisodeOutcome], prefix: str) -> dict:
    """A one-team game's evaluation as flat metrics {prefix/team/return_mean, return_ci95, games,
    mean_length, success_rate (only when the env reported success)}: no winner, no W/D/L."""
    outcomes = [EpisodeOutcome.of(o) for o in outcomes]
    returns = np.asarray([o.learner_return for o in outcomes], np.float64)
    n = len(returns)
    out: dict[str, Any] = {f"{prefix}/{TEAM}/games": n}
    out[f"{prefix}/{TEAM}/return_mean"] = float(returns.mean()) if n else math.nan
    out[f"{prefix}/{TEAM}/return_ci95"] = float(1.96 * returns.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    out[f"{prefix}/{TEAM}/mean_length"] = float(np.mean([o.length for o in outcomes])) if n else math.nan
    flags = [o.success for o in outcomes if o.success is not None]
    if flags:
        out[f"{prefix}/{TEAM}/success_rate"] = sum(flags) / len(flags)
    return out


def counter_means(outcomes: Iterable[EpisodeOutcome], prefix: str = "counters") -> dict:
    """Per-episode means of the env's counters (CTF: tags, flag_pickups, captures), learner's side and
    the opponents': {prefix/<name>, prefix/<name>_opponent}; only counters some episode reported."""
    sums: dict[str, list[float]] = {}
    n = 0
    for outcome in map(EpisodeOutcome.of, outcomes):
        n += 1
        for name in outcome.counters:
            mine, theirs = outcome.counter(name)
            row = sums.setdefault(name, [0.0, 0.0])
            row[0] += mine
            row[1] += theirs
    return {k: v for name, (mine, theirs) in sums.items()
            for k, v in ((f"{prefix}/{name}", mine / n), (f"{prefix}/{name}_opponent", theirs / n))}


def placeholder_win_rates(opponents: list, prefix: str) -> dict:
    """NaN entries for every opponent so progress.csv has the columns from iteration 1."""
    out = {}
    for opp in opponents:
        for k in ("win_rate", "draw_rate", "loss_rate", "score", "games", "mean_length"):
            out[f"{prefix}/{opp}/{k}"] = math.nan
    return out


def role_metrics(outcomes: list, prefix: str, opponents: Optional[list] = None) -> dict:
    """A role main's W/D/L per opponent (`win_rates`) plus its mean return, per opponent and over all
    (`<prefix>/return_mean`, `<prefix>/episodes`): role games are read by their returns."""
    out = win_rates(outcomes, prefix)
    by_opponent: dict[str, list[float]] = {str(o): [] for o in (opponents or [])}
    for o in outcomes:
        by_opponent.setdefault(str(o.opponent), []).append(float(o.learner_return))
    for opp, values in by_opponent.items():
        out[f"{prefix}/{opp}/return_mean"] = float(np.mean(values)) if values else math.nan
    every = [float(o.learner_return) for o in outcomes]
    out[f"{prefix}/return_mean"] = float(np.mean(every)) if every else math.nan
    out[f"{prefix}/episodes"] = float(len(every))
    return out


def nest_into(results: dict, flat: dict) -> None:
    """Put "a/b/c" keys into results["a"]["b"]["c"] (Tune flattens them back to "a/b/c")."""
    for key, value in flat.items():
        parts = key.split("/")
        node = results
        for p in parts[:-1]:
            nxt = node.get(p)
            if not isinstance(nxt, dict):
                nxt = {}
                node[p] = nxt
            node = nxt
        node[parts[-1]] = float(value) if isinstance(value, (int, float, np.floating, np.integer)) else value


__all__ = ["TEAM", "counter_means", "nest_into", "outcome_summary", "placeholder_win_rates", "role_metrics",
           "team_returns", "win_rates"]
