"""League ablation: four self-play setups, equal budgets and seeds; ladder scores, a round robin of
all final mains with Bradley-Terry ratings, and exploitability, each with 95% intervals over seeds.

    python bench/ablations/league_ablation.py [--seeds 3] [--minutes 4] [--exploit-minutes 1] [--env-id CaptureTheFlag-v0]
        [--setups mirror,latest,pfsp,pfsp_exploiters] [--games 3] [--env-steps N] [--set KEY=VALUE ...]
        [--max-map-size N] [--out-dir bench_out/league] [--cpus 2]

Setups (everything else from `ablation_common.base_config`; no curriculum, the env's own levels):
    mirror           plain mirror self-play (main plays itself; no league)
    latest           league of snapshots, every game against the newest one (latest_ratio 1, no random)
    pfsp             league, 35% against the newest snapshot, the rest PFSP `hard` over all snapshots
    pfsp_exploiters  pfsp plus one main exploiter and one league exploiter (AlphaStar roles)
League setups snapshot every 5 iterations (and at a 0.7 win rate), the same for all.

After each (setup, seed) run:
  * ladder: main's held-out score (win + draw/2, held-out maps, seats alternating) against each bot;
  * exploitability (AlphaStar's test): a fresh learner trains `--exploit-minutes` with every game
    against the frozen final main (`rllib.frozen_opponent`), then plays it on the held-out maps;
    its score is the exploitability (lower = more robust).
Then every pair of final mains plays `--games` games per held-out map and seat; Bradley-Terry Elo
(`spade_rllib.core.ratings`, bootstrap 95% intervals) rates every main; per setup the mean rating over
seeds gets a 95% t-interval. PFSP's planned opponent probabilities (`league/plan/<member>`) of
every iteration go to `<out-dir>/league_plan.json` and each league's final `league.csv` to
`<out-dir>/league_<setup>_seed<k>.csv`; `pfsp_spread` is max/min planned probability
over the pool at the end (1 = uniform), `final_plan` the probabilities themselves.

Every evaluation samples main's actions from its policy as in training (`--greedy`: argmax; a memoryless
CTF policy acting by argmax loops on unknown maps, which floored every score at 0.5 in a first full run).
The LAST line is one JSON object: {"bench", "env_id", "seeds", "minutes", "exploit_minutes",
"setups": {setup: {"ladder": {bot: {mean, low, high, n, values}}, "exploitability": {...},
"rating": {...}, "pfsp_spread": [...], "iterations": [...]}}, "mains": {main: {elo, low, high}}}.
"""
from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ablation_parser,
    each_run,
    exploitability,
    fmt_interval,
    ladder_of,
    ladder_scores,
    local_ray,
    over_seeds,
    parse_ablation_args,
    round_robin,
    setup_raw,
    train,
)

SNAPSHOTS = {"every_n_iterations": 5, "win_rate_threshold": 0.7}
SETUPS: dict[str, dict] = {
    "mirror": {},
    "latest": {"league": {"enabled": True, **SNAPSHOTS, "latest_ratio": 1.0, "include_random": False,
                          "sampling": "uniform"}},
    "pfsp": {"league": {"enabled": True, **SNAPSHOTS, "latest_ratio": 0.35, "sampling": "pfsp", "pfsp_weighting": "hard"}},
    "pfsp_exploiters": {"league": {"enabled": True, **SNAPSHOTS, "latest_ratio": 0.35, "sampling": "pfsp",
                                   "pfsp_weighting": "hard", "main_exploiters": 1, "league_exploiters": 1}},
}


def setup_config(env_id: str, setup: str, seed: int, overrides: list[str]) -> dict:
    return setup_raw(env_id, seed, overrides, SETUPS[setup])


def final_plan(history: dict) -> dict[str, float]:
    """main's planned opponent probabilities at the last iteration (`league/plan/<member>`)."""
    return {k.rsplit("/", 1)[-1]: round(v[-1], 4) for k, v in history.items()
            if k.startswith("league/plan/") and v and not math.isnan(v[-1])}


def pfsp_spread(history: dict) -> float:
    """max / min of the final planned probabilities over the pool members main may meet (NaN with
    fewer than 2); 1 = uniform. Members PFSP weighs 0 (fully beaten, `hard`) are left out."""
    last = [p for p in final_plan(history).values() if p > 0]
    return max(last) / min(last) if len(last) >= 2 else math.nan


