"""What the speed benches share: the rows' overrides (league on, curriculum on, the fixed layout, the MLP) and
the measuring of one algorithm (train and sample env steps/s, the learner alone, stock RLlib configured alike).
bench/speed/train_speed.py, shipped_speed.py, learner_ceiling.py and profile_iteration.py import it; it imports
none of them."""
from __future__ import annotations

import math
import os
import time

# The league-on row: same config, plus a league that snapshots main every 2 iterations.
LEAGUE_ON = ("league.enabled=true", "league.every_n_iterations=2", "league.min_iterations_between=1")
# The throughput layout for 2 CPUs (docs/results.md, "A quiet machine"): 2 env runners x 128 envs each.
FAST_LAYOUT = ("training.num_env_runners=2", "training.num_envs_per_runner=128")
MLP_MODEL = ("agent.model.memory=none", "agent.model.hidden=[128,128]")  # the rows' model (quickstart ships an LSTM)
# The quickstart's layout with the MLP [128, 128] (stock RLlib's row is configured alike; quickstart's own LSTM
# costs it ~2x, inside its over_fixed ratio).
FIXED_OVERRIDES = ("curriculum.enabled=false", "evaluation.interval=0", "env.difficulty=4",
                   "agent.model.memory=none", "agent.model.hidden=[128,128]")


def curriculum_on(difficulty: float) -> tuple[str, ...]:
    """Overrides for the threshold curriculum (tune_configs/curriculum.yaml's rule) kept inside the
    level-size band of `difficulty` (size = 5 + 2*floor(d/2)), so levels stay as big as without it."""
    lo = float(difficulty)
    hi = min(10.0, 2 * math.floor(lo / 2) + 1.99)
    return ("curriculum.enabled=true", "curriculum.strategy=threshold",
            f"curriculum.threshold={{signal: score, initial: {lo}, min: {lo}, max: {hi}, window: 400, "
            "min_episodes: 400, up_threshold: 0.9, down_threshold: 0.3, up_factor: 1.1, down_factor: 0.9}")


def _r(x: float, nd: int = 1):
    """x rounded to nd digits; None for None or NaN (JSON rows)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


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
    elapsed = time.perf_counter() - t0
    timers = r.get("timers", {})
    detail = {"iterations": iters, "ms_per_iter": round(1000 * elapsed / iters, 1),
              "sampling_wait_s": _r(timers.get("env_runner_sampling_timer"), 4),
              "learner_s": _r(timers.get("learner_update_timer"), 4)}
    if "league" in r:
        detail["league_size"] = r["league"].get("size")
    if "curriculum" in r:
        detail["difficulty"] = r["curriculum"].get("difficulty")
    return steps / elapsed, detail


def set_learner_threads(cfg) -> int:
    """The learner's torch threads, as SpadePPO sets them; applied before stock builds too, so every
    row's learner (in this driver process) uses the same number."""
    import torch

    threads = cfg.training.torch_threads or min(4, os.cpu_count() or 1)
    torch.set_num_threads(threads)
    return threads


def learner_only(algo, cfg, seconds: float) -> float:
    """Env steps/s the learner alone consumes: `learner_group.update` on one train batch sampled by
    the driver's local runner (GAE connector + all epochs and minibatches)."""
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, NUM_MODULE_STEPS_TRAINED_LIFETIME

    runner = algo.env_runner
    if runner is None:
        return float("nan")
    batch = int(algo.config.total_train_batch_size)
    episodes = runner.sample(num_timesteps=batch)  # >= batch env steps (whole lock-step rounds)
    set_learner_threads(cfg)  # sample() acted single-threaded; the learner runs as in training
    ts = {NUM_ENV_STEPS_SAMPLED_LIFETIME: 0, NUM_MODULE_STEPS_TRAINED_LIFETIME: 0}
    kw = dict(timesteps=ts, num_epochs=algo.config.num_epochs, minibatch_size=algo.config.minibatch_size,
              shuffle_batch_per_epoch=algo.config.shuffle_batch_per_epoch)
    algo.learner_group.update(episodes=episodes, **kw)  # warm-up
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 3:
        algo.learner_group.update(episodes=episodes, **kw)
        n += 1
    return batch * n / (time.perf_counter() - t0)


def stock(cfg, seconds: float, equal: bool) -> dict:
    """Stock RLlib PPO on the same game: with PPO's defaults, or configured like ours (`equal`)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    from spade_rllib.games import make_env, spade_env_ids
    from spade_rllib.rllib.env_description import env_kwargs_for

    if cfg.env.id not in spade_env_ids():
        raise ValueError(f"stock rows support spade_rllib's registered games only, not {cfg.env.id!r}")
    kwargs, env_id = env_kwargs_for(cfg), cfg.env.id
    register_env("spade_stock", lambda _: ParallelPettingZooEnv(make_env(env_id, **kwargs)))
    m, a, t = cfg.agent.model, cfg.agent, cfg.training
    config = (
        PPOConfig()
        .environment("spade_stock")
        .multi_agent(policies={"main"}, policy_mapping_fn=lambda aid, ep, **kw: "main")
        .debugging(seed=cfg.experiment.seed, log_level="ERROR")
    )
    if equal:
        config = (
            config.env_runners(num_env_runners=t.num_env_runners, num_envs_per_env_runner=t.num_envs_per_runner,
                               rollout_fragment_length="auto", gym_env_vectorize_mode="sync")
            .training(lr=a.lr, gamma=a.gamma, lambda_=a.lambda_, clip_param=a.clip, vf_clip_param=a.vf_clip,
                      entropy_coeff=a.entropy, vf_loss_coeff=a.vf_coeff, grad_clip=a.grad_clip,
                      grad_clip_by="global_norm", num_epochs=a.epochs, minibatch_size=a.minibatch_size,
                      train_batch_size_per_learner=a.train_batch_size)
            .learners(num_learners=0)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(m.hidden), fcnet_activation=m.activation,
                                                       vf_share_layers=m.vf_share_layers))
        )
    else:
        config = config.rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(m.hidden), fcnet_activation=m.activation))
    set_learner_threads(cfg)
    algo = config.build_algo()
    try:
        train_sps, detail = measure_train(algo, seconds)
        sample_sps = measure_group_sample(algo, max(5.0, seconds / 2))
    finally:
        algo.stop()
    detail.update(num_env_runners=config.num_env_runners, num_envs_per_env_runner=config.num_envs_per_env_runner,
                  train_batch=config.train_batch_size_per_learner, minibatch=config.minibatch_size,
                  epochs=config.num_epochs, model="mlp " + "x".join(map(str, m.hidden)))  # stock: its own MLP
    return {"sample_sps": sample_sps, "train_sps": train_sps, "detail": detail}
