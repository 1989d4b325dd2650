"""Train from a YAML config: `python -m spade_rllib.train --config tune_configs/quickstart.yaml`.

    python -m spade_rllib.train --config FILE [--set agent.lr=1e-4 ...] [--address ADDR] [--resume PATH]

* The config is validated before Ray starts; a bad key or value prints one line and exits 2.
* Embedded default: starts a local Ray whose services listen on 127.0.0.1 only (token auth stays
  on); prints the dashboard URL.
  `--address` attaches to a running cluster instead (its token: RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH).
* Runs as one Ray Tune trial: results, TensorBoard event files, progress.csv and checkpoints land
  in the standard Tune layout under `experiment.storage_path/experiment.name/`.
* SIGINT and SIGTERM stop the run after the current iteration (final checkpoint, summary naming the
  iteration and the resume command; exit 130 / 143); a second one ends it at once.
* Console: one compact line per iteration, then the end-of-run summary (`spade_rllib.training.run_summary`:
  the result paths and, for games, a final evaluation of the last checkpoint against `evaluation.opponents`).
* `--resume PATH` continues from the newest checkpoint under PATH (a checkpoint, trial or
  experiment directory; the highest number wins, as for the loader), after checking that its
  weights, env and model fit the config. Iterations, env-step counters and league/curriculum state continue;
  `training.stop.time_s` counts the new session only.

The command line over `spade_rllib.training.tuner_inputs` (stop criteria, Tune configs, the trainable,
`result_value`), which sweeps, `tune.py` and the benches import. What it prints lives in `training.console`
(the per-iteration line, the live panel, the Tune callback) and `training.run_summary` (the end). What stays
here is the command's own: its arguments, the config they resolve to (with `--resume`: the newest whole
checkpoint, `find_checkpoint`, and the run's saved config, `saved_config_for`), the Ray it starts or attaches to
(`start_ray`, by `--address`), and the one Tune run (`main`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional

from spade_rllib.artifacts.checkpoint_layout import CheckpointError, RL_MODULE_SUBPATH, RUN_CONFIG_FILE
from spade_rllib.cli import add_debug_flag, cli_entry, config_error
from spade_rllib.config.run_config import ConfigError, RunConfig, apply_overrides, load_raw, parse_config
from spade_rllib.training.console import console_callback
from spade_rllib.training.run_summary import print_summary
from spade_rllib.training.tuner_inputs import (make_tune_config, make_tune_run_config, result_value,  # noqa: F401 - the library pieces
                                   stop_criteria, storage_uri_or_path, trainable_and_param_space)

FINAL_EVAL_GAMES = 200  # games per opponent in the end-of-run evaluation
MAX_FINAL_EVAL_GAMES = 100_000
MAX_FINAL_REPLAYS = 100
FINAL_REPLAYS = 2  # GIF replays of the last checkpoint's games in the run's report


# ---------------------------------------------------------------------------------------------
# Ray, resume
# ---------------------------------------------------------------------------------------------


def start_ray(cfg: RunConfig, address: Optional[str]) -> None:
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    # Tune's legacy reporter honours verbose=0 completely (the new one still prints a header box
    # and a TensorBoard hint pointing at the session's staging dir); our summary prints the paths.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "0")
    from spade_rllib.training.console import quiet_ray_noise

    quiet_ray_noise()
    if address:
        ctx = ray.init(address=address, log_to_driver=False)
    else:
        from spade_rllib.rllib.local_ray import init_local_ray

        ctx = init_local_ray(num_cpus=cfg.resources.num_cpus, log_to_driver=False,
                             include_dashboard=None, configure_logging=True, logging_level="WARNING")
    quiet_ray_noise()  # ray.init replaces the handlers
    url = getattr(ctx, "dashboard_url", None)
    if url:
        from spade_rllib.training.console import dashboard_line

        print(dashboard_line(url), flush=True)


def find_checkpoint(path: str) -> str:
    """The newest whole checkpoint at or under `path`, by the loader's rule
    (`checkpoint_layout.newest_checkpoint`: the highest number; a damaged one skipped with a note).
    Pointing at a damaged checkpoint directly is a `ConfigError`."""
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem, is_algorithm_checkpoint, newest_checkpoint

    p = Path(os.path.expanduser(path)).resolve()
    if not p.exists():
        raise ConfigError(f"--resume = {path!r}: file not found (cwd: {os.getcwd()})")
    if is_algorithm_checkpoint(p):
        problem = checkpoint_problem(p)
        if problem:
            raise ConfigError(f"--resume = {path!r}: not a usable checkpoint: {problem}")
        return str(p)
    if not any(c.is_dir() and is_algorithm_checkpoint(c) for c in p.rglob("checkpoint_*")):
        raise ConfigError(f"--resume = {path!r}: no checkpoint (a directory with {RL_MODULE_SUBPATH}/) found under it")
    newest = newest_checkpoint(p, recursive=True)
    if newest is None:
        raise ConfigError(f"--resume = {path!r}: every checkpoint under it is incomplete or damaged (see the notes above)")
    return str(newest)


def saved_config_for(checkpoint: str) -> Optional[str]:
    """The config.yaml a run wrote into the checkpoint's trial directory (the nearest of the
    checkpoint's two parents), None when neither holds one."""
    for parent in list(Path(checkpoint).parents)[:2]:
        cand = parent / RUN_CONFIG_FILE
        if cand.is_file():
            return str(cand)
    return None


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spade_rllib.train", description="Multi-agent PPO training from a YAML config.")
    ap.add_argument("--config", help="YAML config (tune_configs/*.yaml); with --resume defaults to the run's saved config.")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                    help="Override a config value (YAML-parsed), e.g. --set agent.lr=1e-4. Repeatable.")
    ap.add_argument("--address", help="Attach to a running Ray cluster instead of starting a local one.")
    ap.add_argument("--logger", dest="loggers", action="append", default=[], metavar="NAME",
                    help="Also log to an experiment tracker: mlflow or wandb (adds to experiment.loggers). Repeatable.")
    ap.add_argument("--resume", metavar="PATH", help="Continue from the newest checkpoint under PATH.")
    ap.add_argument("--final-eval-games", type=int, default=FINAL_EVAL_GAMES, help="Games per opponent in the final evaluation (0: skip).")
    ap.add_argument("--final-replays", type=int, default=FINAL_REPLAYS, metavar="K",
                    help="Games replayed as GIFs for the report (main vs the evaluation bots, final_games/ in the trial dir; 0: skip).")
    ap.add_argument("--print-config", action="store_true", help="Print the resolved config and exit (checks the file alone; imports no env, no Ray).")
    ap.add_argument("--help-config", action="store_true", help="List every config key with its help text and exit.")
    add_debug_flag(ap)
    return ap.parse_args(argv)


