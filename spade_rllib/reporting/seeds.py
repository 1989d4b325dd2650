"""Runs of one recipe that differ only in their seed, read together: each final score's mean over the seeds
and its 95% Student-t interval (`sweeps.stats.seed_interval`, clipped to [0, 1]; no bootstrap: only the t
interval is shown).

Two training runs are seeds of one recipe when their resolved configs (`config.yaml`) are equal once
`experiment.seed`, `experiment.name` and `experiment.storage_path` are left out. A group of two or more
such runs gets one `SeedRow` per score of `final_evaluation.json` that every run of the group has: a
`<prefix>/<opponent>/score` key, or win + draw/2 where a prefix records only the rates (the held-out line's
still team). Runs without a config or a final evaluation are left out. Pure Python and numpy.

Each distinct trial counts once (`distinct_runs`): a resumed continuation (its `runinfo.json` records
`resumed_from`, a checkpoint of another trial read together) stands for its original, whose scores it carries on;
two trials of one recipe with the same seed (the same trial given twice, a copy, a rerun) count as one seed, the
one that sampled the most env steps. Each such merge is a note on the group (`SeedGroup.notes`).
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from spade_rllib.reporting.run_reader import TRAIN, RunData
from spade_rllib.sweeps.stats import SeedInterval, seed_interval

LEFT_OUT = ("seed", "name", "storage_path")
"""The `experiment` keys that may differ between seeds of one recipe."""
SUMMARY_PREFIXES = ("final/", "final_heldout/", "final_heldout_all/", "final_heldout_size/")
"""Rows the console prints (the per-map rows are in the HTML report only)."""


@dataclass(frozen=True)
class SeedRow:
    key: str
    """`<prefix>/<opponent>/score`, e.g. `final_heldout_size/large/bot:rusher/score`."""
    values: tuple[float, ...]
    """One score per run, in the group's run order."""
    interval: SeedInterval


