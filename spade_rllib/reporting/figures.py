"""The report's figures: matplotlib charts as PNG bytes and heatmaps as HTML tables.

Every function takes `RunData` records (several runs overlay: one colour per run) and returns
None when the runs hold nothing to show, so a section only appears when it has data. Scores are
main's score, win + draw/2, in [0, 1]; curves are smoothed with an exponential moving average
(the raw points are drawn faintly underneath). Exact exploitability (OpenSpiel games) is drawn unsmoothed, one
line per player; `exploitability_curves` reads several runs as seeds of one recipe (mean and t interval).
"""
from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from spade_rllib.reporting.run_reader import EVAL, TRAIN, RunData

SMOOTHING = 0.6
"""EMA weight of the previous smoothed value (TensorBoard's slider; 0 = raw)."""
TOP_K_PAYOFF = 16
"""Payoff matrices of more players show the top-k by rating (the full table is payoff.csv)."""
TOP_K_PLAN = 8
"""PFSP distribution: the most-planned members, the rest summed as 'other'."""
DPI = 90
SELF = "self"
SUMMARY_KEYS = ("ladder", "iteration", "eval_s", "skipped", "score", "win_rate", "draw_rate", "mean_length")
"""`heldout/<key>` entries that are not opponents."""


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return buf.getvalue()


def ema(y: np.ndarray, weight: float = SMOOTHING) -> np.ndarray:
    """Exponential moving average over the finite values; NaN stays NaN."""
    out = np.full_like(y, np.nan, dtype=float)
    acc = None
    for i, v in enumerate(y):
        if not math.isfinite(v):
            continue
        acc = v if acc is None else weight * acc + (1.0 - weight) * v
        out[i] = acc
    return out


def _colours(n: int) -> list:
    cmap = _plt().get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


SNAPSHOTS = "league snapshots"
"""Training opponents `<role>_v<N>` (frozen league snapshots) share one curve, games-weighted."""


def _is_snapshot(opp: str) -> bool:
    head, sep, tail = opp.rpartition("_v")
    return bool(head and sep and tail.isdigit())


def opponents(run: RunData, prefix: str) -> list[str]:
    """Opponents with a `<prefix>/<opp>/win_rate` series, in first-seen order; snapshots as one."""
    out = []
    for key in run.series:
        parts = key.split("/")
        if len(parts) == 3 and parts[0] == prefix and parts[2] == "win_rate":
            name = SNAPSHOTS if _is_snapshot(parts[1]) else parts[1]
            if name not in out:
                out.append(name)
    return out


def _rate(run: RunData, prefix: str, opp: str, k: str) -> Optional[np.ndarray]:
    """`<prefix>/<opp>/<k>`; for SNAPSHOTS the games-weighted mean over every snapshot."""
    if opp != SNAPSHOTS:
        return run.column(f"{prefix}/{opp}/{k}")
    num = den = None
    for key in run.series:
        parts = key.split("/")
        if len(parts) == 3 and parts[0] == prefix and parts[2] == k and _is_snapshot(parts[1]):
            games = run.column(f"{prefix}/{parts[1]}/games")
            games = np.ones_like(run.series[key]) if games is None else np.nan_to_num(games)
            value = np.nan_to_num(run.series[key]) * games
            num = value if num is None else num + value
            den = games if den is None else den + games
    if num is None:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def score_series(run: RunData, prefix: str, opp: str) -> Optional[np.ndarray]:
    w, d = _rate(run, prefix, opp, "win_rate"), _rate(run, prefix, opp, "draw_rate")
    if w is None:
        return None
    return w + 0.5 * (d if d is not None else 0.0)


def _grid(n: int, per_row: int = 3, size=(4.2, 2.9)):
    plt = _plt()
    rows = max(1, math.ceil(n / per_row))
    cols = min(per_row, n)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _curve(ax, x, y, colour, label) -> None:
    ok = np.isfinite(y) & np.isfinite(x)
    if not ok.any():
        return
    ax.plot(x[ok], y[ok], ".", color=colour, alpha=0.25, markersize=4)
    ax.plot(x[ok], ema(y)[ok], "-", color=colour, label=label, linewidth=1.6)


