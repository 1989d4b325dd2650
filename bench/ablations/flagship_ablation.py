"""Flagship ablation: what the league and the joint curriculum add on top of the flagship recipe
(`tune_configs/flagship.yaml`), equal budgets and seeds; held-out scores against every ladder bot and a
still team, cross-play Bradley-Terry Elo of the final mains and exploitability, with bootstrap intervals
over seeds.

    python bench/ablations/flagship_ablation.py [--seeds 3] [--minutes 15] [--exploit-minutes 3] [--arms mirror,pfsp,maestro]
        [--games 5] [--env-steps N] [--exploit-env-steps N] [--set KEY=VALUE ...] [--out-dir bench_out/flagship]
        [--config tune_configs/flagship.yaml] [--max-map-size N] [--cpus 2] [--only-seeds K,K] [--max-units K]

Arms (everything else from the flagship config: PLR curriculum scored by positive value loss, model,
batch, draw reward; every arm gives the fixed references, random and the ladder bots, the same share of
main's games, `league.reference_floor`, and the same wall clock):
    mirror           no league: mirror self-play, the reference share spread evenly over random and the bots
                     (`self_play.opponent_mix`)
    pfsp             the flagship: league of snapshots, PFSP `hard` + latest + reference floor; the PLR
                     curriculum and PFSP choose levels and opponents independently ("PLR + PFSP")
    maestro          the same league, curriculum `maestro`: one PLR buffer per co-player, co-players also
                     drawn by regret (`curriculum.maestro.coplayer_mix` of main's pool distribution)
    pfsp_exploiters  pfsp + one main exploiter and one league exploiter (main gets a third of the games)

After each (arm, seed) run main's final weights play every held-out CTF map (never trained on),
`--games` per map, seat and opponent, actions sampled: the score (win + draw/2) against each ladder bot
and against a still team (the other team never moves: navigation; 1 = always captures). Exploitability
(AlphaStar's test): a fresh learner, the flagship recipe without the league, trains `--exploit-minutes`
(and at most `--exploit-env-steps`) with every game against the frozen final main, then plays it on the
held-out maps: its score (lower = main is more robust). Then every pair of final mains plays `--games`
games per map and seat; Bradley-Terry Elo (`spade_rllib.core.ratings`) rates them. Per arm: the mean over
seeds and a 95% percentile bootstrap interval over seeds (scores clipped to [0, 1]).

A full run (3 arms x 3 seeds x (15 + 3) min, then the round robin) takes about 3.3 hours, so it can be
spread over sessions, unit by unit (one unit = one (arm, seed) run with its held-out scores and its
exploiter). Each finished unit goes at once to `<out-dir>/units/<arm>_seed<k>.json` and `.pt` (main's final
weights); a rerun with the same `--out-dir` reuses every cached unit (`cached: pfsp seed 0 (finished ...)`)
and trains only the rest. `--only-seeds 0` trains only seed 0 now, `--max-units K` stops after K new units:

    python bench/ablations/flagship_ablation.py --seeds 3 --only-seeds 0      # session 1: 3 units, ~55 min
    python bench/ablations/flagship_ablation.py --seeds 3 --only-seeds 1      # session 2, the same --out-dir
    python bench/ablations/flagship_ablation.py --seeds 3                     # session 3: seed 2, then the round robin

`<out-dir>/manifest.json` (written with the first unit) holds the settings units must share: config file
hash, minutes, env and exploiter steps, games, --max-map-size, the --set overrides, env id; a rerun that
changes one of them stops with a one-line error (exit 2) before Ray starts and touches nothing: pick a new
`--out-dir` instead. A different git commit only prints a WARNING, since code fixes between sessions are
normal; judge whether they move the numbers. The round robin needs every main, so it runs only when every
unit of `--seeds` x `--arms` is present (its result is cached too, `units/round_robin.json`); until then the
bench prints the missing units and the command that continues, and reports the seeds present.

The LAST line is one JSON object: {"bench", "env_id", "config", "seeds", "minutes", "exploit_minutes",
"games", "ladder", "arms": {arm: {"heldout": {opponent: {mean, low, high, n, values}}, "navigation": {...},
"exploitability": {...}, "rating": {...}, "mirror_draw_rate": {...}, "iterations", "env_steps"}},
"mains": {main: {elo, low, high}}, "round_robin_games", "complete", "units_done", "units_missing"}; with
"complete": false the intervals cover the seeds present (see each "n"), "rating" and "mains" are empty.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ROOT,
    STILL,
    LazyRay,
    UnitCache,
    ablation_parser,
    deep_merge,
    exploitability,
    fmt_interval,
    heldout_scores,
    ladder_of,
    parse_ablation_args,
    round_robin,
    train,
    unit_manifest,
    unit_progress,
    unit_runs,
)
from spade_rllib.artifacts.atomic_io import write_text

DEFAULT_CONFIG = ROOT / "tune_configs" / "flagship.yaml"
CONFIDENCE = 0.95
N_BOOTSTRAP = 2000
ARMS = ("mirror", "pfsp", "maestro", "pfsp_exploiters")
DEFAULT_ARMS = ("mirror", "pfsp", "maestro")


def arm_config(base: dict, arm: str, seed: int, overrides: list[str], out_dir: Path) -> dict:
    """The flagship config for one arm and seed: no in-training evaluation (it would eat the budget)."""
    from spade_rllib.config.run_config import apply_overrides

    raw = copy.deepcopy(base)
    raw = deep_merge(raw, {"experiment": {"seed": int(seed), "name": f"{arm}_seed{seed}", "storage_path": str(out_dir / "runs")},
                           "evaluation": {"interval": 0, "heldout_levels": [], "final_heldout_levels": []}})
    raw = apply_overrides(raw, overrides)  # --set first, so every arm derives from the same settings
    league = raw.get("league") or {}
    if arm == "mirror":
        refs = ["random"] * bool(league.get("include_random", True)) + [f"bot:{b}" for b in league.get("bots") or []]
        share = float(league.get("reference_floor", 0.0))
        raw["league"] = {**league, "enabled": False}
        raw["self_play"] = {"mode": "mirror", "opponent_mix": {r: share / len(refs) for r in refs} if refs and share else {}}
    elif arm == "maestro":
        raw = deep_merge(raw, {"curriculum": {"strategy": "maestro"}})
    elif arm == "pfsp_exploiters":
        raw = deep_merge(raw, {"league": {"main_exploiters": 1, "league_exploiters": 1}})
    return raw


def bootstrap_over_seeds(values, clip: bool = True, seed: int = 0) -> dict:
    """Mean over seeds and a 95% percentile bootstrap interval of it (resampling seeds); clipped to [0, 1]
    for scores. One value: the interval is the value itself."""
    vals = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    clean = lambda x: None if x is None or math.isnan(x) else round(float(x), 6)  # noqa: E731
    if vals.size == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "values": [clean(v) for v in values]}
    rng = np.random.default_rng(seed)
    means = vals[rng.integers(0, vals.size, size=(N_BOOTSTRAP, vals.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    mean = float(vals.mean())
    if clip:
        low, high, mean = (min(1.0, max(0.0, float(x))) for x in (low, high, mean))
    return {"mean": clean(mean), "low": clean(low), "high": clean(high), "n": int(vals.size),
            "values": [clean(v) for v in values]}


def exploiter_config(base: dict, seed: int, overrides: list[str], out_dir: Path) -> dict:
    """The exploiter of seed `seed`'s main: the mirror arm (no league), a fresh network (another seed)."""
    raw = arm_config(base, "mirror", 1000 + seed, overrides, out_dir)
    raw["experiment"]["name"] = f"exploiter_seed{seed}"
    return raw


