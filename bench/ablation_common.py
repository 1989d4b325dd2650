"""Shared pieces of the curriculum and league ablation benches: one training run under a budget,
and the evaluations of a final main (held-out ladder scores, navigation solve rate, head-to-head
games), plus the seed statistics. Imported by `bench/curriculum_ablation.py` and
`bench/league_ablation.py`; not a bench itself.

Every evaluation plays main's final weights in this process through a `SpadeEnvRunner` built from
the run's own algorithm config, so it sees exactly the observations training saw.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spade_rllib.curriculum.heldout_levels import heldout_reset_options  # noqa: E402
from spade_rllib.games import bot_names, heldout_dir  # noqa: E402
from spade_rllib.outcome import MAIN  # noqa: E402
from spade_rllib.sweeps.stats import seed_interval  # noqa: E402
from spade_rllib.sweeps.sweep_spec import deep_merge  # noqa: E402

DEFAULT_ENV_ID = "CaptureTheFlag-v0"
CONFIDENCE = 0.95


def base_config(env_id: str, seed: int) -> dict:
    """The run config every setup starts from: 1v1 self-play, a 128x128 MLP, local learner, no evaluation
    during training (it would eat the budget). Setups and `--set` overrides change it."""
    return {
        "experiment": {"name": "ablation", "seed": int(seed)},
        "env": {"id": env_id},
        # quickstart.yaml's measured CTF settings: small batches, many updates per minute
        "agent": {"lr": 0.001, "gamma": 0.99, "lambda_": 0.95, "entropy": 0.01, "epochs": 2,
                  "minibatch_size": 2048, "train_batch_size": 4096,
                  "model": {"kind": "mlp", "hidden": [128, 128], "activation": "tanh", "vf_share_layers": True}},
        "self_play": {"mode": "mirror"},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 64},
        "evaluation": {"interval": 0},
    }


def ladder_of(env_id: str) -> dict[str, str]:
    """The env's scripted bots, weakest to strongest as registered: metric name -> runner opponent id."""
    return {name: f"bot:{name}" for name in bot_names(env_id)}


