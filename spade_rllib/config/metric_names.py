"""The result keys a `SpadePPO` run reports, and `check_stop_metric`: a `training.stop.metric` is one of them.

A stop metric outside these would never be reached, and Tune only says so in a warning listing every key.
Called by `config.preflight.check_config`; a failure is a one-line `ConfigError` with a "did you mean".
"""
from __future__ import annotations

from typing import Optional

from spade_rllib.core.validation import ConfigError, did_you_mean


TOP_LEVEL_KEYS = ("training_iteration", "time_total_s", "time_this_iter_s", "time_since_restore",
                  "iterations_since_restore", "num_env_steps_sampled_lifetime", "num_training_step_calls_per_iteration",
                  "timesteps_total", "episodes_total")
ENV_RUNNER_KEYS = ("episode_return_mean", "episode_return_max", "episode_return_min", "episode_len_mean",
                   "episode_len_max", "episode_len_min", "episode_duration_sec_mean", "num_episodes",
                   "num_episodes_lifetime", "num_env_steps_sampled", "num_env_steps_sampled_lifetime",
                   "num_agent_steps_sampled", "num_agent_steps_sampled_lifetime", "num_module_steps_sampled",
                   "num_module_steps_sampled_lifetime", "agent_episode_returns_mean", "module_episode_returns_mean",
                   "num_env_steps_sampled_lifetime_throughput", "vs")
LEARNER_KEYS = ("total_loss", "policy_loss", "vf_loss", "vf_loss_unclipped", "vf_explained_var", "entropy",
                "mean_kl_loss", "curr_kl_coeff", "curr_entropy_coeff", "default_optimizer_learning_rate",
                "gradients_default_optimizer_global_norm", "num_module_steps_trained",
                "num_module_steps_trained_lifetime", "num_trainable_parameters", "num_env_steps_trained",
                "num_env_steps_trained_lifetime", "weights_seq_no", "module_train_batch_size_mean", "trained_with",
                "num_non_trainable_parameters", "teacher_loss", "teacher_agreement", "curr_teacher_coeff")
GAME_STATS = ("win_rate", "draw_rate", "loss_rate", "games", "mean_length", "score")
FREE_ROOTS = ("league", "curriculum", "heldout", "timers", "perf", "fault_tolerance", "spade", "env_runner_group",
              "config", "info")
"""Roots whose keys depend on the run (league members, levels): only the root is checked."""


def check_stop_metric(metric: Optional[str], key: str = "training.stop.metric") -> None:
    """`metric` must be a key a run can report (see the constants above); `ConfigError` otherwise."""
    if metric is None:
        return
    parts = metric.split("/")
    if any(not p for p in parts):
        raise ConfigError(f"{key} = {metric!r}: not allowed, a result key has no empty parts (e.g. 'env_runners/episode_return_mean')")
    root = parts[0]
    roots = ("env_runners", "learners", "train", "eval", *FREE_ROOTS)
    ok = False
    if len(parts) == 1:
        ok = root in TOP_LEVEL_KEYS
        suggestions = list(TOP_LEVEL_KEYS) + [f"env_runners/{k}" for k in ENV_RUNNER_KEYS]
    elif root == "env_runners":
        ok = parts[1] in ENV_RUNNER_KEYS
        suggestions = [f"env_runners/{k}" for k in ENV_RUNNER_KEYS]
    elif root == "learners":
        ok = len(parts) >= 3 and parts[2] in LEARNER_KEYS
        suggestions = [f"learners/main/{k}" for k in LEARNER_KEYS]
    elif root in ("train", "eval"):
        ok = len(parts) == 3 and parts[2] in GAME_STATS
        suggestions = [f"{root}/random/{k}" for k in GAME_STATS]
    else:
        ok = root in FREE_ROOTS
        suggestions = [*(f"{r}/..." for r in roots), *TOP_LEVEL_KEYS]
    if not ok:
        raise ConfigError(f"{key} = {metric!r}: not a result key a run reports{did_you_mean(metric, suggestions)}; "
                          f"allowed: {', '.join(TOP_LEVEL_KEYS[:3])}, env_runners/<{'|'.join(ENV_RUNNER_KEYS[:3])}|...>, "
                          f"learners/<module>/<loss...>, train|eval/<opponent>/<{'|'.join(GAME_STATS)}>, "
                          f"{'|'.join(FREE_ROOTS[:3])}/...")


# ----------------------------------------------------------------------------------------------
# This machine
# ----------------------------------------------------------------------------------------------
