"""The compute curve of issue #60: is the large-map gap budget or design? One run per (recipe, seed), trained in
stages to each milestone of env steps (`--milestones`, default 5M, 10M, 20M, 50M, 100M), evaluated at each on
every held-out map against `rusher`, `raider`, `hybrid` (per map and size class) and a still team (navigation):
the run's own final held-out evaluation, with `final_heldout_max_size: 0` so every map and opponent is played.

Recipes: `lstm` is `tune_configs/quickstart.yaml` without the plan (the LSTM demo before issue #60: every recipe
sets `env.kwargs` whole, so none inherits the shipped `plan: true`); `plan` the demo as shipped, the fixed
planner (`env.kwargs.plan: true`, envs/cell_memory.py); `vin` the cell memory read by the learned planner (no
fixed plan beside it). Only the budget differs from `make demo`; the wall-clock cap is lifted.

Resumable by unit: a unit is one (recipe, seed, milestone); its figures go to
`<out-dir>/<recipe>_seed<k>/<milestone>.json` at once (the run's `final_evaluation.json` with the env steps it
sampled and the commit). A rerun skips the units it has and resumes the run from its newest checkpoint
(`python -m spade_rllib.train --resume`) to the next milestone; `--max-units` stops after that many new units.
The runs themselves live under `--run-root` (not committed). So that a run can span machines that keep nothing
but the repository, each stage also leaves its newest checkpoint and config in `<out-dir>/<recipe>_seed<k>/carry/`
(~3 MB, replaced each stage; `--carry TRIAL` writes it from a run stopped mid-stage), and a rerun with no run
under `--run-root` resumes from there. Ends with one JSON line.

    python bench/ablations/compute_curve.py --recipe plan --seed 0                  # to 100M, in stages
    python bench/ablations/compute_curve.py --recipe lstm --milestones 5,10,20,50   # today's demo, to 50M
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import check_bench_args, parse_counts, read_json, refuse  # noqa: E402

RECIPES = {
    "lstm": ["env.kwargs={draw_reward: -0.1}"],
    "plan": ["env.kwargs={draw_reward: -0.1, plan: true}"],
    "vin": ["env.kwargs={draw_reward: -0.1, cell_memory: 21}", "agent.model.planner=vin"],
}
EVALUATION = ["evaluation.final_heldout_max_size=0", "evaluation.final_heldout_games=8",
              "evaluation.final_heldout_size_games=8",
              "evaluation.final_heldout_opponents=[still, random, 'bot:rusher', 'bot:raider', 'bot:hybrid']"]
"""Every held-out map against every opponent: 8 games per map, opponent and seat (16 per map and bot)."""
CONFIG = "tune_configs/quickstart.yaml"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recipe", required=True, choices=sorted(RECIPES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--milestones", default="5,10,20,50,100", help="millions of env steps, comma-separated, rising")
    p.add_argument("--out-dir", default=str(ROOT / "bench" / "data" / "compute_curve"))
    p.add_argument("--run-root", default=str(ROOT / "runs" / "compute_curve"))
    p.add_argument("--max-units", type=int, default=0, help="stop after this many new units (0: all)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--carry", metavar="TRIAL", help="write TRIAL's newest checkpoint into the carry folder and exit "
                   "(trains nothing)")
    p.add_argument("--plot", metavar="PNG", help="draw the curve of every unit under --out-dir into PNG and exit "
                   "(trains nothing)")
    args = p.parse_args(argv)
    milestones = parse_counts("milestones", args.milestones)
    if milestones != sorted(set(milestones)):
        refuse(f"--milestones {args.milestones!r}: expected rising millions of env steps, e.g. 5,10,20,50,100")
    if args.seed < 0:
        refuse(f"--seed {args.seed}: out of range, allowed >= 0")
    if args.max_units < 0:
        refuse(f"--max-units {args.max_units}: out of range, allowed >= 0 (0: every unit)")
    args.milestone_steps = [m * 1_000_000 for m in milestones]
    return args


def unit_overrides(args: argparse.Namespace, steps: int) -> list[str]:
    """The `--set` list of one stage: the recipe, the evaluation, the budget, the run's name and place."""
    name = f"{args.recipe}_seed{args.seed}"
    return [*RECIPES[args.recipe], *EVALUATION, f"experiment.seed={args.seed}", f"experiment.name={name}",
            f"experiment.storage_path={Path(args.run_root).resolve()}",
            f"training.stop={{env_steps: {steps}, time_s: 360000}}", *args.overrides]


