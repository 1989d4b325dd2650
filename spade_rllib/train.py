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
* Console: one compact line per iteration, then a summary with the result paths and, for games,
  a final evaluation of the last checkpoint against `evaluation.opponents`.
* `--resume PATH` continues from the newest checkpoint under PATH (a checkpoint, trial or
  experiment directory; the highest number wins, as for the loader), after checking that its
  weights, env and model fit the config. Iterations, env-step counters and league/curriculum state continue;
  `training.stop.time_s` counts the new session only.

The command line over `spade_rllib.tuner_inputs` (stop criteria, Tune configs, the trainable,
`result_value`), which sweeps, `tune.py` and the benches import.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Optional

from spade_rllib.checkpoint_layout import CheckpointError, LEAGUE_CSV, RL_MODULE_SUBPATH, RUN_CONFIG_FILE
from spade_rllib.cli import add_debug_flag, cli_entry, config_error, one_line
from spade_rllib.config import ConfigError, RunConfig, apply_overrides, load_raw, parse_config
from spade_rllib.outcome import MAIN
from spade_rllib.rllib.plan import MIRROR
from spade_rllib.tuner_inputs import (make_tune_config, make_tune_run_config, result_value,  # noqa: F401 - the library pieces
                                   stop_criteria, storage_uri_or_path, trainable_and_param_space)

FINAL_EVAL_GAMES = 200  # games per opponent in the end-of-run evaluation
MAX_FINAL_EVAL_GAMES = 100_000
MAX_FINAL_REPLAYS = 100
FINAL_REPLAYS = 2  # GIF replays of the last checkpoint's games in the run's report
FINAL_GAMES_DIR = "final_games"


# ---------------------------------------------------------------------------------------------
# Console
# ---------------------------------------------------------------------------------------------


_SNAPSHOT_ID = re.compile(r".+_v\d+")


