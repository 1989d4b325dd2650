"""The driver's per-iteration cost of the league and the curriculum as env runners and league snapshots grow.

Usage: ``python bench/speed/driver_scale.py [--runners 1,2,4,8,16] [--snapshots 1,10,50,200] [--outcomes 128]
[--iterations 9] [--no-ray]``

No training and no env runner processes: the bench builds the driver components of
``tune_configs/flagship.yaml`` (self-play, PLR curriculum scored by positive value loss, league with
PFSP over 4 opponent slots, draw watch) exactly as `SpadePPO` does (`build_components`), fills the
league with N frozen snapshots of the flagship model (MLP 128-128, numpy weights, slightly
perturbed copies) and runs the driver's half of an iteration on synthetic episode outcomes, as
many per iteration as ``--outcomes`` (default 128: the flagship's 8,192-step batch over ~64-step
episodes), drawn like the runners draw them (opponent from the broadcast plan, the member behind
its slot, level from the broadcast level source).

Per iteration and case (R runners, N snapshots) it times, in seconds:
  drain_s         unpickling the R runners' outcome lists and joining them (what returns from
                  ``foreach_env_runner(pop_episode_outcomes)``; the runners' pickling is theirs);
  plr_s           the curriculum's update (PLR: per-level positive value loss, scores, buffer);
  ratings_s       the league recording the outcomes (Elo, payoff);
  plan_s          the league's PFSP plan and slot assignment;
  league_s        the league's whole update (ratings + plan + metrics);
  runner_update_s merging the components' `DriverUpdate`s;
  broadcast_ser_s serializing the broadcast as `foreach_env_runner` does today: each actor call
                  carries the closure holding the `DriverUpdate`, so it is cloudpickled and (over
                  100 KiB) put into the object store once per runner (R ``ray.put``s; with
                  ``--no-ray``, R cloudpickles);
  broadcast_ref_s the fix: the closure put into the object store once, each actor call passing its
                  ObjectRef (Ray resolves it on the runner); with ``--no-ray``, one cloudpickle. The
                  R task submissions themselves are the same on both paths and not timed;
and the payload: bytes of one broadcast, slot weights shipped per iteration, and the bytes of a
full broadcast (every slot: after a runner restart or a restore).

Last line: one JSON object: per case the median seconds of each part over the iterations, the
bytes, and the driver's total per iteration with today's broadcast (``driver_s``) and with the fix
(``driver_by_ref_s``), plus the command and the load average before and after.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FLAGSHIP = ROOT / "tune_configs" / "flagship.yaml"
PERTURBATION = 1e-3  # snapshot weights = main's + noise: no two snapshots share arrays


def flagship_config(num_snapshots: int, seed: int):
    """The flagship recipe with the league's size pinned at `num_snapshots` (no automatic snapshots)."""
    from spade_rllib.config.run_config import load_config

    return load_config(str(FLAGSHIP), [
        f"league.max_size={max(2, num_snapshots)}", "league.every_n_iterations=null", "league.win_rate_threshold=1.0",
        "evaluation.heldout_levels=[]", "evaluation.final_heldout_levels=[]", f"experiment.seed={seed}"])


def main_weights(cfg, info) -> dict:
    """Main's inference weights (numpy) as the learner hands them to the league."""
    from ray.rllib.utils.numpy import convert_to_numpy

    from spade_rllib.rllib.algo_config import build_algo_config

    module = build_algo_config(cfg).get_multi_rl_module_spec().build()["main"]
    return {k: v.copy() for k, v in convert_to_numpy(module.get_state(inference_only=True)).items()}


def runner_member_id(comp, opponent: str) -> str:
    """What a runner records as the opponent: the member in a slot (`main_v3`), else the plan's id."""
    from spade_rllib.rllib.plan import SLOT_PREFIX

    if opponent.startswith(SLOT_PREFIX):
        member = comp.plan.slots[int(opponent[len(SLOT_PREFIX):])]
        return str(member) if member is not None else opponent
    return opponent


