"""Held-out evaluation for `SpadePPO`: main on every held-out map, off the training path.

Config: `evaluation.heldout_levels` (files or directories of ASCII maps, e.g. the shipped
`spade_rllib/levels/heldout`), `evaluation.heldout_games` (games per level and opponent; seats
alternate), `evaluation.interval` (every N iterations), `evaluation.greedy`.

Every `interval` iterations the driver ships main's current weights (learner copy) to one Ray task
(`num_cpus=0`: it never waits for a CPU the trial holds, and never blocks sampling; on a small
machine it shares the cores). The task builds a `SpadeEnvRunner` in its own process and plays, on
every map, `heldout_games` games against each of `heldout_opponents(env_id)`:

    MazeRace-v0         rusher, rusher_tagger (the scripted racers), self
    CaptureTheFlag-v0   every bot of the ladder (random, rusher, defender, raider, hybrid), self
    (self: main against a frozen copy of itself, the same weights in both seats)

The driver polls without waiting: metrics of a finished task land in the next iteration's result,
with `heldout/iteration` naming the iteration whose weights were played. While a task runs, a
due evaluation is skipped (`heldout/skipped` counts them) instead of queueing up.

Metric keys (NaN placeholders from iteration 1 on, so progress.csv has the columns):
    heldout/<level>/<opponent>/{win_rate, draw_rate, score, mean_length, games}   (win = main's team won)
    heldout/<opponent>/{win_rate, draw_rate, score, mean_length}                  (mean over the levels)
    heldout/ladder/score        the mean of heldout/<bot>/score over the scripted bots (not `self`):
                                the sweeps' default objective (`sweeps/sweep_spec.py`, metric `auto`)
    heldout/iteration, heldout/eval_s, heldout/skipped

`play_heldout(algo_config, weights, ...)` is the same evaluation in this process (the ablation
bench and tests use it).
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable, Mapping, Optional, Sequence

from spade_rllib.curriculum.heldout_maps import heldout_metrics, heldout_reset_options, load_heldout_levels
from spade_rllib.games import LEVEL_KIND
from spade_rllib.games import heldout_opponents as game_heldout_opponents
from spade_rllib.core.outcome import MAIN

logger = logging.getLogger(__name__)

HELDOUT_PREFIX = "heldout"
def heldout_opponents(env_id: str) -> dict[str, str]:
    """Metric name -> opponent id understood by `SpadeEnvRunner` for one game (its `GameSpec.heldout_opponents`,
    else its whole bot ladder; plus "self": main plays both seats)."""
    return game_heldout_opponents(env_id)
# score = win + draw / 2: on fair maps two perfect racers draw, so win rate alone hides progress.
LEVEL_KEYS = ("win_rate", "draw_rate", "score", "mean_length", "games")
MEAN_KEYS = ("win_rate", "draw_rate", "score", "mean_length")
LADDER = "ladder"  # heldout/ladder/score
EVAL_LANES = 16  # env copies stepped together in the evaluation process


def heldout_level_names(paths: Sequence[str], agents_per_team: int = 1) -> list[str]:
    """Names of the held-out maps with `agents_per_team` agents per team, sorted (what gets played)."""
    return sorted(name for name, level in load_heldout_levels(list(paths)).items() if level.agents_per_team == agents_per_team)


def placeholder_metrics(level_names: Sequence[str], opponents: Sequence[str],
                        prefix: str = HELDOUT_PREFIX) -> dict[str, float]:
    """NaN for every key an evaluation reports, so the columns exist from iteration 1."""
    out: dict[str, float] = {}
    for level in level_names:
        for opp in opponents:
            for k in LEVEL_KEYS:
                out[f"{prefix}/{level}/{opp}/{k}"] = math.nan
    for opp in opponents:
        for k in MEAN_KEYS:
            out[f"{prefix}/{opp}/{k}"] = math.nan
    out.update({f"{prefix}/iteration": math.nan, f"{prefix}/eval_s": math.nan, f"{prefix}/{LADDER}/score": math.nan})
    return out


def ladder_score(metrics: Mapping[str, float], opponents: Sequence[str], prefix: str = HELDOUT_PREFIX) -> dict[str, float]:
    """`heldout/ladder/score`: main's mean score over the scripted opponents (every one but `self`,
    whose score is 0.5 by symmetry for any policy), each already a mean over the maps."""
    vals = [metrics[k] for opp in opponents if opp != "self" and (k := f"{prefix}/{opp}/score") in metrics
            and not math.isnan(metrics[k])]
    return {f"{prefix}/{LADDER}/score": sum(vals) / len(vals) if vals else math.nan}


def mean_over_levels(metrics: Mapping[str, float], level_names: Sequence[str], opponents: Sequence[str],
                     prefix: str = HELDOUT_PREFIX) -> dict[str, float]:
    """`heldout/<opponent>/<k>`: the mean over the levels of `heldout/<level>/<opponent>/<k>` (NaN if none)."""
    out = {}
    for opp in opponents:
        for k in MEAN_KEYS:
            vals = [metrics[key] for level in level_names if (key := f"{prefix}/{level}/{opp}/{k}") in metrics
                    and not math.isnan(metrics[key])]
            out[f"{prefix}/{opp}/{k}"] = sum(vals) / len(vals) if vals else math.nan
    return out


def play_heldout(algo_config: Any, main_weights: Mapping[str, Any], paths: Sequence[str], games: int,
                 greedy: bool = False, opponents: Optional[Mapping[str, str]] = None,
                 lanes: int = EVAL_LANES) -> dict[str, float]:
    """Play main (numpy state dict `main_weights`) on every held-out map in this process; flat metrics.

    `algo_config` is the run's `AlgorithmConfig` (from `build_algo_config`); `opponents` maps metric
    names to runner opponent ids (default `heldout_opponents(env_id)`)."""
    from spade_rllib.rllib.runner import SpadeEnvRunner

    from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, RunnerSpec

    opponents = dict(opponents or heldout_opponents(RunnerSpec.from_mapping(algo_config.env_config[RUNNER_SPEC_KEY]).env_id))
    config = algo_config.copy(copy_frozen=False)
    config.env_runners(num_envs_per_env_runner=max(1, min(int(lanes), int(config.num_envs_per_env_runner))))
    runner = SpadeEnvRunner(config=config, worker_index=0, num_workers=0)
    try:
        runner.module[MAIN].set_state(dict(main_weights))
        per_team = len(runner.games[0].teams[0])
        levels = heldout_reset_options(list(paths), agents_per_team=per_team)
        if not levels:
            raise ValueError(f"evaluation.heldout_levels: no held-out map with {per_team} agent(s) per team in {list(paths)}")
        records = runner.evaluate_main({"opponents": list(opponents.values()), "games": int(games), "greedy": bool(greedy),
                                        "levels": levels})
    finally:
        runner.stop()
    name_of = {opp_id: name for name, opp_id in opponents.items()}
    records = [rec.with_fields(opponent=name_of.get(rec.opponent, rec.opponent)) for rec in records]
    level_names = sorted({opt["heldout_level"] for opt in levels})
    out = placeholder_metrics(level_names, list(opponents))
    out.update(heldout_metrics(records, prefix=HELDOUT_PREFIX))
    out.update(mean_over_levels(out, level_names, list(opponents)))
    out.update(ladder_score(out, list(opponents)))
    return out


def _heldout_task(algo_config: Any, main_weights: Mapping[str, Any], paths: Sequence[str], games: int, greedy: bool,
                  iteration: int, opponents: Optional[Mapping[str, str]] = None) -> dict[str, float]:
    t0 = time.perf_counter()
    out = play_heldout(algo_config, main_weights, paths, games, greedy, opponents)
    out[f"{HELDOUT_PREFIX}/iteration"] = float(iteration)
    out[f"{HELDOUT_PREFIX}/eval_s"] = time.perf_counter() - t0
    return out


class HeldoutEvaluator:
    """Driver side: launches the held-out evaluation as a Ray task and keeps the latest metrics."""

    def __init__(self, algo_config: Any, paths: Sequence[str], games: int, interval: int, opponents: Mapping[str, str],
                 greedy: bool = False, agents_per_team: int = 1):
        import ray

        self.opponents = dict(opponents)
        self.paths = [str(p) for p in paths]
        self.games = int(games)
        self.interval = int(interval)
        self.greedy = bool(greedy)
        self.level_names = heldout_level_names(self.paths, agents_per_team)
        if not self.level_names:
            raise ValueError(f"evaluation.heldout_levels: no held-out map with {agents_per_team} agent(s) per team in {self.paths}")
        self.metrics: dict[str, float] = placeholder_metrics(self.level_names, list(self.opponents))
        self.metrics[f"{HELDOUT_PREFIX}/skipped"] = 0.0
        self.skipped = 0
        self.pending = None  # ObjectRef of the running task
        self.pending_iteration: Optional[int] = None
        self._config_ref = ray.put(algo_config)
        self._remote = ray.remote(num_cpus=0, max_retries=0)(_heldout_task)

    def launch(self, iteration: int, main_weights: Mapping[str, Any]) -> bool:
        """Start an evaluation of these weights unless one is running (then count it as skipped)."""
        if self.pending is not None:
            self.skipped += 1
            self.metrics[f"{HELDOUT_PREFIX}/skipped"] = float(self.skipped)
            logger.info("held-out evaluation of iteration %d skipped: the one of iteration %s is still running",
                        iteration, self.pending_iteration)
            return False
        self.pending = self._remote.remote(self._config_ref, dict(main_weights), self.paths, self.games, self.greedy,
                                           int(iteration), self.opponents)
        self.pending_iteration = int(iteration)
        return True

    def poll(self, timeout: Optional[float] = 0.0) -> bool:
        """Collect a finished task's metrics (waits up to `timeout` s; None = until done). True if collected."""
        import ray

        if self.pending is None:
            return False
        ready, _ = ray.wait([self.pending], timeout=timeout)
        if not ready:
            return False
        ref, self.pending = self.pending, None
        try:
            self.metrics.update(ray.get(ref))
        except Exception:
            logger.exception("held-out evaluation of iteration %s failed", self.pending_iteration)
        return True

    def step(self, iteration: int, main_weights: Callable[[], Mapping[str, Any]]) -> dict[str, float]:
        """Once per training iteration: collect a finished evaluation, launch a due one; latest metrics."""
        self.poll(0.0)
        if self.interval and iteration % self.interval == 0:
            self.launch(iteration, main_weights())
        return dict(self.metrics)

    def stop(self) -> None:
        import ray

        if self.pending is not None:
            try:
                ray.cancel(self.pending, force=True)
            except Exception:
                pass
            self.pending = None


def make_heldout_evaluator(run_config: Any, algo_config: Any, env_info: Any) -> Optional[HeldoutEvaluator]:
    """None unless `evaluation.heldout_levels` is set, `evaluation.interval` > 0 and the env is a level game."""
    ev = run_config.evaluation
    if not ev.heldout_levels or not ev.interval or getattr(env_info, "kind", None) != LEVEL_KIND:
        return None
    return HeldoutEvaluator(algo_config, ev.heldout_levels, ev.heldout_games, ev.interval,
                            heldout_opponents(env_info.env_id), greedy=ev.greedy, agents_per_team=len(env_info.teams[0]))