def score_curves(runs: Sequence[RunData], prefix: str = "eval", title: str = "periodic evaluation") -> Optional[bytes]:
    """Main's score per opponent over training, one panel per opponent, runs overlaid."""
    runs = [r for r in runs if r.kind == TRAIN]
    opps: list[str] = []
    for run in runs:
        opps += [o for o in opponents(run, prefix) if o not in opps]
    if not opps:
        return None
    return _score_panels(runs, opps, lambda run, opp: score_series(run, prefix, opp), lambda opp: f"{title}: vs {opp}",
                         ylabel="score (win + draw/2)")


def _score_panels(runs: Sequence[RunData], names: Sequence[str], series, title, ylabel: Optional[str] = None) -> bytes:
    """One panel per name, the runs' `series(run, name)` overlaid as scores in [0, 1] over env steps."""
    fig, axes = _grid(len(names))
    colours = _colours(len(runs))
    for ax, name in zip(axes, names):
        for run, colour in zip(runs, colours):
            y = series(run, name)
            if y is not None:
                x, xlabel = run.x_steps()
                _curve(ax, x, y, colour, run.label)
                ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(title(name), fontsize=9)
        ax.set_ylim(-0.03, 1.03)
        if ylabel:
            ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    if len(runs) > 1:
        axes[0].legend(fontsize=7, loc="lower right")
    return _png(fig)


def wdl_areas(run: RunData, prefix: str = "eval") -> Optional[bytes]:
    """Stacked win / draw / loss shares per opponent over training (one run)."""
    opps = opponents(run, prefix)
    if run.kind != TRAIN or not opps:
        return None
    fig, axes = _grid(len(opps), size=(4.2, 2.5))
    x, xlabel = run.x_steps()
    for ax, opp in zip(axes, opps):
        cols = [_rate(run, prefix, opp, k) for k in ("win_rate", "draw_rate", "loss_rate")]
        if any(c is None for c in cols):
            ax.set_visible(False)
            continue
        ok = np.all([np.isfinite(c) for c in cols], axis=0) & np.isfinite(x)
        if not ok.any():
            ax.set_visible(False)
            continue
        ax.stackplot(x[ok], *[ema(c)[ok] for c in cols], labels=("win", "draw", "loss"),
                     colors=("#3a9d5d", "#c9c9c9", "#d0504a"), alpha=0.9)
        ax.set_ylim(0, 1)
        ax.set_title(f"W/D/L vs {opp}", fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7, loc="upper left")
    return _png(fig)


def heldout_levels(last: dict) -> dict[str, dict[str, dict]]:
    """{level: {opponent: metrics}} from a result's `heldout` section (aggregates left out)."""
    held = last.get("heldout") or {}
    out = {}
    for level, node in held.items():
        if isinstance(node, dict) and node and all(isinstance(v, dict) for v in node.values()):
            out[level] = node
    return out


def heldout_columns(levels: dict[str, dict[str, dict]]) -> list[str]:
    """The opponents of `heldout_levels(...)` in first-seen order, main's self-play column last."""
    cols: list[str] = []
    for node in levels.values():
        cols += [o for o in node if o not in cols]
    return [c for c in cols if c != SELF] + ([SELF] if SELF in cols else [])


def heldout_curves(runs: Sequence[RunData]) -> Optional[bytes]:
    """Main's held-out score per opponent (mean over the maps) and the ladder mean, over training."""
    runs = [r for r in runs if r.kind == TRAIN]
    keys: list[str] = []
    for run in runs:
        for key in run.series:
            parts = key.split("/")
            if len(parts) == 3 and parts[0] == "heldout" and parts[2] == "score" and parts[1] not in keys:
                if not any(k.startswith(f"heldout/{parts[1]}/") and k.count("/") == 3 for k in run.series):
                    keys.append(parts[1])
    if not keys:
        return None
    return _score_panels(runs, keys, lambda run, opp: run.column(f"heldout/{opp}/score"),
                         lambda opp: f"held-out maps: vs {opp}" if opp != "ladder" else "held-out maps: ladder mean")


