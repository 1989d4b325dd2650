"""Every headline result as a PNG, drawn from the committed bench data (nothing trains; seconds).

    python bench/figures.py [--data bench/data] [--out docs/figures] [--only NAME[,NAME]]

Figures (docs/results.md shows each one beside the command that measured its data):

    poker_exploitability   Leduc (5 seeds, 10M env steps) and Kuhn (3 seeds, 200k): exact exploitability of each
                           arm's player over env steps, mean and 95% t-interval over seeds
                           (league_claim_leduc_10m/, league_claim_kuhn/ units)
    league_claim           the league against mirror self-play, paired by seed, with 95% t-intervals: held-out
                           score on Connect Four and CaptureTheFlag, best-response exploitability on Connect Four,
                           exact exploitability on Leduc (league_claim_c4/, league_claim_ctf_mixture/,
                           league_claim_leduc_10m/ summaries)
    heldout_by_size        CaptureTheFlag held-out score by map size class (up to 11x11, 13-15, 17-21, the
                           classes `evaluate` and the run summary print) for the three memory setups at the demo's
                           3.5M env steps, per seed mean over each class's maps, 95% t-interval over seeds
                           (memory_ablation_demo/: the 5-seed summary, the memory map's 3 seeds)
    speed                  env steps/s of the demo's layout against RLlib's stock learner and against stock RLlib
                           configured alike, and the learner against a bare torch PPO loop
                           (shipped_speed_quiet.json, learner_ceiling_quiet.json; bars: the run's rate, whiskers:
                           the 10th-90th percentile of its iterations)

A missing or unreadable data file is one line on stderr and exit 2, before anything is drawn.
`tests/test_bench_figures.py` regenerates every figure from the committed data into a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import refuse  # noqa: E402
from spade_rllib.sweeps.stats import seed_interval  # noqa: E402
from spade_rllib.core.validation import did_you_mean  # noqa: E402

DPI = 100


class DataError(Exception):
    """A bench data file that is missing or does not hold what a figure reads."""


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _read(data: Path, rel: str) -> Any:
    path = data / rel
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no such file (the figures read the committed bench data; --data names its folder)") from None
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: not readable JSON ({type(e).__name__}: {e})") from e


def _interval(values: Sequence[Optional[float]]) -> tuple[float, float, float]:
    s = seed_interval([math.nan if v is None else v for v in values], n_boot=0)
    return s.mean, s.low, s.high


def _steps_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda x, _: f"{x / 1e6:g}M" if x >= 1e6 else (f"{x / 1e3:g}k" if x >= 1e3 else f"{x:g}"))


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    _plt().close(fig)
    return path


# ---------------------------------------------------------------------------------------------- poker
POKER_PLAYERS = (  # (arm, curve key, label): the player each arm is scored as in docs/results.md
    ("mirror", "average", "mirror: its snapshots' average"),
    ("league_uniform", "mixture_uniform", "league, fictitious play (uniform mixture)"),
    ("league_pfsp", "mixture_plan", "league, PFSP (its plan's mixture)"),
    ("league_nash", "mixture_nash", "PSRO (league's Nash mixture)"),
    ("ppo_iig", "main", "mirror, the IIG-RL-Benchmark's PPO settings (main)"),
    ("mirror", "main", "mirror: main alone"),
)


POKER_EXTRA = {  # bench -> (other bench, arm, curve key, label): arms of the same game run as their own bench
    "league_claim_leduc_10m": (("league_claim_leduc_10m_magnet", "mirror", "main", "mirror + a moving magnet: main (3 seeds)"),),
}


def poker_curves(data: Path, bench: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]:
    """{label: (env steps, mean, low, high, seeds)} of each arm's player, from the units' curves (and of the arms
    `POKER_EXTRA` adds from benches of the same game)."""
    units_dir = data / bench / "units"
    if not units_dir.is_dir():
        raise DataError(f"{units_dir}: no such folder (the league claim's units)")
    out = {}
    players = [(bench, *row) for row in POKER_PLAYERS] + list(POKER_EXTRA.get(bench, ()))
    for src, arm, key, label in players:
        src_dir = data / src / "units"
        units = [_read(data, f"{src}/units/{p.name}") for p in sorted(src_dir.glob(f"{arm}_seed*.json"))]
        curves = [u["curve"] for u in units if u.get("curve", {}).get(key)]
        if not curves:
            continue
        n = min(len(c["env_steps"]) for c in curves)
        xs = np.asarray(curves[0]["env_steps"][:n], dtype=float)
        stats = np.array([_interval([c[key][i] for c in curves]) for i in range(n)])
        out[label] = (xs, stats[:, 0], stats[:, 1], stats[:, 2], len(curves))
    if not out:
        raise DataError(f"{data / bench / 'units'}: no unit holds an exploitability curve")
    return out


def fig_poker_exploitability(data: Path, out: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    panels = (("league_claim_leduc_10m", "Leduc poker"), ("league_claim_kuhn", "Kuhn poker"))
    for ax, (bench, title) in zip(axes, panels):
        curves = poker_curves(data, bench)
        seeds = max(c[4] for c in curves.values())
        for i, (label, (xs, mean, low, high, _)) in enumerate(curves.items()):
            dashed = label.endswith("main alone")
            color = "0.45" if dashed else f"C{i}"
            ax.plot(xs, mean, "--" if dashed else "-", color=color, lw=1.6, label=label)
            if not dashed:
                ax.fill_between(xs, np.maximum(low, 1e-4), high, color=color, alpha=0.15, lw=0)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(_steps_formatter())
        ax.set_xlabel("env steps")
        ax.set_ylabel("exploitability (NashConv / 2; lower is better)")
        ax.set_title(f"{title}: {seeds} seeds, mean and 95% t-interval", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7.5, loc="upper right")
    return _save(fig, out / "poker_exploitability.png")


# ---------------------------------------------------------------------------------------------- league claim
LEAGUE_ROWS = (  # (bench, arm, measure, label, higher is better)
    ("league_claim_c4", "league", "heldout_mean", "Connect Four: held-out score, league - mirror", True),
    ("league_claim_c4", "league_exploiters", "heldout_mean", "Connect Four: held-out score, league + exploiters - mirror", True),
    ("league_claim_c4", "league", "exploitability", "Connect Four: exploitability, league - mirror", False),
    ("league_claim_c4", "league_exploiters", "exploitability", "Connect Four: exploitability, league + exploiters - mirror", False),
    ("league_claim_ctf_mixture", "league", "heldout_mean", "CaptureTheFlag: held-out score, league main - mirror main", True),
    ("league_claim_ctf_mixture", "league", "mixture_heldout_mean", "CaptureTheFlag: held-out score, league's mixture - mirror's average", True),
    ("league_claim_ctf_mixture", "league", "mixture_vs_main", "CaptureTheFlag: held-out score, league's mixture - its main", True),
    ("league_claim_leduc_10m", "league_nash", "mixture - mirror average", "Leduc: exploitability, PSRO's Nash mixture - mirror's average", False),
    ("league_claim_leduc_10m", "league_uniform", "mixture - mirror average", "Leduc: exploitability, fictitious play's mixture - mirror's average", False),
    ("league_claim_leduc_10m", "league_pfsp", "mixture - mirror average", "Leduc: exploitability, PFSP's mixture - mirror's average", False),
)


def league_rows(data: Path) -> list[tuple[str, float, float, float, int, bool]]:
    """(label, mean, low, high, seeds, better-is-higher) of each paired difference in `LEAGUE_ROWS`."""
    rows = []
    summaries: dict[str, Any] = {}
    for bench, arm, measure, label, higher in LEAGUE_ROWS:
        s = summaries.setdefault(bench, _read(data, f"{bench}/summary.json"))
        if measure == "mixture_vs_main":  # an arm's own difference, not paired with mirror
            stat = s["arms"][arm][measure]
        else:
            stat = s.get("paired", {}).get(arm, {}).get(measure)
        if not stat or stat.get("mean") is None:
            raise DataError(f"{data / bench / 'summary.json'}: no paired {measure!r} for arm {arm!r}")
        rows.append((label, stat["mean"], stat["low"], stat["high"], stat["n"], higher))
    return rows


def fig_league_claim(data: Path, out: Path) -> Path:
    plt = _plt()
    rows = league_rows(data)
    fig, ax = plt.subplots(figsize=(10, 5.2))
    ys = np.arange(len(rows))[::-1]
    for y, (label, mean, low, high, n, higher) in zip(ys, rows):
        separated = low > 0 or high < 0
        better = separated and ((mean > 0) == higher)
        color = "C2" if better else ("C3" if separated else "0.35")
        ax.errorbar(mean, y, xerr=[[mean - low], [high - mean]], fmt="o", color=color, capsize=3, lw=1.6)
        ax.annotate(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}], {n} seeds", (high, y), xytext=(6, -3),
                    textcoords="offset points", fontsize=7.5)
    ax.axvline(0, color="0.2", lw=0.8)
    ax.set_yticks(ys, [r[0] for r in rows], fontsize=8)
    lo = min(r[2] for r in rows)
    hi = max(r[3] for r in rows)
    ax.set_xlim(lo - 0.03, hi + 0.22)
    ax.set_xlabel("paired difference by seed (95% t-interval); green: the league better, red: worse, grey: not separated",
                  fontsize=8)
    ax.set_title("Does the league beat mirror self-play? (no scripted opponent in training)", fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, out / "league_claim.png")


# ---------------------------------------------------------------------------------------------- held-out maps by size
MEMORY_SETUPS = (("mlp_trail", "MLP + trail"), ("mlp_seen_map", "MLP + memory map"), ("lstm_trail", "LSTM + trail (the demo)"))


def map_classes(maps: Sequence[str]) -> dict[str, list[str]]:
    """{size-class label: the maps in it}, by the larger side (`final_heldout_eval.size_class`)."""
    from spade_rllib.envs import Level
    from spade_rllib.games import heldout_dir
    from spade_rllib.rllib.final_heldout_eval import SIZE_CLASSES, size_class

    folder = heldout_dir("CaptureTheFlag-v0")
    out: dict[str, list[str]] = {label: [] for _, _, _, label in SIZE_CLASSES}
    labels = {key: label for key, _, _, label in SIZE_CLASSES}
    for m in maps:
        path = folder / f"{m}.txt"
        if not path.exists():
            raise DataError(f"held-out map {m!r}: no {path.name} among the shipped held-out maps")
        level = Level.from_ascii(path.read_text())
        out[labels[size_class(level.height, level.width)]].append(m)
    return {k: v for k, v in out.items() if v}


MEMORY_FILES = ("memory_ablation_demo/memory_ablation_5seeds.json", "memory_ablation_demo/memory_ablation.json")
"""The 5-seed summary (MLP + trail, LSTM + trail) first, then the 3-seed one (which also holds the memory map)."""


def heldout_by_size(data: Path) -> tuple[dict, dict]:
    """({opponent: {setup label: {class label: (mean, low, high, seeds)}}}, {class label: its maps}); a class's
    score per seed is the mean of its maps' scores."""
    summaries = [(rel, _read(data, rel)) for rel in MEMORY_FILES]
    out: dict = {}
    for opponent in ("rusher", "navigation"):
        for setup, label in MEMORY_SETUPS:
            per_map = next((s["setups"][setup]["per_map"].get(opponent) for _, s in summaries
                            if s.get("setups", {}).get(setup, {}).get("per_map")), None)
            if not per_map:
                raise DataError(f"{data / MEMORY_FILES[0]} and {MEMORY_FILES[1]}: no per-map {opponent!r} scores "
                                f"for setup {setup!r}")
            classes = map_classes(sorted(per_map))
            for cls, maps in classes.items():
                per_seed = np.mean([per_map[m]["values"] for m in maps], axis=0)
                out.setdefault(opponent, {}).setdefault(label, {})[cls] = (*_interval(per_seed), len(per_seed))
    return out, classes