def heldout_paths(env_id: str) -> list[str]:
    return [str(heldout_dir(env_id))]


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}/{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def train(raw: dict, minutes: float, env_steps: Optional[int], label: str,
          keep: Sequence[str] = (), on_built: Optional[Callable[[Any], None]] = None) -> dict:
    """Train one `SpadePPO` for `minutes` of wall clock (and at most `env_steps`), from the first
    iteration; the iteration running when the budget ends completes. Returns the algorithm config,
    main's final weights, the per-iteration values of the `keep` metric keys and the totals."""
    from spade_rllib.config import parse_config
    from spade_rllib.rllib.algorithm import build_algo_config

    cfg = parse_config(raw)
    algo_config = build_algo_config(cfg)
    algo = algo_config.build_algo()
    history: dict[str, list] = {k: [] for k in keep}
    result: dict = {}
    try:
        if on_built is not None:
            on_built(algo)
        t0 = time.perf_counter()
        steps = 0
        while time.perf_counter() - t0 < minutes * 60.0 and (env_steps is None or steps < env_steps):
            result = algo.train()
            flat = flatten(result)
            steps = int(flat.get("env_runners/num_env_steps_sampled_lifetime", 0))
            for k in keep:
                v = flat.get(k, math.nan)
                history[k].append(float(v) if isinstance(v, (int, float)) else math.nan)
        print(f"  [{label}] {int(result.get('training_iteration', 0))} iterations, {steps:,d} env steps, "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        weights = algo.main_weights()  # the learner's copy of main, as numpy
        train_s = time.perf_counter() - t0
        trial_dir = algo.trial_dir()  # where components write their end-of-run files (league.csv)
    finally:
        algo.stop()
    return {"algo_config": algo_config, "weights": weights, "history": history, "train_s": train_s,
            "iterations": int(result.get("training_iteration", 0)), "env_steps": steps, "cfg": cfg,
            "trial_dir": trial_dir}


def make_runner(algo_config: Any, weights: Mapping[str, Any]):
    """A `SpadeEnvRunner` in this process holding main's `weights` (stop it after use)."""
    from spade_rllib.rllib.runner import SpadeEnvRunner

    config = algo_config.copy(copy_frozen=False)
    config.env_runners(num_envs_per_env_runner=min(16, int(config.num_envs_per_env_runner)))
    runner = SpadeEnvRunner(config=config, worker_index=0, num_workers=0)
    runner.module[MAIN].set_state(dict(weights))
    return runner


def ladder_scores(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int,
                  greedy: bool = False) -> dict[str, float]:
    """Main's held-out score (win + draw/2, mean over the held-out maps, `games` per map and seat) against each
    ladder bot. Sampled actions by default: a memoryless CTF policy acting by argmax loops forever on maps it
    does not know (measured: every setup scored exactly 0.5 vs random, no capture at all), as in training."""
    from spade_rllib.rllib.heldout_eval import play_heldout

    ladder = ladder_of(env_id)
    # play_heldout's games are per map, seats alternating: 2 * games = `games` from each seat
    out = play_heldout(algo_config, weights, heldout_paths(env_id), games=2 * games, greedy=greedy, opponents=ladder)
    return {name: float(out[f"heldout/{name}/score"]) for name in ladder}


def navigation_solve_rate(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int, seed: int = 0,
                          greedy: bool = False) -> float:
    """Share of held-out games main wins alone: the other team idles (NOOP) every step, so winning is
    pure navigation (MazeRace: reach the flag; CTF: capture the idle team's flag). `games` per map and
    seat; a timeout is a failure."""
    from spade_rllib.rllib.heldout_line import still_team_results

    runner = make_runner(algo_config, weights)
    try:
        levels = heldout_reset_options(heldout_paths(env_id), agents_per_team=len(runner.games[0].teams[0]))
        results = still_team_results(runner, levels, games, greedy, np.random.default_rng(seed))
        return results.count("win") / max(1, len(results))
    finally:
        runner.stop()


def head_to_head(algo_config: Any, weights_a: Mapping[str, Any], weights_b: Mapping[str, Any], env_id: str,
                 games: int, greedy: bool = False) -> list[float]:
    """Scores of A (1 win, 0.5 draw, 0 loss) against B on every held-out map, `games` per map and seat
    (both sample their actions unless `greedy`)."""
    from spade_rllib.rllib.frozen_opponent import FROZEN_SLOT
    from spade_rllib.rllib.plan import DriverUpdate

    runner = make_runner(algo_config, weights_a)
    try:
        runner.apply_driver_update(DriverUpdate(slot_weights={FROZEN_SLOT: {"member": "b", "weights": dict(weights_b)}}))
        levels = heldout_reset_options(heldout_paths(env_id), agents_per_team=len(runner.games[0].teams[0]))
        records = runner.evaluate_main({"opponents": [FROZEN_SLOT], "games": 2 * games, "greedy": greedy, "levels": levels})
    finally:
        runner.stop()
    return [float(r.learner_score) for r in records if r.learner_score is not None]


def over_seeds(values: Sequence[float]) -> dict[str, Any]:
    """Mean and two-sided 95% Student-t interval over seeds (`sweeps.stats.seed_interval`), the IQM with
    its bootstrap interval, and the values."""
    iv = seed_interval(values, CONFIDENCE)
    clean = lambda x: None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)  # noqa: E731
    return {"mean": clean(iv.mean), "low": clean(iv.low), "high": clean(iv.high), "n": iv.n,
            "iqm": clean(iv.iqm), "iqm_low": clean(iv.iqm_low), "iqm_high": clean(iv.iqm_high),
            "values": [clean(v) for v in values]}


def separated(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two intervals from `over_seeds` do not overlap and a lies above b."""
    if a.get("low") is None or b.get("high") is None:
        return False
    return a["low"] > b["high"]


def plot_curves(curves: Mapping[str, Sequence[Sequence[float]]], ylabel: str, path: Path, title: str) -> Optional[Path]:
    """One line per seed, one colour per setup; None (and a note) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: {path.name} not written", file=sys.stderr)
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (setup, runs) in enumerate(curves.items()):
        color = f"C{i % 10}"
        for j, ys in enumerate(runs):
            ax.plot(range(1, len(ys) + 1), ys, color=color, alpha=0.8, label=setup if j == 0 else None)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_sets(items: Sequence[str]) -> list[str]:
    """`--set KEY=VALUE` items, checked for the `=`."""
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
    return list(items)
