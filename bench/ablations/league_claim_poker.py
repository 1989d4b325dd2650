"""`bench/ablations/league_claim.py --game kuhn|leduc`: where theory says a league pays, measured exactly.

    python bench/ablations/league_claim.py --game kuhn|leduc [--seeds 5] [--env-steps N] [--every K]
        [--arms mirror,league_uniform,league_pfsp,league_nash,ppo_iig,mirror_untuned] [--set KEY=VALUE ...]
        [--out-dir bench_out/league_claim_<game>] [--cpus 2] [--only-seeds K,K] [--max-units K] [--minutes CAP]

Every arm starts from the game's recipe (tune_configs/kuhn_league.yaml, leduc_league.yaml: model, batch,
epochs) with the same seeds and the same env-step budget, and records, every `--every` iterations (equal env
steps in every arm: one batch per iteration), the EXACT exploitability (NashConv / 2, OpenSpiel's C++ best
response; `spade_rllib.games.exploitability`) of:

  * main        main's current weights;
  * average     the reach-weighted average of main's strategies at every measurement so far (averaging alone);
  * mixture_*   the league's mixtures (uniform over main's snapshots and main, main's matchmaking plan, and
                the Nash equilibrium of the members' payoff matrix), league arms only.

Arms:
    mirror          mirror self-play (main plays itself) with the recipe's PPO (Leduc: tuned), league off;
    mirror_average  not trained: the mirror units' `average` curve (the snapshot average of the mirror run,
                    the control for "averaging alone"), paired with mirror by seed;
    league_uniform  fictitious play's league: a snapshot every `--every` iterations, main's opponents drawn
                    uniformly from all snapshots (no random, no latest bias); its mixture: uniform;
    league_pfsp     the same pool, PFSP `hard` (1-p)^2 matchmaking; its mixture: uniform;
    league_nash     PSRO's meta-solver: opponents from the Nash equilibrium of the members' empirical payoff
                    matrix (`league.sampling: nash`); its mixture: nash;
    mirror_untuned  mirror self-play with the recipe's PPO settings before they were tuned (Leduc: entropy
                    0.01, lr 3e-4; `tune_configs/sweeps/leduc_ppo.yaml` chose today's), the untuned baseline;
    ppo_iig         mirror self-play with the IIG-RL-Benchmark's PPO settings (Rudolph et al. 2026's code,
                    `configs/algorithm/ppo.yaml`: lr 2.5e-4, 1024-step batches in 4 minibatches, 4 epochs, clip
                    0.1, value 0.5, grad norm 0.5) but entropy 0.2 where that file has 0.05 (0.2 is the top of
                    the range its tuned PPO sets use); the recipe's network (MLP 128x128 relu; theirs 3x512
                    tanh), no lr annealing. The paper reports no Leduc figure and its code tunes no Leduc set
                    (`best_hyperparameters/`: phantom tic-tac-toe, dark hex, liar's dice) nor computes Leduc's
                    exploitability, so this is a PPO configured by another team's defaults, not their tuned one.

Per arm and measure: the final point's mean with a two-sided 95% Student-t interval over seeds (and the
IQM); paired differences by seed: each arm's main and mixture against mirror's main, its mixture against
mirror's average. Units (one (arm, seed) run with its curves and resolved config) are cached in
`<out-dir>/units/` as they finish; a rerun with the same --out-dir reuses them (see bench/ablation_common.py).
`<out-dir>/exploitability.png` draws the mean curves over env steps.

The LAST line is one JSON object: {"bench": "league_claim", "game", "env_id", "config", "seeds", "env_steps",
"every", "arms": {arm: {measure: stat, "curve": {measure: [mean per point]}, "curve_env_steps", "env_steps",
"train_s"}}, "paired": {arm: {name: stat}}, "complete", "units_done", "units_missing"}; stat = {mean, low, high,
n, iqm, iqm_low, iqm_high, values}.
"""
from __future__ import annotations

import copy
import functools
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ROOT, LazyRay, UnitCache, ablation_parser, deep_merge, fmt_interval, over_seeds, paired_by_seed, parse_ablation_args,
    pyplot, save_figure, train, unit_manifest, unit_progress, unit_runs,
)
from spade_rllib.artifacts.atomic_io import write_text

