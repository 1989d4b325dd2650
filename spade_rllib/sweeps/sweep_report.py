"""End-of-sweep report: trials table, `summary.csv`, per-seed intervals, plots, best checkpoint.

Files written into the sweep's experiment directory (next to the trial directories):
  summary.csv          one row per trial: params, status, iterations, env steps, final/best
                       objective, best checkpoint, trial dir
  groups.csv           when the space has experiment.seed: one row per configuration (all params
                       but the seed) with per-seed final values, mean, std and the t interval
  best_checkpoint.txt  the best trial's best checkpoint (for `python -m spade_rllib.evaluate --checkpoint`)
  metric_over_time.png the objective per iteration for every trial
  heatmap.png          with `report.heatmap`: final objective (mean over seeds) on the 2-D grid
  sweep.json           the resolved sweep spec, metric candidates and command line
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from spade_rllib.artifacts.atomic_io import atomic_open, atomic_path, write_text
from spade_rllib.sweeps.sweep_spec import SEED_KEY, SweepSpec
from spade_rllib.sweeps.stats import SeedInterval, metric_bounds, seed_interval

OBJECTIVE = "sweep/objective"


@dataclass
class TrialRow:
    trial_id: str
    status: str
    params: dict
    iterations: int
    env_steps: int
    final: float
    best: float
    best_checkpoint: Optional[str]
    path: Optional[str]
    objective_key: str = ""
    history: list = field(default_factory=list)  # [(training_iteration, objective)]


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not math.isnan(float(v))


def rows_from_results(results, mode: str) -> list[TrialRow]:
    """One `TrialRow` per Tune `Result` of a `ResultGrid`."""
    from spade_rllib.sweeps.trainable import lookup

    rows = []
    for r in results:
        m = r.metrics or {}
        history = []
        df = None
        try:
            df = r.metrics_dataframe
        except Exception:
            df = None
        if df is not None and OBJECTIVE in df.columns and "training_iteration" in df.columns:
            history = [(int(i), float(v)) for i, v in zip(df["training_iteration"], df[OBJECTIVE])]
        finite = [v for _, v in history if _finite(v)]
        best = (max(finite) if mode == "max" else min(finite)) if finite else math.nan
        ckpt = None
        try:
            bc = r.get_best_checkpoint(OBJECTIVE, mode) if r.best_checkpoints else None
        except Exception:
            bc = None
        bc = bc or r.checkpoint
        if bc is not None:
            ckpt = bc.path
        status = "ERROR" if r.error is not None else "TERMINATED"
        final = lookup(m, OBJECTIVE)
        rows.append(TrialRow(
            trial_id=str(m.get("trial_id") or Path(r.path).name),
            status=status,
            params=dict(lookup(m, "sweep/params") or {}),
            iterations=int(m.get("training_iteration", 0) or 0),
            env_steps=int(lookup(m, "env_runners/num_env_steps_sampled_lifetime") or 0),
            final=float(final) if _finite(final) else math.nan,
            best=best,
            best_checkpoint=ckpt,
            path=r.path,
            objective_key=str(lookup(m, "sweep/objective_key") or ""),
            history=history,
        ))
    rows.sort(key=lambda row: row.trial_id)
    return rows


def best_row(rows: list[TrialRow], mode: str) -> Optional[TrialRow]:
    ok = [r for r in rows if _finite(r.final)]
    if not ok:
        return None
    return (max if mode == "max" else min)(ok, key=lambda r: r.final)


def param_keys(rows: list[TrialRow]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        for k in r.params:
            if k not in keys:
                keys.append(k)
    return keys


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def trials_table(rows: list[TrialRow], metric_label: str) -> str:
    """Plain fixed-width table (no terminal width assumptions)."""
    keys = param_keys(rows)
    header = ["trial", "status", *keys, "iter", f"final {metric_label}", "best", "best checkpoint"]
    body = [[r.trial_id, r.status, *[_fmt(r.params.get(k, "")) for k in keys], str(r.iterations), _fmt(r.final), _fmt(r.best),
             _short_ckpt(r.best_checkpoint)] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *[line(b) for b in body]])


def _short_ckpt(path: Optional[str]) -> str:
    if not path:
        return "-"
    p = Path(path)
    return f"{p.parent.name}/{p.name}"


def write_summary_csv(rows: list[TrialRow], path: Path) -> None:
    keys = param_keys(rows)
    with atomic_open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial_id", "status", *keys, "iterations", "env_steps", "final_objective", "best_objective", "objective_key",
                    "best_checkpoint", "trial_dir"])
        for r in rows:
            w.writerow([r.trial_id, r.status, *[r.params.get(k, "") for k in keys], r.iterations, r.env_steps, r.final, r.best,
                        r.objective_key, r.best_checkpoint or "", r.path or ""])


@dataclass
class SeedGroup:
    params: dict  # every param but the seed
    seeds: list
    values: list
    interval: SeedInterval


def seed_groups(rows: list[TrialRow], confidence: float) -> list[SeedGroup]:
    """Trials grouped by every param but `experiment.seed`, with their across-seed intervals (clipped to
    the objective's range: [0, 1] for a score or rate)."""
    keys = {r.objective_key for r in rows if r.objective_key}
    bounds = metric_bounds(keys.pop()) if len(keys) == 1 else None
    groups: dict[tuple, list[TrialRow]] = {}
    for r in rows:
        key = tuple(sorted((k, repr(v)) for k, v in r.params.items() if k != SEED_KEY))
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda r: r.params.get(SEED_KEY, 0))
        params = {k: v for k, v in members[0].params.items() if k != SEED_KEY}
        values = [r.final for r in members]
        out.append(SeedGroup(params, [r.params.get(SEED_KEY) for r in members], values, seed_interval(values, confidence, bounds=bounds)))
    return out


