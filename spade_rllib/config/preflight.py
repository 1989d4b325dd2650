"""The checks of a run's config and env before Ray starts, beyond the schema: no Ray, one-line `ConfigError`s.

* `check_config(cfg)` (called by `run_config.parse_config`, machine independent; bot names are checked per env
  by `run_config._check_opponent_id`) runs, in order: the env id resolves and the env builds and steps, its
  teams and roles fit (`env_checks`); maps parse and held-out maps load, the cell memory holds them (`map_checks`,
  the message names file, line and column); a `training.stop.metric` is a key a run reports (`metric_names`);
  exact exploitability only on an OpenSpiel game small enough (`check_exploitability`, here); the schedules are
  well formed (`schedule_checks`).
* `check_launch(cfg, address=None)` (called by the `train` and `tune` CLIs, about this machine): at least one
  stop condition, a writable storage path (`artifacts.output_paths.check_storage_path`), and CPU/GPU requests
  this machine can meet (`resources.check_resources`: an embedded Ray waits forever for CPUs it does not have).

The other pre-Ray checks, one concept each: `artifacts.output_paths` (the experiment name, storage paths and
URIs, the outputs of `evaluate`/`export`), `resources` (CPUs, GPUs and the model's memory against this machine),
`model_compat` (a checkpoint's model config against the config's, defaults filled in). Two pre-Ray steps need
the trainer's own code and stand in rllib/, named for what they do: `rllib.env_description.check_env_builds`
(the trainer's `describe_env`, its failure a `ConfigError`) and `rllib.resume_fit.check_resume` (a checkpoint's
modules against the `SpadeModule` the config builds).
"""
from __future__ import annotations

from typing import Optional

from spade_rllib.artifacts.output_paths import check_experiment_name, check_storage_path
from spade_rllib.config.env_checks import check_env, check_teams, resolve_env_id
from spade_rllib.config.map_checks import check_cell_memory_fits, check_final_heldout, check_heldout_levels
from spade_rllib.config.metric_names import check_stop_metric
from spade_rllib.config.resources import check_resources, required_resources
from spade_rllib.config.schedule_checks import check_schedule, check_signal_schedule
from spade_rllib.core.validation import ConfigError
from spade_rllib.games.resolved_env import as_resolved


# ----------------------------------------------------------------------------------------------
# Machine-independent checks
# ----------------------------------------------------------------------------------------------


def check_config(cfg) -> None:
    """Everything about a parsed `RunConfig` that the schema cannot see; raises `ConfigError`. The env id is
    resolved here once, into `cfg.resolved_env`, which the checks after it take."""
    cfg.resolved_env = resolve_env_id(cfg.resolved_env if cfg.resolved_env is not None else cfg.env.id)
    check_experiment_name(cfg.experiment.name)
    check_env(cfg)
    check_teams(cfg)
    check_heldout_levels(cfg.evaluation.heldout_levels, cfg.env.id)
    check_final_heldout(cfg.evaluation, cfg.env.id)
    check_cell_memory_fits(cfg)
    check_stop_metric(cfg.training.stop.metric)
    check_exploitability(cfg)
    check_schedule("agent.entropy_schedule", cfg.agent.entropy_schedule)
    check_schedule("agent.teacher_schedule", cfg.agent.teacher_schedule)
    check_signal_schedule(cfg)


def check_exploitability(cfg) -> None:
    """`evaluation.exploitability_interval` > 0 needs an OpenSpiel game of the catalog (exact best responses) small
    enough to walk: its histories and information states are counted with a cap first
    (`games.exploitability.game_size_problem`), so a large game is refused in one line naming the cap."""
    every = cfg.evaluation.exploitability_interval
    spec = as_resolved(cfg.resolved_env or cfg.env.id).spec
    if every and (spec is None or spec.openspiel_game is None):
        raise ConfigError(f"evaluation.exploitability_interval = {every}: exact exploitability needs an OpenSpiel "
                          f"game (kuhn_poker, leduc_poker, openspiel:<name>); env.id is {cfg.env.id!r}; set it to 0")
    if every:
        from spade_rllib.games.exploitability import game_size_problem

        problem = game_size_problem(spec.openspiel_game)
        if problem is not None:
            raise ConfigError(f"evaluation.exploitability_interval = {every}: {problem}; set it to 0")


# ----------------------------------------------------------------------------------------------
# This machine
# ----------------------------------------------------------------------------------------------


def check_launch(cfg, *, address: Optional[str] = None, need_stop: bool = True,
                 required: Optional[dict] = None) -> None:
    """Checks about launching here: a stop condition, storage, CPUs/GPUs (the latter only for an
    embedded Ray: a cluster has its own). `required` is the run's resource bundle total
    ({"CPU": n, "GPU": g}); computed from the config when None."""
    if need_stop:
        check_stop_present(cfg)
    check_storage_path(cfg.experiment.storage_path)
    if address is None:
        check_resources(cfg, required if required is not None else required_resources(cfg))


def check_stop_present(cfg) -> None:
    s = cfg.training.stop
    if s.time_s is None and s.env_steps is None and s.iterations is None and s.metric is None:
        raise ConfigError("training.stop = {}: no stop condition, the run would never end; give at least one of "
                          "time_s, env_steps, iterations, metric+target (e.g. --set training.stop.time_s=300)")


__all__ = ["check_config", "check_exploitability", "check_launch", "check_stop_present"]
