"""Training speed of spade_rllib vs stock RLlib (defaults and configured like ours), with same-run ceilings.

    python bench/speed/train_speed.py [--config tune_configs/quickstart.yaml] [--env-id CaptureTheFlag-v0]
                                [--difficulty 6] [--set key=value ...] [--seconds 20] [--skip-stock] [--skip-league]
                                [--scaling runners,league,levels,2v2]

Every figure is measured in this one process after a warm-up, one algorithm at a time, so all rows
share the machine's load at nearly the same moment. Rows (env steps/s, "env step" = one `step()` of
one env copy with every live agent acting):

  train_sps                    full `SpadePPO.train()` iterations with the config (quickstart: mirror
                               self-play + 20% vs random, 1 env runner x 64 envs, sample-ahead);
  sample_sps                   the same algorithm's runners sampling train batches, no learning;
  lstm_train_sps               the same config with a recurrent main (`agent.model.memory: lstm`, LSTM
                               `--lstm-cell`, max_seq_len 32), right after train_sps (same load);
                               lstm_over_mlp = lstm_train_sps / train_sps, target >= 0.5
                               (lstm_target_met); lstm_learner_only_sps its learner alone;
  lstm_bf16_train_sps          the same with `agent.model.train_bf16` (the learner's forward and
                               backward under torch.autocast bfloat16), lstm_bf16_learner_only_sps;
  sync_train_sps               the same with `training.sample_ahead=false` (exact synchronous PPO);
  league_train_sps             + league (a snapshot every 2 iterations, latest + PFSP);
  league_curriculum_train_sps  + league (as above) AND the threshold curriculum, its difficulty kept
                               inside the level-size band of --difficulty (6: 11x11), so the row
                               differs from train_sps only by the two components;
  league_curriculum_fast_train_sps  the same in the throughput layout for 2 CPUs: 2 env runners x
                               128 envs (FAST_LAYOUT); league_curriculum_target_met says whether
                               either league + curriculum row reached 20,000;
  stock_equal_train_sps        stock RLlib configured like ours: `ParallelPettingZooEnv` over the
                               same game and levels, the stock `MultiAgentEnvRunner` vectorizing the
                               same number of env copies (`num_envs_per_env_runner`, gymnasium
                               "sync" mode, the only one RLlib 2.60 has for multi-agent envs), same
                               env runners, train batch, minibatch, epochs, lr/gamma/lambda/clip/
                               entropy, MLP widths, activation and trunk sharing; every agent mapped
                               to one policy (pure mirror: stock has no in-runner random opponent),
                               synchronous (stock has no sample-ahead: compare with sync_train_sps);
  stock_default_train_sps      stock RLlib with PPO's defaults (2 env runners x 1 env, batch 4000,
                               minibatch 128, 30 epochs), same game, MLP widths;
and the ceilings, measured on one core each in this process:
  env_only_sps                 the game alone: `Game.step` (the runner's adapter: flat float32 obs)
                               over the same number of env copies with random actions, resets drawn
                               like the runner's (level pool or fresh levels);
  inference_only_sps           main's forward pass + action sampling (as the runner does it) at the
                               runner's batch (num_envs x agents rows), as env steps/s (every seat
                               acting through a network, as with league opponents);
  learner_only_sps             `learner_group.update` (GAE connector + epochs x minibatches) on one
                               sampled train batch, as env steps of that batch per second;
  runner_ceiling_sps           1 / (1/env_only + 1/inference_only): one runner core doing nothing
                               but stepping envs and acting;
  ceiling_sps                  with sample-ahead and >= 1 remote runner (runner and learner on
                               separate cores): min(runner_ceiling x runners (at most
                               CPUs - 1 of them), learner_only);
                               otherwise (one core does both in turn) 1 / (1/runner + 1/learner);
  ceiling_ratio                train_sps / ceiling_sps: the share of the reachable rate we get, which
                               stays comparable when other jobs load the machine.
Defaults: issue 17's target, the flagship CaptureTheFlag-v0 1v1 on 11x11 levels (`--difficulty 6`;
`--difficulty 0` keeps the config's own). `--env-id MazeRace-v0` gives the earlier MazeRace figures.
`--variant KEY=VALUE` adds a row with one more override right after train_sps (to try a setting,
e.g. `training.torch_threads=2`, against the same moment's load).
After every row a 2-second env-only probe (`env_only_probe_after`) shows whether other jobs' load
moved during the run (then compare rows only with their own probes).
`--shipped-configs [names]`: instead of all of the above, the shipped configs as users run them (their own
curriculum, league, evaluation, checkpoints), each with its per-phase seconds and its ratio to a fixed-layout row
and to the learner ceiling measured in the same run (bench/speed/shipped_speed.py has the details).
Scaling rows (`--scaling`): env runners 0/1/2; league of 1/20/100 snapshots; difficulty 4/6/8/10
(levels 9x9/11x11/13x13/15x15, train and env-only); 2v2. The last line is one JSON object.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.measure import (  # noqa: E402
    FAST_LAYOUT,
    LEAGUE_ON,
    MLP_MODEL,
    _r,
    curriculum_on,
    learner_only,
    measure_group_sample,
    measure_train,
    set_learner_threads,
    stock,
)

TARGET_SPS = 20_000  # issue 17: league + curriculum, 1v1, 2 CPUs, no other load
LSTM_TARGET_RATIO = 0.5  # LSTM main trains at >= half the MLP's env steps/s (same config, same run)
SCALING = ("runners", "league", "levels", "2v2")


# ---------------------------------------------------------------------------- our rows
def ours(cfg, seconds: float, sample: bool = True, learner: bool = False, prefill_league: int = 0) -> dict:
    from spade_rllib.rllib.algo_config import build_algo_config

    set_learner_threads(cfg)
    algo = build_algo_config(cfg).build_algo()
    try:
        if prefill_league:
            fill_league(algo, prefill_league)
        train_sps, detail = measure_train(algo, seconds)
        sample_sps = measure_group_sample(algo, seconds) if sample else float("nan")
        learner_sps = learner_only(algo, cfg, max(3.0, seconds / 4)) if learner else float("nan")
    finally:
        algo.stop()
    detail["num_env_runners"] = cfg.training.num_env_runners
    return {"sample_sps": sample_sps, "train_sps": train_sps, "learner_only_sps": learner_sps, "detail": detail}


def fill_league(algo, n: int, seed: int = 0) -> None:
    """Put n snapshots (main's weights, slightly perturbed: distinct arrays) into the league and
    broadcast its plan (as bench/speed/league_memory.py does)."""
    (league,) = [c for c in algo.components if c.name == "league"]
    rng = np.random.default_rng(seed)
    base = algo.main_weights()
    for _ in range(n):
        league.league.add_snapshot({k: (v + rng.normal(0.0, 1e-3, v.shape)).astype(v.dtype) for k, v in base.items()},
                                   iteration=0)
    league.set_plan(league.league.plan(0))
    algo.broadcast(full=False)


# ---------------------------------------------------------------------------- ceilings (this process)
def _make_games(cfg, n: int) -> tuple[list, list | None]:
    """n copies of the runner's `Game` adapter, plus the MazeRace level pool the runner would draw from."""
    from spade_rllib.rllib.env_description import env_kwargs_for
    from spade_rllib.games.adapter import make_game_factory

    kwargs = env_kwargs_for(cfg)
    make = make_game_factory(cfg.env.id, kwargs)
    games = [make() for _ in range(n)]
    pool = None
    if games[0].is_level_game and cfg.env.level_pool and kwargs.get("level") is None and not cfg.curriculum.enabled:
        from spade_rllib.envs import knobs_for_difficulty
        from spade_rllib.games import game

        generate_level = game(cfg.env.id).level_generator

        knobs = knobs_for_difficulty(float(kwargs.get("difficulty", 5.0)), family=kwargs.get("family"),
                                     agents_per_team=int(kwargs.get("agents_per_team") or 1))
        seeds = np.random.default_rng(0).integers(2**31 - 1, size=cfg.env.level_pool)
        pool = [generate_level(knobs, int(s)) for s in seeds]
    return games, pool


def env_only(cfg, seconds: float, seed: int = 0) -> tuple[float, np.ndarray]:
    """Env steps/s of `Game.step` over num_envs copies with random actions (one core), and a batch
    of real observations (one per acting agent and env) for the inference ceiling."""
    games, pool = _make_games(cfg, cfg.training.num_envs_per_runner)
    rng = np.random.default_rng(seed)
    n_act = games[0].num_actions

    def reset(i: int, g, first: bool = False):
        opts = {"level": pool[int(rng.integers(len(pool)))]} if pool else None
        return g.reset(seed=seed + i if first else None, options=opts)

    pending = [reset(i, g, True) for i, g in enumerate(games)]
    obs_batch = np.stack([o for p in pending for o in p.values()])
    masked = bool(games[0].mask_size)
    acts = rng.integers(0, n_act, size=(4096, 8)).tolist()  # drawn up front: the RNG is not measured
    k = steps = 0
    t0 = time.perf_counter()
    while True:
        for i, g in enumerate(games):
            row = acts[k % 4096]
            k += 1
            if masked:
                a = {ag: int(rng.choice(g.legal_actions(o))) for ag, o in pending[i].items()}
            else:
                a = {ag: row[j] for j, ag in enumerate(pending[i])}
            res = g.step(a)
            pending[i] = reset(i, g) if res.done else res.obs
        steps += len(games)
        if time.perf_counter() - t0 >= seconds:
            break
    for g in games:
        close = getattr(g.raw_env, "close", None)
        if close:
            close()
    agents = max(1, obs_batch.shape[0] // len(games))
    full = np.resize(obs_batch, (len(games) * agents, obs_batch.shape[1])).astype(np.float32)
    return steps / (time.perf_counter() - t0), full


def inference_only(cfg, obs: np.ndarray, seconds: float, agents_per_step: int) -> tuple[float, float]:
    """(rows/s, env steps/s) of main's forward pass + action sampling at the runner's batch, one thread."""
    import torch

    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import sample_actions

    spec = build_algo_config(cfg).get_multi_rl_module_spec(inference_only=True)
    module = spec.rl_module_specs["main"].build()
    module.eval()
    rng = np.random.default_rng(0)
    prev = torch.get_num_threads()
    torch.set_num_threads(1)  # runners act on one thread
    x = torch.from_numpy(obs)

    def act():  # the runner's acting path
        with torch.no_grad():
            logits = module.fast_logits(x).numpy()
        return sample_actions(logits, rng)

    try:
        for _ in range(20):
            act()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(50):
                act()
            n += 50
        dt = time.perf_counter() - t0
    finally:
        torch.set_num_threads(prev)
    rows = n * obs.shape[0] / dt
    return rows, rows / agents_per_step


def _registered_ids() -> list:
    from spade_rllib.games import spade_env_ids

    return list(spade_env_ids())


def ceiling(runner_sps: float, learner_sps: float, cfg) -> float:
    t = cfg.training
    if t.sample_ahead and t.num_env_runners >= 1:
        # Overlapped on different cores; runners beyond the cores the learner leaves add nothing.
        runner_cores = max(1, min(t.num_env_runners, (cfg.resources.num_cpus or os.cpu_count() or 2) - 1))
        return min(runner_sps * runner_cores, learner_sps)
    return 1.0 / (1.0 / runner_sps + 1.0 / learner_sps)  # one core does both in turn


# ---------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "tune_configs" / "quickstart.yaml"))
    ap.add_argument("--env-id", default="CaptureTheFlag-v0", help="game (env.id)")
    ap.add_argument("--difficulty", type=float, default=6.0,
                    help="env.difficulty of every row (6: 11x11 levels, issue 17's target); 0 = the config's")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--seconds", type=float, default=None,
                    help="measuring time per figure (after warm-up); default 20, with --shipped-configs 45 of training per config")
    ap.add_argument("--skip-stock", "--skip-baseline", dest="skip_stock", action="store_true")
    ap.add_argument("--skip-league", action="store_true", help="skip the league and league+curriculum rows")
    ap.add_argument("--skip-sync", action="store_true", help="skip the sample_ahead=false row")
    ap.add_argument("--skip-lstm", action="store_true", help="skip the LSTM rows")
    ap.add_argument("--lstm-cell", type=int, default=128, help="LSTM size of the LSTM rows")
    ap.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra row: the config with this override (e.g. training.torch_threads=2), right after train_sps")
    ap.add_argument("--scaling", default="", help=f"comma list of {', '.join(SCALING)} (or 'all')")
    ap.add_argument("--shipped-configs", nargs="?", const="", default=None, metavar="NAMES",
                    help="instead of the rows above: each shipped config (default quickstart,flagship,league,"
                         "connect_four) as users run it, with its per-phase seconds, against a fixed-layout row and "
                         "the learner ceiling of the same run (bench/speed/shipped_speed.py); --seconds of training each")
    args = ap.parse_args()
    from bench.common import check_bench_args  # the command line, before Ray: one line, exit 2

    check_bench_args(args, overrides=args.overrides, config=args.config)
    if args.shipped_configs is not None:
        from bench.speed.shipped_speed import parse_configs, shipped_rows

        out = shipped_rows(parse_configs(args.shipped_configs), 45.0 if args.seconds is None else args.seconds)
        out.update(cpus=os.cpu_count(), mode="shipped_configs")
        print(json.dumps(out))
        return
    if args.seconds is None:
        args.seconds = 20.0
    scaling = set(SCALING) if args.scaling == "all" else {s for s in args.scaling.split(",") if s}
    if scaling - set(SCALING):
        ap.error(f"--scaling: unknown {sorted(scaling - set(SCALING))}; allowed {', '.join(SCALING)}")

    import ray

    from spade_rllib.config.run_config import load_config

    # The rows compare layouts with the MLP [128, 128] (the model stock RLlib is configured alike with); the
    # quickstart's own model is an LSTM, measured in the LSTM rows. --set overrides either.
    overrides = [*MLP_MODEL, f"env.id={args.env_id}",
                 *([f"env.difficulty={args.difficulty:g}"] if args.difficulty else []), *args.overrides]
    cfg = load_config(args.config, overrides)
    load_start = os.getloadavg()[0]
    ray.init(num_cpus=cfg.resources.num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    out: dict = {}

    probes: dict = {}

    def probe(name: str) -> None:
        # Env-only rate for 2 s right after a row: if it moved a lot from env_only_sps, other jobs'
        # load changed during the run and that row's ratio to the ceilings is not to be trusted.
        probes[name] = _r(env_only(cfg, 2.0)[0])

    def say(name: str, res: dict, key: str) -> None:
        probe(key)
        extra = f"| sample {res['sample_sps']:9,.0f} " if not math.isnan(res.get("sample_sps", float("nan"))) else ""
        print(f"{name:<22} train {res['train_sps']:9,.0f} env steps/s {extra}| {res['detail']} | env-only probe "
              f"{probes[key]:,.0f}", flush=True)

    # ceilings first (cheap), then the algorithms
    env_sps, obs = env_only(cfg, max(3.0, args.seconds / 4))
    agents = max(1, obs.shape[0] // cfg.training.num_envs_per_runner)
    rows_sps, inf_sps = inference_only(cfg, obs, max(3.0, args.seconds / 4), agents)
    print(f"{'env_only':<22} {env_sps:9,.0f} env steps/s ({cfg.training.num_envs_per_runner} envs, one core)", flush=True)
    print(f"{'inference_only':<22} {inf_sps:9,.0f} env steps/s ({rows_sps:,.0f} rows/s at batch {obs.shape[0]}, one thread)", flush=True)

    res = ours(cfg, args.seconds, learner=True)
    say("ours", res, "train")
    runner_ceiling = 1.0 / (1.0 / env_sps + 1.0 / inf_sps)
    ceil = ceiling(runner_ceiling, res["learner_only_sps"], cfg)
    print(f"{'learner_only':<22} {res['learner_only_sps']:9,.0f} env steps/s | runner ceiling {runner_ceiling:,.0f} | "
          f"ceiling {ceil:,.0f} | ceiling_ratio {res['train_sps'] / ceil:.3f}", flush=True)
    out.update(train_sps=_r(res["train_sps"]), sample_sps=_r(res["sample_sps"]),
               ratio=_r(res["train_sps"] / res["sample_sps"], 3), env_only_sps=_r(env_sps),
               inference_only_sps=_r(inf_sps), inference_rows_sps=_r(rows_sps), learner_only_sps=_r(res["learner_only_sps"]),
               runner_ceiling_sps=_r(runner_ceiling), ceiling_sps=_r(ceil), ceiling_ratio=_r(res["train_sps"] / ceil, 3),
               train_detail=res["detail"])

    if not args.skip_lstm:  # right after the MLP row: same load
        lstm_set = ["agent.model.memory=lstm", f"agent.model.lstm_cell_size={args.lstm_cell}", "agent.model.max_seq_len=32"]
        lstm = ours(load_config(args.config, [*overrides, *lstm_set]), args.seconds, sample=False, learner=True)
        say("ours, LSTM", lstm, "lstm")
        bf16 = ours(load_config(args.config, [*overrides, *lstm_set, "agent.model.train_bf16=true"]), args.seconds,
                    sample=False, learner=True)
        say("ours, LSTM, bf16", bf16, "lstm_bf16")
        best = max(lstm["train_sps"], bf16["train_sps"])
        out.update(lstm_train_sps=_r(lstm["train_sps"]), lstm_learner_only_sps=_r(lstm["learner_only_sps"]),
                   lstm_bf16_train_sps=_r(bf16["train_sps"]), lstm_bf16_learner_only_sps=_r(bf16["learner_only_sps"]),
                   lstm_over_mlp=_r(lstm["train_sps"] / res["train_sps"], 3),
                   lstm_bf16_over_mlp=_r(bf16["train_sps"] / res["train_sps"], 3),
                   lstm_target_ratio=LSTM_TARGET_RATIO, lstm_target_met=best / res["train_sps"] >= LSTM_TARGET_RATIO,
                   lstm_cell=args.lstm_cell, lstm_detail=lstm["detail"])

    variants: dict = {}
    for v in args.variant:  # right after the main row: same load, so the two compare
        r = ours(load_config(args.config, [*overrides, v]), args.seconds, sample=False)
        say(f"variant {v}", r, f"variant {v}")
        variants[v] = _r(r["train_sps"])
    if variants:
        out["variants"] = variants

    if not args.skip_sync:
        sync_cfg = load_config(args.config, [*overrides, "training.sample_ahead=false"])
        sync = ours(sync_cfg, args.seconds, sample=False)
        say("ours, sample_ahead off", sync, "sync")
        out["sync_train_sps"] = _r(sync["train_sps"])

    if not args.skip_league:
        lg = ours(load_config(args.config, [*overrides, *LEAGUE_ON]), args.seconds, sample=False)
        say("league", lg, "league")
        diff = cfg.env.difficulty if cfg.env.difficulty is not None else 5.0
        lc_cfg = load_config(args.config, [*overrides, *LEAGUE_ON, *curriculum_on(diff)])
        lc = ours(lc_cfg, args.seconds, sample=False)
        say("league + curriculum", lc, "league_curriculum")
        # The throughput layout (FAST_LAYOUT): on 2 CPUs two runners share the cores with the learner,
        # which is busy ~40% of an iteration here, so sampling gets ~1.6 cores instead of 1; 128 envs
        # per runner halve the per-step fixed costs (one forward pass per network, sampling, stacking).
        lcf = ours(load_config(args.config, [*overrides, *LEAGUE_ON, *curriculum_on(diff), *FAST_LAYOUT]),
                   args.seconds, sample=False)
        say("league + curr., 2x128", lcf, "league_curriculum_fast")
        out.update(league_curriculum_fast_train_sps=_r(lcf["train_sps"]), league_curriculum_fast_layout=list(FAST_LAYOUT),
                   league_curriculum_fast_detail=lcf["detail"],
                   league_curriculum_target_met=max(lc["train_sps"], lcf["train_sps"]) >= TARGET_SPS)
        out.update(league_train_sps=_r(lg["train_sps"]), league_overhead=_r(1 - lg["train_sps"] / res["train_sps"], 3),
                   league_curriculum_train_sps=_r(lc["train_sps"]),
                   league_curriculum_overhead=_r(1 - lc["train_sps"] / res["train_sps"], 3),
                   league_curriculum_ceiling_ratio=_r(lc["train_sps"] / ceil, 3),
                   league_curriculum_target_sps=TARGET_SPS, league_curriculum_detail=lc["detail"])

    if not args.skip_stock and cfg.env.id not in _registered_ids():
        print(f"stock rows skipped: {cfg.env.id!r} is not one of spade_rllib's registered games", flush=True)
        out["stock_skipped"] = cfg.env.id
    elif not args.skip_stock:
        eq = stock(cfg, args.seconds, equal=True)
        say("stock, equal settings", eq, "stock_equal")
        de = stock(cfg, args.seconds, equal=False)
        say("stock, PPO defaults", de, "stock_default")
        out.update(stock_equal_train_sps=_r(eq["train_sps"]), stock_equal_sample_sps=_r(eq["sample_sps"]),
                   stock_default_train_sps=_r(de["train_sps"]), stock_default_sample_sps=_r(de["sample_sps"]),
                   equal_settings_ratio=_r(res["train_sps"] / eq["train_sps"], 2),
                   baseline_train_sps=_r(de["train_sps"]), baseline_sample_sps=_r(de["sample_sps"]),
                   stock_equal_detail=eq["detail"])

    scale: dict = {}
    if "runners" in scaling:
        for n in (0, 1, 2):
            r = ours(load_config(args.config, [*overrides, f"training.num_env_runners={n}"]), args.seconds, sample=False)
            say(f"{n} env runners", r, f"runners_{n}")
            scale[f"runners_{n}"] = _r(r["train_sps"])
    if "league" in scaling:
        no_auto = ("league.enabled=true", "league.every_n_iterations=null", "league.win_rate_threshold=1.0",
                   "league.window=1000000")
        for n in (1, 20, 100):
            r = ours(load_config(args.config, [*overrides, *no_auto, f"league.max_size={max(2, n)}"]), args.seconds,
                     sample=False, prefill_league=n)
            say(f"league of {n}", r, f"league_{n}")
            scale[f"league_{n}"] = _r(r["train_sps"])
    if "levels" in scaling:
        for d in (4, 6, 8, 10):
            lcfg = load_config(args.config, [*overrides, f"env.difficulty={d}"])
            e, _ = env_only(lcfg, max(3.0, args.seconds / 4))
            r = ours(lcfg, args.seconds, sample=False)
            size = 5 + 2 * (d // 2)
            say(f"{size}x{size} (difficulty {d})", r, f"level_{size}")
            scale[f"level_{size}"] = {"train_sps": _r(r["train_sps"]), "env_only_sps": _r(e)}
    if "2v2" in scaling:
        vcfg = load_config(args.config, [*overrides, "env.kwargs={agents_per_team: 2}"])
        e, _ = env_only(vcfg, max(3.0, args.seconds / 4))
        r = ours(vcfg, args.seconds, sample=False)
        say("2v2", r, "2v2")
        scale["2v2"] = {"train_sps": _r(r["train_sps"]), "env_only_sps": _r(e)}
    if scale:
        out["scaling"] = scale
    out["env_only_probe_after"] = probes

    ray.shutdown()
    import torch

    out.update(env_id=cfg.env.id, config=os.path.relpath(args.config, ROOT) if os.path.isabs(args.config) else args.config,
               overrides=args.overrides, seconds=args.seconds, cpus=os.cpu_count(),
               learner_torch_threads=cfg.training.torch_threads or min(4, os.cpu_count() or 1),
               torch_version=torch.__version__, load_avg_1m_start=round(load_start, 2),
               load_avg_1m=round(os.getloadavg()[0], 2))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