def last_finite(values) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return finite[-1] if finite else math.nan


def cached_round_robin(cache: UnitCache, runs: dict, base: dict, overrides: list[str], args, env_id: str,
                       ray: LazyRay) -> dict:
    """`round_robin` of every main in `runs` (each rebuilt from its unit: the arm's algorithm config and its
    cached weights), kept in `units/round_robin.json` and reused while the same units (same records) make it."""
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    key = {f"{arm}/seed{r['seed']}": hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()[:16]
           for arm, rs in runs.items() for r in rs}
    path = cache.units_dir / "round_robin.json"
    if path.is_file():
        stored = json.loads(path.read_text())
        if stored.get("mains") == key:
            print(f"cached: round robin of {len(key)} mains", file=sys.stderr, flush=True)
            return stored["ratings"]
    ray.ensure()
    mains = []
    for arm, rs in runs.items():
        for r in rs:
            raw = arm_config(base, arm, r["seed"], overrides, args.out_dir)
            mains.append((f"{arm}/seed{r['seed']}", {"algo_config": build_algo_config(parse_config(raw)),
                                                     "weights": cache.weights(arm, r["seed"])}))
    ratings = round_robin(mains, env_id, args.games, max_size=args.max_map_size)
    write_text(path, json.dumps({"mains": key, "ratings": ratings}))
    return ratings


