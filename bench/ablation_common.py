"""Shared pieces of the ablation benches (curriculum, league, memory, flagship): their command line,
the small run config every setup starts from, one training run under a budget, the evaluations of a
final main (held-out ladder scores, navigation solve rate, head-to-head games, exploitability, a round
robin with Bradley-Terry ratings), and the seed statistics. Not a bench itself.

Every evaluation plays main's final weights in this process through a `SpadeEnvRunner` built from
the run's own algorithm config, so it sees exactly the observations training saw.
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import numpy as np

from bench.common import ROOT, local_ray  # noqa: F401 - re-exported for the ablation benches
from spade_rllib.curriculum.heldout_levels import heldout_reset_options
from spade_rllib.games import bot_names, heldout_dir
from spade_rllib.outcome import MAIN
from spade_rllib.sweeps.stats import seed_interval
from spade_rllib.sweeps.sweep_spec import deep_merge

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


def setup_raw(env_id: str, seed: int, overrides: Sequence[str], *parts: Mapping) -> dict:
    """`base_config` with each of `parts` merged in, in order, then the `--set` overrides."""
    from spade_rllib.config import apply_overrides

    raw = base_config(env_id, seed)
    for part in parts:
        raw = deep_merge(raw, part)
    return apply_overrides(raw, overrides)


def ladder_of(env_id: str) -> dict[str, str]:
    """The env's scripted bots, weakest to strongest as registered: metric name -> runner opponent id."""
    return {name: f"bot:{name}" for name in bot_names(env_id)}


def heldout_paths(env_id: str, max_size: int = 0) -> list[str]:
    """The env's shipped held-out maps with at most `max_size` rows and columns (0 = every map)."""
    from spade_rllib.curriculum.heldout_levels import load_heldout_specs

    specs = load_heldout_specs([heldout_dir(env_id)])
    rows = {name: spec.ascii.splitlines() for name, spec in specs.items()}
    fits = [name for name, r in rows.items() if not max_size or max(len(r), max(map(len, r))) <= max_size]
    if not fits:
        raise SystemExit(f"--max-map-size {max_size}: no held-out map of {env_id} is that small")
    return [str(heldout_dir(env_id) / f"{name}.txt") for name in sorted(fits)]


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
                  greedy: bool = False, max_size: int = 0) -> dict[str, float]:
    """Main's held-out score (win + draw/2, mean over the held-out maps, `games` per map and seat) against each
    ladder bot. Sampled actions by default: a memoryless CTF policy acting by argmax loops forever on maps it
    does not know (measured: every setup scored exactly 0.5 vs random, no capture at all), as in training."""
    from spade_rllib.rllib.heldout_eval import play_heldout

    ladder = ladder_of(env_id)
    # play_heldout's games are per map, seats alternating: 2 * games = `games` from each seat
    out = play_heldout(algo_config, weights, heldout_paths(env_id, max_size), games=2 * games, greedy=greedy, opponents=ladder)
    return {name: float(out[f"heldout/{name}/score"]) for name in ladder}


def navigation_solve_rate(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int, seed: int = 0,
                          greedy: bool = False, max_size: int = 0) -> float:
    """Share of held-out games main wins alone: the other team idles (NOOP) every step, so winning is
    pure navigation (MazeRace: reach the flag; CTF: capture the idle team's flag). `games` per map and
    seat; a timeout is a failure."""
    from spade_rllib.rllib.heldout_line import still_team_results

    runner = make_runner(algo_config, weights)
    try:
        levels = heldout_reset_options(heldout_paths(env_id, max_size), agents_per_team=len(runner.games[0].teams[0]))
        results = still_team_results(runner, levels, games, greedy, np.random.default_rng(seed))
        return results.count("win") / max(1, len(results))
    finally:
        runner.stop()


