"""The learner against the speed of its own math: the product's PPO update beside a bare torch PPO loop on the
same module, batch, minibatches, epochs and thread count, and where one real update spends its time.

    python bench/speed/learner_ceiling.py [--config tune_configs/quickstart.yaml] [--models lstm,mlp] [--seconds 8]
                                    [--threads 0] [--set key=value ...]

`--train-ab SECONDS`: each row's config also trains as users run it (its remote runner, sample-ahead, no periodic
evaluation) with the lean and with the stock learner, two algorithms side by side trained in alternating windows
(`--ab-window`, 10 s), so both see the same load: env steps/s, learn share and the speedup.
Rows (`--models`): `lstm` is the config as shipped (the quickstart: LSTM 128 over one 128-unit tanh layer,
max_seq_len 32); `mlp` is the config with the fixed-layout overrides of bench/speed/measure.py (`FIXED_OVERRIDES`: MLP
[128, 128], fixed 9x9 levels, no curriculum or periodic evaluation), the model of the speed benches' layout rows.
For each row, in this process, one local learner (`training.num_env_runners=0`, so the driver's runner samples):

  batch            one train batch sampled by the product's runner (`train_batch_size` env steps; both seats' rows
                   when main plays both), fed unchanged to every timing below;
  product          `learner_group.update(episodes=batch, ...)` exactly as SpadePPO calls it (the learner class the
                   config builds: connector = packing/padding + value pass + GAE, then epochs x minibatches of
                   forward, PPO loss, backward, grad clip, Adam, metrics);
  stock_learner    the same update through RLlib's stock `PPOTorchLearner` (the class `PPOConfig` builds), on a copy
                   of the same module and the same connector: the rate before the lean learner;
  bare             plain torch, no RLlib: one no-grad value pass over the batch's rows, then the same epochs and
                   minibatch sizes (shuffled each epoch) of `forward_train` of a copy of the same module, PPO's
                   clipped surrogate + clipped value loss + entropy (masked mean on LSTM padding), backward,
                   global-norm clip, Adam. Its input is the connector's train batch (built once, outside the timing):
                   the physical limit of this machine for this math;
  ratio            product / bare (the issue's target: >= 0.8), stock_ratio stock_learner / bare; ratio_cpu and
                   stock_ratio_cpu the same from CPU seconds per update (this process), which a loaded machine
                   disturbs less than wall time;
  profile          one real update of the product's learner and of the stock one (`--profile-updates` of each,
                   averaged) split by exclusive timers into batch
                   building (value pass, GAE, packing/padding), forward, loss, backward, optimizer (grad clip, Adam
                   step), metrics/logging, data movement (MultiAgentBatch/SampleBatch building, minibatch slicing,
                   shuffling, numpy <-> torch) and the update loop's own Python.
The three loops are timed in turns (product, bare, stock, product, ...; median time per update), so load that
drifts during the run falls on all of them alike. Rates are env steps of the batch per second (rows trained per
update are printed for both loops: equal work).
`--threads 0` uses the config's `training.torch_threads` (as SpadePPO sets it). The load average is recorded at start
and end: compare rates only within one run. The last line is one JSON object.
"""
from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.profile_iteration import SelfTimers  # noqa: E402
from bench.speed.measure import FIXED_OVERRIDES  # noqa: E402

MODELS = {"lstm": (), "mlp": FIXED_OVERRIDES}
ONE_LEARNER = ("training.num_env_runners=0", "evaluation.interval=0")

# Profile categories (the table's rows), in print order.
PHASES = ("batch: value pass", "batch: GAE", "batch: packing/padding (connector)", "forward", "loss",
          "backward", "optimizer: grad clip", "optimizer: step (+ finite checks)", "metrics/logging",
          "data movement (batch objects, slicing, shuffle, casts)", "update loop (RLlib Python)")