def format_line(result: dict) -> str:
    """One compact line for an iteration result."""
    it = int(result.get("training_iteration", 0))
    steps = result_value(result, "env_runners/num_env_steps_sampled_lifetime", 0)
    sps = result_value(result, "env_runners/num_env_steps_sampled_lifetime_throughput", math.nan)
    if not isinstance(sps, (int, float)) or math.isnan(sps):
        sps = result_value(result, "env_runners/num_env_steps_sampled", 0) / max(1e-9, float(result.get("time_this_iter_s", 1e-9)))
    ret = result_value(result, "env_runners/episode_return_mean")
    parts = [f"iter {it:4d}", f"steps {int(steps):>9,d}", f"{sps:7,.0f} sps", f"ret {ret:+.3f}" if isinstance(ret, float) else f"ret {ret}"]
    # League snapshots (main_v<N>, main_exploiter_0_v<N>, ...) share one aggregate, so the line
    # stays compact as the league grows.
    wdl: dict[str, list[float]] = {}
    for opp, m in sorted((result.get("train") or {}).items()):
        if isinstance(m, dict) and m.get("games"):
            row = wdl.setdefault("league" if _SNAPSHOT_ID.fullmatch(opp) else opp, [0.0, 0.0, 0.0, 0.0])
            for i, k in enumerate(("win_rate", "draw_rate", "loss_rate")):
                row[i] += m[k] * m["games"]
            row[3] += m["games"]
    # Entropy and game counts per opponent make a collapse (entropy -> 0, one opponent crowding out
    # the others, e.g. PFSP starving the random reference) visible on the line itself.
    entropy = result_value(result, f"learners/{MAIN}/entropy")
    if isinstance(entropy, (int, float)) and not math.isnan(entropy):
        parts.append(f"entropy {entropy:.2f}")
    for opp, (w, d, l, n) in wdl.items():
        parts.append(f"vs {opp} ({n:g}) W/D/L {w / n:.2f}/{d / n:.2f}/{l / n:.2f}")
    ev = result.get("eval") or {}
    evs = [f"{opp} {m['win_rate']:.2f}" for opp, m in sorted(ev.items()) if isinstance(m, dict) and not math.isnan(m.get("win_rate", math.nan))]
    if evs:
        parts.append("eval win " + ", ".join(evs))
    league_size = result_value(result, "league/size")
    if not (isinstance(league_size, float) and math.isnan(league_size)):
        text = f"league {league_size:g}"
        rating, snap = result_value(result, "league/main_rating"), result_value(result, "league/snapshot_event", 0.0)
        if isinstance(rating, (int, float)) and not math.isnan(rating):
            text += f" elo {rating:.0f}"
        wr = result_value(result, "league/main_win_rate")
        if isinstance(wr, (int, float)) and not math.isnan(wr):
            text += f" wr {wr:.2f}"
        if isinstance(snap, (int, float)) and snap > 0:
            text += " +snapshot"
        parts.append(text)
        learners = result_value(result, "league/learner", {})  # exploiters: their own win rate, snapshots
        for name, m in sorted(learners.items() if isinstance(learners, dict) else ()):
            if isinstance(m, dict):
                wr = m.get("win_rate", math.nan)
                wr_text = "-" if not isinstance(wr, (int, float)) or math.isnan(wr) else f"{wr:.2f}"
                parts.append(f"{name} wr {wr_text} v{int(m.get('snapshots', 0))}")
    diff = result_value(result, "curriculum/difficulty")
    if not (isinstance(diff, float) and math.isnan(diff)):
        parts.append(f"difficulty {diff:.2f}")
    buf = result_value(result, "curriculum/buffer_size")  # plr
    if isinstance(buf, (int, float)) and not math.isnan(buf):
        parts.append(f"plr buffer {buf:g} replay {result_value(result, 'curriculum/replay_share'):.2f}")
    held = result_value(result, "heldout/rusher_tagger/win_rate")
    if isinstance(held, (int, float)) and not math.isnan(held):
        score = result_value(result, "heldout/rusher_tagger/score")
        parts.append(f"heldout vs rusher_tagger win {held:.2f} score {score:.2f} (it {result_value(result, 'heldout/iteration'):g})")
    else:  # CTF: main's held-out score against each ladder bot
        scores = _heldout_scores(result)
        if scores:
            parts.append("heldout score " + " ".join(f"{o} {s:.2f}" for o, s in scores.items())
                         + f" (it {result_value(result, 'heldout/iteration'):g})")
    phases = result_value(result, "spade/phase_s", {})
    if isinstance(phases, dict) and phases:  # where this iteration's wall time went (spade_rllib.phases)
        from spade_rllib.phases import phase_ms_text

        text = phase_ms_text(phases)
        if text:
            parts.append(text)
    return " | ".join(parts)


def _heldout_scores(result: dict) -> dict[str, float]:
    """{opponent: main's mean held-out score} from `heldout/<opponent>/score` (levels' keys skipped)."""
    held = result.get("heldout") or {}
    out = {}
    for opp, m in held.items():
        if opp != "self" and isinstance(m, dict) and isinstance(m.get("score"), (int, float)) and not math.isnan(m["score"]):
            out[opp] = float(m["score"])
    return out


def console_callback(cfg: Optional[RunConfig] = None, live: Optional[bool] = None):
    """A Tune callback showing each result (`spade_rllib.console`: a live panel on a terminal, short
    lines otherwise; the full `format_line` in the trial's iterations.log) instead of Tune's table."""
    from ray.tune import Callback

    from spade_rllib.console import RunConsole

    budget = cfg.training.stop.time_s if cfg is not None else None
    title = f"{cfg.env.id} / {cfg.experiment.name}" if cfg is not None else "training"

    class SpadeConsole(Callback):
        def __init__(self):
            self.last_result: Optional[dict] = None
            self.trial_path: Optional[str] = None
            self.view = RunConsole(budget, title, format_line, live=live,
                                   budget_steps=cfg.training.stop.env_steps if cfg is not None else None)

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self.last_result = result
            self.trial_path = trial.path
            self.view.on_result(result, trial.path)

        def on_trial_error(self, iteration, trials, trial, **info):
            self.view.close()
            self.trial_path = trial.path
            error_file = Path(trial.path) / "error.txt"
            print(f"trial {trial.trial_id} failed" + (f"; see {error_file}" if error_file.is_file() else ""), flush=True)

        def on_experiment_end(self, trials, **info):
            self.view.close()

    return SpadeConsole()


# ---------------------------------------------------------------------------------------------
# Ray, resume, final evaluation
# ---------------------------------------------------------------------------------------------


