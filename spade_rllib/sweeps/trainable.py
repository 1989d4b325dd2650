"""`SweepPPO`: the Tune trainable of a sweep, a `SpadePPO` whose trial config is a small dict.

A trial's Tune config is `{SWEEP_KEY: {...base config and options...}, "agent.lr": 3e-4, ...}`:
the sampled hyperparameters sit at the top level under their dotted training-config keys, so
PBT mutates exactly those keys and `progress.csv`/TensorBoard show them as `config/agent.lr`.
`SweepPPO.__init__` and `default_resource_request` turn that dict into the full RLlib config with
`build_algo_config` (so a PBT exploit, which re-creates the trial from the donor's checkpoint with
the mutated dict, rebuilds the learner with the new values).

Every result gets `sweep/objective`: the sweep's metric read from the first of its candidate
keys the algorithm reports (`spade_rllib.sweeps.sweep_spec.metric_candidates`), the last finite value
when this iteration has none (evaluation runs every `evaluation.interval` iterations).
"""
from __future__ import annotations

import copy
import math
from typing import Any, Optional

from spade_rllib.rllib.algo_config import build_algo_config
from spade_rllib.rllib.algorithm import SpadePPO
from spade_rllib.sweeps.sweep_spec import trial_run_config
from spade_rllib.training.tuner_inputs import result_value

SWEEP_KEY = "spade_sweep"
OBJECTIVE = "sweep/objective"


def sweep_params(config: dict) -> dict:
    """The sampled hyperparameters of a trial config (dotted keys), without the sweep's own entry."""
    return {k: v for k, v in config.items() if k != SWEEP_KEY and not k.startswith("__")}  # Tune adds __trial_info__


def resources_for(cfg, cpus_per_trial: Optional[float], gpus_per_trial: Optional[float]):
    """(num_cpus_for_main_process, run config) with `--cpus-per-trial`/`--gpus-per-trial` applied.

    GPUs go to RLlib's learners: `resources.num_gpus_per_learner = gpus / max(1, num_learners)`
    (with num_learners 0 the learner lives in the trial's main process, whose bundle holds the GPU).
    CPUs: the main process gets what remains after the env runners' and learners' bundles, and
    torch uses that many threads when the learner is local.
    """
    r, t = cfg.resources, cfg.training
    if gpus_per_trial is not None:
        r.num_gpus_per_learner = float(gpus_per_trial) / max(1, r.num_learners)
    main_cpus = 1
    if cpus_per_trial is not None:
        others = t.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner
        main_cpus = int(math.floor(cpus_per_trial - others + 1e-9))
        if main_cpus < 1:
            from spade_rllib.config.run_config import ConfigError

            raise ConfigError(
                f"--cpus-per-trial {cpus_per_trial:g}: too few; the trial's env runners and learners take {others:g} CPUs "
                f"plus 1 for its main process (lower training.num_env_runners or raise --cpus-per-trial)")
        if r.num_learners == 0:
            t.torch_threads = max(t.torch_threads, main_cpus)
    return main_cpus, cfg


def algo_config_from_trial(config: dict):
    """The RLlib `PPOConfig` of one trial config dict (see the module docstring)."""
    meta = config[SWEEP_KEY]
    cfg = trial_run_config(meta["base"], sweep_params(config))
    main_cpus, cfg = resources_for(cfg, meta.get("cpus_per_trial"), meta.get("gpus_per_trial"))
    runinfo = copy.deepcopy(meta.get("runinfo")) if meta.get("runinfo") else None
    if runinfo is not None:
        runinfo.setdefault("seeds", {}).update(experiment=cfg.experiment.seed, rllib_seed=cfg.experiment.seed)
        runinfo["sweep_params"] = sweep_params(config)
    algo_config = build_algo_config(cfg, runinfo=runinfo)
    algo_config.resources(num_cpus_for_main_process=main_cpus)
    return algo_config


def lookup(result: dict, key: str) -> Any:
    """`result[key]` for a flat "a/b/c" key or the nested result["a"]["b"]["c"]; None when absent."""
    return result_value(result, key, None)


class SweepPPO(SpadePPO):
    """SpadePPO driven by a sweep trial config; adds `sweep/objective` to every result."""

    def __init__(self, config=None, *args, **kwargs):
        self._sweep_candidates: list = []
        self._sweep_values: dict = {}
        if isinstance(config, dict) and SWEEP_KEY in config:
            self._sweep_candidates = list(config[SWEEP_KEY].get("metric_candidates") or [])
            self._sweep_values = sweep_params(config)
            config = algo_config_from_trial(config)
        self._sweep_key: Optional[str] = None
        self._sweep_last = math.nan
        super().__init__(config, *args, **kwargs)

    @classmethod
    def default_resource_request(cls, config):
        if isinstance(config, dict) and SWEEP_KEY in config:
            config = algo_config_from_trial(config)
        return super().default_resource_request(config)

    def step(self) -> dict:
        results = super().step()
        sweep = results.setdefault("sweep", {})
        sweep["objective"] = self._objective(results)
        sweep["params"] = dict(self._sweep_values)  # Tune's result "config" is the full RLlib config
        return results

    def _objective(self, results: dict) -> float:
        """Value of the best-ranked candidate key present so far (upgrades when a better-ranked key appears)."""
        for rank, key in enumerate(self._sweep_candidates):
            value = lookup(results, key)
            if value is None:
                continue
            current = self._sweep_candidates.index(self._sweep_key) if self._sweep_key in self._sweep_candidates else len(self._sweep_candidates)
            if rank < current:
                self._sweep_key, self._sweep_last = key, math.nan
            break
        if self._sweep_key is not None:
            value = lookup(results, self._sweep_key)
            if isinstance(value, (int, float)) and not math.isnan(float(value)):
                self._sweep_last = float(value)
        results.setdefault("sweep", {})["objective_key"] = self._sweep_key or ""
        return self._sweep_last
