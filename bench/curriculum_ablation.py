"""Curriculum ablation: the same training budget per setup, then held-out win rates vs rusher_tagger.

    .venv/bin/python bench/curriculum_ablation.py [--minutes 10] [--setups threshold,plr,uniform,none]
        [--config tune_configs/curriculum.yaml] [--games 20] [--cpus 2] [--set KEY=VALUE ...] [--out FILE]

Setups (everything else from `--config`, default `tune_configs/curriculum.yaml`: MazeRace 1v1 self-play):
    threshold   difficulty follows the completion rate (curriculum.threshold settings of the config)
    plr         prioritized level replay over uniformly drawn levels
    uniform     domain randomization over the knob ranges
    none        no curriculum: every level at the hardest difficulty (strategy `fixed`, difficulty 10)

Each setup trains `SpadePPO` in this process (one local Ray, `--cpus` CPUs) for `--minutes` of wall
clock, counted from the first iteration; the iteration running when the budget ends completes.
`--env-steps N` also stops a setup at N sampled env steps: on a shared machine wall clock alone
gives the setups unequal amounts of experience.
Held-out evaluation is off during training (it would eat the budget). Afterwards main's final
weights play every held-out map (`evaluation.heldout_levels`, default the shipped six) against
rusher, rusher_tagger and itself, `--games` games per map and opponent, seats alternating
(`spade_rllib.rllib.heldout_eval.play_heldout`, outside the budget).

Output: a table of held-out win rates vs rusher_tagger per map and setup, then the training figures;
the LAST line is one JSON object {setup: {"win_rate": mean held-out win rate vs rusher_tagger,
"score": mean held-out score (win + draw/2) vs rusher_tagger}}. `--out` also
writes every metric as JSON.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETUPS = ("threshold", "plr", "uniform", "none")
OPPONENT = "rusher_tagger"
DEFAULT_CONFIG = ROOT / "tune_configs" / "curriculum.yaml"


def setup_overrides(setup: str, minutes: float) -> list[str]:
    """`--set` overrides that turn the base config into one setup with the given budget."""
    strategy = {"threshold": "threshold", "plr": "plr", "uniform": "uniform", "none": "fixed"}[setup]
    out = [
        "curriculum.enabled=true",
        f"curriculum.strategy={strategy}",
        f"training.stop.time_s={minutes * 60.0}",
        "training.stop.iterations=null",
        "training.stop.env_steps=null",
        "evaluation.interval=0",
    ]
    if setup == "none":
        out.append("curriculum.fixed.difficulty=10.0")
    return out


def train_one(setup: str, args: argparse.Namespace) -> dict:
    """Train one setup for the budget; returns training figures and the held-out metrics."""
    from spade_rllib.config import apply_overrides, load_raw, parse_config
    from spade_rllib.curriculum.heldout_levels import HELDOUT_DIR
    from spade_rllib.rllib.algorithm import build_algo_config
    from spade_rllib.rllib.heldout_eval import play_heldout

    raw = apply_overrides(load_raw(str(args.config)), [*args.overrides, *setup_overrides(setup, args.minutes)])
    cfg = parse_config(raw, source_path=str(args.config))
    paths = cfg.evaluation.heldout_levels or [str(HELDOUT_DIR)]
    algo_config = build_algo_config(cfg)
    algo = algo_config.build_algo()
    budget = args.minutes * 60.0
    result: dict = {}
    difficulties = []
    try:
        t0 = time.perf_counter()
        steps = 0
        while time.perf_counter() - t0 < budget and (args.env_steps is None or steps < args.env_steps):
            result = algo.train()
            steps = int((result.get("env_runners") or {}).get("num_env_steps_sampled_lifetime", 0))
            difficulties.append(float((result.get("curriculum") or {}).get("difficulty", math.nan)))
            print(f"  [{setup}] iter {int(result['training_iteration']):3d}  {time.perf_counter() - t0:6.0f} s  "
                  f"difficulty {difficulties[-1]:.2f}", file=sys.stderr, flush=True)
        train_s = time.perf_counter() - t0
        weights = algo._main_weights()
    finally:
        algo.stop()
    t1 = time.perf_counter()
    heldout = play_heldout(algo_config, weights, paths, games=args.games, greedy=cfg.evaluation.greedy)
    cur = result.get("curriculum") or {}
    return {
        "setup": setup,
        "iterations": int(result.get("training_iteration", 0)),
        "env_steps": int((result.get("env_runners") or {}).get("num_env_steps_sampled_lifetime", 0)),
        "train_s": train_s,
        "heldout_eval_s": time.perf_counter() - t1,
        "difficulty_first": difficulties[0] if difficulties else math.nan,
        "difficulty_last": difficulties[-1] if difficulties else math.nan,
        "size_mean": float(cur.get("size_mean", math.nan)),
        "completion_rate": float(cur.get("completion_rate", math.nan)),
        "heldout": heldout,
    }


def level_names(heldout: dict) -> list[str]:
    suffix = f"/{OPPONENT}/win_rate"
    return sorted(k[len("heldout/"):-len(suffix)] for k in heldout if k.endswith(suffix) and k.count("/") == 3)


def _markdown(head: list, rows: list) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_table(runs: list[dict]) -> str:
    """The held-out table (win rate vs rusher_tagger per map) and the training figures, as Markdown."""
    if not runs:
        return ""
    levels = level_names(runs[0]["heldout"])
    games = runs[0]["heldout"][f"heldout/{levels[0]}/{OPPONENT}/games"] if levels else math.nan
    head = ["setup", *levels, "mean", "mean vs rusher", "mean vs self"]
    rows = []
    for r in runs:
        h = r["heldout"]
        rows.append([r["setup"], *(f"{h[f'heldout/{lv}/{OPPONENT}/win_rate']:.2f}" for lv in levels),
                     f"{h[f'heldout/{OPPONENT}/win_rate']:.3f}", f"{h['heldout/rusher/win_rate']:.3f}",
                     f"{h['heldout/self/win_rate']:.3f}"])
    out = [f"held-out win rate of main vs {OPPONENT} ({games:.0f} games per map, seats alternating)", *_markdown(head, rows), ""]
    # On fair maps two perfect racers draw, so the score (win + draw/2) shows what win rate hides.
    rows = [[r["setup"], *(f"{r['heldout'][f'heldout/{lv}/{OPPONENT}/score']:.2f}" for lv in levels),
             f"{r['heldout'][f'heldout/{OPPONENT}/score']:.3f}", f"{r['heldout']['heldout/rusher/score']:.3f}",
             f"{r['heldout']['heldout/self/score']:.3f}"] for r in runs]
    out += [f"held-out score (win + draw/2) of main vs {OPPONENT}", *_markdown(head, rows), ""]
    head = ["setup", "iterations", "env steps", "train s", "difficulty first -> last", "size mean", "completion"]
    rows = [[r["setup"], r["iterations"], f"{r['env_steps']:,d}", f"{r['train_s']:.0f}",
             f"{r['difficulty_first']:.2f} -> {r['difficulty_last']:.2f}", f"{r['size_mean']:.1f}",
             f"{r['completion_rate']:.2f}"] for r in runs]
    out += _markdown(head, rows)
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="training budget per setup (wall clock, minutes)")
    ap.add_argument("--setups", default=",".join(SETUPS), help=f"comma-separated subset of {','.join(SETUPS)}")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="base run config")
    ap.add_argument("--env-steps", type=int, default=None,
                    help="also stop each setup at this many env steps (a budget that does not depend on machine load)")
    ap.add_argument("--games", type=int, default=20, help="held-out games per map and opponent")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="extra config override for every setup (repeatable)")
    ap.add_argument("--out", type=Path, help="write every metric of every setup as JSON here")
    args = ap.parse_args(argv)
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    bad = [s for s in setups if s not in SETUPS]
    if bad or not setups or args.minutes <= 0 or args.games < 1:
        ap.error(f"--setups takes {', '.join(SETUPS)} (got {bad or setups}); --minutes > 0; --games >= 1")

    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    runs = []
    try:
        for setup in setups:
            print(f"training {setup} for {args.minutes:g} min ...", file=sys.stderr, flush=True)
            runs.append(train_one(setup, args))
    finally:
        ray.shutdown()
    budget = f"{args.minutes:g} min" + (f" or {args.env_steps:,d} env steps" if args.env_steps else "")
    print(f"curriculum ablation: {budget} per setup, {args.cpus} CPUs, config {args.config}")
    print(format_table(runs))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(runs, indent=2, default=float))
    # Win rate AND score: on fair maps perfect racers draw, so the win rate alone is 0 everywhere.
    summary = {r["setup"]: {"win_rate": round(r["heldout"][f"heldout/{OPPONENT}/win_rate"], 4),
                            "score": round(r["heldout"][f"heldout/{OPPONENT}/score"], 4)} for r in runs}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
