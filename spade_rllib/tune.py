"""Run a Ray Tune sweep over training configs: `python -m spade_rllib.tune --sweep lr_gamma`.

    python -m spade_rllib.tune --sweep NAME [--address auto|HOST:PORT] [--num-samples N]
        [--max-concurrent N] [--cpus-per-trial N] [--gpus-per-trial 0.25] [--storage PATH|URI]
        [--resume] [--smoke] [--set key=value ...] [--dry-run] [--list]

* Sweeps live in `tune_configs/sweeps/NAME.yaml` (format: `spade_rllib.sweeps.sweep_spec`); NAME may also
  be a path to a sweep YAML. An unknown name, key or value prints one line and exits 2.
* Each trial is a `SweepPPO` (SpadePPO) run; results land in the standard Tune layout under
  `STORAGE/sweep-NAME[-smoke]/`: one directory per trial (progress.csv, result.json, TensorBoard
  events, checkpoints) plus this command's report (summary.csv, plots, best_checkpoint.txt).
* `--resume` continues the sweep in the same storage with `Tuner.restore`: finished trials are
  kept, unfinished and errored ones continue from their last checkpoint.
* `--gpus-per-trial G` sets RLlib's `num_gpus_per_learner` (G / num_learners) so each trial's
  placement group asks for G GPUs; `--cpus-per-trial N` gives the trial's main process what the
  env runners and learners leave of N.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Optional

from spade_rllib.cli import add_debug_flag, cli_entry, config_error
from spade_rllib.config.run_config import ConfigError
from spade_rllib.sweeps.sweep_spec import (
    SweepSpec,
    available_sweeps,
    load_sweep,
    metric_candidates,
    sweep_path,
    validate_against_base,
)


OBJECTIVE_LABEL = "sweep/objective"  # what SweepPPO reports and the schedulers optimize


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spade_rllib.tune", description="Ray Tune sweeps over spade_rllib training configs.")
    ap.add_argument("--sweep", help=f"Sweep name in tune_configs/sweeps/ ({', '.join(available_sweeps())}) or a sweep .yaml path.")
    ap.add_argument("--address", help="Attach to a running Ray cluster ('auto' or HOST:PORT); default: start a local Ray.")
    ap.add_argument("--num-samples", type=int, help="Override budget.num_samples (repeats of the grid / random samples).")
    ap.add_argument("--max-concurrent", type=int, help="At most this many trials at once.")
    ap.add_argument("--cpus-per-trial", type=float, help="CPUs reserved per trial (the main process gets what runners/learners leave).")
    ap.add_argument("--gpus-per-trial", type=float, help="GPUs per trial, fractions allowed (mapped to RLlib num_gpus_per_learner).")
    ap.add_argument("--storage", help="Results root: a local path or a URI (s3://, gs://); default: the base config's experiment.storage_path.")
    ap.add_argument("--resume", action="store_true", help="Continue an interrupted sweep found under --storage with Tuner.restore.")
    ap.add_argument("--smoke", action="store_true", help="Tiny budgets for a quick check (writes to sweep-NAME-smoke).")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                    help="Override a base training-config value for every trial, e.g. --set training.stop.iterations=5.")
    ap.add_argument("--dry-run", action="store_true", help="Validate, print the plan and each trial's resource request, then exit (no Ray).")
    ap.add_argument("--list", action="store_true", help="List the available sweeps and exit.")
    add_debug_flag(ap)
    return ap.parse_args(argv)


MAX_TRIALS = 10_000
"""Most trials one sweep may plan (grid size x num_samples)."""


def _check_options(args: argparse.Namespace) -> None:
    for name in ("num_samples", "max_concurrent"):
        v = getattr(args, name)
        if v is not None and not 1 <= v <= MAX_TRIALS:
            raise ConfigError(f"--{name.replace('_', '-')} {v}: out of range, allowed 1..{MAX_TRIALS}")
    if args.cpus_per_trial is not None and not args.cpus_per_trial >= 1:
        raise ConfigError(f"--cpus-per-trial {args.cpus_per_trial:g}: out of range, allowed >= 1")
    if args.gpus_per_trial is not None and (not args.gpus_per_trial >= 0 or math.isinf(args.gpus_per_trial)):
        raise ConfigError(f"--gpus-per-trial {args.gpus_per_trial:g}: out of range, allowed >= 0 (fractions like 0.25 share a GPU)")


def resolve(args: argparse.Namespace) -> tuple[SweepSpec, dict]:
    """(spec, base raw config) with CLI options applied; raises ConfigError."""
    if not args.sweep:
        raise ConfigError(f"--sweep: missing; available: {', '.join(available_sweeps())}")
    _check_options(args)
    spec, base = load_sweep(args.sweep, smoke=args.smoke, sets=tuple(args.overrides))
    if args.num_samples is not None:
        spec.budget.num_samples = args.num_samples
    if args.max_concurrent is not None:
        spec.budget.max_concurrent = args.max_concurrent
    if spec.num_trials() > MAX_TRIALS:
        raise ConfigError(f"--sweep {args.sweep}: {spec.num_trials():,d} trials (grid x num_samples {spec.budget.num_samples}): "
                          f"out of range, at most {MAX_TRIALS:,d}")
    return spec, base


def check_local_gpus(args: argparse.Namespace, base: dict) -> None:
    """An embedded Ray (no --address, no RAY_ADDRESS) only has this machine's GPUs: a sweep asking for
    GPUs on a machine without CUDA would wait for ever, so refuse it here. Attached to a cluster, the
    GPUs may be on other nodes and Ray decides."""
    if args.address or os.environ.get("RAY_ADDRESS"):
        return
    per_learner = float(((base.get("resources") or {}).get("num_gpus_per_learner")) or 0.0)
    key, value = ("--gpus-per-trial", args.gpus_per_trial) if args.gpus_per_trial else ("resources.num_gpus_per_learner", per_learner)
    if not value:
        return
    from spade_rllib.config.resources import machine_gpus

    if machine_gpus() == 0:
        raise ConfigError(f"{key} {value:g}: out of range, this machine has no GPU (torch.cuda.is_available() is False); "
                          "leave it at 0, or attach to a cluster with GPUs (--address)")


def trial_cpus(cfg, cpus_per_trial: Optional[float]) -> float:
    """CPUs one trial of `cfg` asks for: its env runners' and learners' bundles plus its main process
    (`--cpus-per-trial` sizes the main process; `trainable.resources_for` refuses too few)."""
    from spade_rllib.sweeps.trainable import resources_for

    r, t = cfg.resources, cfg.training
    main_cpus, cfg = resources_for(cfg, cpus_per_trial, None)
    return main_cpus + t.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner


def check_local_trial_fits(args: argparse.Namespace, spec: SweepSpec, base: dict) -> None:
    """An embedded Ray has `resources.num_cpus` (else this machine's) CPUs: a trial whose placement
    group asks for more would stay pending for ever, so refuse it here, for every combination of values
    the trials take (`trial_combinations`; attached to a cluster, Ray decides)."""
    if args.address or os.environ.get("RAY_ADDRESS"):
        return
    from spade_rllib.sweeps.sweep_spec import describe_trial, trial_combinations, trial_run_config

    for params in trial_combinations(spec):
        cfg = trial_run_config(base, params, resolve=False)
        try:
            need = trial_cpus(cfg, args.cpus_per_trial)
        except ConfigError as e:
            raise ConfigError(f"{e} (the trial with {describe_trial(params)})" if params else str(e)) from e
        have = float(cfg.resources.num_cpus or os.cpu_count() or 1)
        if need <= have + 1e-9:
            continue
        r = cfg.resources
        key = (f"--cpus-per-trial {args.cpus_per_trial:g}" if args.cpus_per_trial
               else f"resources.num_learners = {r.num_learners}" if r.num_learners else
               f"training.num_env_runners = {cfg.training.num_env_runners}")
        which = f"the trial with {describe_trial(params)}" if params else "one trial"
        raise ConfigError(f"{key}: out of range, {which} asks for {need:g} CPUs but the local Ray has {have:g} "
                          f"({'resources.num_cpus' if cfg.resources.num_cpus else 'this machine'}); lower --cpus-per-trial, "
                          "training.num_env_runners or resources.num_learners / num_cpus_per_learner, or attach to a "
                          "cluster (--address)")


def storage_root(args: argparse.Namespace, base: dict) -> str:
    """Local absolute path or URI where the experiment directory goes."""
    root = args.storage or (base.get("experiment") or {}).get("storage_path") or "results"
    if "://" in root:
        return root
    return str(Path(os.path.expanduser(root)).resolve())


def trial_template(spec: SweepSpec, base: dict, args: argparse.Namespace, runinfo: Optional[dict] = None) -> dict:
    """The Tune param_space: the sweep's entry plus one search-space object per dotted key."""
    from spade_rllib.sweeps.trainable import SWEEP_KEY

    cfg = validate_against_base(spec, base)
    meta = {
        "sweep": spec.name,
        "base": base,
        "metric_candidates": metric_candidates(spec, cfg),
        "cpus_per_trial": args.cpus_per_trial,
        "gpus_per_trial": args.gpus_per_trial,
        "runinfo": runinfo,
    }
    space = {SWEEP_KEY: meta}
    for key, dist in spec.space.items():
        space[key] = dist.to_tune()
    return space


def example_trial_config(template: dict, spec: SweepSpec) -> dict:
    """A concrete trial config (first grid value / lower bound of each key) for resource checks."""
    from spade_rllib.sweeps.trainable import SWEEP_KEY

    out = {SWEEP_KEY: template[SWEEP_KEY]}
    for k, d in spec.space.items():
        out[k] = d.values[0] if d.values else d.low
    return out


def resource_request(template: dict, spec: SweepSpec):
    """The placement group factory Tune will ask for per trial."""
    import logging

    from spade_rllib.sweeps.trainable import SweepPPO

    # Importing RLlib resets its logger: without this, building the config warns "running PPO on the
    # new API stack" above the plan or a config error's one line.
    logging.getLogger("ray.rllib").setLevel(logging.ERROR)

    return SweepPPO.default_resource_request(example_trial_config(template, spec))


def make_scheduler(spec: SweepSpec, stop_iterations: Optional[int]):
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

    s = spec.scheduler
    if s.type == "pbt":
        return PopulationBasedTraining(
            time_attr="training_iteration",
            perturbation_interval=s.perturbation_interval,
            quantile_fraction=s.quantile_fraction,
            resample_probability=s.resample_probability,
            synch=s.synch,
            hyperparam_mutations={k: d.to_tune() if d.kind != "choice" else list(d.values) for k, d in s.mutations.items()},
        )
    if s.type == "asha":
        return ASHAScheduler(time_attr="training_iteration", max_t=s.max_t or stop_iterations or 100,
                             grace_period=s.grace_period, reduction_factor=s.reduction_factor)
    return None


def make_searcher(spec: SweepSpec, seed: int):
    """Tune's OptunaSearch / HyperOptSearch behind a ConcurrencyLimiter, or None for Tune's own variants.
    Metric and mode come from the TuneConfig; the space from the param_space (Tune converts it)."""
    s = spec.search
    if s.type == "none":
        return None
    from ray.tune.search import ConcurrencyLimiter

    seed = s.seed if s.seed is not None else seed
    if s.type == "optuna":
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        searcher = OptunaSearch(sampler=optuna.samplers.TPESampler(seed=seed))
    else:
        from ray.tune.search.hyperopt import HyperOptSearch

        searcher = HyperOptSearch(random_state_seed=seed)
    return ConcurrencyLimiter(searcher, max_concurrent=s.max_concurrent)


def print_plan(spec: SweepSpec, base: dict, template: dict, storage: str, printer=print) -> None:
    from spade_rllib.sweeps.trainable import SWEEP_KEY

    meta = template[SWEEP_KEY]
    pgf = resource_request(template, spec)
    stop = (base.get("training") or {}).get("stop")
    printer(f"sweep {spec.name!r}{' (smoke)' if spec.smoke else ''}: {spec.description}".rstrip(": "))
    printer(f"  base config:  {spec.base}")
    for k, d in spec.space.items():
        printer(f"  space:        {k} ~ {d.describe()}")
    sched = spec.scheduler.type
    if sched == "pbt":
        sched += f" (every {spec.scheduler.perturbation_interval} iterations; mutate {', '.join(spec.scheduler.mutations)})"
    elif sched == "asha":
        sched += f" (grace {spec.scheduler.grace_period}, reduction {spec.scheduler.reduction_factor:g})"
    printer(f"  scheduler:    {sched}")
    if spec.search.type != "none":
        printer(f"  search:       {spec.search.type} ({spec.search.max_concurrent} suggested at once)")
    printer(f"  metric:       {spec.metric.mode} {OBJECTIVE_LABEL} = " + (
        f"first reported of {', '.join(meta['metric_candidates'])}" if spec.metric.name == "auto" else spec.metric.name))
    printer(f"  trials:       {spec.num_trials()} (num_samples {spec.budget.num_samples}), at most "
            f"{spec.budget.max_concurrent or 'as many as fit'} at once; stop each at {stop}")
    printer(f"  per trial:    {pgf.required_resources} (bundles {pgf.bundles})")
    printer(f"  results:      {storage}/{spec.experiment_name}")



def start_ray(address: Optional[str], num_cpus: Optional[int]) -> None:
    """Local Ray, or attach with --address (or RAY_ADDRESS, as in a Ray job); no-op when Ray is already up here."""
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    if address or os.environ.get("RAY_ADDRESS"):  # `ray job submit` sets RAY_ADDRESS: attach to that cluster
        ray.init(address=address, log_to_driver=False)
        return
    from spade_rllib.training.console import dashboard_line, quiet_ray_noise
    from spade_rllib.rllib.local_ray import init_local_ray

    ctx = init_local_ray(num_cpus=num_cpus, log_to_driver=False, configure_logging=True, logging_level="WARNING")
    quiet_ray_noise()
    url = getattr(ctx, "dashboard_url", None)
    if url:
        print(dashboard_line(url), flush=True)


def build_tuner(spec: SweepSpec, base: dict, args: argparse.Namespace, storage: str, runinfo: Optional[dict]):
    from ray import tune

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.sweeps.progress import SweepProgress
    from spade_rllib.sweeps.trainable import SweepPPO
    from spade_rllib.training.tuner_inputs import make_tune_run_config

    cfg = parse_config(base)
    cfg.experiment.name = spec.experiment_name
    cfg.experiment.storage_path = storage if "://" not in storage else cfg.experiment.storage_path
    run_config = make_tune_run_config(cfg, callbacks=[SweepProgress(mode=spec.metric.mode)], verbose=0,
                                      attached=bool(args.address or os.environ.get("RAY_ADDRESS")))
    run_config.storage_path = storage
    template = trial_template(spec, base, args, runinfo)
    tune_config = tune.TuneConfig(
        metric=OBJECTIVE_LABEL,
        mode=spec.metric.mode,
        scheduler=make_scheduler(spec, cfg.training.stop.iterations),
        search_alg=make_searcher(spec, cfg.experiment.seed),
        num_samples=spec.budget.num_samples,
        max_concurrent_trials=spec.budget.max_concurrent,
    )
    return tune.Tuner(SweepPPO, param_space=template, tune_config=tune_config, run_config=run_config)


def experiment_dir(storage: str, spec: SweepSpec) -> str:
    return f"{storage.rstrip('/')}/{spec.experiment_name}"


@cli_entry()
def main(argv=None) -> int:
    args = parse_args(argv)
    import logging

    logging.getLogger("ray.rllib").setLevel(logging.ERROR)  # "running PPO on the new API stack" per resource request
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # our one-line progress instead of Tune's tables
    if args.list:
        for name in available_sweeps():
            print(name)
        return 0
    try:
        spec, base = resolve(args)
        storage = storage_root(args, base)
        exp_dir = experiment_dir(storage, spec)
        from spade_rllib.artifacts.output_paths import check_storage_path

        check_storage_path(storage, "--storage")  # a path under a regular file fails here, not in Tune
        template = trial_template(spec, base, args)  # every trial's combination of values is valid
        check_local_gpus(args, base)
        check_local_trial_fits(args, spec, base)  # every trial fits this machine (also for --dry-run)
        if (base.get("agent") or {}).get("teacher"):  # the base config's teacher, timed and printed (train does too)
            import copy

            from spade_rllib.config.run_config import parse_config
            from spade_rllib.training.teacher_cost import check_teacher_cost

            check_teacher_cost(parse_config(copy.deepcopy(base)))
        if args.dry_run:
            print_plan(spec, base, template, storage)
            return 0
    except ConfigError as e:
        return config_error(e, argv)
    if spec.smoke:  # a checkpoint every iteration makes Tune warn about frequent state snapshots
        os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    from ray import tune

    from spade_rllib.artifacts.provenance import collect_runinfo
    from spade_rllib.sweeps.trainable import SweepPPO

    if args.resume and not tune.Tuner.can_restore(exp_dir):
        print(f"config error: --resume: no sweep to continue at {exp_dir} (run it without --resume first, or pass the same --storage)",
              file=sys.stderr)
        return 2
    runinfo = collect_runinfo(int((base.get("experiment") or {}).get("seed", 0)), str(sweep_path(args.sweep)),
                              extra={"sweep": spec.name, "smoke": spec.smoke})
    try:
        start_ray(args.address, (base.get("resources") or {}).get("num_cpus"))
        template = trial_template(spec, base, args, runinfo)
        print_plan(spec, base, template, storage)
        tuner = (tune.Tuner.restore(exp_dir, trainable=SweepPPO, resume_unfinished=True, resume_errored=True)
                 if args.resume else build_tuner(spec, base, args, storage, runinfo))
    except ConfigError as e:
        return config_error(e, argv)
    if "://" not in exp_dir:
        Path(exp_dir).mkdir(parents=True, exist_ok=True)
        (Path(exp_dir) / "sweep.json").write_text(json.dumps(
            {"spec": spec.to_dict(), "metric_candidates": template["spade_sweep"]["metric_candidates"],
             "command": [sys.executable, "-m", "spade_rllib.tune", *(argv if argv is not None else sys.argv[1:])]},
            indent=2, default=str))
    print(("resuming" if args.resume else "starting") + f" sweep {spec.experiment_name!r}", flush=True)
    t0 = time.time()
    results = tuner.fit()
    wall = time.time() - t0
    return finish(spec, results, exp_dir, wall, stop_iterations=((base.get("training") or {}).get("stop") or {}).get("iterations"))


def finish(spec: SweepSpec, results, exp_dir: str, wall: float, stop_iterations: Optional[int] = None, printer=print) -> int:
    from spade_rllib.sweeps.sweep_report import rows_from_results, write_report

    rows = rows_from_results(results, spec.metric.mode)
    if spec.scheduler.type == "asha" and stop_iterations:
        for r in rows:
            if r.status == "TERMINATED" and r.iterations < stop_iterations:
                r.status = f"STOPPED@{r.iterations}"  # ASHA cut it at a rung
    out_dir = Path(exp_dir) if "://" not in exp_dir else Path("results") / f"{spec.experiment_name}-report"
    printer("=" * 78)
    keys = sorted({r.objective_key for r in rows if r.objective_key})
    label = keys[0] if len(keys) == 1 else OBJECTIVE_LABEL
    printer(f"sweep {spec.experiment_name!r}: {len(rows)} trials in {wall:.0f} s; objective = {', '.join(keys) or 'n/a'} ({spec.metric.mode})")
    rep = write_report(spec, rows, out_dir, label, printer=printer)
    best = rep["best"]
    if best is not None:
        params = ", ".join(f"{k}={v}" for k, v in best.params.items())
        printer(f"best trial:      {best.trial_id} ({params}) final {label} {best.final:.4g}")
        if best.best_checkpoint:
            printer(f"best checkpoint: {best.best_checkpoint}")
            printer(f"evaluate with:   python -m spade_rllib.evaluate --checkpoint {best.best_checkpoint}")
    else:
        printer("best trial:      none (no trial reported a finite objective)")
    printer(f"summary:         {out_dir / 'summary.csv'}")
    for f in rep["files"]:
        if f.name not in ("summary.csv",):
            printer(f"                 {f}")
    printer(f"tensorboard:     tensorboard --logdir {exp_dir}")
    printer(f"resume with:     python -m spade_rllib.tune --sweep {spec.name}{' --smoke' if spec.smoke else ''} --resume"
            f" --storage {str(Path(exp_dir).parent) if '://' not in exp_dir else exp_dir.rsplit('/', 1)[0]}")
    failed = [r for r in rows if r.status == "ERROR"]
    if failed:
        printer(f"{len(failed)} trial(s) failed: " + ", ".join(f"{r.trial_id} ({r.path}/error.txt)" for r in failed))
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
