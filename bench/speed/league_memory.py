"""Peak memory of league training with 1 and with 100 frozen snapshots of the quickstart model.

Usage: ``python bench/speed/league_memory.py [--snapshots-small 1] [--snapshots-large 100] [--iterations 2] [--lstm]``

``--lstm``: main is recurrent (``agent.model.memory: lstm``, LSTM 128), so every snapshot is a recurrent
opponent whose slot keeps one hidden state per seat on the runners.

Each case runs in a fresh process (so peak RSS is its own): a local Ray with 2 CPUs, `SpadePPO` from
``tune_configs/quickstart.yaml`` with the league on and one remote env runner; the league is filled
with N snapshots (main's weights, slightly perturbed so no arrays are shared), the plan and slot
weights are broadcast, then ``--iterations`` training iterations run (PPO + league update each) and
one checkpoint is saved. Peak RSS = ``ru_maxrss`` of the driver process (which also holds the
local env runner and the learner) + ``ru_maxrss`` of every remote env runner process. Ray's own
daemons (GCS, raylet) are not counted: they do not hold league state.

Snapshots live once, on the driver, as numpy state dicts; env runners hold `num_opponent_slots`
modules whatever the league size, and the learner holds only main. Target: ``ratio <= 1.2``.
Last line: one JSON object with ``rss_1``, ``rss_100`` (MiB) and ``ratio``, plus the breakdown.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "tune_configs" / "quickstart.yaml"
PERTURBATION = 1e-3  # noise added to each snapshot's weights (distinct arrays, same architecture)
KIB_PER_MIB = 1024


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / KIB_PER_MIB


LSTM_OVERRIDES = ["agent.model.memory=lstm", "agent.model.lstm_cell_size=128", "agent.model.max_seq_len=32"]


def run_case(num_snapshots: int, iterations: int, seed: int, lstm: bool = False) -> dict:
    """One case, in this process: build, fill the league, train, checkpoint; report peak RSS."""
    import numpy as np
    import ray

    from spade_rllib.config.run_config import apply_overrides, load_raw, parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    overrides = [
        "league.enabled=true",
        f"league.max_size={max(2, num_snapshots)}",
        "league.every_n_iterations=null",
        "league.win_rate_threshold=1.0",  # no automatic snapshots: the bench sets the league size
        "league.window=1000000",
        "training.num_env_runners=1",
        "resources.num_cpus_per_env_runner=1",
        "evaluation.interval=0",
        f"experiment.seed={seed}",
        *(LSTM_OVERRIDES if lstm else []),
    ]
    cfg = parse_config(apply_overrides(load_raw(str(QUICKSTART)), overrides))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    algo = build_algo_config(cfg).build_algo()
    (league,) = [c for c in algo.components if c.name == "league"]
    rng = np.random.default_rng(seed)
    base = algo.main_weights()
    for _ in range(num_snapshots):
        noisy = {k: (v + rng.normal(0.0, PERTURBATION, v.shape)).astype(v.dtype) for k, v in base.items()}
        league.league.add_snapshot(noisy, iteration=0)
    league.set_plan(league.league.plan(0))
    algo.broadcast(full=False)
    t0 = time.perf_counter()
    for _ in range(iterations):
        algo.train()
    train_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as ckpt:
        algo.save_to_path(ckpt)
        ckpt_mib = sum(f.stat().st_size for f in Path(ckpt).rglob("*") if f.is_file()) / 2 ** 20
    runners = algo.env_runner_group.foreach_env_runner(
        lambda r: (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / KIB_PER_MIB, len(r.slot_modules)),
        local_env_runner=False)
    weights_mib = sum(a.nbytes for m in league.league.snapshots() for a in league.league.weights(m).values()) / 2 ** 20
    out = {
        "snapshots": len(league.league.snapshots()),
        "driver_mib": peak_rss_mib(),
        "runners_mib": [r[0] for r in runners],
        "runner_slot_modules": [r[1] for r in runners],
        "snapshot_weights_mib": weights_mib,
        "checkpoint_mib": ckpt_mib,
        "train_s": train_s,
    }
    out["total_mib"] = out["driver_mib"] + sum(out["runners_mib"])
    algo.stop()
    ray.shutdown()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots-small", type=int, default=1)
    ap.add_argument("--snapshots-large", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=2, help="training iterations per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lstm", action="store_true", help="a recurrent main and recurrent snapshots")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run_case(args.child, args.iterations, args.seed, args.lstm)), flush=True)
        return 0
    cases = {}
    for n in (args.snapshots_small, args.snapshots_large):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", str(n), "--iterations", str(args.iterations),
                               "--seed", str(args.seed), *(["--lstm"] if args.lstm else [])], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            raise SystemExit(f"case with {n} snapshots failed (exit {proc.returncode})")
        cases[n] = json.loads(lines[-1])
        c = cases[n]
        print(f"{n:4d} snapshots: driver {c['driver_mib']:7.1f} MiB + runners {sum(c['runners_mib']):7.1f} MiB = "
              f"{c['total_mib']:7.1f} MiB peak RSS; snapshot weights {c['snapshot_weights_mib']:.1f} MiB, "
              f"slot modules per runner {c['runner_slot_modules']}, checkpoint {c['checkpoint_mib']:.1f} MiB "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    small, large = cases[args.snapshots_small], cases[args.snapshots_large]
    result = {
        "rss_1": round(small["total_mib"], 1),
        "rss_100": round(large["total_mib"], 1),
        "ratio": round(large["total_mib"] / small["total_mib"], 4),
        "snapshots": [args.snapshots_small, args.snapshots_large],
        "driver_mib": [round(small["driver_mib"], 1), round(large["driver_mib"], 1)],
        "runners_mib": [round(sum(small["runners_mib"]), 1), round(sum(large["runners_mib"]), 1)],
        "snapshot_weights_mib": round(large["snapshot_weights_mib"], 1),
        "target_ratio": 1.2,
        "lstm": bool(args.lstm),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
