"""Soak: a long league + curriculum run; memory must level off and the league pool stay at its bound.

    python bench/faults/soak.py                                  # 30 minutes, RSS sampled every minute
    python bench/faults/soak.py --minutes 2 --sample-every 10    # smoke size

A local Ray (2 CPUs) runs `SpadePPO` on MazeRace with one remote env runner, the league (a snapshot
every iteration, pool bound `--max-size`, oldest evicted) and the threshold curriculum. Every
`--sample-every` seconds it records the resident set size (VmRSS from /proc) of the driver (which
holds the learner and the league) and of each env runner process, with the league size and the
snapshot/eviction totals. Checks:

* memory growth after warm-up (the first `--warmup-fraction` of the run): the last sample of
  driver + runners over the first sample after warm-up, below `--max-growth` (5%);
* the pool never exceeds its bound (`league/size` <= max_size + the random member) at any iteration;
* `--min-snapshots` (200) snapshots were taken (only reachable with a long enough run: the JSON line
  says how many were).

Ends with one JSON line; exit 0 when every check holds.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import league_curriculum_config  # noqa: E402


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident set size of a process in MiB (Linux /proc). `field` "RssAnon" is the private part
    (heap), "RssShmem" the shared memory it touched (Ray's object store is mapped into workers)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def soak_config(max_size: int, seed: int) -> dict:
    return league_curriculum_config(
        "soak", seed, storage_path="results", window=50, hidden=[64, 64], train_batch_size=2048, minibatch_size=1024,
        league={"every_n_iterations": 1, "min_iterations_between": 1, "max_size": max_size, "eviction": "oldest"},
        training={"stop": {"time_s": 10**6}, "num_env_runners": 1, "num_envs_per_runner": 32})


def league_value(result: dict, key: str, default: float = float("nan")) -> float:
    v = (result.get("league") or {}).get(key, default)
    return float(v) if isinstance(v, (int, float)) else default


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--sample-every", type=float, default=60.0, help="seconds between RSS samples")
    ap.add_argument("--warmup-fraction", type=float, default=1 / 3)
    ap.add_argument("--max-growth", type=float, default=0.05)
    ap.add_argument("--max-size", type=int, default=20, help="league pool bound")
    ap.add_argument("--min-snapshots", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import ray

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(soak_config(args.max_size, args.seed))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo = build_algo_config(cfg).build_algo()
    samples: list[dict] = []
    max_seen = 0.0
    bound = args.max_size + 1  # + the random member, which is never evicted
    over_bound = 0
    iterations = 0
    last = {}
    t0 = time.time()
    next_sample = t0
    try:
        runner_pids = [p for p in algo.env_runner_group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)]
        while time.time() - t0 < args.minutes * 60:
            last = algo.train()
            iterations += 1
            size = league_value(last, "size", 0.0)
            max_seen = max(max_seen, size)
            over_bound += int(size > bound)
            if time.time() >= next_sample:
                runner_pids = algo.env_runner_group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)
                samples.append({"t_s": round(time.time() - t0, 1), "iteration": iterations,
                                "driver_mib": round(rss_mib(os.getpid()), 1),
                                "runners_mib": round(sum(rss_mib(p) for p in runner_pids), 1),
                                "driver_anon_mib": round(rss_mib(os.getpid(), "RssAnon"), 1),
                                "runners_anon_mib": round(sum(rss_mib(p, "RssAnon") for p in runner_pids), 1),
                                "runners_shmem_mib": round(sum(rss_mib(p, "RssShmem") for p in runner_pids), 1),
                                "league_size": size, "snapshots": league_value(last, "snapshots_total"),
                                "evictions": league_value(last, "evictions_total"),
                                "difficulty": (last.get("curriculum") or {}).get("difficulty")})
                print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
                next_sample += args.sample_every
    finally:
        algo.stop()
        ray.shutdown()
    warm = [s for s in samples if s["t_s"] >= args.warmup_fraction * args.minutes * 60]
    growth = None
    if len(warm) >= 2:
        first = warm[0]["driver_mib"] + warm[0]["runners_mib"]
        end = warm[-1]["driver_mib"] + warm[-1]["runners_mib"]
        growth = (end - first) / first
    anon_growth = None
    if len(warm) >= 2:
        first = warm[0]["driver_anon_mib"] + warm[0]["runners_anon_mib"]
        anon_growth = (warm[-1]["driver_anon_mib"] + warm[-1]["runners_anon_mib"] - first) / first
    snapshots = league_value(last, "snapshots_total", 0.0)
    checks = {
        "rss_growth_below_max": growth is not None and growth < args.max_growth,
        "pool_within_bound": over_bound == 0 and max_seen <= bound,
        "enough_snapshots": snapshots >= args.min_snapshots,
    }
    out = {"minutes": args.minutes, "iterations": iterations, "samples": len(samples),
           "rss_growth_after_warmup": None if growth is None else round(growth, 4),
           "anon_rss_growth_after_warmup": None if anon_growth is None else round(anon_growth, 4),
           "driver_mib_first_last": [samples[0]["driver_mib"], samples[-1]["driver_mib"]] if samples else None,
           "runners_mib_first_last": [samples[0]["runners_mib"], samples[-1]["runners_mib"]] if samples else None,
           "snapshots": snapshots, "evictions": league_value(last, "evictions_total", 0.0),
           "league_size_max": max_seen, "pool_bound": bound, "checks": checks, "ok": all(checks.values())}
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