def start_ray(cfg: RunConfig, address: Optional[str]) -> None:
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    # Tune's legacy reporter honours verbose=0 completely (the new one still prints a header box
    # and a TensorBoard hint pointing at the session's staging dir); our summary prints the paths.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "0")
    from spade_rllib.console import quiet_ray_noise

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
        from spade_rllib.console import dashboard_line

        print(dashboard_line(url), flush=True)


def find_checkpoint(path: str) -> str:
    """The newest whole checkpoint at or under `path`, by the loader's rule
    (`checkpoint_layout.newest_checkpoint`: the highest number; a damaged one skipped with a note).
    Pointing at a damaged checkpoint directly is a `ConfigError`."""
    from spade_rllib.checkpoint_layout import checkpoint_problem, is_algorithm_checkpoint, newest_checkpoint

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


def final_evaluation(cfg: RunConfig, checkpoint: str, games: int) -> Optional[dict]:
    """Play the final checkpoint's main against `evaluation.opponents` in the driver process."""
    from spade_rllib.checkpoint_layout import resolve_checkpoint
    from spade_rllib.policy import load_module
    from spade_rllib.rllib.algorithm import build_algo_config
    from spade_rllib.rllib.components import placeholder_win_rates, win_rates
    from spade_rllib.rllib.runner import SpadeEnvRunner

    algo_config = build_algo_config(cfg)
    runner = SpadeEnvRunner(config=algo_config, worker_index=0, num_workers=0)
    module = load_module(resolve_checkpoint(checkpoint), MAIN)  # weights checked against the module
    runner.module[MAIN].set_state(module.get_state())
    ev = cfg.evaluation
    if len(runner.games[0].teams) < 2:  # one team (cooperative, single agent): its return, no W/D/L
        if not runner.games[0].cooperative:
            runner.stop()
            return None
        from spade_rllib.rllib.components import team_returns

        out = team_returns(runner.evaluate_main({"opponents": [MIRROR], "games": games, "greedy": ev.greedy}), "final")
        runner.stop()
        return out
    opponents = [*ev.opponents, *([] if MIRROR in ev.opponents else [MIRROR])]  # mirror: how often self-play draws
    outcomes = runner.evaluate_main({"opponents": opponents, "games": games, "greedy": ev.greedy})
    out = placeholder_win_rates(opponents, "final")
    out.update(win_rates(outcomes, "final"))
    runner.stop()
    return out


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
        from spade_rllib.config import describe

        print(describe())
        return 0
    try:
        cfg, checkpoint = resolve_config(args, resolve=not args.print_config)
    except ConfigError as e:
        return config_error(e, argv)
    if args.print_config:
        from spade_rllib.config import dump_config

        print(dump_config(cfg), end="")
        return 0
    try:  # about this machine: stop condition, storage, CPUs/GPUs; the env, model size and resume fit
        from spade_rllib.preflight import check_launch
        from spade_rllib.rllib.prelaunch import check_env_builds, check_model_memory, check_resume

        check_launch(cfg, address=args.address)
        info = check_env_builds(cfg)
        check_model_memory(cfg, info)
        if checkpoint is not None:
            check_resume(cfg, checkpoint, info)
    except ConfigError as e:
        return config_error(e, argv)

    from spade_rllib.provenance import collect_runinfo

    runinfo = collect_runinfo(cfg.experiment.seed, cfg.source_path, extra={"resumed_from": checkpoint})
    try:
        start_ray(cfg, args.address)
        # Build once here so env/model problems surface before Tune starts.
        trainable, param_space = trainable_and_param_space(cfg, runinfo=runinfo, restore_from=checkpoint)
        from spade_rllib.console import quiet_ray_noise

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
    from spade_rllib.trackers import tracker_callbacks

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