POKER_ARMS = ("mirror", "league_uniform", "league_pfsp", "league_nash", "ppo_iig", "mirror_untuned")
DEFAULT_POKER_ARMS = POKER_ARMS  # mirror_untuned only where the game's recipe was tuned (PokerGame.untuned)
BASELINE = "mirror"
AVERAGE_ARM = "mirror_average"
CURVES = ("main", "average", "mixture_uniform", "mixture_plan", "mixture_nash")
KEEP = tuple(f"exploitability/{c}" for c in CURVES) + ("exploitability/env_steps",)
ARM_MIXTURE = {"league_uniform": "uniform", "league_pfsp": "uniform", "league_nash": "nash"}
"""The mixture each league arm is scored by (its `mixture` measure)."""
LEAGUE_BASE = {"enabled": True, "win_rate_threshold": None, "min_iterations_between": 1, "latest_ratio": 0.0,
               "self_play_ratio": 0.0, "include_random": False, "bots": [], "reference_floor": 0.0,
               "max_size": 200, "eviction": "oldest", "num_opponent_slots": 8}
ARM_SAMPLING = {"league_uniform": {"sampling": "uniform"},
                "league_pfsp": {"sampling": "pfsp", "pfsp_weighting": "hard"},
                "league_nash": {"sampling": "nash"}}
IIG_PPO = {"lr": 2.5e-4, "gamma": 0.99, "lambda_": 0.95, "clip": 0.1, "entropy": 0.2, "vf_coeff": 0.5,
           "grad_clip": 0.5, "epochs": 4, "train_batch_size": 1024, "minibatch_size": 256}
"""IIG-RL-Benchmark's `configs/algorithm/ppo.yaml` (8 envs x 128 steps, 4 minibatches), in this config's words."""


@dataclass(frozen=True)
class PokerGame:
    env_id: str
    config: Path
    env_steps: int
    every: int
    untuned: Optional[dict] = None
    """The recipe's `agent` settings before its PPO was tuned (the `mirror_untuned` arm); None: never tuned."""


POKER_GAMES: dict[str, PokerGame] = {
    "kuhn": PokerGame("kuhn_poker", ROOT / "tune_configs" / "kuhn_league.yaml", env_steps=2_000_000, every=5),
    "leduc": PokerGame("leduc_poker", ROOT / "tune_configs" / "leduc_league.yaml", env_steps=10_000_000, every=10,
                       untuned={"entropy": 0.01, "lr": 3e-4}),  # before tune_configs/sweeps/leduc_ppo.yaml
}


def arm_config(base: dict, game: PokerGame, arm: str, seed: int, every: int, overrides: Sequence[str],
               out_dir: Path) -> dict:
    """The recipe of one arm and seed: no in-training evaluation, exploitability every `every` iterations; the
    league arms snapshot main every `every` iterations (the measurement cadence)."""
    from spade_rllib.config.run_config import apply_overrides

    raw = deep_merge(copy.deepcopy(base), {
        "experiment": {"seed": int(seed), "name": f"{arm}_seed{seed}", "storage_path": str(out_dir / "runs")},
        "evaluation": {"interval": 0, "exploitability_interval": int(every)},
        "training": {"checkpoint_every": 0}})
    raw = apply_overrides(raw, list(overrides))
    raw["self_play"] = {**(raw.get("self_play") or {}), "mode": "mirror", "opponent_mix": {}}
    league = {k: v for k, v in (raw.get("league") or {}).items() if k != "enabled"}
    if arm in ARM_SAMPLING:
        raw["league"] = {**league, **LEAGUE_BASE, "every_n_iterations": int(every), **ARM_SAMPLING[arm]}
        raw["evaluation"]["exploitability_mixture"] = ARM_MIXTURE[arm]
    else:
        raw["league"] = {**league, "enabled": False}
    if arm == "mirror_untuned":
        if game.untuned is None:
            raise ValueError(f"arm mirror_untuned: the {game.env_id} recipe was never tuned (its mirror arm is untuned)")
        raw["agent"] = {**raw.get("agent", {}), **game.untuned}
    if arm == "ppo_iig":  # smaller batches: measured as often in env steps as the other arms
        batch = int(raw.get("agent", {}).get("train_batch_size", IIG_PPO["train_batch_size"]))
        raw["agent"] = {**raw.get("agent", {}), **IIG_PPO}
        raw["evaluation"]["exploitability_interval"] = arm_every(every, batch)
    return raw


def arm_every(every: int, base_batch: int) -> int:
    """ppo_iig's measurement cadence in iterations: `every` iterations of the recipe's batch, in its 1024-step batches."""
    return max(1, round(every * base_batch / IIG_PPO["train_batch_size"]))


