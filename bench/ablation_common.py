"""Shared pieces of the ablation benches (curriculum, league, memory, flagship): their command line,
the small run config every setup starts from, one training run under a budget, the evaluations of a
final main (held-out ladder scores, navigation solve rate, head-to-head games, exploitability, a round
robin with Bradley-Terry ratings), the seed statistics, and the unit cache that lets a long bench run
over several sessions. Not a bench itself.

Every evaluation plays main's final weights in this process through a `SpadeEnvRunner` built from
the run's own algorithm config, so it sees exactly the observations training saw.

Unit cache (benches built with `ablation_parser(..., bench=NAME)`): a unit is one (setup, seed) training
run with its evaluations. Each finished unit is written at once, atomically, to
`<out-dir>/units/<setup>_seed<k>.json` (its numbers and history) and `<setup>_seed<k>.pt` (main's final
weights, `torch.save` of the state dict); a rerun with the same `--out-dir` loads it instead of training
(`cached: ...` on stderr). `<out-dir>/manifest.json`, written with the first unit, holds the settings that
make units comparable (`unit_manifest`); a rerun whose settings differ stops with a one-line error (exit 2)
before Ray starts, writing and deleting nothing. A different git commit is only a WARNING: code fixes
between sessions are normal, judge yourself whether they change the numbers. `--only-seeds` and
`--max-units` cut a run into chunks; `unit_progress` says what is still missing and how to continue.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import itertools
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import numpy as np

from bench.common import ROOT, local_ray
from spade_rllib.artifacts.atomic_io import atomic_path, write_text
from spade_rllib.curriculum.heldout_maps import heldout_reset_options
from spade_rllib.games import default_bot_names, heldout_dir
from spade_rllib.core.outcome import MAIN
from spade_rllib.artifacts.result_lookup import flatten
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
                  "model": {"encoder": "mlp", "hidden": [128, 128], "activation": "tanh", "vf_share_layers": True}},
        "self_play": {"mode": "mirror"},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 64},
        "evaluation": {"interval": 0},
    }


def setup_raw(env_id: str, seed: int, overrides: Sequence[str], *parts: Mapping) -> dict:
    """`base_config` with each of `parts` merged in, in order, then the `--set` overrides."""
    from spade_rllib.config.run_config import apply_overrides

    raw = base_config(env_id, seed)
    for part in parts:
        raw = deep_merge(raw, part)
    return apply_overrides(raw, overrides)


def ladder_of(env_id: str) -> dict[str, str]:
    """The env's default bots (`default_bot_names`), weakest to strongest as registered: metric name ->
    runner opponent id."""
    return {name: f"bot:{name}" for name in default_bot_names(env_id)}


def heldout_paths(env_id: str, max_size: int = 0) -> list[str]:
    """The env's shipped held-out maps with at most `max_size` rows and columns (0 = every map)."""
    from spade_rllib.curriculum.heldout_maps import load_heldout_specs

    specs = load_heldout_specs([heldout_dir(env_id)])
    rows = {name: spec.ascii.splitlines() for name, spec in specs.items()}
    fits = [name for name, r in rows.items() if not max_size or max(len(r), max(map(len, r))) <= max_size]
    if not fits:
        raise SystemExit(f"--max-map-size {max_size}: no held-out map of {env_id} is that small")
    return [str(heldout_dir(env_id) / f"{name}.txt") for name in sorted(fits)]