@dataclass
class SeedGroup:
    """Runs of one recipe (configs equal but for the seed) and their final scores across seeds."""

    runs: list[RunData]
    seeds: list[Any]
    env_steps: list[Optional[int]]
    """Env steps each run sampled (its last result's lifetime count), None where not recorded."""
    rows: list[SeedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """One line per run left out of the count (a continuation's original, a second run of one seed)."""

    @property
    def label(self) -> str:
        name = (self.runs[0].config or {}).get("experiment", {}).get("name") or self.runs[0].label
        return f"{name}: seeds {', '.join(map(str, self.seeds))}"

    def env_steps_text(self) -> str:
        steps = [s for s in self.env_steps if s is not None]
        if not steps:
            return "env steps not recorded"
        lo, hi = min(steps), max(steps)
        return f"{lo:,} env steps" if lo == hi else f"{lo:,}-{hi:,} env steps"

    def summary_lines(self) -> list[str]:
        """The group as console lines: a header, then one line per held-out, size-class or final score."""
        lines = [f"across seeds: {self.label} ({len(self.runs)} runs, {self.env_steps_text()}); "
                 "score = win + draw/2, mean [95% t-interval]"]
        lines += [f"  note: {n}" for n in self.notes]
        for row in self.rows:
            if row.key.startswith(SUMMARY_PREFIXES):
                iv = row.interval
                lines.append(f"  {row.key[:-len('/score')]:<44} {iv.mean:.3f} [{iv.low:.3f}, {iv.high:.3f}]  "
                             f"({' '.join(f'{v:.2f}' for v in row.values)})")
        return lines


def recipe_key(config: dict) -> str:
    """The config as canonical JSON with the seed, name and storage path left out."""
    c = copy.deepcopy(config)
    exp = c.get("experiment") or {}
    for k in LEFT_OUT:
        exp.pop(k, None)
    return json.dumps(c, sort_keys=True, default=str)


def final_scores(final: dict) -> dict[str, float]:
    """`<prefix>/<opponent>/score` -> score for every prefix and opponent of a final evaluation; win + draw/2
    where only the rates are recorded. Non-finite values are left out."""
    scores: dict[str, float] = {}
    for k, v in final.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            continue
        if k.endswith("/score"):
            scores[k] = float(v)
        elif k.endswith("/win_rate"):
            base = k[:-len("/win_rate")]
            draw = final.get(base + "/draw_rate", 0.0)
            if base + "/score" not in final and isinstance(draw, (int, float)) and math.isfinite(draw):
                scores[base + "/score"] = float(v) + float(draw) / 2.0
    return scores


def _env_steps(run: RunData) -> Optional[int]:
    """The run's last recorded lifetime env steps (the x axis of its curves), None where only iterations are."""
    xs, unit = run.x_steps()
    finite = [v for v in xs if math.isfinite(v)] if unit == "env steps" else []
    return int(finite[-1]) if finite else None


def _trial_of(checkpoint: Any) -> Optional[Path]:
    """The trial directory of a checkpoint path (its parent, `checkpoint_<n>/`'s trial), resolved."""
    if not isinstance(checkpoint, str) or not checkpoint:
        return None
    p = Path(checkpoint).expanduser()
    trial = p.parent if p.name.startswith("checkpoint_") else p
    try:
        return trial.resolve()
    except OSError:
        return None


def distinct_runs(runs: Sequence[RunData]) -> tuple[list[RunData], list[str]]:
    """The runs with every resumed original replaced by its last continuation among `runs` (see the module
    docstring), and a note for each original joined to its continuation."""
    by_path = {r.path: r for r in runs}
    continued: dict[Path, RunData] = {}
    for run in runs:
        origin = _trial_of((run.runinfo or {}).get("resumed_from")) if run.kind == TRAIN else None
        if origin is not None and origin != run.path and origin in by_path:
            continued[origin] = run
    kept, notes = [], []
    for run in runs:
        if run.path not in continued:
            kept.append(run)
            continue
        last, seen = continued[run.path], {run.path}
        while last.path in continued and last.path not in seen:  # a continuation of a continuation
            seen.add(last.path)
            last = continued[last.path]
        notes.append(f"{last.label} resumes {run.label}: read as one run, its continuation's scores")
    return kept, notes


def seed_groups(runs: Sequence[RunData], confidence: float = 0.95) -> list[SeedGroup]:
    """The groups of two or more distinct training runs that are seeds of one recipe (one seed each), in the
    order first seen."""
    unique: dict[Path, RunData] = {}
    for run in runs:
        unique.setdefault(run.path, run)  # the same directory given twice is one run
    runs, joined = distinct_runs(list(unique.values()))
    order = {id(r): i for i, r in enumerate(runs)}
    by_recipe: dict[str, dict[Any, list[RunData]]] = {}
    for run in runs:
        if run.kind == TRAIN and run.config and run.final:
            seed = (run.config.get("experiment") or {}).get("seed")
            by_recipe.setdefault(recipe_key(run.config), {}).setdefault(json.dumps(seed, default=str), []).append(run)
    groups = []
    for by_seed in by_recipe.values():
        members, notes = [], []
        for same in by_seed.values():
            best = max(same, key=lambda r: (_env_steps(r) or -1))
            members.append(best)
            if len(same) > 1:
                others = ", ".join(r.label for r in same if r is not best)
                notes.append(f"{others} and {best.label} are the same seed "
                             f"{(best.config.get('experiment') or {}).get('seed')} of one recipe: counted once "
                             f"({best.label}, the most env steps)")
        if len(members) < 2:
            continue
        members.sort(key=lambda r: order[id(r)])
        labels = {r.label for r in members}
        notes = [n for n in joined if n.split(" resumes ")[0] in labels] + notes
        scores = [final_scores(r.final or {}) for r in members]
        shared = [k for k in scores[0] if all(k in s for s in scores[1:])]
        group = SeedGroup(runs=members, seeds=[(r.config.get("experiment") or {}).get("seed") for r in members],
                          env_steps=[_env_steps(r) for r in members], notes=notes)
        for key in shared:
            values = tuple(s[key] for s in scores)
            group.rows.append(SeedRow(key, values, seed_interval(values, confidence, bounds=(0.0, 1.0), n_boot=0)))
        groups.append(group)
    return groups
