"""Memory is learned: spade_rllib's LSTM PPO vs its MLP and vs RLlib's stock PPO with `use_lstm`,
on RLlib's own memory env `StatelessCartPole` (CartPole without the velocities).

    python bench/ablations/memory_envs.py [--seeds 0 1 2] [--stock-seeds 0] [--target 350] [--budget 2000000]
                                [--skip-stock] [--skip-mlp]

Rows, all in this one process, one after the other (so at nearly the same machine load):
  spade_lstm   spade_rllib (`agent.model.memory: lstm`, the packed learner path) with MEMORY_CONFIG;
  spade_mlp    the same config without the LSTM (the feed-forward baseline, same budget);
  stock_lstm   RLlib 2.60's stock PPO (its own env runner, connectors and LSTM encoder,
               `DefaultModelConfig(use_lstm=True)`), configured like MEMORY_CONFIG where the keys map
               (lr, gamma, lambda, clip, vf/entropy coefficients, grad clip, epochs, batch and
               minibatch sizes, 16 envs on the local runner, tanh [64] encoder, LSTM size and
               max_seq_len, shared value trunk).
Each run trains until RLlib's `episode_return_mean` (the last 100 episodes) reaches `--target` or
`--budget` env steps have been sampled; it reports the env steps and wall-clock seconds to the
target (None when not reached) and the best mean return. Learning is judged in env steps (load
does not change it); wall-clock is only compared as a ratio between rows of this run. The last
line is one JSON object: per row the per-seed figures and their mean / min / max, and
`stock_over_spade_wall_ratio` (stock seconds to target / spade seconds to target, seed means).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENV_ID = "StatelessCartPole-v1"
ENTRY_POINT = "ray.rllib.examples.envs.classes.stateless_cartpole:StatelessCartPole"
TARGET = 350.0  # the pass bar of RLlib's tuned stateless_cartpole_ppo example
BUDGET = 2_000_000

# Observations are two small numbers (x, theta) without normalization: a large lr, many minibatches
# per batch and a small value coefficient (returns reach ~100 discounted) make the LSTM learn
# within a few hundred thousand env steps (measured; lr 1e-3 with 4 minibatches stayed at random).
MEMORY_CONFIG = {
    "experiment": {"name": "memory_envs", "seed": 0},
    "env": {"id": ENV_ID},
    "agent": {"train_batch_size": 4096, "minibatch_size": 512, "epochs": 6, "lr": 3e-3, "entropy": 0.0,
              "gamma": 0.99, "lambda_": 0.95, "clip": 0.2, "vf_coeff": 0.01, "vf_clip": 1000.0, "grad_clip": 1.0,
              "model": {"hidden": [64], "activation": "tanh", "vf_share_layers": True,
                        "memory": "lstm", "lstm_cell_size": 64, "max_seq_len": 16}},
    "training": {"num_envs_per_runner": 16, "num_env_runners": 0, "torch_threads": 1},
    "evaluation": {"interval": 0},
}


def register_env() -> str:
    """Register RLlib's StatelessCartPole as a Gymnasium id (500-step limit as CartPole-v1)."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=ENTRY_POINT, max_episode_steps=500)
    return ENV_ID


def memory_config(seed: int = 0, use_lstm: bool = True) -> dict:
    import copy

    raw = copy.deepcopy(MEMORY_CONFIG)
    raw["experiment"]["seed"] = int(seed)
    raw["agent"]["model"]["memory"] = "lstm" if use_lstm else "none"
    return raw


def _until(algo, steps_of, return_of, target: float, budget: int) -> dict:
    t0 = time.perf_counter()
    best, steps, reached_steps, reached_s = float("-inf"), 0, None, None
    curve = []
    while steps < budget:
        result = algo.train()
        steps, ret = steps_of(result), return_of(result)
        if ret is not None and ret == ret:
            best = max(best, float(ret))
            curve.append((int(steps), round(float(ret), 1)))
            if ret >= target:
                reached_steps, reached_s = int(steps), time.perf_counter() - t0
                break
    return {"steps_to_target": reached_steps, "seconds_to_target": reached_s, "best_return": best,
            "env_steps": int(steps), "seconds": time.perf_counter() - t0, "curve": curve[::10]}


