"""Training speed on MazeRace 1v1 with the quickstart model: ours vs stock RLlib, same machine, one run.

    python bench/train_speed.py [--config tune_configs/quickstart.yaml] [--seconds 30] [--skip-baseline]

Measures, each after a warm-up, on one algorithm per setup:
  train_sps            env steps/s of full `SpadePPO.train()` iterations (sample + learn + weight sync)
                       with the quickstart config (mirror self-play + 20% vs random, 1 env runner of
                       64 envs, sample-ahead);
  sample_sps           env steps/s of the same algorithm's env runners sampling train batches with
                       no learning in between (same processes, the weights training ended with,
                       results shipped to the driver), measured right after;
  baseline_train_sps   stock RLlib: `ParallelPettingZooEnv` over the same MazeRace levels, the default
                       `MultiAgentEnvRunner`, PPO defaults (2 env runners x 1 env, batch 4000,
                       minibatch 128, 30 epochs), every agent mapped to one shared policy, same MLP
                       widths;
  baseline_sample_sps  the stock algorithm's env runners sampling with no learning, measured the same way;
  league_train_sps     the same as train_sps with the league on (a snapshot every 2 iterations,
                       latest + PFSP over the pool, opponents in the runner's slots), and
  league_overhead      1 - league_train_sps / train_sps (target <= 0.10).
The last line of output is one JSON object with the keys train_sps, sample_sps, ratio,
baseline_train_sps, baseline_sample_sps, league_train_sps, league_overhead (plus details).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# The league-on row: same config, plus a league that snapshots main every 2 iterations.
LEAGUE_ON = ("league.enabled=true", "league.every_n_iterations=2", "league.min_iterations_between=1")


def measure_group_sample(algo, seconds: float) -> float:
    """Sample-only env steps/s of the algorithm's own env runners (same processes, same weights,
    results shipped to the driver), with no learning in between."""
    from ray.rllib.execution.rollout_ops import synchronous_parallel_sample

    group = algo.env_runner_group
    batch = algo.config.total_train_batch_size

    def one_round() -> int:
        _, metrics = synchronous_parallel_sample(worker_set=group, max_env_steps=batch, _uses_new_env_runners=True,
                                                 _return_metrics=True)
        return sum(int(m.get("num_env_steps_sampled", 0)) for m in metrics)

    one_round()  # drains any in-flight sample-ahead request and warms up
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        steps += one_round()
    return steps / (time.perf_counter() - t0)


def measure_train(algo, seconds: float, warmup_iters: int = 1) -> tuple[float, dict]:
    for _ in range(warmup_iters):
        algo.train()
    steps, t0, iters = 0, time.perf_counter(), 0
    r: dict = {}
    while time.perf_counter() - t0 < seconds or iters < 2:
        r = algo.train()
        steps += int(r["env_runners"]["num_env_steps_sampled"])
        iters += 1
    timers = r.get("timers", {})
    detail = {"iterations": iters, "sampling_wait_s": timers.get("env_runner_sampling_timer"),
              "learner_s": timers.get("learner_update_timer")}
    if "league" in r:
        detail["league_size"] = r["league"].get("size")
    return steps / (time.perf_counter() - t0), detail


def ours(cfg, seconds: float, sample: bool = True) -> dict:
    from spade_rllib.rllib.algorithm import build_algo_config

    algo = build_algo_config(cfg).build_algo()
    try:
        train_sps, detail = measure_train(algo, seconds)
        sample_sps = measure_group_sample(algo, seconds) if sample else float("nan")
    finally:
        algo.stop()
    detail["num_env_runners"] = cfg.training.num_env_runners
    return {"sample_sps": sample_sps, "train_sps": train_sps, "detail": detail}


def baseline(cfg, seconds: float) -> dict:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    from spade_rllib.envs import make_env
    from spade_rllib.rllib.algorithm import env_kwargs_for

    kwargs = env_kwargs_for(cfg)
    register_env("mazerace_stock", lambda _: ParallelPettingZooEnv(make_env("MazeRace-v0", **kwargs)))
    m = cfg.agent.model
    config = (
        PPOConfig()
        .environment("mazerace_stock")
        .multi_agent(policies={"main"}, policy_mapping_fn=lambda aid, ep, **kw: "main")
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(m.hidden), fcnet_activation=m.activation))
        .debugging(seed=cfg.experiment.seed, log_level="ERROR")
    )
    algo = config.build_algo()
    try:
        train_sps, detail = measure_train(algo, seconds)
        sample_sps = measure_group_sample(algo, seconds)
    finally:
        algo.stop()
    detail["num_env_runners"] = config.num_env_runners
    return {"sample_sps": sample_sps, "train_sps": train_sps, "detail": detail}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=str(ROOT / "tune_configs" / "quickstart.yaml"))
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--seconds", type=float, default=30.0, help="measuring time per figure (after warm-up)")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--skip-league", action="store_true")
    args = ap.parse_args()

    import ray

    from spade_rllib.config import load_config

    cfg = load_config(args.config, args.overrides)
    ray.init(num_cpus=cfg.resources.num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    ours_res = ours(cfg, args.seconds)
    print(f"ours:     sample {ours_res['sample_sps']:9,.0f} env steps/s | train {ours_res['train_sps']:9,.0f} env steps/s | {ours_res['detail']}", flush=True)
    base = {"sample_sps": float("nan"), "train_sps": float("nan"), "detail": {}}
    if not args.skip_baseline:
        base = baseline(cfg, args.seconds)
        print(f"baseline: sample {base['sample_sps']:9,.0f} env steps/s | train {base['train_sps']:9,.0f} env steps/s | {base['detail']}", flush=True)
    league = {"train_sps": float("nan"), "detail": {}}
    if not args.skip_league:
        league_cfg = load_config(args.config, [*args.overrides, *LEAGUE_ON])
        league = ours(league_cfg, args.seconds, sample=False)
        print(f"league:   train {league['train_sps']:9,.0f} env steps/s | {league['detail']}", flush=True)
    ray.shutdown()
    out = {
        "train_sps": round(ours_res["train_sps"], 1),
        "sample_sps": round(ours_res["sample_sps"], 1),
        "ratio": round(ours_res["train_sps"] / ours_res["sample_sps"], 3),
        "baseline_train_sps": round(base["train_sps"], 1),
        "baseline_sample_sps": round(base["sample_sps"], 1),
        "league_train_sps": round(league["train_sps"], 1),
        "league_overhead": round(1.0 - league["train_sps"] / ours_res["train_sps"], 3),
        "config": str(args.config),
        "overrides": args.overrides,
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