def parse_args(argv=None):
    """(args, arms, overrides, the base config, env id) of a command line; one error for a bad one."""
    ap = ablation_parser(__doc__, kind="arms", names=ARMS, default_names=DEFAULT_ARMS, seeds=3, minutes=15.0, games=5,
                         exploit_minutes=3.0, env_id=False, greedy=False, out_dir="flagship", bench="flagship_ablation",
                         out_help="runs, runs.json, units/ (the unit cache) and manifest.json go here",
                         games_help="games per held-out map, seat and opponent (also exploiter and round robin)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="the recipe every arm starts from")
    ap.add_argument("--exploit-env-steps", type=int, default=None, help="also stop each exploiter at this many env steps")
    args, arms, overrides = parse_ablation_args(ap, argv, "arms", ARMS)
    if args.exploit_env_steps is not None and args.exploit_env_steps < 1:
        ap.error(f"--exploit-env-steps {args.exploit_env_steps}: expected >= 1 (leave it out for no env-step cap)")
    if not args.config.is_file():
        ap.error(f"--config {args.config}: no such file")
    from spade_rllib.config.run_config import read_yaml

    base = read_yaml(args.config.read_text())
    args.out_dir = args.out_dir.resolve()
    return args, arms, overrides, base, base["env"]["id"]


def main(argv=None) -> int:
    args, arms, overrides, base, env_id = parse_args(argv)
    cache = UnitCache(args.out_dir, unit_manifest(args, env_id, args.config.read_text()))
    cache.check()  # before Ray: a mismatch writes nothing

    def run_unit(arm: str, seed: int) -> tuple[dict, dict]:
        run = train(arm_config(base, arm, seed, overrides, args.out_dir), args.minutes, args.env_steps,
                    f"{arm} seed {seed}", keep=["draws/mirror_draw_rate", "draws/captures_per_game"])
        run["heldout"] = heldout_scores(run, env_id, args.games, seed, args.max_map_size)
        run["exploitability"], run["exploiter_games"] = exploitability(
            run["weights"], exploiter_config(base, seed, overrides, args.out_dir), env_id, seed, args.exploit_minutes,
            args.exploit_env_steps, args.games, max_size=args.max_map_size)
        keys = ("heldout", "exploitability", "exploiter_games", "history", "iterations", "env_steps", "train_s")
        return {k: run[k] for k in keys}, run["weights"]

    ladder = list(ladder_of(env_id))
    with LazyRay(args.cpus) as ray:
        runs = unit_runs(args, arms, run_unit, cache, ray)
        progress = unit_progress(args, arms, runs, argv)
        ratings = {}
        if progress["complete"]:
            ratings = cached_round_robin(cache, runs, base, overrides, args, env_id, ray)

    summary: dict = {}
    for arm, rs in runs.items():
        elos = [ratings.get(f"{arm}/seed{r['seed']}", {}).get("elo", math.nan) for r in rs]
        summary[arm] = {
            "heldout": {bot: bootstrap_over_seeds([r["heldout"][bot] for r in rs]) for bot in ladder},
            "navigation": bootstrap_over_seeds([r["heldout"][STILL] for r in rs]),
            "exploitability": bootstrap_over_seeds([r["exploitability"] for r in rs]),
            "rating": bootstrap_over_seeds(elos, clip=False),
            "mirror_draw_rate": bootstrap_over_seeds([last_finite(r["history"]["draws/mirror_draw_rate"]) for r in rs]),
            "captures_per_game": bootstrap_over_seeds([last_finite(r["history"]["draws/captures_per_game"]) for r in rs],
                                                      clip=False),
            "exploiter_games_last_iter": [r["exploiter_games"] for r in rs],
            "iterations": [r["iterations"] for r in rs],
            "env_steps": [r["env_steps"] for r in rs],
        }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_text(args.out_dir / "runs.json", json.dumps({a: [{"seed": r["seed"], "heldout": r["heldout"],
                                                           "exploitability": r["exploitability"], "history": r["history"]}
                                                          for r in rs] for a, rs in runs.items()}, default=float))

    fmt = fmt_interval
    print(f"flagship ablation on {env_id} ({args.config.name}): {args.seeds} seeds x {args.minutes:g} min per arm"
          f"{'' if progress['complete'] else ' (INCOMPLETE: seeds present only, no round robin)'}, "
          f"exploiters {args.exploit_minutes:g} min; mean [95% bootstrap interval over seeds]")
    print(" | ".join(["arm", "navigation", *(f"vs {b}" for b in ladder), "exploitability", "BT Elo", "mirror draws"]))
    for arm, s in summary.items():
        print(" | ".join([arm, fmt(s["navigation"]), *(fmt(s["heldout"][b]) for b in ladder), fmt(s["exploitability"]),
                          fmt(s["rating"]), fmt(s["mirror_draw_rate"])]))
    out = {"bench": "flagship_ablation", "env_id": env_id, "config": str(args.config.name), "seeds": args.seeds,
           "minutes": args.minutes, "exploit_minutes": args.exploit_minutes, "games": args.games, "ladder": ladder,
           "arms": summary, "mains": {k: v for k, v in ratings.items() if not k.startswith("_")},
           "round_robin_games": ratings.get("_games", 0), **progress}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