def _generation(member: str) -> Optional[int]:
    head, sep, tail = member.rpartition("_v")
    return int(tail) if sep and tail.isdigit() else None


def league_ratings(run: RunData) -> dict[str, float]:
    """{member: rating} from league.csv, else from the last result's league/rating."""
    out = {}
    for row in run.league:
        try:
            out[row["member"]] = float(row["rating"])
        except (KeyError, TypeError, ValueError):
            continue
    if not out:
        rating = (run.last.get("league") or {}).get("rating") or {}
        out = {k: float(v) for k, v in rating.items() if isinstance(v, (int, float))}
    return out


def league_elo(runs: Sequence[RunData]) -> Optional[bytes]:
    """Elo of each frozen snapshot by generation (main_v<N> at N), the bots as horizontal reference lines."""
    runs = [r for r in runs if r.kind == TRAIN and league_ratings(r)]
    if not runs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    colours = _colours(len(runs))
    drawn_refs: set[str] = set()
    for run, colour in zip(runs, colours):
        ratings = league_ratings(run)
        snaps = sorted((g, r, m) for m, r in ratings.items() if (g := _generation(m)) is not None)
        by_role: dict[str, list] = {}
        for g, r, m in snaps:
            by_role.setdefault(m.rpartition("_v")[0], []).append((g, r))
        for role, points in by_role.items():
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", color=colour, label=f"{run.label}: {role}" if len(runs) > 1 or len(by_role) > 1 else role,
                    linestyle="-" if role == "main" else "--", markersize=4)
        for member, rating in ratings.items():
            if _generation(member) is None and member not in drawn_refs and member != "main":
                drawn_refs.add(member)
                ax.axhline(rating, color="grey", linewidth=0.8, linestyle=":")
                ax.annotate(member, (1.0, rating), xycoords=("axes fraction", "data"), fontsize=7, color="dimgrey",
                            ha="left", va="center", annotation_clip=False)
    ax.set_xlabel("snapshot generation")
    ax.set_ylabel("Elo (league ratings)")
    ax.set_title("league Elo by snapshot generation; dotted: scripted references", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return _png(fig)


def pfsp_distribution(run: RunData) -> Optional[bytes]:
    """Planned opponent probabilities (`league/plan/<member>`) over training, stacked."""
    keys = [k for k in run.series if k.startswith("league/plan/")]
    if run.kind != TRAIN or not keys:
        return None
    x, xlabel = run.x_steps()
    values = {k.rpartition("/")[2]: np.nan_to_num(run.series[k], nan=0.0) for k in keys}
    order = sorted(values, key=lambda m: -values[m].sum())
    top, rest = order[:TOP_K_PLAN], order[TOP_K_PLAN:]
    layers = [values[m] for m in top]
    labels = list(top)
    if rest:
        layers.append(np.sum([values[m] for m in rest], axis=0))
        labels.append(f"other ({len(rest)})")
    ok = np.isfinite(x)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    cmap = plt.get_cmap("tab20")
    ax.stackplot(x[ok], *[layer[ok] for layer in layers], labels=labels, colors=[cmap(i % 20) for i in range(len(labels))])
    ax.set_ylim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("planned share of main's games")
    ax.set_title(f"{run.label}: matchmaking plan over training ('main' = mirror self-play)", fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)


CURRICULUM_PANELS = (
    ("curriculum/difficulty", "curriculum difficulty"),
    ("curriculum/size_mean", "mean level size (cells per side)"),
    ("curriculum/score_mean", "PLR buffer: mean level score"),
    ("curriculum/score_max", "PLR buffer: max level score"),
    ("curriculum/buffer_size", "PLR buffer size"),
    ("curriculum/replay_share", "PLR replay share"),
)


def curriculum(runs: Sequence[RunData]) -> Optional[bytes]:
    """Difficulty, level size and the PLR buffer's scores over training; runs overlaid."""
    runs = [r for r in runs if r.kind == TRAIN]
    panels = [(k, t) for k, t in CURRICULUM_PANELS
              if any(r.column(k) is not None and np.isfinite(r.column(k)).any() for r in runs)]
    if not panels:
        return None
    fig, axes = _grid(len(panels))
    colours = _colours(len(runs))
    for ax, (key, title) in zip(axes, panels):
        for run, colour in zip(runs, colours):
            y = run.column(key)
            if y is None:
                continue
            x, xlabel = run.x_steps()
            ok = np.isfinite(y) & np.isfinite(x)
            ax.plot(x[ok], y[ok], "-", color=colour, label=run.label)
            ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    if len(runs) > 1:
        axes[0].legend(fontsize=7)
    return _png(fig)


def throughput(runs: Sequence[RunData]) -> Optional[bytes]:
    """Env steps per second per iteration, and main's league rating when there is one."""
    runs = [r for r in runs if r.kind == TRAIN]
    plt = _plt()
    panels = []
    if any(r.column("env_runners/num_env_steps_sampled_lifetime_throughput") is not None or r.column("time_total_s") is not None
           for r in runs):
        panels.append("sps")
    if any(r.column("league/main_rating") is not None for r in runs):
        panels.append("rating")
    if not panels or not runs:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.2), squeeze=False)
    colours = _colours(len(runs))
    for ax, panel in zip(axes[0], panels):
        for run, colour in zip(runs, colours):
            x, xlabel = run.x_steps()
            if panel == "sps":
                steps, t = run.column("env_runners/num_env_steps_sampled_lifetime"), run.column("time_total_s")
                if steps is None or t is None:
                    continue
                with np.errstate(invalid="ignore", divide="ignore"):
                    y = np.diff(steps, prepend=0.0) / np.diff(t, prepend=0.0)
                _curve(ax, x, y, colour, run.label)
                ax.set_title("env steps / s", fontsize=9)
            else:
                y = run.column("league/main_rating")
                if y is None:
                    continue
                _curve(ax, x, y, colour, run.label)
                ax.set_title("main's league rating over training", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        if len(runs) > 1:
            ax.legend(fontsize=7)
    return _png(fig)


def ratings_plot(run: RunData) -> Optional[bytes]:
    """An evaluation's Bradley-Terry Elo with its bootstrap interval per player, best on top."""
    rows = [r for r in run.ratings if r.get("elo") not in (None, "")]
    if run.kind != EVAL or not rows:
        return None
    rows = rows[:TOP_K_PAYOFF * 2][::-1]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, max(2.6, 0.32 * len(rows) + 1.2)))
    elo = np.array([float(r["elo"]) for r in rows])
    low = np.array([float(r["elo_low"]) for r in rows])
    high = np.array([float(r["elo_high"]) for r in rows])
    main = str((run.eval_config or {}).get("main_id", "main"))
    colours = ["#1f5fd0" if r["player"] == main else "#555555" for r in rows]
    err = np.vstack([elo - low, high - elo]).clip(min=0)
    for i, c in enumerate(colours):
        ax.errorbar(elo[i], i, xerr=err[:, i:i + 1], fmt="none", ecolor=c, capsize=3)
    ax.scatter(elo, range(len(rows)), c=colours, zorder=3, s=18)
    ax.set_yticks(range(len(rows)), [r["player"] for r in rows], fontsize=8)
    ax.set_xlabel("Bradley-Terry Elo (95% bootstrap interval)")
    ax.set_title(f"{run.label}: ratings (main in blue)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


# ----------------------------------------------------------------------------------------------
# Exact exploitability (OpenSpiel games): one curve per player, a band over seeds
# ----------------------------------------------------------------------------------------------

EXPLOITABILITY_PLAYERS = (
    ("main", "main (current weights)"),
    ("average", "main's average strategy"),
    ("mixture_uniform", "league mixture: uniform"),
    ("mixture_plan", "league mixture: plan"),
    ("mixture_nash", "league mixture: nash"),
    ("mixture", "league mixture"),
)
"""`exploitability/<key>` and its legend label; `mixture` (a copy of the configured mode's) only where no
`mixture_<mode>` is recorded."""
EXPLOITABILITY_STEPS = "exploitability/env_steps"
LOG_SPAN = 10.0
"""Exploitability curves get a log y axis when the largest value drawn is this many times the smallest (or more)."""
EXPLOITABILITY_STYLE = {"main": ("#1f5fd0", "-", 3.2), "average": ("#e07b00", "--", 2.6),
                        "mixture_uniform": ("#2e9d4a", "-", 2.0), "mixture_plan": ("#8e44ad", ":", 2.0),
                        "mixture_nash": ("#c0392b", "-.", 1.4), "mixture": ("#2e9d4a", "-", 2.0)}
"""Colour, line style and width per player: widths fall in drawing order so players whose curves coincide
(the average and a mixture often do) stay visible under each other."""


@dataclass(frozen=True)
class Measurements:
    """One run's exploitability measurements, in the order taken."""

    x: np.ndarray
    """Env steps at each measurement (`exploitability/env_steps`; the run's x axis where that is not recorded)."""
    xlabel: str
    values: dict[str, np.ndarray]
    """Player key of EXPLOITABILITY_PLAYERS -> exploitability (NashConv / 2) per measurement, NaN where not measured."""


def exploitability_measurements(run: RunData) -> Optional[Measurements]:
    """The measurements of a training run, None without a finite `exploitability/<player>` value.

    The component reports its last values at every iteration until the next measurement, so with
    `exploitability/env_steps` a measurement is the first row of each distinct env-steps value; without it,
    every row where some player's value is finite (x: the run's env steps, else its iteration)."""
    if run.kind != TRAIN:
        return None
    keys = [k for k, _ in EXPLOITABILITY_PLAYERS
            if (c := run.column(f"exploitability/{k}")) is not None and np.isfinite(c).any()]
    if any(k.startswith("mixture_") for k in keys):
        keys = [k for k in keys if k != "mixture"]
    if not keys:
        return None
    cols = {k: run.column(f"exploitability/{k}") for k in keys}
    any_finite = np.any([np.isfinite(c) for c in cols.values()], axis=0)
    steps = run.column(EXPLOITABILITY_STEPS)
    if steps is not None and np.isfinite(steps).any():
        seen: set[float] = set()
        rows = []
        for i, s in enumerate(steps):
            if math.isfinite(s) and s not in seen and any_finite[i]:
                seen.add(s)
                rows.append(i)
        x, xlabel = steps[rows], "env steps"
    else:
        xs, xlabel = run.x_steps()
        rows = [i for i in range(len(xs)) if any_finite[i] and math.isfinite(xs[i])]
        x = xs[rows]
    if not rows:
        return None
    return Measurements(np.asarray(x, dtype=float), xlabel, {k: c[rows] for k, c in cols.items()})


@dataclass(frozen=True)
class SeedBand:
    """A player's exploitability over seeds at the measurements they share."""

    x: np.ndarray
    """The seeds' mean env steps at each shared measurement."""
    mean: np.ndarray
    low: np.ndarray
    """Two-sided Student-t interval of the mean (`sweeps.stats.seed_interval`), clipped at 0."""
    high: np.ndarray
    seeds: int


def seed_band(curves: Sequence[tuple[np.ndarray, np.ndarray]], confidence: float = 0.95) -> Optional[SeedBand]:
    """Mean and t interval over seeds of (x, y) curves, aligned by measurement index: point k is every seed's
    k-th measurement, for k below the shortest seed's count (runs of one recipe measure at the same env
    steps). A point where some seed's value is not finite is left out; None when no point is left."""
    from spade_rllib.sweeps.stats import seed_interval

    n = min((len(y) for _, y in curves), default=0)
    xs, means, lows, highs = [], [], [], []
    for k in range(n):
        ys = [float(y[k]) for _, y in curves]
        if not all(math.isfinite(v) for v in ys):
            continue
        iv = seed_interval(ys, confidence, bounds=(0.0, math.inf), n_boot=0)
        xs.append(float(np.mean([x[k] for x, _ in curves])))
        means.append(iv.mean)
        lows.append(iv.low)
        highs.append(iv.high)
    if not xs:
        return None
    return SeedBand(np.array(xs), np.array(means), np.array(lows), np.array(highs), len(curves))


def exploitability_curves(runs: Sequence[RunData], confidence: float = 0.95) -> Optional[bytes]:
    """Exact exploitability (NashConv / 2, chips) against env steps, one line per player. One run: its
    measurements. Several runs (seeds of one recipe): each player's mean over the seeds with its shaded t
    interval (`seed_band`). Log y axis when every value drawn is above 0 and they span LOG_SPAN or more, else
    linear. None without measurements."""
    measured = [m for r in runs if (m := exploitability_measurements(r)) is not None]
    if not measured:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.5, 3.8))
    drawn: list[float] = []
    for key, label in EXPLOITABILITY_PLAYERS:
        colour, style, width = EXPLOITABILITY_STYLE[key]
        if len(measured) == 1:
            m = measured[0]
            y = m.values.get(key)
            if y is None:
                continue
            ok = np.isfinite(y) & np.isfinite(m.x)
            ax.plot(m.x[ok], y[ok], style, marker="o", color=colour, label=label, markersize=2.5, linewidth=width)
            drawn += list(y[ok])
        else:
            band = seed_band([(m.x, m.values[key]) for m in measured if key in m.values], confidence)
            if band is None or band.seeds < len(measured):
                continue
            ax.plot(band.x, band.mean, style, marker="o", color=colour, label=label, markersize=2.5, linewidth=width)
            ax.fill_between(band.x, band.low, band.high, color=colour, alpha=0.15, linewidth=0)
            drawn += [*band.mean, *band.low]
    if not drawn:
        plt.close(fig)
        return None
    if min(drawn) > 0 and max(drawn) >= LOG_SPAN * min(drawn):
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(measured[0].xlabel)
    ax.set_ylabel("exploitability (NashConv / 2, chips)")
    title = (f"{runs[0].label}: exact exploitability" if len(measured) == 1 else
             f"exact exploitability: mean over {len(measured)} seeds, {confidence:.0%} t interval shaded")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)


