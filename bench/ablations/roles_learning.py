"""Role game learning check: does the predator main of `mpe2:simple_tag_v3` get better?

Per seed: the predator main's mean return against a uniformly random prey (`--games` games) before any
training (the baseline: the same config, untrained) and after `--iterations` x 2000 env steps of
self-play with a league per role (docs/envs.md, "Role games"). Ends with
one JSON line: per seed (before, after), the mean rise and its 95% t-interval over seeds.

    python bench/ablations/roles_learning.py --seeds 0 1 2 3 --iterations 40 --games 256
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common import local_ray

T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def config(seed: int) -> dict:
    return {
        "experiment": {"seed": seed},
        "env": {"id": "mpe2:simple_tag_v3", "api": "parallel", "kwargs": {"max_cycles": 25},
                "roles": {"adversary": "predator", "agent": "prey"}},
        "agent": {"lr": 1e-3, "train_batch_size": 2000, "minibatch_size": 500, "epochs": 4, "model": {"hidden": [64, 64]}},
        "league": {"enabled": True, "every_n_iterations": 4, "win_rate_threshold": None, "self_play_ratio": 0.3,
                   "reference_floor": 0.5},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 16, "stop": {"iterations": 1}},
        "evaluation": {"interval": 0, "opponents": ["random"]},
    }


def run(seed: int, iterations: int, games: int) -> dict:
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(parse_config(config(seed))).build_algo()
    try:
        key = "eval/predator/random/return_mean"
        before = algo.evaluate_main(["random"], games)[key]
        t0 = time.perf_counter()
        for _ in range(iterations):
            result = algo.train()
        seconds = time.perf_counter() - t0
        after = algo.evaluate_main(["random"], games)[key]
        return {"seed": seed, "before": before, "after": after, "env_steps": int(result["num_env_steps_sampled_lifetime"]),
                "train_s": round(seconds, 1)}
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--games", type=int, default=256)
    args = parser.parse_args()
    rows = []
    with local_ray(cpus=1, quiet=True):
        for seed in args.seeds:
            rows.append(run(seed, args.iterations, args.games))
            print(rows[-1], flush=True)
    rises = [r["after"] - r["before"] for r in rows]
    mean = sum(rises) / len(rises)
    half = math.nan
    if len(rises) > 1:
        sd = math.sqrt(sum((x - mean) ** 2 for x in rises) / (len(rises) - 1))
        half = T95.get(len(rises) - 1, 1.96) * sd / math.sqrt(len(rises))
    print(json.dumps({"bench": "roles_learning", "runs": rows, "rise_mean": mean, "rise_ci95": [mean - half, mean + half]}))


if __name__ == "__main__":
    main()
