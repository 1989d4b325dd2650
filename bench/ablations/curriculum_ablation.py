"""Curriculum ablation: six level-selection setups, the same model, budget and seeds; held-out scores
with 95% intervals over seeds.

    python bench/ablations/curriculum_ablation.py [--seeds 3] [--minutes 3] [--env-id CaptureTheFlag-v0]
        [--setups threshold,plr,accel,learnability,uniform,fixed_hardest] [--games 5] [--env-steps N]
        [--set KEY=VALUE ...] [--max-map-size N] [--out-dir bench_out/curriculum] [--cpus 2]
        [--only-seeds K,K] [--max-units K]

Setups (everything else from `ablation_common.base_config`: 1v1 mirror self-play, 10% random and 10%
rusher opponents in every setup, 128x128 MLP):
    threshold      difficulty follows main's score (x1.2 above 0.8, x0.9 below 0.3)
    plr            prioritized level replay, score = positive value loss (from the GAE connector)
    accel          plr plus fair edits of replayed levels (curriculum.level_edits)
    learnability   plr, score = p(1-p) of main's win chance ("sampling for learnability")
    uniform        domain randomization over the knob ranges
    fixed_hardest  no curriculum: every level at difficulty 10

Each (setup, seed) trains for `--minutes` of wall clock (and at most `--env-steps`). Then main's final
weights play every held-out map of the env (`spade_rllib/levels/heldout*`, never trained on) against
each bot of the env's ladder, `--games` games per map and seat, and alone (the other team idles:
the navigation-only solve rate). Per setup the bench reports the mean and the 95% Student-t interval
over seeds of each number, and writes the difficulty and level-size curves as PNG (`--out-dir`).
Every evaluation samples main's actions from its policy as in training (`--greedy`: argmax; a memoryless
CTF policy acting by argmax loops on unknown maps, which floored every score at 0.5 in a first full run).
Default size: 6 setups x 3 seeds x 3 min, about an hour on 2 CPUs with evaluation. Finished (setup, seed)
units are cached in `<out-dir>/units/` and reused by a rerun with the same `--out-dir` (`--only-seeds`,
`--max-units` to run in chunks; see `ablation_common.UnitCache`).

The LAST line is one JSON object: {"bench", "env_id", "seeds", "minutes", "setups": {setup:
{"ladder": {bot: {mean, low, high, n, values}}, "navigation": {...}, "iterations": [...],
"env_steps": [...]}}, "claim": {...}, "png": [...], "complete", "units_done", "units_missing"}. `claim` says whether some adaptive setup's
interval lies above both uniform's and fixed_hardest's on the strongest bot or on navigation.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ablation_parser,
    fmt_interval,
    ladder_navigation_summary,
    ladder_of,
    ladder_runs,
    parse_ablation_args,
    plot_curves,
    separated,
    setup_raw,
    unit_progress,
)

SETUPS: dict[str, dict] = {
    "threshold": {"strategy": "threshold"},
    "plr": {"strategy": "plr", "plr": {"score": "positive_value_loss"}},
    "accel": {"strategy": "accel", "plr": {"score": "positive_value_loss"}},
    "learnability": {"strategy": "plr", "plr": {"score": "learnability"}},
    "uniform": {"strategy": "uniform"},
    "fixed_hardest": {"strategy": "fixed", "fixed": {"difficulty": 10.0}},
}
# Mirror games score 0.5 by symmetry and do not judge main (docs/curriculum.md): the score-driven
# setups read main's games against these opponents, the same mix in every setup.
OPPONENT_MIX = {"random": 0.1, "bot:rusher": 0.1}
ADAPTIVE = ("threshold", "plr", "accel", "learnability")
BASELINES = ("uniform", "fixed_hardest")
CURVES = {"curriculum/difficulty": "difficulty", "curriculum/size_mean": "level size (mean)",
          "curriculum/main_score": "main's training score"}


def setup_config(env_id: str, setup: str, seed: int, overrides: list[str]) -> dict:
    return setup_raw(env_id, seed, overrides, {"curriculum": {"enabled": True, **SETUPS[setup]},
                                               "self_play": {"opponent_mix": dict(OPPONENT_MIX)}})


def claim(setups: dict, ladder: list[str]) -> dict:
    """Which adaptive setups beat both baselines with non-overlapping intervals, per measure."""
    out = {}
    for measure in [f"ladder/{ladder[-1]}", "navigation"] if ladder else ["navigation"]:
        def get(s):
            r = setups[s]
            return r["navigation"] if measure == "navigation" else r["ladder"][measure.split("/", 1)[1]]
        present = [b for b in BASELINES if b in setups]
        winners = [s for s in ADAPTIVE if s in setups and present and all(separated(get(s), get(b)) for b in present)]
        out[measure] = winners
    return out


def main(argv=None) -> int:
    ap = ablation_parser(__doc__, kind="setups", names=list(SETUPS), seeds=3, minutes=3.0, games=5,
                         games_help="held-out games per map, seat and opponent", out_dir="curriculum",
                         bench="curriculum_ablation", out_help="PNG, JSON and units/ (the unit cache) go here")
    args, setups, overrides = parse_ablation_args(ap, argv, "setups", list(SETUPS))
    ladder = list(ladder_of(args.env_id))
    runs = ladder_runs(args, setups, lambda env_id, setup, seed: setup_config(env_id, setup, seed, overrides),
                       keep=list(CURVES))
    progress = unit_progress(args, setups, runs, argv)

    summary = {setup: ladder_navigation_summary(rs, ladder) for setup, rs in runs.items()}
    pngs = []
    for key, label in CURVES.items():
        curves = {s: [r["history"][key] for r in rs] for s, rs in runs.items()}
        png = plot_curves(curves, label, args.out_dir / f"{key.split('/')[-1]}.png",
                          f"{args.env_id}: {label} per iteration (one line per seed)")
        if png is not None:
            pngs.append(str(png))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "curves.json").write_text(json.dumps(
        {s: [r["history"] for r in rs] for s, rs in runs.items()}, default=float))

    print(f"curriculum ablation on {args.env_id}: {args.seeds} seeds x {args.minutes:g} min per setup; "
          f"held-out maps x {args.games} games per seat; mean [95% t-interval] over seeds")
    head = ["setup", *(f"vs {b}" for b in ladder), "navigation", "iterations"]
    print(" | ".join(head))
    for setup, s in summary.items():
        print(" | ".join([setup, *(fmt_interval(s["ladder"][b]) for b in ladder), fmt_interval(s["navigation"]),
                          ",".join(map(str, s["iterations"]))]))
    out = {"bench": "curriculum_ablation", "env_id": args.env_id, "seeds": args.seeds, "minutes": args.minutes,
           "games": args.games, "ladder": ladder, "setups": summary, "claim": claim(summary, ladder), "png": pngs,
           **progress}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