def train(raw: dict, minutes: float, env_steps: Optional[int], label: str,
          keep: Sequence[str] = (), on_built: Optional[Callable[[Any], None]] = None,
          on_iteration: Optional[Callable[[Any, int], None]] = None,
          on_done: Optional[Callable[[Any], Any]] = None) -> dict:
    """Train one `SpadePPO` for `minutes` of wall clock (and at most `env_steps`), from the first
    iteration; the iteration running when the budget ends completes. `on_iteration(algo, env_steps)` runs
    after every iteration. Returns the algorithm config, main's final weights, the per-iteration values of
    the `keep` metric keys (and `env_steps`, the lifetime env steps after each iteration) and the totals;
    `on_done(algo)` runs after the last iteration, before the algorithm stops, and its value is `done`."""
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(raw)
    algo_config = build_algo_config(cfg)
    algo = algo_config.build_algo()
    history: dict[str, list] = {k: [] for k in keep} | {"env_steps": []}
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
            history["env_steps"].append(steps)
            for k in keep:
                v = flat.get(k, math.nan)
                history[k].append(float(v) if isinstance(v, (int, float)) else math.nan)
            if on_iteration is not None:
                on_iteration(algo, steps)
        print(f"  [{label}] {int(result.get('training_iteration', 0))} iterations, {steps:,d} env steps, "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        weights = algo.main_weights()  # the learner's copy of main, as numpy
        train_s = time.perf_counter() - t0
        done = on_done(algo) if on_done is not None else None
        trial_dir = algo.trial_dir()  # where components write their end-of-run files (league.csv)
    finally:
        algo.stop()
    return {"algo_config": algo_config, "weights": weights, "history": history, "train_s": train_s,
            "iterations": int(result.get("training_iteration", 0)), "env_steps": steps, "cfg": cfg,
            "trial_dir": trial_dir, "done": done}


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
    return ladder_scores_per_map(algo_config, weights, env_id, games, greedy, max_size)[0]


def ladder_scores_per_map(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int, greedy: bool = False,
                          max_size: int = 0) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(`ladder_scores`, {bot: {held-out map: score}}) from the same games."""
    from spade_rllib.rllib.periodic_heldout_eval import play_heldout

    ladder = ladder_of(env_id)
    paths = heldout_paths(env_id, max_size)
    # play_heldout's games are per map, seats alternating: 2 * games = `games` from each seat
    out = play_heldout(algo_config, weights, paths, games=2 * games, greedy=greedy, opponents=ladder)
    maps = sorted({name[len("heldout/"):].split("/", 1)[0] for name in out
                   if name.count("/") == 3 and name.split("/")[2] in ladder})
    per_map = {bot: {m: float(out[f"heldout/{m}/{bot}/score"]) for m in maps} for bot in ladder}
    return {name: float(out[f"heldout/{name}/score"]) for name in ladder}, per_map


def navigation_solve_rate(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int, seed: int = 0,
                          greedy: bool = False, max_size: int = 0) -> float:
    """Share of held-out games main wins alone: the other team idles (NOOP) every step, so winning is
    pure navigation (MazeRace: reach the flag; CTF: capture the idle team's flag). `games` per map and
    seat; a timeout is a failure."""
    per_map = navigation_per_map(algo_config, weights, env_id, games, seed, greedy, max_size)
    return float(np.mean(list(per_map.values()))) if per_map else 0.0


def navigation_per_map(algo_config: Any, weights: Mapping[str, Any], env_id: str, games: int, seed: int = 0,
                       greedy: bool = False, max_size: int = 0) -> dict[str, float]:
    """{held-out map: `navigation_solve_rate` on it}; every map gets the same number of games."""
    from spade_rllib.rllib.final_heldout_eval import still_team_results

    runner = make_runner(algo_config, weights)
    try:
        levels = heldout_reset_options(heldout_paths(env_id, max_size), agents_per_team=len(runner.games[0].teams[0]))
        results = still_team_results(runner, levels, games, greedy, np.random.default_rng(seed))
    finally:
        runner.stop()
    per_level = len(results) // max(1, len(levels))  # results come level by level, `games` per seat
    return {opt["heldout_level"]: results[i * per_level:(i + 1) * per_level].count("win") / max(1, per_level)
            for i, opt in enumerate(levels)}


def head_to_head(algo_config: Any, weights_a: Mapping[str, Any], weights_b: Mapping[str, Any], env_id: str,
                 games: int, greedy: bool = False, max_size: int = 0, heldout: bool = True) -> list[float]:
    """Scores of A (1 win, 0.5 draw, 0 loss) against B, `games` per seat on every held-out map (level games),
    or from the evaluation start positions (`heldout=False`: a board game's `evaluation.random_opening_plies`);
    both sample their actions unless `greedy`."""
    from spade_rllib.rllib.frozen_opponent import FROZEN_SLOT
    from spade_rllib.rllib.plan import DriverUpdate

    runner = make_runner(algo_config, weights_a)
    try:
        runner.apply_driver_update(DriverUpdate(slot_weights={FROZEN_SLOT: {"member": "b", "weights": dict(weights_b)}}))
        levels = heldout_reset_options(heldout_paths(env_id, max_size), agents_per_team=len(runner.games[0].teams[0])) \
            if heldout else None
        records = runner.evaluate_main({"opponents": [FROZEN_SLOT], "games": 2 * games, "greedy": greedy, "levels": levels})
    finally:
        runner.stop()
    return [float(r.learner_score) for r in records if r.learner_score is not None]


STILL = "still"
"""The opponent that never moves: a score against it is navigation (1 = always captures)."""


def heldout_scores(run: dict, env_id: str, games: int, seed: int, max_size: int = 0,
                   opponents: Optional[Sequence[str]] = None) -> dict[str, float]:
    """Main's held-out score (win + draw/2) per opponent on the held-out maps up to `max_size`, `games` per
    map, seat and opponent, actions sampled: `still` and every ladder bot (`bot:<name>` -> `<name>`), or only
    the names in `opponents`."""
    from spade_rllib.rllib.final_heldout_eval import PREFIX, final_heldout_evaluation

    played = [(STILL, STILL), *ladder_of(env_id).items()]
    if opponents is not None:
        played = [(name, opp) for name, opp in played if name in opponents]
    out = final_heldout_evaluation(run["algo_config"], run["weights"], heldout_paths(env_id), max_size,
                                   [opp for _, opp in played], games, seed=seed)
    scores = {}
    for name, opp in played:
        w, d = out.get(f"{PREFIX}/{opp}/win_rate", math.nan), out.get(f"{PREFIX}/{opp}/draw_rate", 0.0)
        scores[name] = float(w) + 0.5 * float(d)
    return scores


def ladder_and_navigation(run: dict, env_id: str, games: int, seed: int, greedy: bool, max_size: int = 0) -> None:
    """Put main's held-out `ladder` scores and its `navigation` solve rate into `run` (from `train`), and both
    per held-out map in `per_map` ({bot or "navigation": {map: score}})."""
    run["ladder"], per_map = ladder_scores_per_map(run["algo_config"], run["weights"], env_id, games, greedy, max_size)
    nav = navigation_per_map(run["algo_config"], run["weights"], env_id, games, seed, greedy, max_size)
    run["navigation"] = float(np.mean(list(nav.values()))) if nav else 0.0
    run["per_map"] = {**per_map, "navigation": nav}


TARGET = "target"
"""The frozen policy's member name in a learner's training games against it (`train/target/...`)."""


def train_against(target_weights: Mapping[str, Any], raw: dict, seed: int, minutes: float, env_steps: Optional[int],
                  label: str, keep: Sequence[str] = (), start_from_target: bool = False) -> dict:
    """`train` a learner configured by `raw` with every game against the frozen `target_weights`
    (`FrozenOpponentComponent`, member `TARGET`): a fresh network, or with `start_from_target` a copy of the
    target's (it starts level with it and learns only what beats it)."""
    from spade_rllib.rllib.frozen_opponent import FrozenOpponentComponent

    def install(algo):
        if start_from_target:
            algo.load_main_weights(dict(target_weights))  # copied into the learner's parameters
        algo.components.append(FrozenOpponentComponent(target_weights, member=TARGET, seed=seed))
        algo.broadcast(full=True)  # send the plan and the frozen weights before the first sample

    return train(raw, minutes, env_steps, label, keep=keep, on_built=install)


def exploitability(target_weights: Mapping[str, Any], exploiter_raw: dict, env_id: str, seed: int, minutes: float,
                   env_steps: Optional[int], games: int, greedy: bool = False, max_size: int = 0) -> tuple[float, float]:
    """(score of a fresh learner, configured by `exploiter_raw`, trained `minutes` with every game against
    the frozen `target_weights`, then played against them on the held-out maps; its training games
    against the target in its last iteration, the proof that it trained against it)."""
    games_key = f"train/{TARGET}/games"
    exploiter = train_against(target_weights, exploiter_raw, seed, minutes, env_steps, f"exploiter seed {seed}",
                              keep=[games_key])
    scores = head_to_head(exploiter["algo_config"], exploiter["weights"], target_weights, env_id, games, greedy, max_size)
    return (float(np.mean(scores)) if scores else math.nan), exploiter["history"][games_key][-1]


def round_robin(mains: Sequence[tuple[str, dict]], env_id: str, games: int, greedy: bool = False,
                max_size: int = 0) -> dict:
    """Every pair of final mains on the held-out maps; Bradley-Terry Elo with bootstrap intervals:
    {main: {elo, low, high}} plus "_games", the number of games."""
    from spade_rllib.core.ratings import bootstrap_bradley_terry_elo

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


def paired_by_seed(per_seed: Mapping[str, Mapping[int, Mapping[str, float]]], baseline: str,
                   pairs: Optional[Mapping[str, tuple[str, str]]] = None) -> dict[str, dict]:
    """Per arm (the baseline and arms with no seed in common left out), `over_seeds` of the arm's measure minus the
    baseline's, seed by seed over the seeds both ran. ``pairs`` names each difference as (arm's key, baseline's key);
    by default every key of the arm against the same key of the baseline."""
    base = per_seed.get(baseline, {})
    paired: dict[str, dict] = {}
    for arm, seeds in per_seed.items():
        shared = sorted(set(seeds) & set(base))
        if arm == baseline or not shared:
            continue
        wanted = pairs if pairs is not None else {k: (k, k) for k in seeds[shared[0]]}
        paired[arm] = {name: over_seeds([seeds[s][a] - base[s][b] for s in shared]) for name, (a, b) in wanted.items()}
    return paired


def separated(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two intervals from `over_seeds` do not overlap and a lies above b."""
    if a.get("low") is None or b.get("high") is None:
        return False
    return a["low"] > b["high"]


def pyplot(path: Path) -> Any:
    """matplotlib.pyplot on the Agg backend, or None (and a note that `path` is not written) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: {path.name} not written", file=sys.stderr)
        return None
    return plt


def save_figure(plt: Any, fig: Any, path: Path) -> Path:
    """Lay out, write (100 dpi, the folder made) and close a figure from `pyplot`; returns ``path``."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_curves(curves: Mapping[str, Sequence[Sequence[float]]], ylabel: str, path: Path, title: str) -> Optional[Path]:
    """One line per seed, one colour per setup; None (and a note) when matplotlib is missing."""
    plt = pyplot(path)
    if plt is None:
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
    return save_figure(plt, fig, path)


def ladder_navigation_summary(runs: Sequence[dict], ladder: Sequence[str]) -> dict:
    """Per setup: the `over_seeds` statistics of each ladder score and of navigation, iterations, env steps, and
    `per_map` ({bot or "navigation": {map: over_seeds}}) from the runs that recorded it (units cached before
    per-map scores existed have none)."""
    with_maps = [r["per_map"] for r in runs if r.get("per_map")]
    per_map = {key: {m: over_seeds([pm[key][m] for pm in with_maps]) for m in with_maps[0][key]}
               for key in with_maps[0]} if with_maps else {}
    return {"ladder": {bot: over_seeds([r["ladder"][bot] for r in runs]) for bot in ladder},
            "navigation": over_seeds([r["navigation"] for r in runs]), "per_map": per_map,
            "iterations": [r["iterations"] for r in runs], "env_steps": [r["env_steps"] for r in runs]}


def fmt_interval(stat: Mapping[str, Any]) -> str:
    """'0.512 [0.401, 0.623]' (mean [low, high]); 'n/a' without a mean."""
    if stat["mean"] is None:
        return "n/a"
    return f"{stat['mean']:.3f}" + ("" if stat["low"] is None else f" [{stat['low']:.3f}, {stat['high']:.3f}]")


def ablation_parser(doc: str, *, kind: str, names: Sequence[str], seeds: int, minutes: float, games: Optional[int],
                    games_help: str, out_dir: str, out_help: str, default_names: Optional[Sequence[str]] = None,
                    exploit_minutes: Optional[float] = None, env_id: bool = True, greedy: bool = True,
                    env_steps_help: str = "also stop each run at this many env steps",
                    bench: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line every ablation bench shares: --seeds, --minutes, [--exploit-minutes], [--env-id],
    --<kind> (a comma-separated subset of `names`), --games, [--greedy], --env-steps, --set, --out-dir, --cpus;
    with `bench` (its name, for the manifest) also the unit cache's --only-seeds and --max-units."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.set_defaults(bench=bench, only_seeds=None, max_units=None)
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
    if bench:
        ap.add_argument("--only-seeds", default=None, metavar="K,K,...",
                        help="train only these seeds now (units in --out-dir are reused; the summary covers --seeds)")
        ap.add_argument("--max-units", type=int, default=None, metavar="K",
                        help="stop after K newly trained units (0: only summarize what --out-dir holds)")
    return ap


def parse_ablation_args(ap: argparse.ArgumentParser, argv: Optional[Sequence[str]], kind: str,
                        names: Sequence[str], floors: Optional[Mapping[str, Any]] = None
                        ) -> tuple[argparse.Namespace, list[str], list[str]]:
    """(args, the chosen setups or arms, the `--set` overrides); one argparse error for a bad choice or count,
    then the shared check of `bench.common.check_bench_args` (`--cpus`, `--out-dir` writable and its unit files;
    `floors` as there), all before Ray."""
    args = ap.parse_args(argv)
    chosen = [s.strip() for s in getattr(args, kind).split(",") if s.strip()]
    bad = [s for s in chosen if s not in names]
    exploit = getattr(args, "exploit_minutes", 1.0)
    games_ok = args.games is None or args.games >= 1  # None: the bench fills in its own default
    if bad or not chosen or args.seeds < 1 or not args.minutes > 0 or not exploit > 0 or not games_ok \
            or args.max_map_size < 0 or not math.isfinite(args.minutes) or not math.isfinite(exploit):
        ap.error(f"--{kind} takes {', '.join(names)} (got {bad or chosen}); --seeds >= 1; minutes > 0 and finite; "
                 "--games >= 1; --max-map-size >= 0")
    for item in args.overrides:
        if "=" not in item:
            ap.error(f"--set {item!r}: expected KEY=VALUE")
    if args.only_seeds is not None:
        try:
            args.only_seeds = sorted({int(k) for k in args.only_seeds.split(",") if k.strip()})
        except ValueError:
            ap.error(f"--only-seeds {args.only_seeds!r}: expected comma-separated seeds, e.g. 0,1")
        bad_seeds = [k for k in args.only_seeds if not 0 <= k < args.seeds]
        if bad_seeds or not args.only_seeds:
            ap.error(f"--only-seeds {bad_seeds or 'empty'}: the seeds are 0..{args.seeds - 1} (--seeds {args.seeds})")
    if args.max_units is not None and args.max_units < 0:
        ap.error(f"--max-units {args.max_units}: expected >= 0")
    if getattr(args, "env_steps", None) is not None and args.env_steps < 1:  # None: the bench's own budget
        ap.error(f"--env-steps {args.env_steps}: expected >= 1")
    from bench.common import check_bench_args

    check_bench_args(args, floors=floors or {})
    return args, chosen, list(args.overrides)


def ladder_runs(args: argparse.Namespace, setups: Sequence[str], make_config: Callable[[str, str, int], dict],
                keep: Sequence[str] = ()) -> dict[str, list[dict]]:
    """setup -> one run record per seed present, each with main's `ladder` and `navigation`
    (`ladder_and_navigation`), `history` (the `keep` keys), `iterations`, `env_steps`, `train_s`, `seed`; all
    in one local Ray; `make_config(env_id, setup, seed)` is the run's raw config. With `args.bench` set
    (`ablation_parser(bench=...)`) units come from and go to the unit cache in `args.out_dir`."""
    def run_unit(setup: str, seed: int) -> tuple[dict, Mapping[str, Any]]:
        run = train(make_config(args.env_id, setup, seed), args.minutes, args.env_steps, f"{setup} seed {seed}", keep=keep)
        ladder_and_navigation(run, args.env_id, args.games, seed, args.greedy, args.max_map_size)
        record = {k: run[k] for k in ("ladder", "navigation", "per_map", "history", "iterations", "env_steps", "train_s")}
        return record, run["weights"]

    cache = UnitCache(args.out_dir, unit_manifest(args, args.env_id)) if getattr(args, "bench", None) else None
    if cache is not None:
        cache.check()
    with LazyRay(args.cpus) as ray:
        return unit_runs(args, setups, run_unit, cache, ray)


def each_run(names: Sequence[str], seeds: int) -> Iterator[tuple[int, str]]:
    """(seed, setup) pairs, seeds outermost: a bench cut short still compares every setup."""
    for seed in range(seeds):
        for name in names:
            yield seed, name


MANIFEST = "manifest.json"
UNITS = "units"


def unit_manifest(args: argparse.Namespace, env_id: str, config_text: Optional[str] = None) -> dict:
    """The settings cached units must share to be comparable: bench, env id, budgets, evaluation settings,
    `--set` overrides, the config file's sha256 (when the bench reads one) and the git commit (a warning only).
    Not in it: --seeds, the setups, --cpus, --out-dir, --only-seeds, --max-units (they choose units, not
    what a unit means)."""
    from spade_rllib.artifacts.provenance import git_info

    m: dict[str, Any] = {"bench": args.bench, "env_id": env_id, "minutes": args.minutes, "env_steps": args.env_steps}
    for key in ("exploit_minutes", "exploit_env_steps"):
        if hasattr(args, key):
            m[key] = getattr(args, key)
    m.update({"games": args.games, "max_map_size": args.max_map_size, "greedy": bool(getattr(args, "greedy", False)),
              "overrides": list(args.overrides)})
    if config_text is not None:
        m["config_sha256"] = config_sha256(config_text)
    m["git_commit"] = git_info(ROOT)["commit"]
    return json.loads(json.dumps(m))  # as it reads back from the file


def config_sha256(config_text: str) -> str:
    """sha256 of the run config a config file resolves to (every key with its default, in the current spelling,
    sorted): comments, key order and renamed keys spelled the old way leave it unchanged, a changed value does not."""
    from spade_rllib.config.run_config import parse_config, read_yaml

    canonical = json.dumps(parse_config(read_yaml(config_text)).to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _numpy_tree(tree: Any) -> Any:
    return {k: _numpy_tree(v) for k, v in tree.items()} if isinstance(tree, Mapping) else tree.numpy()


def _torch_tree(tree: Any) -> Any:
    import torch

    return {k: _torch_tree(v) for k, v in tree.items()} if isinstance(tree, Mapping) else \
        torch.from_numpy(np.ascontiguousarray(tree))


class UnitCache:
    """The finished units of one bench in `out_dir`: `units/<name>_seed<k>.json` (written last, so its
    presence means the unit is whole) and `units/<name>_seed<k>.pt` (unless `keep_weights` is False), and the
    `manifest` they were made with."""

    def __init__(self, out_dir: Path, manifest: Mapping[str, Any], keep_weights: bool = True):
        self.out_dir = Path(out_dir)
        self.manifest = dict(manifest)
        self.keep_weights = keep_weights
        """False: a unit is its JSON record alone (a bench that never reloads main's weights; units small
        enough to commit)."""

    @property
    def units_dir(self) -> Path:
        return self.out_dir / UNITS

    def unit_path(self, name: str, seed: int, suffix: str = ".json") -> Path:
        return self.units_dir / f"{name}_seed{seed}{suffix}"

    def check(self) -> None:
        """Exit 2 with one line naming the first setting that differs from `out_dir`'s manifest (cached and new
        value); a WARNING line on stderr when only the git commit differs. Nothing is written."""
        path = self.out_dir / MANIFEST
        if not path.is_file():
            return
        try:
            cached = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(_fail(f"--out-dir {self.out_dir}: unreadable {MANIFEST} ({e}); pick another --out-dir")) from e
        for key in [*self.manifest, *(k for k in cached if k not in self.manifest)]:
            if key != "git_commit" and cached.get(key) != self.manifest.get(key):
                raise SystemExit(_fail(
                    f"--out-dir {self.out_dir} holds units made with {key}={json.dumps(cached.get(key))}, this run has "
                    f"{key}={json.dumps(self.manifest.get(key))}: rerun with the cached value or pick another --out-dir"))
        if cached.get("git_commit") != self.manifest.get("git_commit"):
            print(f"WARNING: cached units in {self.out_dir} come from commit {cached.get('git_commit')}, this is "
                  f"{self.manifest.get('git_commit')}; check that the changes between them do not move the numbers",
                  file=sys.stderr, flush=True)

    def load(self, name: str, seed: int) -> Optional[dict]:
        """The unit's record, or None when it is not cached (both files are needed)."""
        path = self.unit_path(name, seed)
        whole = path.is_file() and (not self.keep_weights or self.unit_path(name, seed, ".pt").is_file())
        from bench.common import read_json  # a damaged unit: one line naming it, not a traceback

        return read_json(path) if whole else None

    def weights(self, name: str, seed: int) -> dict:
        """Main's final weights of a cached unit (numpy state dict)."""
        import torch

        return _numpy_tree(torch.load(self.unit_path(name, seed, ".pt"), weights_only=True))

    def save(self, name: str, seed: int, record: Mapping[str, Any], weights: Mapping[str, Any]) -> dict:
        """Write one finished unit (the manifest too, if this is the first); returns the record as stored."""
        import torch

        self.units_dir.mkdir(parents=True, exist_ok=True)
        if not (self.out_dir / MANIFEST).is_file():
            write_text(self.out_dir / MANIFEST, json.dumps(self.manifest, indent=1))
        if self.keep_weights:
            with atomic_path(self.unit_path(name, seed, ".pt")) as tmp:
                torch.save(_torch_tree(weights), tmp)
        stored = {"name": name, "seed": int(seed), "finished": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                  **dict(record)}
        stored = json.loads(json.dumps(stored, default=float))
        write_text(self.unit_path(name, seed), json.dumps(stored))
        return stored


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return 2


class LazyRay(contextlib.ExitStack):
    """A local Ray (`local_ray`; the cluster at `address` when given) started by the first `ensure()` and
    stopped when the block ends: a bench whose units are all cached starts none."""

    def __init__(self, cpus: int, address: Optional[str] = None):
        super().__init__()
        self.cpus = cpus
        self.address = address
        self.started = False

    def ensure(self) -> None:
        if not self.started:
            self.enter_context(local_ray(self.cpus, quiet=True, address=self.address))
            self.started = True


def unit_runs(args: argparse.Namespace, names: Sequence[str], run_unit: Callable[[str, int], tuple[dict, Mapping]],
              cache: Optional[UnitCache], ray: LazyRay) -> dict[str, list[dict]]:
    """name -> the records of its seeds (0..`args.seeds`-1, ascending) that are cached or trained now.
    `run_unit(name, seed)` trains and evaluates one unit: (its JSON-able record, main's final weights). Without a
    cache every unit trains; with one, cached units are loaded, and only seeds in `args.only_seeds` (all when
    None) train, at most `args.max_units` of them."""
    runs: dict[str, list[dict]] = {n: [] for n in names}
    only, budget, new = getattr(args, "only_seeds", None), getattr(args, "max_units", None), 0
    for seed, name in each_run(names, args.seeds):
        record = cache.load(name, seed) if cache is not None else None
        if record is not None:
            print(f"cached: {name} seed {seed} (finished {record.get('finished', '?')})", file=sys.stderr, flush=True)
        elif (only is None or seed in only) and (budget is None or new < budget):
            ray.ensure()
            record, weights = run_unit(name, seed)
            record = cache.save(name, seed, record, weights) if cache is not None else {"seed": seed, **record}
            new += 1
        else:
            continue
        runs[name].append(record)
    return runs


def unit_progress(args: argparse.Namespace, names: Sequence[str], runs: Mapping[str, Sequence[dict]],
                  argv: Optional[Sequence[str]] = None) -> dict:
    """{"complete", "units_done", "units_missing"} over `args.seeds` x `names`; when units are missing, prints
    them and the command that continues the run (this one without --only-seeds / --max-units)."""
    have = {(n, int(r["seed"])) for n, rs in runs.items() for r in rs}
    done = [f"{n}_seed{k}" for k, n in each_run(names, args.seeds) if (n, k) in have]
    missing = [f"{n}_seed{k}" for k, n in each_run(names, args.seeds) if (n, k) not in have]
    if missing:
        words = list(sys.argv[1:] if argv is None else argv)
        keep, skip = [], False
        for w in words:
            if skip:
                skip = False
            elif w in ("--only-seeds", "--max-units"):
                skip = True
            elif not w.startswith(("--only-seeds=", "--max-units=")):
                keep.append(w)
        if not any(w == "--out-dir" or w.startswith("--out-dir=") for w in keep):
            keep += ["--out-dir", str(args.out_dir)]
        print(f"incomplete: {len(done)} of {len(done) + len(missing)} units done; missing: {', '.join(missing)} "
              "(the command below trains them all; add --only-seeds or --max-units to go on in chunks)")
        where = next(iter(sorted((ROOT / "bench").rglob(f"{args.bench}.py"))), ROOT / "bench" / f"{args.bench}.py")
        print(f"continue with: python {where.relative_to(ROOT).as_posix()} {shlex.join(keep)}")
    return {"complete": not missing, "units_done": done, "units_missing": missing}


def portable(raw: dict, out_dir: Path) -> dict:
    """The run config as a unit records it: the storage path relative to the out-dir (units can be committed
    and moved; no machine path in them)."""
    raw = copy.deepcopy(raw)
    path = Path(raw["experiment"]["storage_path"])
    raw["experiment"]["storage_path"] = str(path.relative_to(out_dir) if path.is_relative_to(out_dir) else path.name)
    return raw
