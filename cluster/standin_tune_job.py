"""Stand-in Ray Tune job for the multi-node check (`cluster/multinode_check.py`).

It runs a few trials of a trivial function trainable, one CPU each, and records in every result
the id of the Ray node the trial ran on (`node_id`, from `ray.get_runtime_context()`). Tune adds
`node_ip` on its own. The checker reads the trials' `result.json` files under `--storage`.

It exists so the multi-node machinery can be tested before `python -m spade_rllib.tune` lands;
switch with `multinode_check.py --entrypoint "python -m spade_rllib.tune --sweep lr_gamma --smoke
--address auto --storage {storage}"`.
"""
from __future__ import annotations

import argparse
import json
import time

import ray
from ray import tune


def trainable(config: dict) -> None:
    node_id = ray.get_runtime_context().get_node_id()
    for i in range(config["iterations"]):
        # Long enough that all trials are running at the same time, so the scheduler must use
        # every node's CPU (one trial per CPU).
        time.sleep(config["sleep_s"])
        tune.report({"score": config["x"] * (i + 1), "node_id": node_id})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True, help="Tune storage path (shared by all nodes)")
    parser.add_argument("--name", default="standin")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--sleep-s", type=float, default=2.0)
    parser.add_argument("--address", default="auto", help="Ray address; a Ray job sets RAY_ADDRESS")
    parser.add_argument("--wait-nodes", type=int, default=0,
                        help="first wait until this many nodes are alive (clusters still starting)")
    parser.add_argument("--wait-timeout-s", type=float, default=300)
    args = parser.parse_args(argv)

    ray.init(address=args.address, log_to_driver=False)
    deadline = time.time() + args.wait_timeout_s
    while len([n for n in ray.nodes() if n["Alive"]]) < args.wait_nodes:
        if time.time() > deadline:
            print(f"fewer than {args.wait_nodes} nodes after {args.wait_timeout_s}s", flush=True)
            return 1
        time.sleep(2)
    alive = sorted((n["NodeManagerAddress"], n["NodeID"]) for n in ray.nodes() if n["Alive"])
    print("SPADE_CLUSTER_NODES " + json.dumps(alive), flush=True)
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space={
            "x": tune.grid_search(list(range(args.trials))),
            "iterations": args.iterations,
            "sleep_s": args.sleep_s,
        },
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name=args.name, storage_path=args.storage, verbose=0),
    )
    results = tuner.fit()
    errors = [str(r.error) for r in results if r.error]
    nodes = {r.metrics.get("trial_id"): r.metrics.get("node_id") for r in results}
    print("SPADE_TRIAL_NODES " + json.dumps(nodes, sort_keys=True), flush=True)
    if args.wait_nodes and len(set(nodes.values())) < min(args.wait_nodes, args.trials):
        print(f"trials ran on {len(set(nodes.values()))} node(s), expected {args.wait_nodes}", flush=True)
        return 1
    if errors:
        print("trial errors: " + "; ".join(errors), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