def fig_heldout_by_size(data: Path, out: Path) -> Path:
    plt = _plt()
    scores, maps_of = heldout_by_size(data)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    titles = {"rusher": "score against the rusher bot (win + draw/2)",
              "navigation": "navigation: share of games won against a still team"}
    for ax, (opponent, setups) in zip(axes, scores.items()):
        classes = list(next(iter(setups.values())))
        width = 0.8 / len(setups)
        for i, (label, by_class) in enumerate(setups.items()):
            xs = np.arange(len(classes)) + (i - (len(setups) - 1) / 2) * width
            mean = np.array([by_class[c][0] for c in classes])
            err = np.array([[by_class[c][0] - by_class[c][1] for c in classes],
                            [by_class[c][2] - by_class[c][0] for c in classes]])
            seeds = by_class[classes[0]][3]
            ax.bar(xs, mean, width, yerr=err, capsize=3, color=f"C{i}", label=f"{label}, {seeds} seeds")
        ax.set_xticks(np.arange(len(classes)), [f"{c}\n({', '.join(maps_of[c])})" for c in classes], fontsize=8)
        ax.set_ylim(0, 1.08)
        ax.set_title(titles[opponent], fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("mean and 95% t-interval over seeds")
    axes[0].legend(fontsize=8)
    fig.suptitle("CaptureTheFlag, held-out maps by size (six maps, 9x9 to 21x21), 3.5M env steps each with the demo's "
                 "recipe", fontsize=10)
    return _save(fig, out / "heldout_by_size.png")


# ---------------------------------------------------------------------------------------------- speed
def speed_bars(data: Path) -> tuple[list, list]:
    """(training rows, learner rows, MLP layout over stock RLlib): (label, env steps/s, p10, p90) and (model, bare torch,
    product, stock)."""
    shipped = _read(data, "shipped_speed_quiet.json")
    ceiling = _read(data, "learner_ceiling_quiet.json")
    try:
        q = shipped["configs"]["quickstart"]
        f = shipped["fixed"]
        train = [
            ("demo (LSTM), our learner", q["sps"], q["spread"]["p10"], q["spread"]["p90"]),
            ("demo (LSTM), RLlib's stock learner", q["stock_learner"]["sps"], q["stock_learner"]["spread"]["p10"],
             q["stock_learner"]["spread"]["p90"]),
            ("MLP layout, our learner", f["sps"], f["spread"]["p10"], f["spread"]["p90"]),
            ("MLP layout, RLlib's stock learner", f["stock_learner"]["sps"], f["stock_learner"]["spread"]["p10"],
             f["stock_learner"]["spread"]["p90"]),
            ("stock RLlib configured like the MLP layout", shipped["stock_equal_sps"], None, None),
        ]
        learner = [(name, r["bare_sps"], r["product_sps"], r["stock_learner_sps"]) for name, r in ceiling["rows"].items()]
        ratio = float(shipped["fixed_over_stock"])
    except (KeyError, TypeError) as e:
        raise DataError(f"{data}: shipped_speed_quiet.json / learner_ceiling_quiet.json lack {e}") from e
    return train, learner, ratio


def fig_speed(data: Path, out: Path) -> Path:
    plt = _plt()
    train, learner, ratio = speed_bars(data)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11.5, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    ys = np.arange(len(train))[::-1]
    colors = ["C0", "C7", "C0", "C7", "C3"]
    for y, (label, sps, p10, p90), c in zip(ys, train, colors):
        err = None if p10 is None else [[sps - p10], [p90 - sps]]
        ax.barh(y, sps, color=c, xerr=err, capsize=3)
        ax.annotate(f"{sps:,.0f}", (sps, y), xytext=(4, 6), textcoords="offset points", fontsize=8)
    ax.set_yticks(ys, [t[0] for t in train], fontsize=8)
    ax.set_xlabel("env steps/s (CaptureTheFlag 1v1, 2 CPUs, 30 s of training each)")
    ax.set_title(f"Training speed: {ratio:.2f}x stock RLlib configured alike", fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    width = 0.27
    names = [r[0] for r in learner]
    xs = np.arange(len(names))
    for i, (label, idx, c) in enumerate((("bare torch PPO loop", 1, "0.6"), ("our learner", 2, "C0"),
                                         ("RLlib's stock learner", 3, "C7"))):
        vals = [r[idx] for r in learner]
        bx.bar(xs + (i - 1) * width, vals, width, color=c, label=label)
        if idx > 1:
            for x, v, r in zip(xs, vals, learner):
                bx.annotate(f"{v / r[1]:.3f}", (x + (i - 1) * width, v), ha="center", xytext=(0, 2),
                            textcoords="offset points", fontsize=7.5)
    bx.set_xticks(xs, [n.upper() for n in names])
    bx.set_ylabel("learner env steps/s (one update, one thread)")
    bx.set_title("The learner against a bare torch PPO loop\n(labels: share of the bare loop's rate)", fontsize=10)
    bx.legend(fontsize=7.5, loc="upper left")
    bx.grid(alpha=0.3, axis="y")
    return _save(fig, out / "speed.png")


FIGURES: dict[str, Callable[[Path, Path], Path]] = {
    "poker_exploitability": fig_poker_exploitability,
    "league_claim": fig_league_claim,
    "heldout_by_size": fig_heldout_by_size,
    "speed": fig_speed,
}


def make_figures(data: Path, out: Path, only: Optional[Sequence[str]] = None) -> list[Path]:
    """Draw the figures named in `only` (default: all) from `data` into `out`; `DataError` on missing data."""
    return [FIGURES[name](data, out) for name in (only or FIGURES)]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "data", help="the bench data folder")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures", help="where the PNGs go")
    ap.add_argument("--only", default="", help=f"comma-separated figure names: {', '.join(FIGURES)}")
    args = ap.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in only if n not in FIGURES]
    if unknown:
        refuse(f"--only {unknown[0]!r} is no figure{did_you_mean(unknown[0], FIGURES)}; figures: {', '.join(FIGURES)}")
    if not args.data.is_dir():
        refuse(f"--data {str(args.data)!r} is not a folder (the bench data: bench/data)")
    try:
        for path in make_figures(args.data, args.out, only):
            print(path)
    except DataError as e:
        refuse(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
