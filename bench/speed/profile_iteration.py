"""Where the milliseconds of one training iteration go, on the driver/learner and on the env runner.

    python bench/speed/profile_iteration.py [--config tune_configs/quickstart.yaml] [--set key=value ...]
                                      [--runners 0|1] [--iterations 10] [--league-curriculum]
                                      [--cprofile 25]

Builds `SpadePPO` from the config, trains `--warmup` iterations, then times `--iterations` more with
exclusive ("self") timers patched onto the methods that do the work (env step, observation building,
adapter, inference, action sampling, episode start/end, packing, GAE, learner forward/loss/backward/
optimizer, weight sync, driver components, evaluation ...). A timer's time excludes the timed calls
nested inside it, so the rows of one process add up to its busy time; what no named timer covers is
charged to its innermost timed caller (e.g. "runner: lane loop" = the per-step grouping, `np.stack`,
dict and trajectory bookkeeping of `_step_lanes`).

`--runners 0` (default): the runner lives in the driver process and the iteration is serial (sample,
then learn): one table adds up to the iteration's wall time. `--runners 1`: the quickstart's layout
(one remote runner, sample-ahead); the timers are installed in the runner process too
(`foreach_env_runner`), and the driver's table shows how long it waited for samples.
`--cprofile N` also runs cProfile over `--iterations` more iterations before the timers go in (driver
process) and prints its top N functions by own time (cProfile slows Python calls ~2x: ranking only).
The timers cost ~1 us per timed call (~4 calls per env step); the JSON line gives the iteration
time with and without them. Last line: one JSON object.
"""
from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.measure import LEAGUE_ON, curriculum_on  # noqa: E402


class SelfTimers:
    """Exclusive wall time per category over nested, patched calls (one thread)."""

    def __init__(self):
        self.stack: list = []
        self.self_s: dict = defaultdict(float)
        self.calls: dict = defaultdict(int)

    def reset(self) -> None:
        self.self_s.clear()
        self.calls.clear()

    def wrap(self, owner, attr: str, cat) -> None:
        """Time `owner.attr` (a class or an instance). `cat` is a name, or a function of the caller's
        category returning a name (None: charge the caller)."""
        static = inspect.getattr_static(owner, attr, None)
        orig = getattr(owner, attr)
        if getattr(orig, "_self_timed", False):
            return
        timers, perf = self, time.perf_counter

        @functools.wraps(orig)
        def timed(*args, **kwargs):
            st = timers.stack
            parent = st[-1][0] if st else None
            c = cat(parent) if callable(cat) else cat
            if c is None:
                return orig(*args, **kwargs)
            now = perf()
            if st:
                timers.self_s[parent] += now - st[-1][1]
            st.append([c, now])
            try:
                return orig(*args, **kwargs)
            finally:
                end = perf()
                timers.self_s[c] += end - st.pop()[1]
                timers.calls[c] += 1
                if st:
                    st[-1][1] = end

        timed._self_timed = True
        setattr(owner, attr, staticmethod(timed) if isinstance(static, staticmethod) else timed)

    def report(self) -> dict:
        return {k: (v, self.calls[k]) for k, v in self.self_s.items()}


def _forward_cat(parent):
    # The policy forward pass is split out of "inference" only when the runner acts.
    return "inference: torch forward" if parent == "inference: action sampling (numpy)" else None


