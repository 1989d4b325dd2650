"""SIGKILL one env runner by its pid while training runs: training goes on, and the restarted runner
holds the driver's current curriculum state and league opponent slots when it samples again.

    python bench/faults/fault_kill_runner.py [--iterations-after 4] [--timeout 400]

A local Ray (2 CPUs) runs `SpadePPO` on MazeRace with 2 remote env runners, the league (a snapshot
every iteration) and the threshold curriculum. After a few iterations a thread sends SIGKILL to
runner 1's process *during* `algo.train()`. Ray restarts the actor; SpadePPO's
`restore_env_runners` pushes the full driver state (RLlib 2.60 calls it at the start of every
iteration). Checks, after `--iterations-after` more iterations:

* the iteration counter and env steps kept growing, and RLlib counted a runner restart;
* the runner answering as runner 1 is a new process;
* every runner's curriculum sampling state/version and its opponent slots (ids and weights) equal
  the driver's (`curriculum` / `league` components);
* no episode outcome is left undrained on any runner (none counted later a second time).

Ends with one JSON line; exit 0 when every check holds.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import league_curriculum_config  # noqa: E402


def config(seed: int) -> dict:
    return league_curriculum_config(
        "killrunner", seed, storage_path="results", window=20, hidden=[32], train_batch_size=1024, minibatch_size=512,
        league={"every_n_iterations": 1, "min_iterations_between": 1, "max_size": 6},
        training={"stop": {"iterations": 100}, "num_env_runners": 2, "num_envs_per_runner": 8})


def runner_view(r) -> dict:
    """What a runner believes: curriculum sampling state, its version and its opponent slots."""
    src = r.level_source
    slots = {}
    for sid, module in r.slot_modules.items():
        state = module.get_state() if hasattr(module, "get_state") else module.state_dict()
        slots[sid] = {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v) for k, v in state.items()}
    return {"pid": os.getpid(), "sampling": None if src is None else src.sampling_state,
            "version": None if src is None else src.version, "slot_ids": dict(r.slot_members),
            "slots": slots, "pending_outcomes": r.pending_outcomes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations-before", type=int, default=3)
    ap.add_argument("--iterations-after", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=400.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import ray

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(config(args.seed))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo_config = (build_algo_config(cfg).fault_tolerance(delay_between_env_runner_restarts_s=0.0)
                   .env_runners(sample_timeout_s=120.0))
    algo = algo_config.build_algo()
    out: dict = {"checks": {}}
    t0 = time.time()
    try:
        for _ in range(args.iterations_before):
            before = algo.train()
        group = algo.env_runner_group
        old_pid = group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False, remote_worker_ids=[1])[0]
        killer = threading.Timer(0.5, os.kill, (old_pid, signal.SIGKILL))  # during the next train()
        killer.start()
        results = []
        while len(results) < args.iterations_after and time.time() - t0 < args.timeout:
            results.append(algo.train())
        killer.join()
        last = results[-1]
        # Let a restart that is still under way finish, then read what every runner believes.
        deadline = time.time() + args.timeout
        while sorted(group.healthy_env_runner_ids()) != [1, 2] and time.time() < deadline:
            algo.restore_env_runners(group)
            time.sleep(0.5)
        views = dict(zip(group.healthy_env_runner_ids(),
                         group.foreach_env_runner(runner_view, local_env_runner=False)))
        comps = {c.name: c for c in algo.components}
        cur = comps["curriculum"]
        want_sampling, want_version = cur.strategy.sampling_state(), cur.version
        out["iterations"] = [before["training_iteration"], last["training_iteration"]]
        out["restarts"] = last.get("fault_tolerance", {}).get("num_remote_worker_restarts")
        out["checks"]["training_continued"] = (last["training_iteration"] == before["training_iteration"] + len(results)
                                               and last["env_runners"]["num_env_steps_sampled_lifetime"]
                                               > before["env_runners"]["num_env_steps_sampled_lifetime"])
        out["checks"]["runner_restarted"] = 1 in views and views[1]["pid"] != old_pid
        out["checks"]["curriculum_state_everywhere"] = all(
            v["sampling"] == want_sampling and v["version"] == want_version for v in views.values())
        slot_ids = {i: v["slot_ids"] for i, v in views.items()}
        out["slot_ids"] = {str(i): s for i, s in slot_ids.items()}
        same_slots = len({json.dumps(s, sort_keys=True) for s in slot_ids.values()}) == 1
        weights_equal = all(
            set(v["slots"]) == set(views[2]["slots"]) and all(
                all(np.array_equal(v["slots"][n][k], views[2]["slots"][n][k]) for k in v["slots"][n])
                for n in v["slots"]) for v in views.values())
        out["checks"]["opponent_slots_everywhere"] = same_slots and weights_equal
        out["checks"]["no_outcomes_left_on_runners"] = all(v["pending_outcomes"] == 0 for v in views.values())
    finally:
        algo.stop()
        ray.shutdown()
    out["seconds"] = round(time.time() - t0, 1)
    out["ok"] = all(out["checks"].values())
    print(json.dumps(out, default=str))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