def resolve_config(args: argparse.Namespace, resolve: bool = True) -> tuple[RunConfig, Optional[str]]:
    """(config, checkpoint to restore or None), validated; raises ConfigError. `resolve=False`: the
    file alone, nothing imported (`parse_config`)."""
    if not 0 <= args.final_eval_games <= MAX_FINAL_EVAL_GAMES:
        raise ConfigError(f"--final-eval-games = {args.final_eval_games}: out of range, allowed 0..{MAX_FINAL_EVAL_GAMES}")
    if not 0 <= getattr(args, "final_replays", 0) <= MAX_FINAL_REPLAYS:
        raise ConfigError(f"--final-replays = {args.final_replays}: out of range, allowed 0..{MAX_FINAL_REPLAYS}")
    checkpoint = find_checkpoint(args.resume) if args.resume else None
    path = args.config
    if path is None and checkpoint is not None:
        path = saved_config_for(checkpoint)
    if path is None and checkpoint is not None:
        raise ConfigError(f"--config: missing, and the trial of {checkpoint} holds no {RUN_CONFIG_FILE}; give the run's "
                          "YAML file, e.g. --config tune_configs/quickstart.yaml")
    if path is None:
        raise ConfigError("--config: missing; give a YAML file, e.g. --config tune_configs/quickstart.yaml")
    try:
        raw = apply_overrides(load_raw(path), args.overrides)
    except ConfigError as e:
        if args.config is None:  # the run's own config.yaml, found next to the checkpoint
            raise ConfigError(f"--resume = {args.resume!r}: the run's {RUN_CONFIG_FILE} {path} cannot be used: "
                              f"{str(e).partition(': ')[2] or e}") from e
        raise
    if getattr(args, "loggers", None):
        section = raw.setdefault("experiment", {}) if isinstance(raw.get("experiment", {}), dict) else {}
        section["loggers"] = list(dict.fromkeys([*(section.get("loggers") or []), *args.loggers]))
    cfg = parse_config(raw, source_path=path, resolve=resolve)
    return cfg, checkpoint