# ---------------------------------------------------------------------------- CLI
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "tune_configs" / "quickstart.yaml"))
    ap.add_argument("--models", default="lstm,mlp", help=f"comma list of {', '.join(MODELS)}")
    ap.add_argument("--seconds", type=float, default=8.0, help="measuring time per loop and row (after a warm-up)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads of every loop; 0 = the config's training.torch_threads")
    ap.add_argument("--profile-updates", type=int, default=3, help="real updates averaged in the per-phase profile")
    ap.add_argument("--skip-stock", action="store_true", help="skip the stock PPOTorchLearner row")
    ap.add_argument("--train-ab", type=float, default=0.0, metavar="SECONDS",
                    help="also train each row's config (its own layout) with the lean and the stock learner in "
                         "alternating windows, SECONDS of training each (0: skip)")
    ap.add_argument("--ab-window", type=float, default=10.0, help="seconds per window of --train-ab")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    args = ap.parse_args(argv)
    check_args(args)
    return args


def check_args(args: argparse.Namespace) -> None:
    """Bad values (NaN included) exit 2 with one line, before anything is built."""
    def bad(msg: str) -> None:
        print(msg, file=sys.stderr)
        raise SystemExit(2)

    if not (math.isfinite(args.seconds) and args.seconds > 0):
        bad(f"--seconds = {args.seconds}: must be a finite number > 0")
    if not (math.isfinite(args.train_ab) and args.train_ab >= 0):
        bad(f"--train-ab = {args.train_ab}: must be a finite number >= 0 (0 skips the training rows)")
    if not (math.isfinite(args.ab_window) and args.ab_window > 0):
        bad(f"--ab-window = {args.ab_window}: must be a finite number > 0")
    if not 0 <= args.threads <= 64:
        bad(f"--threads = {args.threads}: must be 0 (the config's) or 1..64")
    if not 1 <= args.profile_updates <= 100:
        bad(f"--profile-updates = {args.profile_updates}: must be 1..100")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models:
        bad(f"--models = {args.models!r}: name at least one of {', '.join(MODELS)}")
    for m in models:
        if m not in MODELS:
            from difflib import get_close_matches

            close = get_close_matches(m, MODELS, n=1)
            bad(f"--models: {m!r} is not a row{f' (did you mean {close[0]!r}?)' if close else ''}; allowed: {', '.join(MODELS)}")
    args.models = models
    if not Path(args.config).is_file():
        bad(f"--config = {args.config}: no such file")
    from bench.common import check_bench_args  # every row's whole config, before Ray (exit 2, one line)

    check_bench_args(args, config=args.config, overrides=args.overrides)
    args.row_fixed = {name: row_fixed(name, args) for name in models}
    args.row_overrides = {name: [*args.row_fixed[name], *ONE_LEARNER, *args.overrides] for name in models}
    check_bench_args(args, configs=[(f"--models {name} (its overrides {' '.join(args.row_overrides[name]) or 'none'})",
                                     functools.partial(row_raw, name, args)) for name in models])


def row_fixed(name: str, args: argparse.Namespace) -> list[str]:
    """Row `name`'s fixed-layout overrides, scoped to what `args.config`'s env has: the level size
    `env.difficulty` only on a level game (a row is then the config, one learner, the command's `--set` after)."""
    from spade_rllib.config.run_config import load_config

    level_game = load_config(args.config, args.overrides).resolved_env.is_level_game
    return [o for o in MODELS[name] if level_game or not o.startswith("env.difficulty=")]


def row_raw(name: str, args: argparse.Namespace) -> dict:
    """The raw config of row `name`: `args.config` with its overrides (`args.row_overrides`)."""
    from spade_rllib.config.run_config import apply_overrides, load_raw

    return apply_overrides(load_raw(args.config), args.row_overrides[name])


# ---------------------------------------------------------------------------- the loops
def sample_batch(algo) -> list:
    """One train batch of the product's runner (episodes as SpadePPO hands them to the learner)."""
    return algo.env_runner.sample(num_timesteps=int(algo.config.total_train_batch_size))


def update_kwargs(config) -> dict:
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, NUM_MODULE_STEPS_TRAINED_LIFETIME

    return dict(timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 0, NUM_MODULE_STEPS_TRAINED_LIFETIME: 0},
                num_epochs=config.num_epochs, minibatch_size=config.minibatch_size,
                shuffle_batch_per_epoch=config.shuffle_batch_per_epoch)


