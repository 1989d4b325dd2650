"""The end-of-run summary `python -m spade_rllib.train` prints (`print_summary`): steps and time against the
budget, where the time went, the stop metric, a final evaluation of the last checkpoint against
`evaluation.opponents` (`final_evaluation`, in the driver process) with its targets and the held-out line,
exact exploitability for OpenSpiel games, the result paths, replays for the report and the commands to go on.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Optional

from spade_rllib.artifacts.checkpoint_layout import LEAGUE_CSV
from spade_rllib.cli import one_line
from spade_rllib.config.run_config import RunConfig, resolved_env_of
from spade_rllib.core.outcome import MAIN
from spade_rllib.rllib.plan import MIRROR
from spade_rllib.training.console import heldout_scores
from spade_rllib.training.tuner_inputs import result_value

FINAL_GAMES_DIR = "final_games"
"""The trial's folder of the final replays (GIFs for the report)."""


def final_evaluation(cfg: RunConfig, checkpoint: str, games: int) -> Optional[dict]:
    """Play the final checkpoint's main against `evaluation.opponents` in the driver process."""
    from spade_rllib.artifacts.checkpoint_layout import resolve_checkpoint
    from spade_rllib.players.policy import load_module
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.metrics import placeholder_win_rates, win_rates
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
        from spade_rllib.rllib.metrics import team_returns

        out = team_returns(runner.evaluate_main({"opponents": [MIRROR], "games": games, "greedy": ev.greedy}), "final")
        runner.stop()
        return out
    opponents = [*ev.opponents, *([] if MIRROR in ev.opponents else [MIRROR])]  # mirror: how often self-play draws
    outcomes = runner.evaluate_main({"opponents": opponents, "games": games, "greedy": ev.greedy})
    out = placeholder_win_rates(opponents, "final")
    out.update(win_rates(outcomes, "final"))
    runner.stop()
    return out



def final_replays(cfg: RunConfig, checkpoint: str, trial: Path, k: int, last: dict) -> Optional[Path]:
    """A small evaluation of the last checkpoint for the report: main vs the evaluation opponents' bots on
    levels like the training ones, actions as in the periodic evaluation, `k` of its games as GIFs; with
    `final_heldout_size_opponents` and one held-out directory, also main vs the first of those bots on every
    held-out map (2 games each, `final_games_heldout/`), with a GIF of every map of 15+ cells a side."""
    from spade_rllib.core.outcome import BOT_PREFIX
    from spade_rllib.evaluate import EvalConfig, evaluate
    from spade_rllib.evaluation.players import bots_for_env

    valid = bots_for_env(cfg.env.id) if resolved_env_of(cfg).is_level_game else ()
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
    from spade_rllib.training.console import wrap_text

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
    """Where the training time went (spade_rllib.training.phases) and the spread of the per-iteration rate."""
    if totals is None or not totals.seconds:
        return []
    from spade_rllib.training.console import wrap_text
    from spade_rllib.training.phases import phase_text, rate_spread

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

        from spade_rllib.training.console import rel

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
        from spade_rllib.training.console import team_line

        print(team_line(final, final_games, cfg.evaluation.greedy))
    elif final:
        from spade_rllib.training.console import final_table, wrap_text
        from spade_rllib.training.targets import target_verdicts

        opponents = [*cfg.evaluation.opponents, *([] if MIRROR in cfg.evaluation.opponents else [MIRROR])]
        where = "" if not resolved_env_of(cfg).is_level_game else (
            " on training-like levels" if cfg.env.difficulty is None else f" on levels of difficulty {cfg.env.difficulty:g}")
        for line in wrap_text(f"final evaluation of the last checkpoint: {final_games} games per opponent{where}, "
                              f"{'argmax' if cfg.evaluation.greedy else 'sampled'} actions"):
            print(line)
        for line in final_table(opponents, final, target_verdicts(cfg.to_dict(), final), mirror=MIRROR):
            print(line)
        scores = heldout_scores(last)
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
                from spade_rllib.artifacts.atomic_io import write_text

                write_text(Path(trial_path, "final_evaluation.json"), json.dumps(final, indent=2))
            except OSError:
                pass
    if ckpt:
        for line in exploitability_lines(cfg, ckpt, last):
            print(line)
    if trial_path:
        from spade_rllib.training.console import rel

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
        from spade_rllib.training.console import ready_commands, wrap_command

        print(f"checkpoint:    {rel(ckpt)}")
        print("# resume with:")
        for line in wrap_command(["python", "-m", "spade_rllib.train", "--resume", rel(Path(trial_path or ckpt))]):
            print(line)
        if final:  # a game: evaluate and play make sense
            for line in ready_commands(Path(trial_path or ckpt), ckpt, cfg.env.difficulty, report,
                                       level_game=resolved_env_of(cfg).is_level_game, playable=_playable(cfg.env.id)):
                print(line)


def exploitability_lines(cfg: RunConfig, ckpt: str, last: dict) -> list[str]:
    """OpenSpiel games: the exact exploitability (NashConv / 2) of the last checkpoint's main and league mixtures,
    and of the average of main's measured strategies (`exploitability/average`); [] for other games."""
    spec = resolved_env_of(cfg).spec
    if spec is None or spec.openspiel_game is None:
        return []
    try:
        from spade_rllib.players.exploitability_report import checkpoint_exploitability, exploitability_text

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
    from spade_rllib.players.policy import PolicyLoadError

    try:
        check_playable(env_id)
    except (PolicyLoadError, Exception):
        return False
    return True


