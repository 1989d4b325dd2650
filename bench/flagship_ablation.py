"""Flagship ablation: what the league and the joint curriculum add on top of the flagship recipe
(`tune_configs/flagship.yaml`), equal budgets and seeds; held-out scores against every ladder bot and a
still team, cross-play Bradley-Terry Elo of the final mains and exploitability, with bootstrap intervals
over seeds.

    python bench/flagship_ablation.py [--seeds 3] [--minutes 15] [--exploit-minutes 3] [--arms mirror,pfsp,maestro]
        [--games 5] [--env-steps N] [--exploit-env-steps N] [--set KEY=VALUE ...] [--out-dir bench_out/flagship]
        [--config tune_configs/flagship.yaml] [--max-map-size N] [--cpus 2]

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
games per map and seat; Bradley-Terry Elo (`spade_rllib.ratings`) rates them. Per arm: the mean over
seeds and a 95% percentile bootstrap interval over seeds (scores clipped to [0, 1]).

The LAST line is one JSON object: {"bench", "env_id", "config", "seeds", "minutes", "exploit_minutes",
"games", "ladder", "arms": {arm: {"heldout": {opponent: {mean, low, high, n, values}}, "navigation": {...},
"exploitability": {...}, "rating": {...}, "mirror_draw_rate": {...}, "iterations", "env_steps"}},
"mains": {main: {elo, low, high}}, "round_robin_games"}.
"""
from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablation_common import (  # noqa: E402
    ROOT,
    ablation_parser,
    deep_merge,
    each_run,
    exploitability,
    fmt_interval,
    heldout_paths,
    ladder_of,
    local_ray,
    parse_ablation_args,
    round_robin,
    train,
)

DEFAULT_CONFIG = ROOT / "tune_configs" / "flagship.yaml"
CONFIDENCE = 0.95
N_BOOTSTRAP = 2000
ARMS = ("mirror", "pfsp", "maestro", "pfsp_exploiters")
DEFAULT_ARMS = ("mirror", "pfsp", "maestro")
STILL = "still"


def arm_config(base: dict, arm: str, seed: int, overrides: list[str], out_dir: Path) -> dict:
    """The flagship config for one arm and seed: no in-training evaluation (it would eat the budget)."""
    from spade_rllib.config import apply_overrides

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


def heldout_scores(run: dict, env_id: str, games: int, seed: int, max_size: int = 0) -> dict[str, float]:
    """Main's held-out score per opponent: every ladder bot (`bot:<name>` -> `<name>`) and `still`."""
    from spade_rllib.rllib.heldout_line import PREFIX, final_heldout_evaluation

    ladder = ladder_of(env_id)
    out = final_heldout_evaluation(run["algo_config"], run["weights"], heldout_paths(env_id), max_size, [STILL, *ladder.values()],
                                   games, seed=seed)
    scores = {}
    for name, opp in [(STILL, STILL), *ladder.items()]:
        w, d = out.get(f"{PREFIX}/{opp}/win_rate", math.nan), out.get(f"{PREFIX}/{opp}/draw_rate", 0.0)
        scores[name] = float(w) + 0.5 * float(d)
    return scores


def exploiter_config(base: dict, seed: int, overrides: list[str], out_dir: Path) -> dict:
    """The exploiter of seed `seed`'s main: the mirror arm (no league), a fresh network (another seed)."""
    raw = arm_config(base, "mirror", 1000 + seed, overrides, out_dir)
    raw["experiment"]["name"] = f"exploiter_seed{seed}"
    return raw


def last_finite(values) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return finite[-1] if finite else math.nan


def main(argv=None) -> int:
    ap = ablation_parser(__doc__, kind="arms", names=ARMS, default_names=DEFAULT_ARMS, seeds=3, minutes=15.0, games=5,
                         exploit_minutes=3.0, env_id=False, greedy=False, out_dir="flagship", out_help="runs and runs.json go here",
                         games_help="games per held-out map, seat and opponent (also exploiter and round robin)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="the recipe every arm starts from")
    ap.add_argument("--exploit-env-steps", type=int, default=None, help="also stop each exploiter at this many env steps")
    args, arms, overrides = parse_ablation_args(ap, argv, "arms", ARMS)
    if not args.config.is_file():
        ap.error(f"--config {args.config}: no such file")
    from spade_rllib.config import read_yaml

    base = read_yaml(args.config.read_text())
    env_id = base["env"]["id"]
    args.out_dir = args.out_dir.resolve()

    ladder = list(ladder_of(env_id))
    runs: dict[str, list[dict]] = {a: [] for a in arms}
    with local_ray(args.cpus, quiet=True):
        for seed, arm in each_run(arms, args.seeds):
            run = train(arm_config(base, arm, seed, overrides, args.out_dir), args.minutes, args.env_steps,
                        f"{arm} seed {seed}", keep=["draws/mirror_draw_rate", "draws/captures_per_game"])
            run["heldout"] = heldout_scores(run, env_id, args.games, seed, args.max_map_size)
            run["exploitability"], run["exploiter_games"] = exploitability(
                run["weights"], exploiter_config(base, seed, overrides, args.out_dir), env_id, seed, args.exploit_minutes,
                args.exploit_env_steps, args.games, max_size=args.max_map_size)
            runs[arm].append(run)
        mains = [(f"{arm}/seed{k}", r) for arm, rs in runs.items() for k, r in enumerate(rs)]
        ratings = round_robin(mains, env_id, args.games, max_size=args.max_map_size)

    summary: dict = {}
    for arm, rs in runs.items():
        elos = [ratings.get(f"{arm}/seed{k}", {}).get("elo", math.nan) for k in range(len(rs))]
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
    (args.out_dir / "runs.json").write_text(json.dumps({a: [{"heldout": r["heldout"], "exploitability": r["exploitability"],
                                                             "history": r["history"]} for r in rs] for a, rs in runs.items()},
                                                       default=float))

    fmt = fmt_interval
    print(f"flagship ablation on {env_id} ({args.config.name}): {args.seeds} seeds x {args.minutes:g} min per arm, "
          f"exploiters {args.exploit_minutes:g} min; mean [95% bootstrap interval over seeds]")
    print(" | ".join(["arm", "navigation", *(f"vs {b}" for b in ladder), "exploitability", "BT Elo", "mirror draws"]))
    for arm, s in summary.items():
        print(" | ".join([arm, fmt(s["navigation"]), *(fmt(s["heldout"][b]) for b in ladder), fmt(s["exploitability"]),
                          fmt(s["rating"]), fmt(s["mirror_draw_rate"])]))
    out = {"bench": "flagship_ablation", "env_id": env_id, "config": str(args.config.name), "seeds": args.seeds,
           "minutes": args.minutes, "exploit_minutes": args.exploit_minutes, "games": args.games, "ladder": ladder,
           "arms": summary, "mains": {k: v for k, v in ratings.items() if not k.startswith("_")},
           "round_robin_games": ratings.get("_games", 0)}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