def head_to_head(algo_config: Any, weights_a: Mapping[str, Any], weights_b: Mapping[str, Any], env_id: str,
                 games: int, greedy: bool = False, max_size: int = 0) -> list[float]:
    """Scores of A (1 win, 0.5 draw, 0 loss) against B on every held-out map, `games` per map and seat
    (both sample their actions unless `greedy`)."""
    from spade_rllib.rllib.frozen_opponent import FROZEN_SLOT
    from spade_rllib.rllib.plan import DriverUpdate

    runner = make_runner(algo_config, weights_a)
    try:
        runner.apply_driver_update(DriverUpdate(slot_weights={FROZEN_SLOT: {"member": "b", "weights": dict(weights_b)}}))
        levels = heldout_reset_options(heldout_paths(env_id, max_size), agents_per_team=len(runner.games[0].teams[0]))
        records = runner.evaluate_main({"opponents": [FROZEN_SLOT], "games": 2 * games, "greedy": greedy, "levels": levels})
    finally:
        runner.stop()
    return [float(r.learner_score) for r in records if r.learner_score is not None]


def ladder_and_navigation(run: dict, env_id: str, games: int, seed: int, greedy: bool, max_size: int = 0) -> None:
    """Put main's held-out `ladder` scores and its `navigation` solve rate into `run` (from `train`)."""
    run["ladder"] = ladder_scores(run["algo_config"], run["weights"], env_id, games, greedy, max_size)
    run["navigation"] = navigation_solve_rate(run["algo_config"], run["weights"], env_id, games, seed, greedy, max_size)


def exploitability(target_weights: Mapping[str, Any], exploiter_raw: dict, env_id: str, seed: int, minutes: float,
                   env_steps: Optional[int], games: int, greedy: bool = False, max_size: int = 0) -> tuple[float, float]:
    """(score of a fresh learner, configured by `exploiter_raw`, trained `minutes` with every game against
    the frozen `target_weights`, then played against them on the held-out maps; its training games
    against the target in its last iteration, the proof that it trained against it)."""
    from spade_rllib.rllib.frozen_opponent import FrozenOpponentComponent

    def install(algo):
        algo.components.append(FrozenOpponentComponent(target_weights, member="target", seed=seed))
        algo.broadcast(full=True)  # send the plan and the frozen weights before the first sample

    exploiter = train(exploiter_raw, minutes, env_steps, f"exploiter seed {seed}", on_built=install,
                      keep=["train/target/games"])
    scores = head_to_head(exploiter["algo_config"], exploiter["weights"], target_weights, env_id, games, greedy, max_size)
    return (float(np.mean(scores)) if scores else math.nan), exploiter["history"]["train/target/games"][-1]


def round_robin(mains: Sequence[tuple[str, dict]], env_id: str, games: int, greedy: bool = False,
                max_size: int = 0) -> dict:
    """Every pair of final mains on the held-out maps; Bradley-Terry Elo with bootstrap intervals:
    {main: {elo, low, high}} plus "_games", the number of games."""
    from spade_rllib.ratings import bootstrap_bradley_terry_elo

    a, b, score = [], [], []
    for i, j in itertools.combinations(range(len(mains)), 2):
        ri, rj = mains[i][1], mains[j][1]
        for s in head_to_head(ri["algo_config"], ri["weights"], rj["weights"], env_id, games, greedy, max_size):
            a.append(i)
            b.append(j)
            score.append(s)
    if not score:
        return {}
    fit = bootstrap_bradley_terry_elo(len(mains), a, b, score, n_bootstrap=200, seed=0)
    return {name: {"elo": round(float(fit.rating[k]), 1), "low": round(float(fit.lower[k]), 1),
                   "high": round(float(fit.upper[k]), 1)} for k, (name, _) in enumerate(mains)} | {"_games": len(score)}


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


def ladder_navigation_summary(runs: Sequence[dict], ladder: Sequence[str]) -> dict:
    """Per setup: the `over_seeds` statistics of each ladder score and of navigation, iterations, env steps."""
    return {"ladder": {bot: over_seeds([r["ladder"][bot] for r in runs]) for bot in ladder},
            "navigation": over_seeds([r["navigation"] for r in runs]),
            "iterations": [r["iterations"] for r in runs], "env_steps": [r["env_steps"] for r in runs]}


def fmt_interval(stat: Mapping[str, Any]) -> str:
    """'0.512 [0.401, 0.623]' (mean [low, high]); 'n/a' without a mean."""
    if stat["mean"] is None:
        return "n/a"
    return f"{stat['mean']:.3f}" + ("" if stat["low"] is None else f" [{stat['low']:.3f}, {stat['high']:.3f}]")