def final_replays(cfg: RunConfig, checkpoint: str, trial: Path, k: int, last: dict) -> Optional[Path]:
    """A small evaluation of the last checkpoint for the report: main vs the evaluation opponents' bots on
    levels like the training ones, actions as in the periodic evaluation, `k` of its games as GIFs; with
    `final_heldout_size_opponents` and one held-out directory, also main vs the first of those bots on every
    held-out map (2 games each, `final_games_heldout/`), with a GIF of every map of 15+ cells a side."""
    from spade_rllib.outcome import BOT_PREFIX
    from spade_rllib.games import LEVEL_KIND, env_kind
    from spade_rllib.evaluate import EvalConfig, evaluate
    from spade_rllib.evaluation.players import bots_for_env

    valid = bots_for_env(cfg.env.id) if env_kind(cfg.env.id) == LEVEL_KIND else ()
    bots = [o[len(BOT_PREFIX):] if o.startswith(BOT_PREFIX) else o for o in cfg.evaluation.opponents]
    bots = [b for b in bots if b in valid]
    if not bots:
        return None
    difficulty = cfg.env.difficulty
    if difficulty is None:
        difficulty = result_value(last, "curriculum/difficulty", 5.0)
        difficulty = 5.0 if not isinstance(difficulty, (int, float)) or math.isnan(difficulty) else difficulty
    out = trial / FINAL_GAMES_DIR
    evaluate(EvalConfig(checkpoints=[checkpoint], levels=f"generated:2@{min(10.0, max(1.0, round(difficulty, 1))):g}",
                        games_per_pair=2, seed=cfg.experiment.seed, replays=k, out=str(out), workers=0, bots=bots,
                        league=False, stochastic=not cfg.evaluation.greedy, bootstrap=50, progress=False,
                        agents_per_team=int(cfg.env.kwargs.get("agents_per_team", 1))))
    heldout = cfg.evaluation.final_heldout_levels
    sizes = [o[len(BOT_PREFIX):] for o in cfg.evaluation.final_heldout_size_opponents if o.startswith(BOT_PREFIX)]
    if len(heldout) == 1 and Path(heldout[0]).is_dir() and sizes:  # a replay per large held-out map (issue 49)
        maps = len(list(Path(heldout[0]).glob("*.txt")))
        evaluate(EvalConfig(checkpoints=[checkpoint], levels=heldout[0], games_per_pair=2 * maps, seed=cfg.experiment.seed,
                            replays=1, out=str(trial / f"{FINAL_GAMES_DIR}_heldout"), workers=0, bots=sizes[:1],
                            league=False, stochastic=not cfg.evaluation.greedy, bootstrap=50, progress=False))
    return out


def budget_lines(cfg: RunConfig, steps: float, time_s: float, interrupted: bool = False) -> list[str]:
    """How the run ended against its env-step budget: reached, or cut short by the wall-clock cap."""
    stop = cfg.training.stop
    if not stop.env_steps:
        return []
    from spade_rllib.console import wrap_text

    if steps >= stop.env_steps:
        text = f"env-step budget {stop.env_steps:,d}: reached"
    elif interrupted:
        text = f"env-step budget {stop.env_steps:,d}: interrupted at {int(steps):,d} ({steps / stop.env_steps:.0%})"
    elif stop.time_s is not None and time_s >= stop.time_s:
        text = (f"env-step budget {stop.env_steps:,d}: NOT reached, the wall-clock cap (training.stop.time_s = "
                f"{stop.time_s:g} s) stopped the run at {int(steps):,d} ({steps / stop.env_steps:.0%}); this machine "
                f"trains at {steps / max(time_s, 1e-9):,.0f} env steps/s, so the targets below judge a shorter run "
                f"than the one they were set for (raise the cap: --set training.stop.time_s=...)")
    else:
        text = f"env-step budget {stop.env_steps:,d}: not reached ({int(steps):,d}, {steps / stop.env_steps:.0%})"
    return wrap_text(text)


def time_lines(totals) -> list[str]:
    """Where the training time went (spade_rllib.phases) and the spread of the per-iteration rate."""
    if totals is None or not totals.seconds:
        return []
    from spade_rllib.console import wrap_text
    from spade_rllib.phases import phase_text, rate_spread

    text = "time per phase: " + phase_text(totals.seconds)
    spread = rate_spread(totals.rates)
    if not math.isnan(spread["median"]):
        text += (f"; env steps/s per iteration: p10 {spread['p10']:,.0f}, median {spread['median']:,.0f}, "
                 f"p90 {spread['p90']:,.0f}")
    return wrap_text(text)