def last_exploitability(run: RunData) -> dict[str, tuple[float, float, int]]:
    """Player key -> (its last finite exploitability, env steps then, how many measurements it has)."""
    m = exploitability_measurements(run)
    out = {}
    for key, y in (m.values.items() if m else ()):
        ok = np.flatnonzero(np.isfinite(y))
        if ok.size:
            out[key] = (float(y[ok[-1]]), float(m.x[ok[-1]]), int(ok.size))
    return out


# ----------------------------------------------------------------------------------------------
# Heatmaps as HTML tables (cells the browser test can count)
# ----------------------------------------------------------------------------------------------


def colour(score: float) -> str:
    """RdYlGn at `score` in [0, 1] as #rrggbb."""
    cmap = _plt().get_cmap("RdYlGn")
    r, g, b, _ = cmap(min(1.0, max(0.0, float(score))))
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def heatmap_table(title: str, rows: Sequence[str], cols: Sequence[str], values: dict, note: str = "",
                  css_id: str = "") -> str:
    """An HTML heatmap: `values[(row, col)] = (score, tooltip)`; empty cells where absent."""
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = values.get((r, c))
            if v is None or not math.isfinite(v[0]):
                cells.append('<td class="hm-empty"></td>')
            else:
                cells.append(f'<td class="hm-cell" style="background:{colour(v[0])}" title="{esc(v[1])}">{v[0]:.2f}</td>')
        body.append(f"<tr><th>{esc(r)}</th>{''.join(cells)}</tr>")
    anchor = f' id="{esc(css_id)}"' if css_id else ""
    return (f'<figure class="heatmap"{anchor}><figcaption>{esc(title)}</figcaption>'
            f'<table class="hm"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            + (f'<p class="note">{esc(note)}</p>' if note else "") + "</figure>")


def heldout_heatmap(run: RunData) -> Optional[str]:
    """Held-out map x opponent heatmap of main's score at the last held-out evaluation of a run."""
    levels = heldout_levels(run.last)
    if not levels:
        return None
    cols = heldout_columns(levels)
    values = {}
    for level, node in levels.items():
        for opp, m in node.items():
            score = m.get("score", math.nan)
            values[(level, opp)] = (score, f"{level} vs {opp}: score {score:.2f}, win {m.get('win_rate', math.nan):.2f}, "
                                           f"draw {m.get('draw_rate', math.nan):.2f}, {m.get('games', 0):g} games")
    rows = sorted(levels)
    for opp in cols:  # mean over the maps
        scores = [levels[lv][opp]["score"] for lv in rows if opp in levels[lv]]
        values[("mean", opp)] = (float(np.mean(scores)), f"mean over {len(scores)} maps")
    it = (run.last.get("heldout") or {}).get("iteration")
    return heatmap_table(f"{run.label}: main's held-out score per map and opponent"
                         + (f" (weights of iteration {it:g})" if isinstance(it, (int, float)) else ""),
                         [*rows, "mean"], cols, values,
                         note="score = win + draw/2; 'self' = main against itself (0.5 by symmetry, shows the draw share).",
                         css_id=f"heldout-{run.label}")


def eval_level_heatmap(run: RunData) -> Optional[str]:
    """An evaluation's level x opponent heatmap of main's score, from games.csv."""
    main = str((run.eval_config or {}).get("main_id", "main"))
    totals: dict[tuple[str, str], list[float]] = {}
    for g in run.games:
        if main not in (g.get("seat0"), g.get("seat1")):
            continue
        seat = 0 if g["seat0"] == main else 1
        opp = g["seat1"] if seat == 0 else g["seat0"]
        try:
            winner = int(g["winner_seat"])
        except (KeyError, TypeError, ValueError):
            continue
        score = 0.5 if winner < 0 else 1.0 if winner == seat else 0.0
        totals.setdefault((g.get("level_id", "?"), opp), []).append(score)
    if not totals:
        return None
    rows = sorted({k[0] for k in totals})
    cols = list(dict.fromkeys(k[1] for k in totals))
    values = {k: (float(np.mean(v)), f"{k[0]} vs {k[1]}: score {np.mean(v):.2f} over {len(v)} games") for k, v in totals.items()}
    for opp in cols:
        scores = [s for (lv, o), v in totals.items() if o == opp for s in v]
        values[("all levels", opp)] = (float(np.mean(scores)), f"{len(scores)} games")
    return heatmap_table(f"{run.label}: {main}'s score per level and opponent", [*rows, "all levels"], cols, values,
                         note="score = win + draw/2 over the games on that level (seats swapped equally).",
                         css_id=f"levels-{run.label}")


def payoff_heatmap(run: RunData) -> Optional[str]:
    """The payoff matrix (row's score vs column), players ordered by rating; top-k when large."""
    if not run.payoff:
        return None
    order = [r["player"] for r in run.ratings] or list(dict.fromkeys(r["player"] for r in run.payoff))
    note = "row's score against column (win 1, draw 0.5); players ordered by Elo."
    if len(order) > TOP_K_PAYOFF:
        note += f" Top {TOP_K_PAYOFF} of {len(order)} players shown; the full matrix is payoff.csv."
        order = order[:TOP_K_PAYOFF]
    keep = set(order)
    values = {}
    for r in run.payoff:
        if r["player"] in keep and r["opponent"] in keep:
            try:
                score = float(r["score"])
            except (TypeError, ValueError):
                continue
            values[(r["player"], r["opponent"])] = (score, f"{r['player']} vs {r['opponent']}: {r['wins']}-{r['draws']}-{r['losses']}")
    return heatmap_table(f"{run.label}: payoff matrix", order, order, values, note=note, css_id=f"payoff-{run.label}")