def ablation_parser(doc: str, *, kind: str, names: Sequence[str], seeds: int, minutes: float, games: int,
                    games_help: str, out_dir: str, out_help: str, default_names: Optional[Sequence[str]] = None,
                    exploit_minutes: Optional[float] = None, env_id: bool = True, greedy: bool = True,
                    env_steps_help: str = "also stop each run at this many env steps") -> argparse.ArgumentParser:
    """The command line every ablation bench shares: --seeds, --minutes, [--exploit-minutes], [--env-id],
    --<kind> (a comma-separated subset of `names`), --games, [--greedy], --env-steps, --set, --out-dir, --cpus."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    one = kind.rstrip("s")
    ap.add_argument("--seeds", type=int, default=seeds, help=f"seeds per {one} (0, 1, ..., N-1)")
    ap.add_argument("--minutes", type=float, default=minutes, help=f"training budget per {one} and seed (wall clock)")
    if exploit_minutes is not None:
        ap.add_argument("--exploit-minutes", type=float, default=exploit_minutes,
                        help="training budget of each fresh exploiter")
    if env_id:
        ap.add_argument("--env-id", default=DEFAULT_ENV_ID, help="MazeRace-v0 or CaptureTheFlag-v0")
    ap.add_argument(f"--{kind}", default=",".join(default_names or names), help=f"comma-separated subset of {','.join(names)}")
    ap.add_argument("--games", type=int, default=games, help=games_help)
    if greedy:
        ap.add_argument("--greedy", action="store_true", help="evaluate by argmax instead of sampled actions (the default)")
    ap.add_argument("--env-steps", type=int, default=None, help=env_steps_help)
    ap.add_argument("--max-map-size", type=int, default=0,
                    help="evaluate on the held-out maps with at most this many rows and columns (0 = every map)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for every run (repeatable), e.g. agent.model.hidden=[64,64]")
    ap.add_argument("--out-dir", type=Path, default=Path("bench_out") / out_dir, help=out_help)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray")
    return ap


def parse_ablation_args(ap: argparse.ArgumentParser, argv: Optional[Sequence[str]], kind: str,
                        names: Sequence[str]) -> tuple[argparse.Namespace, list[str], list[str]]:
    """(args, the chosen setups or arms, the `--set` overrides); one argparse error for a bad choice or count."""
    args = ap.parse_args(argv)
    chosen = [s.strip() for s in getattr(args, kind).split(",") if s.strip()]
    bad = [s for s in chosen if s not in names]
    exploit = getattr(args, "exploit_minutes", 1.0)
    if bad or not chosen or args.seeds < 1 or args.minutes <= 0 or exploit <= 0 or args.games < 1 or args.max_map_size < 0:
        ap.error(f"--{kind} takes {', '.join(names)} (got {bad or chosen}); --seeds >= 1; minutes > 0; --games >= 1; "
                 "--max-map-size >= 0")
    for item in args.overrides:
        if "=" not in item:
            ap.error(f"--set {item!r}: expected KEY=VALUE")
    return args, chosen, list(args.overrides)


def ladder_runs(args: argparse.Namespace, setups: Sequence[str], make_config: Callable[[str, str, int], dict],
                keep: Sequence[str] = ()) -> dict[str, list[dict]]:
    """setup -> one `train` result per seed, each with main's `ladder` and `navigation` (`ladder_and_navigation`),
    all in one local Ray; `make_config(env_id, setup, seed)` is the run's raw config."""
    runs: dict[str, list[dict]] = {s: [] for s in setups}
    with local_ray(args.cpus, quiet=True):
        for seed, setup in each_run(setups, args.seeds):
            run = train(make_config(args.env_id, setup, seed), args.minutes, args.env_steps, f"{setup} seed {seed}",
                        keep=keep)
            ladder_and_navigation(run, args.env_id, args.games, seed, args.greedy, args.max_map_size)
            runs[setup].append(run)
    return runs


def each_run(names: Sequence[str], seeds: int) -> Iterator[tuple[int, str]]:
    """(seed, setup) pairs, seeds outermost: a bench cut short still compares every setup."""
    for seed in range(seeds):
        for name in names:
            yield seed, name