def write_groups_csv(groups: list[SeedGroup], path: Path) -> None:
    keys: list[str] = []
    for g in groups:
        keys += [k for k in g.params if k not in keys]
    with atomic_open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*keys, "n", "mean", "std", "ci_low", "ci_high", "confidence", "seeds", "values", "iqm", "iqm_low",
                    "iqm_high"])
        for g in groups:
            iv = g.interval
            w.writerow([*[g.params.get(k, "") for k in keys], iv.n, iv.mean, iv.std, iv.low, iv.high, iv.confidence,
                        " ".join(str(s) for s in g.seeds), " ".join(f"{v:.6g}" for v in g.values), iv.iqm, iv.iqm_low,
                        iv.iqm_high])


def plot_over_time(rows: list[TrialRow], path: Path, metric_label: str) -> bool:
    if not any(r.history for r in rows):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for r in rows:
        if r.history:
            xs, ys = zip(*r.history)
            label = r.trial_id + (" " + ", ".join(f"{k.split('.')[-1]}={_fmt(v)}" for k, v in r.params.items()) if r.params else "")
            ax.plot(xs, ys, marker=".", label=label)
    ax.set_xlabel("training iteration")
    ax.set_ylabel(metric_label)
    ax.set_title("objective per trial")
    ax.grid(alpha=0.3)
    if len(rows) <= 16:
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return True


def plot_heatmap(rows: list[TrialRow], keys: list, path: Path, metric_label: str) -> bool:
    """Mean final objective (over every other param, e.g. seeds) on the grid of two params."""
    kx, ky = keys
    xs = sorted({r.params.get(kx) for r in rows if kx in r.params})
    ys = sorted({r.params.get(ky) for r in rows if ky in r.params})
    if not xs or not ys:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    grid = np.full((len(ys), len(xs)), np.nan)
    for iy, y in enumerate(ys):
        for ix, x in enumerate(xs):
            vals = [r.final for r in rows if r.params.get(kx) == x and r.params.get(ky) == y and _finite(r.final)]
            if vals:
                grid[iy, ix] = float(np.mean(vals))
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(xs), 1.4 + 0.9 * len(ys)))
    im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [_fmt(x) for x in xs])
    ax.set_yticks(range(len(ys)), [_fmt(y) for y in ys])
    ax.set_xlabel(kx)
    ax.set_ylabel(ky)
    for iy in range(len(ys)):
        for ix in range(len(xs)):
            ax.text(ix, iy, _fmt(grid[iy, ix]), ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(im, ax=ax, label=f"final {metric_label} (mean)")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return True


def write_report(spec: SweepSpec, rows: list[TrialRow], out_dir: Path, metric_label: str, printer=print) -> dict:
    """Print the table and write every report file; returns {"best": TrialRow|None, "files": [...], "groups": [...]}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    printer(trials_table(rows, metric_label))
    summary = out_dir / "summary.csv"
    write_summary_csv(rows, summary)
    files.append(summary)
    groups: list[SeedGroup] = []
    if any(SEED_KEY in r.params for r in rows):
        groups = seed_groups(rows, spec.report.confidence)
        write_groups_csv(groups, out_dir / "groups.csv")
        files.append(out_dir / "groups.csv")
        printer(f"across seeds (final {metric_label}):")
        for g in groups:
            label = ", ".join(f"{k}={_fmt(v)}" for k, v in g.params.items()) or "all trials"
            per_seed = ", ".join(f"seed {s}: {_fmt(v)}" for s, v in zip(g.seeds, g.values))
            printer(f"  {label}: {g.interval.describe()}")
            printer(f"    per seed: {per_seed}")
    if plot_over_time(rows, out_dir / "metric_over_time.png", metric_label):
        files.append(out_dir / "metric_over_time.png")
    if spec.report.heatmap and plot_heatmap(rows, spec.report.heatmap, out_dir / "heatmap.png", metric_label):
        files.append(out_dir / "heatmap.png")
    best = best_row(rows, spec.metric.mode)
    if best is not None and best.best_checkpoint:
        write_text(out_dir / "best_checkpoint.txt", best.best_checkpoint + "\n")
        files.append(out_dir / "best_checkpoint.txt")
    return {"best": best, "files": files, "groups": groups}