def print_summary(cfg: RunConfig, result, console, wall: float, final_games: int, replays: int = 0,
                  interrupted: Optional[int] = None) -> None:
    """The end-of-run summary; `interrupted` is the number of the signal that stopped the run, if one did."""
    last = (result.metrics if result is not None else None) or console.last_result or {}
    trial_path = (result.path if result is not None else None) or console.trial_path
    ckpt = result.checkpoint.path if (result is not None and result.checkpoint) else None
    print("=" * 78)
    if result is not None and result.error is not None:
        print(f"run FAILED: {one_line(result.error)}")  # the cause from inside Ray's wrapper
    if interrupted is not None:
        import signal

        from spade_rllib.console import rel

        where = Path(trial_path) if trial_path else Path(os.path.expanduser(cfg.experiment.storage_path)) / cfg.experiment.name
        print(f"interrupted at iteration {int(last.get('training_iteration', 0))} ({signal.Signals(interrupted).name}); "
              f"resume with: python -m spade_rllib.train --resume {rel(where)}")
        if final_games > 0:  # a stop request wants the process to end soon, not after minutes of games
            print("final evaluation skipped: the run was interrupted (python -m spade_rllib.evaluate plays it later)")
        final_games, replays = 0, 0
    steps = result_value(last, "env_runners/num_env_steps_sampled_lifetime", 0)
    ttot = float(last.get("time_total_s", wall) or wall)
    print(f"done: {int(last.get('training_iteration', 0))} iterations, {int(steps):,d} env steps in {ttot:.0f} s "
          f"({steps / max(ttot, 1e-9):,.0f}/s); wall {wall:.0f} s")
    for line in budget_lines(cfg, steps, ttot, interrupted is not None):
        print(line)
    for line in time_lines(getattr(getattr(console, "view", None), "totals", None)):
        print(line)
    ret = result_value(last, "env_runners/episode_return_mean")
    what = "mean team return" if cfg.env.mode == "cooperative" else "mean return"
    print(f"{what} (training episodes): {ret:.3f}" if isinstance(ret, float) else f"{what}: {ret}")
    stop = cfg.training.stop
    if stop.metric is not None:
        value = result_value(last, stop.metric)
        reached = isinstance(value, (int, float)) and value >= stop.target
        print(f"stop metric {stop.metric} = {value} (target {stop.target}): {'REACHED' if reached else 'not reached'}")
    final = None
    if ckpt and final_games > 0:
        try:
            final = final_evaluation(cfg, ckpt, final_games)
        except Exception as e:
            print(f"final evaluation skipped: {e.__class__.__name__}: {e}")
    if final and "final/team/return_mean" in final:  # a cooperative game: the team's return, no W/D/L
        from spade_rllib.console import team_line

        print(team_line(final, final_games, cfg.evaluation.greedy))
    elif final:
        from spade_rllib.console import final_table, wrap_text
        from spade_rllib.targets import target_verdicts

        opponents = [*cfg.evaluation.opponents, *([] if MIRROR in cfg.evaluation.opponents else [MIRROR])]
        from spade_rllib.games import LEVEL_KIND, env_kind

        where = "" if env_kind(cfg.env.id) != LEVEL_KIND else (
            " on training-like levels" if cfg.env.difficulty is None else f" on levels of difficulty {cfg.env.difficulty:g}")
        for line in wrap_text(f"final evaluation of the last checkpoint: {final_games} games per opponent{where}, "
                              f"{'argmax' if cfg.evaluation.greedy else 'sampled'} actions"):
            print(line)
        for line in final_table(opponents, final, target_verdicts(cfg.to_dict(), final), mirror=MIRROR):
            print(line)
        scores = _heldout_scores(last)
        if scores:
            for line in wrap_text(f"held-out maps (iteration {result_value(last, 'heldout/iteration'):g}): main's score "
                                  + ", ".join(f"{o} {s:.2f}" for o, s in scores.items())):
                print(line)
        if cfg.evaluation.final_heldout_levels:  # the held-out line: main on maps it never trained on
            from spade_rllib.rllib.final_heldout_eval import heldout_line, navigation_line, run_final_heldout, size_lines

            try:
                held = run_final_heldout(cfg, ckpt) or {}
                ev = cfg.evaluation
                for line in wrap_text(heldout_line(held, ev.final_heldout_opponents, ev.final_heldout_targets,
                                                   ev.final_heldout_max_size)):
                    print(line)
                nav = None if ev.final_heldout_navigation_target is None else navigation_line(held, ev.final_heldout_navigation_target)
                for line in wrap_text(nav) if nav else []:
                    print(line)
                for line in (x for text in size_lines(held, ev.final_heldout_size_opponents) for x in wrap_text(text)):
                    print(line)
                final.update(held)
            except Exception as e:
                print(f"held-out line skipped: {e.__class__.__name__}: {e}")
        if trial_path:
            import json

            try:
                from spade_rllib.atomic_io import write_text

                write_text(Path(trial_path, "final_evaluation.json"), json.dumps(final, indent=2))
            except OSError:
                pass
    if ckpt:
        for line in exploitability_lines(cfg, ckpt, last):
            print(line)
    if trial_path:
        from spade_rllib.console import rel

        tp = Path(trial_path)
        events = sorted(tp.glob("events.out.tfevents*"))
        print(f"trial dir:     {rel(tp)}")
        if (tp / "progress.csv").is_file():  # point only at files that exist (a run that failed early has none)
            print(f"progress.csv:  {rel(tp / 'progress.csv')}")
        if (tp / "iterations.log").is_file():
            print(f"log:           {rel(tp / 'iterations.log')}")
        if events:
            print(f"tensorboard:   tensorboard --logdir {rel(tp.parent)}")
        if (tp / "runinfo.json").is_file():
            print("run info:      runinfo.json, config.yaml (in the trial dir)")
        if (tp / "error.txt").is_file():
            print(f"error trace:   {rel(tp / 'error.txt')}")
        if (tp / LEAGUE_CSV).is_file():  # written by the league component at the end of the run
            from spade_rllib.league import format_table, read_table

            print(f"league table:  {rel(tp / LEAGUE_CSV)}")
            print(format_table(read_table(tp / LEAGUE_CSV)))
    report = None
    if trial_path:
        from spade_rllib.report import write_quietly

        if ckpt and replays > 0 and final:
            try:  # into the trial dir, where the report finds it
                final_replays(cfg, ckpt, Path(trial_path), replays, last)
            except Exception as e:
                print(f"replays skipped: {e.__class__.__name__}: {e}")
        report = write_quietly([trial_path], command="python -m spade_rllib.train")
        if report is not None:
            print(f"report:        {rel(report)}")
    if ckpt:
        from spade_rllib.console import ready_commands, wrap_command

        print(f"checkpoint:    {rel(ckpt)}")
        print("# resume with:")
        for line in wrap_command(["python", "-m", "spade_rllib.train", "--resume", rel(Path(trial_path or ckpt))]):
            print(line)
        if final:  # a game: evaluate and play make sense
            from spade_rllib.games import LEVEL_KIND, env_kind

            for line in ready_commands(Path(trial_path or ckpt), ckpt, cfg.env.difficulty, report,
                                       level_game=env_kind(cfg.env.id) == LEVEL_KIND, playable=_playable(cfg.env.id)):
                print(line)

def exploitability_lines(cfg: RunConfig, ckpt: str, last: dict) -> list[str]:
    """OpenSpiel games: the exact exploitability (NashConv / 2) of the last checkpoint's main and league mixtures,
    and of the average of main's measured strategies (`exploitability/average`); [] for other games."""
    from spade_rllib.games import find_game

    spec = find_game(cfg.env.id)
    if spec is None or spec.openspiel_game is None:
        return []
    try:
        from spade_rllib.exploitability_report import checkpoint_exploitability, exploitability_text

        values = checkpoint_exploitability(ckpt, cfg.env.id, members=False)
    except Exception as e:
        return [f"exact exploitability skipped: {e.__class__.__name__}: {e}"]
    average = result_value(last, "exploitability/average")
    if isinstance(average, float) and not math.isnan(average):
        values["average of main's measured strategies"] = average
    return [exploitability_text(values)]


def _playable(env_id: str) -> bool:
    """`play` can show this env in the terminal (a game of the catalog, or a two-team env rendering ansi)."""
    from spade_rllib.play import check_playable
    from spade_rllib.policy import PolicyLoadError

    try:
        check_playable(env_id)
    except (PolicyLoadError, Exception):
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