@cli_entry(user_errors=(CheckpointError,))
def main(argv=None) -> int:
    args = parse_args(argv)
    if args.help_config:
        from spade_rllib.config.run_config import describe

        print(describe())
        return 0
    try:
        cfg, checkpoint = resolve_config(args, resolve=not args.print_config)
    except ConfigError as e:
        return config_error(e, argv)
    if args.print_config:
        from spade_rllib.config.run_config import dump_config

        print(dump_config(cfg), end="")
        return 0
    try:  # about this machine: stop condition, storage, CPUs/GPUs; the env, model size and resume fit
        from spade_rllib.config.preflight import check_launch
        from spade_rllib.rllib.env_description import check_env_builds
        from spade_rllib.rllib.model_config import check_modules_fit_memory
        from spade_rllib.rllib.resume_fit import check_resume

        check_launch(cfg, address=args.address)
        info = check_env_builds(cfg)
        check_modules_fit_memory(cfg, info)
        from spade_rllib.training.teacher_cost import check_teacher_cost

        check_teacher_cost(cfg)  # a teacher's cost per learner step, printed (refused past agent.teacher_max_ms)
        if checkpoint is not None:
            check_resume(cfg, checkpoint, info)
    except ConfigError as e:
        return config_error(e, argv)

    from spade_rllib.artifacts.provenance import collect_runinfo

    runinfo = collect_runinfo(cfg.experiment.seed, cfg.source_path, extra={"resumed_from": checkpoint})
    try:
        start_ray(cfg, args.address)
        # Build once here so env/model problems surface before Tune starts.
        trainable, param_space = trainable_and_param_space(cfg, runinfo=runinfo, restore_from=checkpoint)
        from spade_rllib.training.console import quiet_ray_noise

        quiet_ray_noise()  # RLlib's loggers exist now
    except ConfigError as e:
        return config_error(e, argv)
    from ray import tune

    from spade_rllib.rllib.graceful_stop import GracefulStop

    console = console_callback(cfg)
    stopper = GracefulStop(stop_criteria(cfg))
    stop = ", ".join(f"{k.rpartition('/')[2]}={v:g}" for k, v in stop_criteria(cfg).items()) or "never (Ctrl-C stops)"
    how = "league" if cfg.league.enabled else cfg.self_play.mode  # the league's plan replaces the self-play mode
    print(f"training {cfg.env.id} ({how}) as {cfg.experiment.name!r}; stop: {stop}", flush=True)
    t0 = time.time()
    from spade_rllib.reporting.tensorboard import heatmap_callback
    from spade_rllib.config.trackers import tracker_callbacks

    from spade_rllib.rllib.recovery import recovery_callbacks

    recovery = recovery_callbacks(cfg, resumed_from=checkpoint)
    tuner = tune.Tuner(trainable, param_space=param_space,
                       run_config=make_tune_run_config(cfg, callbacks=[console, heatmap_callback(), *tracker_callbacks(cfg),
                                                                       *recovery], stopper=stopper,
                                                       attached=bool(args.address or os.environ.get("RAY_ADDRESS"))),
                       tune_config=make_tune_config(cfg))
    stopper.install()  # after ray.init: SIGINT and SIGTERM stop the trial after its iteration
    try:
        results = tuner.fit()
    finally:
        stopper.uninstall()
        console.view.close()
    wall = time.time() - t0
    result = results[0] if len(results) else None
    ok = result is not None and result.error is None
    print_summary(cfg, result, console, wall, args.final_eval_games, replays=args.final_replays,
                  interrupted=stopper.signum)
    for line in recovery[0].lines():  # a retry or a resume: the env steps lost and redone
        print(line, flush=True)
    if stopper.exit_code is not None:
        return stopper.exit_code
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