def curves_of(history: Mapping[str, Sequence[float]], every: int) -> dict[str, list]:
    """The measured points of a run's history (iterations every `every`): {"env_steps": [...], curve: [...]}."""
    n = len(history.get("env_steps", []))
    idx = [i for i in range(n) if (i + 1) % every == 0]
    out: dict[str, list] = {"env_steps": [int(history["exploitability/env_steps"][i]) for i in idx]}
    for c in CURVES:
        out[c] = [None if math.isnan(v) else round(float(v), 6) for v in (history[f"exploitability/{c}"][i] for i in idx)]
    return out


def run_unit_for(base: dict, game: PokerGame, args, overrides: Sequence[str]):
    def run_unit(arm: str, seed: int) -> tuple[dict, dict]:
        raw = arm_config(base, game, arm, seed, args.every, overrides, args.out_dir)
        run = train(raw, args.minutes, args.env_steps, f"{arm} seed {seed}", keep=KEEP)
        from bench.ablation_common import portable

        every = int(raw["evaluation"]["exploitability_interval"])
        record = {"curve": curves_of(run["history"], every), "every": every, "env_steps": run["env_steps"],
                  "iterations": run["iterations"], "train_s": run["train_s"], "config": portable(raw, args.out_dir)}
        return record, run["weights"]

    return run_unit


def final(curve: Sequence[Optional[float]]) -> float:
    vals = [v for v in curve if v is not None]
    return float(vals[-1]) if vals else math.nan


def measures(arm: str, record: Mapping) -> dict[str, float]:
    """The final point of each curve, and `mixture`: the arm's own mixture (mirror: its average)."""
    curve = record["curve"]
    out = {c: final(curve[c]) for c in CURVES}
    out["mixture"] = out[f"mixture_{ARM_MIXTURE[arm]}"] if arm in ARM_MIXTURE else out["average"]
    return out


def summarize(runs: Mapping[str, Sequence[dict]]) -> tuple[dict, dict]:
    """(per-arm statistics with mean curves, paired differences by seed)."""
    per_seed: dict[str, dict[int, dict]] = {}
    arms: dict[str, dict] = {}
    all_runs = dict(runs)
    if BASELINE in runs and runs[BASELINE]:
        all_runs[AVERAGE_ARM] = runs[BASELINE]
    for arm, rs in all_runs.items():
        source = BASELINE if arm == AVERAGE_ARM else arm
        ms = []
        for r in rs:
            m = measures(source, r)
            if arm == AVERAGE_ARM:
                m = {**m, "main": m["average"], "mixture": m["average"]}
            ms.append(m)
        per_seed[arm] = {int(r["seed"]): m for r, m in zip(rs, ms)}
        stats = {k: over_seeds([m[k] for m in ms]) for k in ("main", "average", "mixture", *CURVES[2:])}
        n_points = min((len(r["curve"]["env_steps"]) for r in rs), default=0)
        mean_curve = {}
        for c in CURVES:
            cols = [[r["curve"][c][i] for r in rs] for i in range(n_points)]
            mean_curve[c] = [None if any(v is None for v in col) else round(float(np.mean(col)), 5) for col in cols]
        arms[arm] = {**stats, "curve": mean_curve,
                     "curve_env_steps": rs[0]["curve"]["env_steps"][:n_points] if rs else [],
                     "env_steps": [r["env_steps"] for r in rs], "train_s": [round(r["train_s"], 1) for r in rs]}
    paired = paired_by_seed(per_seed, BASELINE, {"main - mirror main": ("main", "main"),
                                                 "mixture - mirror main": ("mixture", "main"),
                                                 "mixture - mirror average": ("mixture", "average")})
    return arms, paired