def main(argv=None) -> int:
    ap = ablation_parser(__doc__, kind="setups", names=list(SETUPS), seeds=3, minutes=4.0, games=3, exploit_minutes=1.0,
                         games_help="games per held-out map and seat (ladder, exploiter, round robin)", out_dir="league",
                         out_help="league_plan.json goes here",
                         env_steps_help="also stop each run (and each exploiter) at this many env steps")
    args, setups, overrides = parse_ablation_args(ap, argv, "setups", list(SETUPS))
    ladder = list(ladder_of(args.env_id))
    runs: dict[str, list[dict]] = {s: [] for s in setups}
    plans: dict[str, list[dict]] = {s: [] for s in setups}
    with local_ray(args.cpus, quiet=True):
        for seed, setup in each_run(setups, args.seeds):
            keep = []
            if setup != "mirror":  # the plan's members are only known once built: keep them all
                keep = [f"league/plan/main_v{k}" for k in range(1, 200)] + ["league/plan/random"]
            run = train(setup_config(args.env_id, setup, seed, overrides), args.minutes, args.env_steps,
                        f"{setup} seed {seed}", keep=keep)
            run["history"] = {k: v for k, v in run["history"].items() if any(not math.isnan(x) for x in v)}
            table = Path(run["trial_dir"] or ".") / "league.csv"
            if setup != "mirror" and table.is_file():  # the league's final table, beside the plans
                args.out_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(table, args.out_dir / f"league_{setup}_seed{seed}.csv")
            run["ladder"] = ladder_scores(run["algo_config"], run["weights"], args.env_id, args.games, args.greedy,
                                          args.max_map_size)
            exploiter_raw = setup_config(args.env_id, "mirror", 1000 + seed, overrides)  # a fresh network: another init seed
            run["exploitability"], run["exploiter_games"] = exploitability(
                run["weights"], exploiter_raw, args.env_id, seed, args.exploit_minutes, args.env_steps, args.games,
                max_size=args.max_map_size)
            runs[setup].append(run)
            plans[setup].append(run["history"])
        mains = [(f"{setup}/seed{k}", r) for setup, rs in runs.items() for k, r in enumerate(rs)]
        ratings = round_robin(mains, args.env_id, args.games, args.greedy, args.max_map_size)

    summary: dict = {}
    for setup, rs in runs.items():
        elos = [ratings.get(f"{setup}/seed{k}", {}).get("elo", math.nan) for k in range(len(rs))]
        summary[setup] = {
            "ladder": {bot: over_seeds([r["ladder"][bot] for r in rs]) for bot in ladder},
            "exploitability": over_seeds([r["exploitability"] for r in rs]),
            "rating": over_seeds(elos),
            "pfsp_spread": [None if math.isnan(x := pfsp_spread(r["history"])) else round(x, 3) for r in rs],
            "final_plan": [final_plan(r["history"]) for r in rs],
            "exploiter_games_last_iter": [r["exploiter_games"] for r in rs],
            "iterations": [r["iterations"] for r in rs],
            "env_steps": [r["env_steps"] for r in rs],
        }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "league_plan.json").write_text(json.dumps(plans, default=float))

    fmt = fmt_interval
    print(f"league ablation on {args.env_id}: {args.seeds} seeds x {args.minutes:g} min per setup, exploiters "
          f"{args.exploit_minutes:g} min; mean [95% t-interval] over seeds")
    print(" | ".join(["setup", *(f"vs {b}" for b in ladder), "exploitability", "BT Elo", "pfsp spread"]))
    for setup, s in summary.items():
        print(" | ".join([setup, *(fmt(s["ladder"][b]) for b in ladder), fmt(s["exploitability"]), fmt(s["rating"]),
                          str(s["pfsp_spread"])]))
    out = {"bench": "league_ablation", "env_id": args.env_id, "seeds": args.seeds, "minutes": args.minutes,
           "exploit_minutes": args.exploit_minutes, "games": args.games, "ladder": ladder, "setups": summary,
           "mains": {k: v for k, v in ratings.items() if not k.startswith("_")}, "round_robin_games": ratings.get("_games", 0)}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