def rows_trained(result: dict) -> int:
    """Rows (agent steps and LSTM bootstrap rows, no padding) trained in one update, as RLlib counts them."""
    from ray.rllib.utils.metrics import ALL_MODULES, NUM_MODULE_STEPS_TRAINED

    if isinstance(result, list):  # LearnerGroup.update: one result per learner
        return sum(rows_trained(r) for r in result)
    stat = result.get(ALL_MODULES, {}).get(NUM_MODULE_STEPS_TRAINED)
    value = stat.peek() if hasattr(stat, "peek") else stat
    return int(value or 0)


def interleaved(loops: dict, seconds: float, cpu: bool = False) -> dict:
    """Median seconds per call of each loop, called in turn (one of each per round, after a warm-up round) for
    about `seconds` per loop: load that drifts during the run falls on every loop alike, so their ratios hold.
    `cpu`: also this process's CPU seconds per call (`time.process_time`), under "<name>_cpu": on a loaded
    machine the work a loop does, apart from the time it waits for a core."""
    times: dict = {name: [] for name in loops}
    cpu_times: dict = {name: [] for name in loops}
    for fn in loops.values():
        fn()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds * len(loops) or min(len(v) for v in times.values()) < 3:
        for name, fn in loops.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu_times[name].append(time.process_time() - start_cpu)
    out = {name: float(np.median(v)) for name, v in times.items()}
    if cpu:
        out.update({f"{name}_cpu": float(np.median(v)) for name, v in cpu_times.items()})
    return out


def learner_of(group):
    """The local learner object of a LearnerGroup (num_learners=0)."""
    return next(iter(group.foreach_learner(lambda learner: learner))).get()


def train_batch(module, episodes: list, gamma: float, lambda_: float) -> dict:
    """The connector's train batch of main (the product's learner connector, SpadeGAEConnector), as tensors."""
    from spade_rllib.rllib.packed import SpadeGAEConnector

    conn = SpadeGAEConnector(gamma=gamma, lambda_=lambda_)
    return conn(rl_module=module, batch={}, episodes=episodes, shared_data={})["main"]