def plot(arms: Mapping[str, dict], path: Path, title: str) -> Optional[Path]:
    """Mean exploitability over env steps: main (dashed) and the arm's mixture (solid), one colour per arm."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, (arm, s) in enumerate(arms.items()):
        xs = s["curve_env_steps"]
        if not xs:
            continue
        color = f"C{i % 10}"
        key = f"mixture_{ARM_MIXTURE[arm]}" if arm in ARM_MIXTURE else "average"
        if arm != AVERAGE_ARM:
            ax.plot(xs, [np.nan if v is None else v for v in s["curve"]["main"]], "--", color=color, alpha=0.7,
                    label=f"{arm} main")
        if arm != BASELINE and arm != "ppo_iig":
            ax.plot(xs, [np.nan if v is None else v for v in s["curve"][key]], "-", color=color,
                    label=f"{arm} {'mixture' if arm in ARM_MIXTURE else 'average'}")
    ax.set_xlabel("env steps")
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(plt, fig, path)


def parse_args(argv=None):
    ap = ablation_parser(__doc__, kind="arms", names=POKER_ARMS, default_names=DEFAULT_POKER_ARMS, seeds=5,
                         minutes=600.0, games=None, env_id=False, greedy=False, out_dir="league_claim",
                         bench="league_claim", out_help="units/, manifest.json, exploitability.png, summary.json",
                         games_help="unused on poker (exploitability is exact)",
                         env_steps_help="env steps per arm and seed (default per game: kuhn 2M, leduc 10M)")
    ap.add_argument("--game", required=True, choices=sorted(POKER_GAMES), help="kuhn (Kuhn poker) or leduc (Leduc poker)")
    ap.add_argument("--every", type=int, default=None,
                    help="measure (and snapshot, league arms) every K iterations (default per game: kuhn 5, leduc 10)")
    args, arms, overrides = parse_ablation_args(ap, argv, "arms", POKER_ARMS)
    game = POKER_GAMES[args.game]
    if game.untuned is None and "mirror_untuned" in arms:
        if args.arms != ap.get_default("arms"):
            ap.error(f"--arms mirror_untuned: the {args.game} recipe was never tuned, so its mirror arm is the untuned one")
        arms = [a for a in arms if a != "mirror_untuned"]
    args.env_steps = game.env_steps if args.env_steps is None else args.env_steps
    args.every = game.every if args.every is None else args.every
    if args.env_steps < 1 or args.every < 1:
        ap.error(f"--env-steps {args.env_steps} / --every {args.every}: expected >= 1")
    if args.out_dir == Path("bench_out") / "league_claim":
        args.out_dir = Path("bench_out") / f"league_claim_{args.game}"
    args.out_dir = args.out_dir.resolve()
    from spade_rllib.config.run_config import read_yaml

    return args, arms, overrides, game, read_yaml(game.config.read_text())


def main(argv=None) -> int:
    args, arms, overrides, game, base = parse_args(argv)  # the shared numbers, --cpus and --out-dir checks
    from bench.common import check_bench_args  # every arm's whole config with the --set values, before Ray

    check_bench_args(args, configs=[(f"arm {arm}", functools.partial(arm_config, base, game, arm, 0, args.every, overrides,
                                                                     args.out_dir)) for arm in arms])
    from spade_rllib.envs.openspiel_env import require_pyspiel

    try:
        require_pyspiel(f"--game {args.game}")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    manifest = unit_manifest(args, game.env_id, game.config.read_text())
    manifest.update({"game": args.game, "every": args.every})
    cache = UnitCache(args.out_dir, manifest, keep_weights=False)
    cache.check()
    with LazyRay(args.cpus) as ray:
        runs = unit_runs(args, arms, run_unit_for(base, game, args, overrides), cache, ray)
    progress = unit_progress(args, arms, runs, argv)
    summary, paired = summarize(runs)
    n = max((len(r) for r in runs.values()), default=0)
    plot(summary, args.out_dir / "exploitability.png",
         f"{args.game}: exact exploitability over env steps, mean of {n} seeds")
    print(f"league claim on {game.env_id} ({game.config.name}): {args.seeds} seeds x {args.env_steps:,d} env steps per "
          f"arm, exact exploitability (NashConv/2) every {args.every} iterations"
          f"{'' if progress['complete'] else ' (INCOMPLETE: seeds present only)'}; final point, mean [95% t-interval]")
    print(" | ".join(["arm", "main", "average", "mixture", "uniform", "plan", "nash", "env steps"]))
    for arm, s in summary.items():
        print(" | ".join([arm, *(fmt_interval(s[k]) for k in ("main", "average", "mixture", "mixture_uniform",
                                                                  "mixture_plan", "mixture_nash")),
                          f"{int(np.mean(s['env_steps'])):,d}" if s["env_steps"] else "-"]))
    for arm, d in paired.items():
        print(f"{arm}, paired by seed: " + "; ".join(f"{k} {fmt_interval(v)}" for k, v in d.items()))
    out = {"bench": "league_claim", "game": args.game, "env_id": game.env_id, "config": game.config.name,
           "seeds": args.seeds, "env_steps": args.env_steps, "every": args.every, "overrides": list(overrides),
           "arms": summary, "paired": paired, **progress}
    write_text(args.out_dir / "summary.json", json.dumps(out, indent=1))
    print(json.dumps(out), flush=True)
    return 0


__all__ = ["POKER_ARMS", "POKER_GAMES", "arm_config", "curves_of", "main", "measures", "summarize"]