def install_runner_timers(t: SelfTimers, runner_cls) -> None:
    """Timers on everything the env runner does (classes patched in the calling process)."""
    from spade_rllib.envs.ctf import CaptureTheFlag
    from spade_rllib.envs.maze_race import MazeRace
    from spade_rllib.games import adapter as games
    from spade_rllib.rllib.module import SpadeModule
    from spade_rllib.rllib.packed import PackedEpisodes

    t.wrap(runner_cls, "sample", "runner: lane loop (grouping, np.stack, dicts, trajectories)")
    t.wrap(runner_cls, "get_metrics", "runner: metrics reduce")
    t.wrap(runner_cls, "set_state", "runner: weight sync (set_state)")
    t.wrap(runner_cls, "apply_driver_update", "runner: driver update (plan, slot weights, level source)")
    t.wrap(runner_cls, "pop_episode_outcomes", "runner: outcome drain")
    t.wrap(runner_cls, "evaluate_main", "runner: evaluation games")
    t.wrap(runner_cls, "_sample_actions", "inference: action sampling (numpy)")
    t.wrap(runner_cls, "_logits", "inference: torch forward")
    t.wrap(SpadeModule, "logits", _forward_cat)
    t.wrap(runner_cls, "_random_action", "opponents: random / bots")
    t.wrap(runner_cls, "_bot", "opponents: random / bots")
    t.wrap(runner_cls, "_start_episode", "episode start (matchmaking, reset options, lane state)")
    t.wrap(runner_cls, "_finish_episode", "episode end (chunks, outcome record)")
    t.wrap(runner_cls, "_log_episode_metrics", "episode metrics (MetricsLogger.log_value)")
    t.wrap(runner_cls, "_emit_cut", "episode end (chunks, outcome record)")
    t.wrap(runner_cls, "_log_sample_metrics", "runner: metrics reduce")
    t.wrap(PackedEpisodes, "build", "packing the batch (PackedEpisodes.build)")
    for cls in (games.ParallelGame, games.AECGame, games.GymGame):
        t.wrap(cls, "step", "Game adapter (flatten obs, dicts, StepResult)")
        t.wrap(cls, "reset", "Game adapter (flatten obs, dicts, StepResult)")
    for env_cls in (MazeRace, CaptureTheFlag):
        t.wrap(env_cls, "step", "env step (game rules)")
        t.wrap(env_cls, "reset", "env reset")
        t.wrap(env_cls, "_observe", "observation building (env._observe)")
        t.wrap(env_cls, "_generate", "level generation")
    try:
        from spade_rllib.curriculum import source

        for name in dir(source):
            cls = getattr(source, name)
            if inspect.isclass(cls) and "reset_options" in cls.__dict__:
                t.wrap(cls, "reset_options", "curriculum: level source (runner)")
    except ImportError:
        pass


def install_driver_timers(t: SelfTimers, algo) -> None:
    """Timers on the driver: PPO's learner path, weight sync, SpadePPO's per-iteration work."""
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.learner.learner import Learner
    from ray.rllib.core.learner.learner_group import LearnerGroup
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner
    from ray.rllib.env.env_runner_group import EnvRunnerGroup

    from spade_rllib.rllib.module import SpadeModule
    from spade_rllib.rllib.packed import SpadeGAEConnector

    cls = type(algo)
    t.wrap(Algorithm, "train", "RLlib iteration overhead (results, metrics)")
    t.wrap(cls, "_collect_sampled_ahead", "driver: waiting for / receiving samples")
    t.wrap(cls, "_gather_outcomes", "driver: outcome drain")
    t.wrap(cls, "broadcast", "driver: broadcast DriverUpdate")
    t.wrap(cls, "evaluate_main", "driver: periodic evaluation")
    t.wrap(cls, "learner_hyperparams", "driver: trained_with readout")
    t.wrap(cls, "main_weights", "driver: main weights for components")
    t.wrap(LearnerGroup, "update", "learner: batching, minibatch loop, metrics")
    t.wrap(Learner, "update", "learner: batching, minibatch loop, metrics")
    t.wrap(SpadeGAEConnector, "__call__", "learner: GAE + value pass (connector)")
    t.wrap(PPOTorchLearner, "compute_loss_for_module", "learner: PPO loss")
    t.wrap(SpadeModule, "_forward_train", "learner: forward")
    t.wrap(TorchLearner, "compute_gradients", "learner: backward")
    t.wrap(TorchLearner, "apply_gradients", "learner: optimizer step + grad clip")
    t.wrap(TorchLearner, "after_gradient_based_update", "learner: after-update hooks")
    from spade_rllib.rllib.lean_learner import SpadePPOLearner  # the product's learner overrides these

    t.wrap(SpadePPOLearner, "compute_loss_for_module", "learner: PPO loss")
    t.wrap(SpadePPOLearner, "apply_gradients", "learner: optimizer step + grad clip")
    t.wrap(SpadePPOLearner, "postprocess_gradients_for_module", "learner: optimizer step + grad clip")
    t.wrap(EnvRunnerGroup, "sync_weights", "weight sync (driver side)")
    for comp in algo.components:
        t.wrap(comp, "update", f"component: {comp.name}")
        t.wrap(comp, "runner_update", f"component: {comp.name}")
    if algo.heldout is not None:
        t.wrap(algo.heldout, "step", "driver: held-out evaluation")