def trial_dir(args: argparse.Namespace) -> Path | None:
    """The run's trial directory once it exists (the newest, should there be several)."""
    runs = sorted((Path(args.run_root) / f"{args.recipe}_seed{args.seed}").glob(f"{args.recipe}_seed{args.seed}_*"),
                  key=lambda p: p.stat().st_mtime)
    return runs[-1] if runs else None


def sampled_env_steps(trial: Path) -> int:
    """Env steps the run has sampled, from its progress.csv (0 before the first row)."""
    import csv

    rows = list(csv.DictReader((trial / "progress.csv").open())) if (trial / "progress.csv").is_file() else []
    for key in ("num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime"):
        if rows and rows[-1].get(key):
            return int(float(rows[-1][key]))
    return 0


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def carry_dir(args: argparse.Namespace) -> Path:
    return Path(args.out_dir) / f"{args.recipe}_seed{args.seed}" / "carry"


def _repo_relative(value):
    """`value` (a loaded config) with every absolute path into a checkout of this repository made relative to its
    root (the resolved config names the held-out maps by this machine's path; a stage runs from the root)."""
    if isinstance(value, dict):
        return {k: _repo_relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repo_relative(v) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        parts = Path(value).parts[1:]
        for i in range(len(parts)):
            if (ROOT.joinpath(*parts[i:])).exists() and parts[i] != "..":
                return str(Path(*parts[i:]))
    return value


def save_carry(trial: Path, dest: Path) -> Path:
    """`trial`'s newest whole checkpoint and its config.yaml into `dest`, replacing what was there (written
    beside it first, then swapped in, so a stop midway leaves the old carry whole); the checkpoint's path."""
    import shutil

    from spade_rllib.artifacts.checkpoint_layout import RUN_CONFIG_FILE, newest_checkpoint

    newest = newest_checkpoint(Path(trial), recursive=True)
    if newest is None or not (Path(trial) / RUN_CONFIG_FILE).is_file():
        refuse(f"--carry {trial}: no whole checkpoint and {RUN_CONFIG_FILE} in it")
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    import yaml

    config = _repo_relative(yaml.safe_load((Path(trial) / RUN_CONFIG_FILE).read_text()) or {})
    if isinstance(config.get("experiment"), dict) and "storage_path" in config["experiment"]:
        config["experiment"]["storage_path"] = "runs/compute_curve"  # this machine's path stays here (a stage sets it)
    (tmp / RUN_CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copytree(newest, tmp / Path(newest).name)
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    tmp.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest / Path(newest).name


def run_stage(args: argparse.Namespace, steps: int) -> Path:
    """Train (fresh, or resumed from the newest checkpoint: the run's, else the carried one) to `steps` env
    steps; the trial dir, whose newest checkpoint is then carried."""
    trial = trial_dir(args)
    carried = carry_dir(args)
    cmd = [sys.executable, "-m", "spade_rllib.train"]
    if trial is not None:
        cmd += ["--resume", str(trial)]
    elif any(carried.glob("checkpoint_*")):
        cmd += ["--resume", str(carried)]
    else:
        cmd += ["--config", str(ROOT / CONFIG)]
    for item in unit_overrides(args, steps):
        cmd += ["--set", item]
    print("running:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)
    trial = trial_dir(args)
    if trial is None or not (trial / "final_evaluation.json").is_file():
        refuse(f"the stage to {steps} env steps left no final_evaluation.json under {args.run_root}")
    save_carry(trial, carried)
    return trial


SIZE_CLASSES = ("small", "medium", "large")
CLASS_LABELS = {"small": "up to 11x11", "medium": "13-15", "large": "17-21"}
BOTS = ("rusher", "raider", "hybrid")


def navigation(ev: dict) -> float | None:
    """Score (win + draw / 2) against the still team over every map, as the run's summary prints it; None if absent."""
    win, draw = ev.get("final_heldout_all/still/win_rate"), ev.get("final_heldout_all/still/draw_rate")
    return None if win is None else float(win) + 0.5 * float(draw or 0.0)


def curve_points(out_dir: Path) -> dict:
    """{recipe: {series: [(env steps, mean over seeds, [per-seed values])]}} from every unit under `out_dir`; series
    are `<class>/<bot>` scores and `navigation` (the score against the still team over every map)."""
    by: dict = {}
    for path in sorted(Path(out_dir).glob("*_seed*/*M.json")):
        unit = read_json(path)
        ev = unit["evaluation"]
        series = {f"{c}/{b}": ev.get(f"final_heldout_size/{c}/bot:{b}/score") for c in SIZE_CLASSES for b in BOTS}
        series["navigation"] = navigation(ev)
        for name, value in series.items():
            if value is not None:
                by.setdefault(unit["recipe"], {}).setdefault(name, {}).setdefault(unit["milestone"], []).append(
                    (unit["env_steps"], float(value)))
    out: dict = {}
    for recipe, series in by.items():
        for name, points in series.items():
            rows = [(int(sum(s for s, _ in v) / len(v)), sum(x for _, x in v) / len(v), [x for _, x in v])
                    for _, v in sorted(points.items())]
            out.setdefault(recipe, {})[name] = rows
    return out


def plot(out_dir: Path, png: Path) -> Path:
    """Score by map size class against env steps (rusher, raider, hybrid averaged; per recipe), and navigation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    points = curve_points(out_dir)
    if not points:
        refuse(f"--plot: no units under {out_dir}; run the bench first")
    fig, axes = plt.subplots(1, len(SIZE_CLASSES) + 1, figsize=(14, 3.4), sharey=True)
    for recipe, series in sorted(points.items()):
        for ax, cls in zip(axes, SIZE_CLASSES):
            rows = [series.get(f"{cls}/{b}", []) for b in BOTS]
            steps = [r[0] for r in rows[0]]
            means = [sum(rw[i][1] for rw in rows if i < len(rw)) / len(rows) for i in range(len(steps))]
            ax.plot([s / 1e6 for s in steps], means, marker="o", label=recipe)
        nav = series.get("navigation", [])
        axes[-1].plot([r[0] / 1e6 for r in nav], [r[1] for r in nav], marker="o", label=recipe)
    for ax, cls in zip(axes, SIZE_CLASSES):
        ax.set_title(f"held-out {CLASS_LABELS[cls]}: vs racing bots")
    axes[-1].set_title("navigation (vs a still team)")
    for ax in axes:  # the milestones on a log axis, labelled plainly, the whole planned range shown
        ax.set_xscale("log")
        ax.set_xlim(4, 125)
        ax.set_xticks([5, 10, 20, 50, 100])
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("env steps (M)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("score (win + draw/2)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.plot:
        path = plot(Path(args.out_dir), Path(args.plot))
        summary = {"bench": "compute_curve", "plot": str(path)}
        print(json.dumps(summary))
        return summary
    if args.carry:
        path = save_carry(Path(args.carry), carry_dir(args))
        summary = {"bench": "compute_curve", "carried": str(path)}
        print(json.dumps(summary))
        return summary
    check_bench_args(args, config=str(ROOT / CONFIG), overrides=unit_overrides(args, args.milestone_steps[0]))
    out = Path(args.out_dir) / f"{args.recipe}_seed{args.seed}"
    done, new = [], 0
    for steps in args.milestone_steps:
        path = out / f"{steps // 1_000_000}M.json"
        if path.is_file():
            done.append(read_json(path))
            print(f"cached: {path}", file=sys.stderr)
            continue
        if args.max_units and new >= args.max_units:
            break
        start = time.time()
        trial = run_stage(args, steps)
        unit = {"recipe": args.recipe, "seed": args.seed, "milestone": steps, "env_steps": sampled_env_steps(trial),
                "commit": commit(), "stage_wall_s": round(time.time() - start, 1),
                "evaluation": json.loads((trial / "final_evaluation.json").read_text())}
        out.mkdir(parents=True, exist_ok=True)
        from spade_rllib.artifacts.atomic_io import write_text

        write_text(path, json.dumps(unit, indent=1, sort_keys=True))
        done.append(unit)
        new += 1
    summary = {"bench": "compute_curve", "recipe": args.recipe, "seed": args.seed,
               "units": [{"milestone": u["milestone"], "env_steps": u["env_steps"],
                          "large_rusher": u["evaluation"].get("final_heldout_size/large/bot:rusher/score"),
                          "navigation": navigation(u["evaluation"])} for u in done],
               "missing": [s for s in args.milestone_steps if s not in {u["milestone"] for u in done}]}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
