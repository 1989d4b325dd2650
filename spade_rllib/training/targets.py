"""Verdicts of a run against the targets its config names (`evaluation.targets`), pure Python.

`evaluation.targets` maps an evaluation opponent to the least score (win + draw/2) main must reach
against it in the final evaluation, e.g. `{random: 0.9, "bot:rusher": 0.75}`. A config without
targets but with `evaluation.target_win_rate` keeps the older rule: a win rate of at least that against
`random` (when `random` is an evaluation opponent). A config with neither has no verdict: no target
is assumed (a game's optimum vs random need not be a win, e.g. 0.5 in rock-paper-scissors), and a
cooperative game (one team) has no win rate at all. Both the console summary and the HTML report
take their PASS / BELOW from here, so a verdict always names its opponent, its metric and its bar.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

SCORE, WIN_RATE = "score", "win rate"


@dataclass(frozen=True)
class Verdict:
    opponent: str
    metric: str
    """SCORE (win + draw/2) or WIN_RATE."""
    value: float
    target: float

    @property
    def met(self) -> bool:
        return math.isfinite(self.value) and self.value >= self.target

    def describe(self) -> str:
        return f"{self.metric} {self.value:.3f} vs target {self.target:g}"


def configured_targets(config: Mapping[str, Any]) -> list[tuple[str, str, float]]:
    """(opponent, metric, target) from a resolved config dict (`RunConfig.to_dict()` or config.yaml)."""
    ev = (config or {}).get("evaluation") or {}
    targets = ev.get("targets") or {}
    if targets:
        return [(str(opp), SCORE, float(t)) for opp, t in targets.items()]
    if ev.get("target_win_rate") is not None and "random" in (ev.get("opponents") or ["random"]):
        return [("random", WIN_RATE, float(ev["target_win_rate"]))]
    return []


def target_verdicts(config: Mapping[str, Any], final: Mapping[str, float], prefix: str = "final") -> list[Verdict]:
    """One `Verdict` per configured target whose opponent the final evaluation played."""
    out = []
    for opp, metric, target in configured_targets(config):
        w = final.get(f"{prefix}/{opp}/win_rate")
        if not isinstance(w, (int, float)):
            continue
        d = final.get(f"{prefix}/{opp}/draw_rate", 0.0)
        value = float(w) + 0.5 * float(d) if metric == SCORE else float(w)
        out.append(Verdict(opp, metric, value, target))
    return out


def score_text(value: float, target: float | None = None) -> str:
    """`value` with 2 decimals, or 3 where 2 would round it across `target` (0.796 against 0.8 never reads
    '0.80 BELOW TARGET')."""
    text = f"{value:.2f}"
    if target is not None and (float(text) >= target) != (value >= target):
        text = f"{value:.3f}"
    return text