def table(rep: dict, iters: int, wall_s: float, title: str) -> list[dict]:
    rows = sorted(rep.items(), key=lambda kv: -kv[1][0])
    busy = sum(v[0] for v in rep.values())
    print(f"\n{title}: {1000 * wall_s / iters:.1f} ms per iteration wall, {1000 * busy / iters:.1f} ms timed")
    print(f"{'where':<62} {'ms/iter':>8} {'% wall':>7} {'calls/iter':>11}")
    out = []
    for k, (s, n) in rows:
        ms = 1000 * s / iters
        pct = 100 * s / wall_s
        print(f"{k:<62} {ms:8.1f} {pct:6.1f}% {n / iters:11.0f}")
        out.append({"where": k, "ms_per_iter": round(ms, 2), "pct_wall": round(pct, 1), "calls_per_iter": round(n / iters)})
    idle = wall_s - busy
    if idle > 0.005 * wall_s:
        print(f"{'(not in any timer: idle, or outside the timed calls)':<62} {1000 * idle / iters:8.1f} {100 * idle / wall_s:6.1f}%")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "tune_configs" / "quickstart.yaml"))
    ap.add_argument("--env-id", default="CaptureTheFlag-v0")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--runners", type=int, default=0, choices=(0, 1))
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--league-curriculum", action="store_true", help="league (PFSP, snapshot every 2 it) + threshold curriculum on")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="also print cProfile's top N (driver process)")
    args = ap.parse_args()

    import ray

    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    overrides = [f"env.id={args.env_id}", f"training.num_env_runners={args.runners}", *args.overrides]
    if args.league_curriculum:
        base = load_config(args.config, overrides)
        overrides += [*LEAGUE_ON, *curriculum_on(base.env.difficulty if base.env.difficulty is not None else 5.0)]
    cfg = load_config(args.config, overrides)
    load_start = os.getloadavg()
    ray.init(num_cpus=cfg.resources.num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    algo = build_algo_config(cfg).build_algo()

    def run(n: int) -> tuple[float, int]:
        steps, t0 = 0, time.perf_counter()
        for _ in range(n):
            steps += int(algo.train()["env_runners"]["num_env_steps_sampled"])
        return time.perf_counter() - t0, steps

    run(args.warmup)
    plain_s, plain_steps = run(args.iterations)  # without timers: their overhead is the difference
    prof = None
    if args.cprofile:  # before the timers are installed, so it sees the code as it runs in training
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        run(args.iterations)
        prof.disable()

    drv = SelfTimers()
    install_driver_timers(drv, algo)
    install_runner_timers(drv, SpadeEnvRunner)  # the local runner (all sampling when --runners 0)
    if args.runners:
        def remote_install(r):
            r._self_timers = SelfTimers()
            install_runner_timers(r._self_timers, type(r))
            return os.getpid()

        algo.env_runner_group.foreach_env_runner(remote_install, local_env_runner=False)
    run(1)
    drv.reset()
    if args.runners:
        algo.env_runner_group.foreach_env_runner(lambda r: r._self_timers.reset(), local_env_runner=False)
    timed_s, timed_steps = run(args.iterations)
    remote = (algo.env_runner_group.foreach_env_runner(lambda r: r._self_timers.report(), local_env_runner=False)
              if args.runners else [])
    algo.stop()
    ray.shutdown()

    it = args.iterations
    print(f"\nconfig {args.config} {overrides}\nload average at start {load_start}, now {os.getloadavg()}")
    print(f"without timers: {1000 * plain_s / it:.1f} ms/iter, {plain_steps / plain_s:,.0f} env steps/s; "
          f"with timers: {1000 * timed_s / it:.1f} ms/iter, {timed_steps / timed_s:,.0f} env steps/s; "
          f"{timed_steps / it:,.0f} env steps/iter")
    out = {"driver": table(drv.report(), it, timed_s, "driver process (learner" + (", local runner" if not args.runners else "") + ")")}
    for i, rep in enumerate(remote):
        out[f"runner_{i + 1}"] = table(rep, it, timed_s, f"env runner {i + 1} process")
    if prof is not None:
        import pstats

        print(f"\ncProfile, driver process, top {args.cprofile} by own time:")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    out.update(ms_per_iter_plain=round(1000 * plain_s / it, 1), ms_per_iter_timed=round(1000 * timed_s / it, 1),
               sps_plain=round(plain_steps / plain_s), env_steps_per_iter=round(timed_steps / it),
               runners=args.runners, league_curriculum=args.league_curriculum, overrides=overrides,
               load_avg_start=[round(x, 2) for x in load_start], load_avg_end=[round(x, 2) for x in os.getloadavg()])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