def synthetic_outcomes(league, curriculum, num_outcomes: int, runners: int, iteration: int, rng) -> tuple[list, dict]:
    """(one list of outcome records per runner, level_id -> (sum of max(GAE, 0), steps)) for one iteration."""
    from spade_rllib.core.outcome import EpisodeOutcome

    source = curriculum.level_source()
    parts: list[list] = [[] for _ in range(runners)]
    value_loss: dict = {}
    for i in range(num_outcomes):
        worker = i % runners
        key = (worker + 1, i // runners, iteration)
        learner, opponent = league.opponent_plan.pick_matchup(key)
        spec = source.spec_for(key)
        length = int(rng.integers(20, 120))
        team = int(rng.integers(2))
        winner = ("A", "B", "draw")[int(rng.integers(3))]
        parts[worker].append(EpisodeOutcome(
            winner=winner, reason="flag" if winner != "draw" else "timeout", length=length, learner_team=team,
            learner=learner, opponent=runner_member_id(league, opponent),
            level={"level_id": spec.level_id, **dict(spec.knob_items or ())},
            level_spec=spec.to_dict(), returns=(float(rng.normal()), float(rng.normal())),
            counters={"captures": (int(winner == "A"), int(winner == "B"))}))
        total, steps = value_loss.get(spec.level_id, (0.0, 0))
        value_loss[spec.level_id] = (total + float(rng.random()) * length, steps + length)
    return parts, value_loss


class Timed:
    """Wraps an instance's method so each call adds its wall time to `seconds[name]`."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def wrap(self, obj, method: str, name: str) -> None:
        inner = getattr(obj, method)

        @functools.wraps(inner)
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

        setattr(obj, method, timed)


def merged_update(components, full: bool):
    update = None
    for comp in components:
        u = comp.runner_update(full)
        if u is not None:
            update = u if update is None else update.merged(u)
    return update


def broadcast_costs(update, runners: int, use_ray: bool) -> tuple[float, float, int]:
    """(seconds to serialize today's per-runner closures, seconds for the by-reference fix, bytes of one)."""
    from ray import cloudpickle

    if update is None:
        return 0.0, 0.0, 0
    blob = cloudpickle.dumps(lambda r: r.apply_driver_update(update))
    t0 = time.perf_counter()
    if use_ray:
        import ray

        # Each actor call serializes its closure; one over 100 KiB goes into the object store: a put per runner.
        refs = [ray.put(lambda r: r.apply_driver_update(update)) for _ in range(runners)]
        per_runner = time.perf_counter() - t0
        del refs
        t0 = time.perf_counter()
        ref = ray.put(lambda r: r.apply_driver_update(update))  # once; each actor call then carries only `ref`
        del ref
    else:
        for _ in range(runners):
            cloudpickle.dumps(lambda r: r.apply_driver_update(update))
        per_runner = time.perf_counter() - t0
        t0 = time.perf_counter()
        cloudpickle.dumps(lambda r: r.apply_driver_update(update))
    by_ref = time.perf_counter() - t0
    return per_runner, by_ref, len(blob)


def run_case(num_snapshots: int, runner_counts: list[int], num_outcomes: int, iterations: int, seed: int,
             use_ray: bool) -> list[dict]:
    """All runner counts for one league size: the components are built once and stepped per runner count."""
    import numpy as np

    from spade_rllib.rllib.env_description import describe_env
    from spade_rllib.rllib.component_registry import build_components
    from spade_rllib.rllib.components import DriverContext

    cfg = flagship_config(num_snapshots, seed)
    info = describe_env(cfg)
    components = build_components(cfg, info)
    by_name = {c.name: c for c in components}
    league, curriculum = by_name["league"], by_name["curriculum"]
    base = main_weights(cfg, info)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(num_snapshots):
        league.league.add_snapshot({k: (v + rng.normal(0.0, PERTURBATION, v.shape)).astype(v.dtype) for k, v in base.items()},
                                   iteration=0)
    snapshot_s = (time.perf_counter() - t0) / max(1, num_snapshots)
    league.set_plan(league.league.plan(0))
    merged_update(components, full=True)  # the runners now hold every slot
    full_bytes = len(pickle.dumps(merged_update(components, full=True), protocol=5))
    weights_bytes = sum(a.nbytes for a in base.values())
    timer = Timed()
    timer.wrap(league, "record_outcomes", "ratings_s")
    timer.wrap(league.league, "plan", "plan_s")
    iteration = 0
    rows = []
    for runners in runner_counts:
        samples: dict[str, list[float]] = {}
        payload, loads = [], []
        for step in range(iterations + 1):  # the first is a warm-up, not counted
            iteration += 1
            parts, value_loss = synthetic_outcomes(league, curriculum, num_outcomes, runners, iteration, rng)
            blobs = [pickle.dumps(p, protocol=5) for p in parts]  # pickled on the runners
            timer.seconds.clear()
            loads_before = league.slot_loads
            t = {}
            t0 = time.perf_counter()
            outcomes = [rec for blob in blobs for rec in pickle.loads(blob)]
            t["drain_s"] = time.perf_counter() - t0
            ctx = DriverContext(iteration=iteration, env_steps_lifetime=iteration * 8192, main_weights=lambda: base,
                                num_runners=runners, level_value_loss=value_loss)
            for comp in components:
                t0 = time.perf_counter()
                comp.update(outcomes, ctx)
                t[{"curriculum": "plr_s", "league": "league_s"}.get(comp.name, f"{comp.name}_s")] = time.perf_counter() - t0
            t0 = time.perf_counter()
            update = merged_update(components, full=False)
            t["runner_update_s"] = time.perf_counter() - t0
            t["broadcast_ser_s"], t["broadcast_ref_s"], nbytes = broadcast_costs(update, runners, use_ray)
            t.update(timer.seconds)
            if step == 0:
                continue
            for k, v in t.items():
                samples.setdefault(k, []).append(v)
            payload.append(nbytes)
            loads.append(league.slot_loads - loads_before)
        row = {"runners": runners, "snapshots": num_snapshots,
               **{k: float(np.median(v)) for k, v in sorted(samples.items())},
               "broadcast_bytes": float(np.mean(payload)), "slot_loads_per_iter": float(np.mean(loads)),
               "full_broadcast_bytes": full_bytes, "snapshot_weights_bytes": weights_bytes,
               "add_snapshot_s": snapshot_s}
        common = sum(row.get(k, 0.0) for k in ("drain_s", "plr_s", "league_s", "self_play_s", "draw_watch_s",
                                                  "runner_update_s"))
        row["driver_s"] = common + row["broadcast_ser_s"]
        row["driver_by_ref_s"] = common + row["broadcast_ref_s"]
        rows.append(row)
    return rows


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runners", default="1,2,4,8,16", help="env runner counts (comma-separated)")
    ap.add_argument("--snapshots", default="1,10,50,200", help="league sizes in frozen snapshots (comma-separated)")
    ap.add_argument("--outcomes", type=int, default=128, help="episode outcomes per iteration")
    ap.add_argument("--iterations", type=int, default=9, help="timed iterations per case (after one warm-up)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ray", action="store_true", help="no local Ray: the by-reference broadcast is timed as one pickle")
    args = ap.parse_args(argv)
    from bench.common import check_bench_args  # the command line, before Ray: one line, exit 2

    check_bench_args(args, lists={"runners": 1, "snapshots": 0})
    runners, snapshots = ints(args.runners), ints(args.snapshots)
    if not runners or not snapshots or min(runners) < 1 or min(snapshots) < 0 or args.outcomes < 1 or args.iterations < 1:
        ap.error("--runners, --snapshots: comma-separated counts (runners >= 1); --outcomes, --iterations >= 1")
    load_before = load_average()
    t_start = time.perf_counter()
    use_ray = not args.no_ray
    if use_ray:
        import ray

        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    cases = []
    try:
        for n in snapshots:
            for row in run_case(n, runners, args.outcomes, args.iterations, args.seed, use_ray):
                cases.append(row)
                print(f"runners {row['runners']:3d} snapshots {row['snapshots']:4d}: driver {1e3 * row['driver_s']:7.2f} ms "
                      f"(by ref {1e3 * row['driver_by_ref_s']:6.2f}) = drain {1e3 * row['drain_s']:5.2f} + plr "
                      f"{1e3 * row['plr_s']:5.2f} + league {1e3 * row['league_s']:6.2f} (ratings {1e3 * row.get('ratings_s', 0):5.2f}, "
                      f"plan {1e3 * row.get('plan_s', 0):5.2f}) + broadcast {1e3 * row['broadcast_ser_s']:6.2f}; "
                      f"{row['broadcast_bytes'] / 1024:7.1f} KiB/broadcast, {row['slot_loads_per_iter']:.1f} slot loads/iter",
                      flush=True)
    finally:
        if use_ray:
            import ray

            ray.shutdown()
    result = {
        "bench": "driver_scale",
        "command": " ".join(["python bench/speed/driver_scale.py", *(argv if argv is not None else sys.argv[1:])]),
        "outcomes_per_iter": args.outcomes, "iterations": args.iterations, "ray": use_ray,
        "load_average": load_before, "load_average_end": load_average(), "cpus": os.cpu_count(),
        "wall_s": round(time.perf_counter() - t_start, 1),
        "cases": [{k: (round(v, 7) if isinstance(v, float) else v) for k, v in row.items()} for row in cases],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
