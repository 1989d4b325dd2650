"""What `tune.Tuner` takes for a run, shared by `train.py`, sweeps (`sweeps/`, `tune.py`) and the benches:
the trainable and its param space, Tune stop criteria, run and tune configs, and reading a result key.
Ray and the RLlib glue are imported when a function needs them."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from spade_rllib.config.run_config import RunConfig
from spade_rllib.artifacts.result_lookup import result_value

__all__ = ["make_tune_config", "make_tune_run_config", "result_value", "stop_criteria", "storage_uri_or_path",
           "trainable_and_param_space"]


def stop_criteria(cfg: RunConfig) -> dict:
    """Tune stop dict: the first criterion reached stops the trial."""
    s = cfg.training.stop
    stop: dict[str, Any] = {}
    if s.time_s is not None:
        stop["time_total_s"] = s.time_s
    if s.iterations is not None:
        stop["training_iteration"] = s.iterations
    if s.env_steps is not None:
        stop["env_runners/num_env_steps_sampled_lifetime"] = s.env_steps
    if s.metric is not None:
        stop[s.metric] = s.target
    return stop


def trainable_and_param_space(cfg: RunConfig, **kwargs):
    """(trainable class, AlgorithmConfig) for `tune.Tuner(trainable, param_space=...)`."""
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.algorithm import SpadePPO

    return SpadePPO, build_algo_config(cfg, **kwargs)


def make_tune_run_config(cfg: RunConfig, callbacks: Optional[list] = None, verbose: int = 0, stopper=None,
                         attached: bool = False):
    """`tune.RunConfig` with storage, stop criteria (or `stopper`, which checks them), checkpointing (every
    `checkpoint_every` iterations; by time with `checkpoint_every_s`: `rllib.recovery.TimedCheckpoints`, added
    here unless `callbacks` holds one) and trial retries (`rllib.recovery.max_failures`; `attached`: to a cluster)."""
    from ray import tune

    from spade_rllib.rllib.recovery import TimedCheckpoints, max_failures

    callbacks = list(callbacks or [])
    if cfg.training.checkpoint_every_s and not any(isinstance(c, TimedCheckpoints) for c in callbacks):
        callbacks.append(TimedCheckpoints(cfg.training.checkpoint_every_s))

    t = cfg.training
    return tune.RunConfig(
        name=cfg.experiment.name,
        storage_path=storage_uri_or_path(cfg.experiment.storage_path),
        stop=stopper if stopper is not None else (stop_criteria(cfg) or None),
        checkpoint_config=tune.CheckpointConfig(
            num_to_keep=t.checkpoint_keep,
            checkpoint_frequency=t.checkpoint_every,
            checkpoint_at_end=True,
        ),
        callbacks=callbacks,
        verbose=verbose,
        failure_config=tune.FailureConfig(max_failures=max_failures(cfg, attached)),
    )


def storage_uri_or_path(storage: str) -> str:
    """A URI (s3://, gs://, file://) as it is, for Tune's pyarrow filesystem; a local path made absolute."""
    if "://" in storage:
        return storage
    return str(Path(os.path.expanduser(storage)).resolve())


def make_tune_config(cfg: RunConfig):
    """`tune.TuneConfig` for a single trial with a readable directory name."""
    from ray import tune

    name = cfg.experiment.name
    return tune.TuneConfig(
        num_samples=1,
        trial_name_creator=lambda trial: f"{name}_{trial.trial_id}",
        trial_dirname_creator=lambda trial: f"{name}_{trial.trial_id}",
    )