def bare_update(module, batch: dict, *, epochs: int, minibatch_size: int, lr: float, clip: float, vf_clip: float,
                vf_coeff: float, entropy: float, grad_clip: float | None):
    """A bare torch PPO update closure over a copy of `module` (see the module docstring); returns (fn, rows/update)."""
    import torch

    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    module = copy.deepcopy(module)
    params = [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    seq = Columns.SEQ_LENS in batch
    n = batch[Columns.OBS].shape[0]  # rows (MLP) or sequences (LSTM)
    # RLlib's minibatch_size counts real rows; a sequence minibatch takes n * minibatch_size / rows sequences
    # (MiniBatchCyclicIterator), so both loops run the same number of minibatches of the same shape.
    per_mb = max(1, int(n * minibatch_size / int(batch[Columns.SEQ_LENS].sum()))) if seq else minibatch_size
    value_in = {Columns.OBS: batch[Columns.OBS]}
    if seq:  # the module's own sequence inputs (SEQ_LENS: its encoder skips padding rows, as in the product)
        value_in.update({Columns.STATE_IN: batch[Columns.STATE_IN], Columns.SEQ_LENS: batch[Columns.SEQ_LENS]})
    keys = [k for k in (Columns.OBS, Columns.ACTIONS, Columns.ACTION_LOGP, Postprocessing.ADVANTAGES,
                        Postprocessing.VALUE_TARGETS, Columns.LOSS_MASK, Columns.SEQ_LENS) if k in batch]

    def take(idx) -> dict:
        mb = {k: batch[k][idx] for k in keys}
        if seq:
            mb[Columns.STATE_IN] = {k: v[idx] for k, v in batch[Columns.STATE_IN].items()}
        return mb

    def step(mb: dict) -> None:
        out = module.forward_train(mb)
        logits = out[Columns.ACTION_DIST_INPUTS]
        logp_all = torch.log_softmax(logits, dim=-1)
        logp = logp_all.gather(-1, mb[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(logp - mb[Columns.ACTION_LOGP])
        adv = mb[Postprocessing.ADVANTAGES]
        surrogate = torch.min(adv * ratio, adv * torch.clamp(ratio, 1 - clip, 1 + clip))
        values = module.compute_values(mb, embeddings=out.get(Columns.EMBEDDINGS))
        vf = torch.clamp((values - mb[Postprocessing.VALUE_TARGETS]) ** 2, 0, vf_clip)
        ent = -(logp_all.exp() * logp_all).sum(-1)
        per_row = -surrogate + vf_coeff * vf - entropy * ent
        mask = mb.get(Columns.LOSS_MASK)
        loss = per_row[mask].sum() / mask.sum() if mask is not None else per_row.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()

    def update() -> None:
        with torch.no_grad():
            module.compute_values(value_in)  # the batch's value pass (GAE's input)
        # Cycled like RLlib's MiniBatchCyclicIterator: a fresh shuffle each epoch, minibatches may span two.
        order = torch.cat([torch.randperm(n) for _ in range(epochs)])
        for s in range(0, order.shape[0], per_mb):
            step(take(order[s:s + per_mb]))

    rows = epochs * (int(batch[Columns.SEQ_LENS].sum()) if seq else n)
    return update, rows


def bare_ceiling(algo, cfg, seconds: float) -> tuple[float, float]:
    """(learner, bare torch) env steps/s on one batch sampled by `algo`'s local runner, timed in turns
    (`interleaved`): `algo`'s own learner update and the bare loop over a copy of its module (for
    bench/speed/shipped_speed.py's rows)."""
    a = cfg.agent
    episodes = sample_batch(algo)
    group, kw = algo.learner_group, update_kwargs(algo.config)
    learner = learner_of(group)
    batch = train_batch(learner.module, episodes, a.gamma, a.lambda_)
    fn, _ = bare_update(learner.module["main"], batch, epochs=a.epochs, minibatch_size=a.minibatch_size, lr=a.lr,
                        clip=a.clip, vf_clip=a.vf_clip, vf_coeff=a.vf_coeff, entropy=a.entropy, grad_clip=a.grad_clip)
    per_call = interleaved({"learner": lambda: group.update(episodes=episodes, **kw), "bare": fn}, seconds)
    return a.train_batch_size / per_call["learner"], a.train_batch_size / per_call["bare"]


# ---------------------------------------------------------------------------- the profile
def install_learner_timers(t: SelfTimers) -> None:
    """Exclusive timers on the learner path of one update (classes patched in this process)."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.learner.learner import Learner
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
    from ray.rllib.utils import minibatch_utils
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from spade_rllib.rllib import packed
    from spade_rllib.rllib.module import SpadeModule

    def in_connector(name):
        return lambda parent: name if parent == "batch: packing/padding (connector)" else "forward"

    t.wrap(Learner, "update", "update loop (RLlib Python)")
    t.wrap(packed.SpadeGAEConnector, "__call__", "batch: packing/padding (connector)")
    t.wrap(packed, "gae", "batch: GAE")
    t.wrap(SpadeModule, "compute_values", in_connector("batch: value pass"))
    t.wrap(SpadeModule, "_forward_train", "forward")
    t.wrap(PPOTorchLearner, "compute_loss_for_module", "loss")
    t.wrap(TorchLearner, "compute_gradients", "backward")
    t.wrap(Learner, "postprocess_gradients", "optimizer: grad clip")
    t.wrap(TorchLearner, "apply_gradients", "optimizer: step (+ finite checks)")
    for name in ("log_value", "log_dict", "reduce", "peek"):
        t.wrap(MetricsLogger, name, "metrics/logging")
    for name in ("_log_steps_trained_metrics", "_log_metrics", "after_gradient_based_update",
                 "before_gradient_based_update"):
        t.wrap(Learner, name, "metrics/logging")
    t.wrap(TorchLearner, "_compute_off_policyness", "metrics/logging")
    t.wrap(PPOTorchLearner, "after_gradient_based_update", "metrics/logging")
    data = "data movement (batch objects, slicing, shuffle, casts)"
    t.wrap(minibatch_utils, "concat_samples", data)
    t.wrap(SampleBatch, "shuffle", data)
    t.wrap(SampleBatch, "__init__", data)
    t.wrap(MultiAgentBatch, "__init__", data)
    t.wrap(Learner, "_set_slicing_by_batch_id", data)
    t.wrap(TorchLearner, "_convert_batch_type", data)
    try:
        from spade_rllib.rllib import lean_learner
    except ImportError:
        return
    lean_learner.install_profile_timers(t, data)


TIMERS = SelfTimers()  # one set of timers for the process: the patched classes are shared by every row


def profile_update(group, episodes: list, kw: dict, updates: int) -> dict:
    """Seconds per update in each phase (exclusive), averaged over `updates` real updates."""
    t = TIMERS
    install_learner_timers(t)  # a no-op on classes already patched
    group.update(episodes=episodes, **kw)  # through the timers once, then measure
    t.reset()
    t0 = time.perf_counter()
    for _ in range(updates):
        group.update(episodes=episodes, **kw)
    wall = (time.perf_counter() - t0) / updates
    phases = {k: s / updates for k, (s, _) in t.report().items()}
    phases["(outside the timers)"] = max(0.0, wall - sum(phases.values()))
    return {"wall_s": wall, "phase_s": phases}


# ---------------------------------------------------------------------------- one row
def measure_row(name: str, args) -> dict:
    import torch

    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = load_config(args.config, args.row_overrides[name])
    threads = args.threads or cfg.training.torch_threads or min(4, os.cpu_count() or 1)
    a = cfg.agent
    algo = build_algo_config(cfg).build_algo()
    try:
        episodes = sample_batch(algo)
        torch.set_num_threads(threads)
        group, kw = algo.learner_group, update_kwargs(algo.config)
        learner = learner_of(group)
        product_rows = rows_trained(group.update(episodes=episodes, **kw))
        module = learner.module["main"]
        batch = train_batch(learner.module, episodes, a.gamma, a.lambda_)
        bare_fn, bare_rows = bare_update(module, batch, epochs=a.epochs, minibatch_size=a.minibatch_size, lr=a.lr,
                                         clip=a.clip, vf_clip=a.vf_clip, vf_coeff=a.vf_coeff, entropy=a.entropy,
                                         grad_clip=a.grad_clip)
        loops = {"product": lambda: group.update(episodes=episodes, **kw), "bare": bare_fn}
        stock_group = None if args.skip_stock else stock_learner_group(algo)
        if stock_group is not None:
            stock_kw = update_kwargs(stock_group._learner.config)
            loops["stock"] = lambda: stock_group.update(episodes=episodes, **stock_kw)
        stock_prof = None
        try:
            per_call = interleaved(loops, args.seconds, cpu=True)
            prof = profile_update(group, episodes, kw, args.profile_updates)  # last: its timers stay on the classes
            if stock_group is not None:
                stock_prof = profile_update(stock_group, episodes, stock_kw, args.profile_updates)
        finally:
            if stock_group is not None:
                stock_group.shutdown()
        product_ups, bare_ups = 1.0 / per_call["product"], 1.0 / per_call["bare"]
        stock_ups = 1.0 / per_call["stock"] if "stock" in per_call else math.nan
        learner_cls = type(learner).__name__
    finally:
        algo.stop()
    row = {
        "model": _model_text(cfg), "learner_class": learner_cls, "threads": threads,
        "batch_env_steps": int(cfg.agent.train_batch_size), "batch_rows": int(sum(len(e) for e in episodes)),
        "epochs": a.epochs, "minibatch_size": a.minibatch_size,
        "product_rows_per_update": product_rows, "bare_rows_per_update": bare_rows,
        "product_sps": round(product_ups * cfg.agent.train_batch_size, 1),
        "bare_sps": round(bare_ups * cfg.agent.train_batch_size, 1),
        "stock_learner_sps": None if math.isnan(stock_ups) else round(stock_ups * cfg.agent.train_batch_size, 1),
        "update_s": round(1.0 / product_ups, 4), "bare_update_s": round(1.0 / bare_ups, 4),
        "profile_wall_s": round(prof["wall_s"], 4),
        "profile_s": {k: round(v, 4) for k, v in sorted(prof["phase_s"].items(), key=lambda kv: -kv[1])},
        "stock_profile_wall_s": None if stock_prof is None else round(stock_prof["wall_s"], 4),
        "stock_profile_s": None if stock_prof is None else {k: round(v, 4) for k, v in stock_prof["phase_s"].items()},
    }
    row["ratio"] = round(row["product_sps"] / row["bare_sps"], 3)
    row["update_cpu_s"] = round(per_call["product_cpu"], 4)
    row["bare_update_cpu_s"] = round(per_call["bare_cpu"], 4)
    row["ratio_cpu"] = round(per_call["bare_cpu"] / per_call["product_cpu"], 3)  # bare CPU s / product CPU s
    if "stock_cpu" in per_call:
        row["stock_update_cpu_s"] = round(per_call["stock_cpu"], 4)
        row["stock_ratio_cpu"] = round(per_call["bare_cpu"] / per_call["stock_cpu"], 3)
    row["stock_ratio"] = None if row["stock_learner_sps"] is None else round(row["stock_learner_sps"] / row["bare_sps"], 3)
    return row


def stock_learner_group(algo):
    """A local LearnerGroup with RLlib's stock PPOTorchLearner, built from the same algorithm config (same module
    spec, connector, optimizer settings) and holding the same weights."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    config = algo.config.copy(copy_frozen=False).learners(learner_class=PPOTorchLearner)
    group = config.build_learner_group(env=None, spaces=None, rl_module_spec=config.get_multi_rl_module_spec())
    group.set_weights(algo.learner_group.get_weights())
    return group


def _model_text(cfg) -> str:
    m = cfg.agent.model
    text = f"{m.encoder} {'x'.join(map(str, m.hidden))} {m.activation}"
    return text + (f" + LSTM {m.lstm_cell_size} (max_seq_len {m.max_seq_len})" if m.memory == "lstm" else "")


def print_row(name: str, row: dict) -> None:
    stock = (f" | stock PPOTorchLearner {row['stock_learner_sps']:9,.0f} ({row['stock_ratio']:.2f} of bare)"
             if row["stock_learner_sps"] is not None else "")
    print(f"\n{name}: {row['model']}, learner {row['learner_class']}, {row['threads']} thread(s), batch "
          f"{row['batch_env_steps']:,} env steps ({row['batch_rows']:,} rows), {row['epochs']} epochs x minibatch "
          f"{row['minibatch_size']:,}", flush=True)
    print(f"  product update {row['product_sps']:9,.0f} env steps/s ({1000 * row['update_s']:.0f} ms, "
          f"{row['product_rows_per_update']:,} rows trained) | bare torch {row['bare_sps']:9,.0f} "
          f"({1000 * row['bare_update_s']:.0f} ms, {row['bare_rows_per_update']:,} rows) | ratio {row['ratio']:.3f}{stock}",
          flush=True)
    stock_cpu = (f", stock {1000 * row['stock_update_cpu_s']:.0f} ms ({row['stock_ratio_cpu']:.2f})"
                 if "stock_update_cpu_s" in row else "")
    print(f"  CPU time per update: product {1000 * row['update_cpu_s']:.0f} ms, bare {1000 * row['bare_update_cpu_s']:.0f} ms "
          f"(ratio {row['ratio_cpu']:.3f}){stock_cpu}", flush=True)
    wall, stock = row["profile_wall_s"], row.get("stock_profile_s") or {}
    stock_wall = row.get("stock_profile_wall_s")
    head = f" | stock PPOTorchLearner, {1000 * stock_wall:.0f} ms" if stock else ""
    print(f"  one real update, {1000 * wall:.0f} ms (timers on){head}:")
    print(f"  {'phase':<56} {'ms':>7} {'share':>6}" + (f" {'stock ms':>9} {'share':>6}" if stock else ""))
    for k in [*row["profile_s"], *[k for k in stock if k not in row["profile_s"]]]:
        v = row["profile_s"].get(k, 0.0)
        extra = f" {1000 * stock.get(k, 0.0):9.1f} {100 * stock.get(k, 0.0) / stock_wall:5.1f}%" if stock else ""
        print(f"  {k:<56} {1000 * v:7.1f} {100 * v / wall:5.1f}%{extra}")


def train_ab(name: str, args) -> dict:
    """Full training (`SpadePPO.train()`, the config's own layout: remote runner, sample-ahead) with the lean and
    the stock learner, two algorithms built side by side and trained in alternating windows of `--ab-window`
    seconds for about `--train-ab` seconds each: env steps/s and the learn share of each, under the same load."""
    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config

    extra = [*args.row_fixed[name], "evaluation.interval=0", *args.overrides]
    algos = {}
    try:
        for kind, lean in (("lean", "true"), ("stock", "false")):
            algos[kind] = build_algo_config(load_config(args.config, [*extra, f"training.lean_learner={lean}"])).build_algo()
        for algo in algos.values():
            for _ in range(2):  # warm-up: the first iterations build and fill the sample-ahead pipeline
                algo.train()
        totals = {k: {"env_steps": 0, "seconds": 0.0, "learn_s": 0.0, "iterations": 0} for k in algos}
        while min(t["seconds"] for t in totals.values()) < args.train_ab:
            for kind, algo in algos.items():
                t, t0 = totals[kind], time.perf_counter()
                while time.perf_counter() - t0 < args.ab_window:
                    r = algo.train()
                    t["env_steps"] += int(r["env_runners"]["num_env_steps_sampled"])
                    t["learn_s"] += float(r.get("spade", {}).get("phase_s", {}).get("learn", 0.0))
                    t["iterations"] += 1
                t["seconds"] += time.perf_counter() - t0
    finally:
        for algo in algos.values():
            algo.stop()
    out = {k: {"sps": round(t["env_steps"] / t["seconds"], 1), "learn_share": round(t["learn_s"] / t["seconds"], 3),
               **t, "seconds": round(t["seconds"], 1), "learn_s": round(t["learn_s"], 1)} for k, t in totals.items()}
    out["speedup"] = round(out["lean"]["sps"] / out["stock"]["sps"], 3)
    print(f"  training, {args.ab_window:g} s windows in turns: lean {out['lean']['sps']:,.0f} env steps/s (learn "
          f"{100 * out['lean']['learn_share']:.0f}%) | stock learner {out['stock']['sps']:,.0f} (learn "
          f"{100 * out['stock']['learn_share']:.0f}%) | speedup {out['speedup']:.2f}", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import ray
    import torch

    load_start = os.getloadavg()[0]
    # Logical CPUs: --train-ab holds two algorithms with a runner each (they never sample at the same moment).
    ray.init(num_cpus=max(4, os.cpu_count() or 1), include_dashboard=False, log_to_driver=False)
    out: dict = {"config": os.path.relpath(args.config, ROOT) if os.path.isabs(args.config) else args.config,
                 "overrides": args.overrides, "seconds": args.seconds, "rows": {}}
    try:
        for name in args.models:
            row = measure_row(name, args)
            out["rows"][name] = row
            print_row(name, row)
            if args.train_ab > 0:
                row["train_ab"] = train_ab(name, args)
    finally:
        ray.shutdown()
    out.update(target_ratio=0.8, target_met=all(r["ratio"] >= 0.8 for r in out["rows"].values()),
               target_met_cpu=all(r["ratio_cpu"] >= 0.8 for r in out["rows"].values()),
               cpus=os.cpu_count(), torch_version=torch.__version__, load_avg_1m_start=round(load_start, 2),
               load_avg_1m_end=round(os.getloadavg()[0], 2))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