def run_spade(seed: int, use_lstm: bool = True, target: float = TARGET, budget: int = BUDGET) -> dict:
    """Train spade_rllib's PPO on StatelessCartPole until `target` or `budget` env steps (Ray must be up)."""
    register_env()
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(parse_config(memory_config(seed, use_lstm))).build_algo()
    try:
        return _until(algo, lambda r: r["env_runners"]["num_env_steps_sampled_lifetime"],
                      lambda r: r["env_runners"].get("episode_return_mean"), target, budget)
    finally:
        algo.stop()


def run_stock(seed: int, target: float = TARGET, budget: int = BUDGET) -> dict:
    """RLlib's stock PPO with use_lstm, configured like MEMORY_CONFIG (see the module docstring)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.examples.envs.classes.stateless_cartpole import StatelessCartPole

    a, m = MEMORY_CONFIG["agent"], MEMORY_CONFIG["agent"]["model"]
    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=MEMORY_CONFIG["training"]["num_envs_per_runner"])
        .training(lr=a["lr"], gamma=a["gamma"], lambda_=a["lambda_"], clip_param=a["clip"], vf_loss_coeff=a["vf_coeff"],
                  vf_clip_param=a["vf_clip"], entropy_coeff=a["entropy"], grad_clip=a["grad_clip"], grad_clip_by="global_norm",
                  num_epochs=a["epochs"], minibatch_size=a["minibatch_size"], train_batch_size_per_learner=a["train_batch_size"])
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(m["hidden"]), fcnet_activation=m["activation"],
                                                   vf_share_layers=m["vf_share_layers"], use_lstm=True,
                                                   lstm_cell_size=m["lstm_cell_size"], max_seq_len=m["max_seq_len"]))
        .debugging(seed=int(seed), log_level="WARN")
    )
    algo = config.build_algo()
    try:
        return _until(algo, lambda r: r["env_runners"]["num_env_steps_sampled_lifetime"],
                      lambda r: r["env_runners"].get("episode_return_mean"), target, budget)
    finally:
        algo.stop()


def _summary(runs: list[dict]) -> dict:
    def stats(key: str) -> Optional[dict]:
        vals = [r[key] for r in runs if r[key] is not None]
        if len(vals) < len(runs):
            return None  # some seed did not reach the target
        return {"mean": sum(vals) / len(vals), "min": min(vals), "max": max(vals)}

    return {"seeds": runs, "reached": sum(r["steps_to_target"] is not None for r in runs), "of": len(runs),
            "steps_to_target": stats("steps_to_target"), "seconds_to_target": stats("seconds_to_target"),
            "best_return": {"mean": sum(r["best_return"] for r in runs) / len(runs),
                            "min": min(r["best_return"] for r in runs), "max": max(r["best_return"] for r in runs)}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--stock-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--target", type=float, default=TARGET)
    p.add_argument("--budget", type=int, default=BUDGET)
    p.add_argument("--skip-stock", action="store_true")
    p.add_argument("--skip-mlp", action="store_true")
    args = p.parse_args(argv)
    import ray

    ray.init(num_cpus=max(1, min(2, os.cpu_count() or 1)), include_dashboard=False, log_to_driver=False)
    out: dict = {"bench": "memory_envs", "env": ENV_ID, "target": args.target, "budget": args.budget,
                 "load_avg_start": os.getloadavg()[0]}
    rows = {"spade_lstm": [run_spade(s, True, args.target, args.budget) for s in args.seeds]}
    print("spade_lstm", json.dumps(rows["spade_lstm"]), flush=True)
    if not args.skip_mlp:
        rows["spade_mlp"] = [run_spade(s, False, args.target, args.budget) for s in args.seeds]
        print("spade_mlp", json.dumps(rows["spade_mlp"]), flush=True)
    if not args.skip_stock:
        rows["stock_lstm"] = [run_stock(s, args.target, args.budget) for s in args.stock_seeds]
        print("stock_lstm", json.dumps(rows["stock_lstm"]), flush=True)
    for name, runs in rows.items():
        out[name] = _summary(runs)
    spade_s = (out["spade_lstm"]["seconds_to_target"] or {}).get("mean")
    stock_s = (out.get("stock_lstm", {}).get("seconds_to_target") or {}).get("mean")
    out["stock_over_spade_wall_ratio"] = (stock_s / spade_s) if spade_s and stock_s else None
    out["load_avg_end"] = os.getloadavg()[0]
    ray.shutdown()
    for name in rows:
        for r in out[name]["seeds"]:
            r.pop("curve", None)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
