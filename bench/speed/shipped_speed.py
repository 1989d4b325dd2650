"""Training speed of the shipped configs as users run them, with where the time goes, against a fixed-layout
row and the learner ceiling measured in the same run.

    python bench/speed/train_speed.py --shipped-configs [quickstart,flagship,league,connect_four] [--seconds 45]
    python bench/speed/shipped_speed.py [--configs quickstart,flagship] [--seconds 45]

Each config row is the real command, `python -m spade_rllib.train --config tune_configs/<name>.yaml`, with its own
env, curriculum, league, evaluation and checkpoint settings, stopped after `--seconds` of training
(`training.stop.time_s`), with no final evaluation. Its figures come from the trial's `result.json`, every
iteration after the first `WARMUP_ITERS`:
  sps              env steps / the iterations' wall time (`time_this_iter_s`);
  spread           p10 / median / p90 of the per-iteration env steps/s;
  phase_s          seconds per phase summed over those iterations (`spade/phase_s`, spade_rllib.training.phases):
                   sample_wait, learn, weight_sync, outcomes, components (league, curriculum, ... inside it),
                   evaluation, heldout, checkpoint, other; phase_share the same as shares;
  command_s        the whole command's wall time; overhead_s what it spent outside training iterations
                   (Ray start, building, the end-of-run summary and report).
The baselines, in the same run:
  fixed            the quickstart's layout with the MLP [128, 128] on fixed 9x9 levels (difficulty 4: the middle
                   of the quickstart's 7-11), curriculum and periodic evaluation off, through the same command;
  learner_ceiling  that config's learner alone (`learner_group.update` on one sampled batch, every epoch
                   and minibatch), in env steps/s, measured in this process;
  learner_over_bare  the learner's update / a bare torch PPO loop on the same module, batch, epochs and minibatches,
                   timed in turns (bench/speed/learner_ceiling.py); bare_torch_ceiling_sps = learner_ceiling / that;
  stock_equal      stock RLlib PPO configured like the fixed row (bench/speed/train_speed.py's stock row: the stock
                   multi-agent runner over the same game, same batch, epochs, model), in this process
                   (`--stock-seconds 0` skips it).
`--variant KEY=VALUE` (repeatable): each config again with that override, right after its row (`variants`); several
overrides in one variant are separated by ";" (e.g. `env.kwargs={plan: true, cell_memory: 21};agent.model.planner=vin`).
`--stock-learner`: each training row again right after it with RLlib's stock PPO learner
(`training.lean_learner=false`): `<row>.stock_learner` and `speedup_over_stock_learner` (before/after, one run).
Ratios per config: over_fixed = sps / fixed sps (overhead of its own settings), over_learner = sps /
learner_ceiling; fixed_over_learner = fixed sps / learner_ceiling. The machine's load average is recorded at
start and end: timed rows mean something only on a quiet machine. The last line is one JSON object.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.measure import FIXED_OVERRIDES  # noqa: E402

SHIPPED = ("quickstart", "flagship", "league", "connect_four")
FIXED = "fixed"
WARMUP_ITERS = 2


def read_results(trial: Path) -> list[dict]:
    """The trial's per-iteration results (Tune's result.json, one JSON object a line)."""
    rows = []
    for line in (trial / "result.json").read_text().splitlines():
        line = line.strip()
        if line:
            rows.append(json.loads(line))
    return rows


def summarize(results: list[dict], warmup: int = WARMUP_ITERS) -> dict:
    """sps, spread, phase seconds and shares of the iterations after `warmup` (pure: tested on synthetic rows)."""
    from spade_rllib.training.console import iteration_rate
    from spade_rllib.training.phases import PhaseTotals, phase_shares, rate_spread
    from spade_rllib.artifacts.result_lookup import result_value

    rows = results[warmup:] if len(results) > warmup else results
    totals = PhaseTotals()
    steps = wall = 0.0
    for r in rows:
        n = float(result_value(r, "env_runners/num_env_steps_sampled", 0) or 0)
        t = float(r.get("time_this_iter_s") or 0.0)
        steps, wall = steps + n, wall + t
        phases = result_value(r, "spade/phase_s", {})
        totals.add(phases if isinstance(phases, dict) else {}, iteration_rate(r))
    return {
        "iterations": len(rows),
        "env_steps": int(steps),
        "seconds": round(wall, 2),
        "sps": round(steps / wall, 1) if wall > 0 else math.nan,
        "spread": {k: round(v, 1) for k, v in rate_spread(totals.rates).items()},
        "phase_s": {k: round(v, 3) for k, v in sorted(totals.seconds.items())},
        "phase_share": {k: round(v, 3) for k, v in sorted(phase_shares(totals.seconds).items())},
    }


def run_config(name: str, seconds: float, out_dir: Path, extra: tuple = (), label: str = "") -> dict:
    """Train tune_configs/<name>.yaml (with `extra` overrides, as experiment `label`, default `name`) for
    `seconds` through the user's command; its summary (see `summarize`)."""
    config = ROOT / "tune_configs" / f"{name}.yaml"
    label = label or name
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", str(config),
           "--set", f"training.stop.time_s={seconds:g}", "--set", "training.stop.env_steps=null",
           "--set", "training.stop.iterations=null",
           "--set", f"experiment.storage_path={out_dir}", "--set", f"experiment.name={label}",
           "--final-eval-games", "0", "--final-replays", "0"]
    for o in extra:
        cmd += ["--set", o]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "CI": "1"})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"{name}: train exited {proc.returncode}: " + " / ".join(tail))
    trials = sorted((out_dir / label).glob("*/result.json"))
    if not trials:
        raise RuntimeError(f"{name}: no result.json under {out_dir / label}")
    results = read_results(trials[-1].parent)
    out = summarize(results)
    total = float(results[-1].get("time_total_s") or 0.0)
    out.update(command_s=round(wall, 1), overhead_s=round(wall - total, 1), config=f"tune_configs/{config.name}")
    return out


def in_process(name: str, overrides: tuple, seconds: float, stock_seconds: float = 0.0) -> tuple[float, float, float]:
    """(learner ceiling, learner / bare torch, stock RLlib's train env steps/s) of that config, measured in this
    process: its learner alone (bench/speed/train_speed.py's `learner_only`), its learner against a bare torch PPO loop on
    the same module and batch timed in turns (bench/speed/learner_ceiling.py's `bare_ceiling`), and stock RLlib PPO
    configured like it (`stock(equal=True)`; NaN when `stock_seconds` is 0)."""
    import ray

    from bench.speed.learner_ceiling import bare_ceiling
    from bench.speed.measure import learner_only, set_learner_threads, stock
    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = load_config(ROOT / "tune_configs" / f"{name}.yaml", list(overrides))
    ray.init(num_cpus=cfg.resources.num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        set_learner_threads(cfg)
        algo = build_algo_config(cfg).build_algo()
        try:
            ceiling = learner_only(algo, cfg, seconds)
            learner, bare = bare_ceiling(algo, cfg, seconds)
        finally:
            algo.stop()
        stock_sps = stock(cfg, stock_seconds, equal=True)["train_sps"] if stock_seconds > 0 else math.nan
        return ceiling, learner / bare, stock_sps
    finally:
        ray.shutdown()


def shipped_rows(configs: list[str], seconds: float, ceiling_seconds: float = 10.0, stock_seconds: float = 20.0,
                 stock_learner: bool = False, variants: tuple = ()) -> dict:
    """Every row and ratio of this bench (see the module docstring). Bad durations (NaN included) exit with
    one line before anything runs. `stock_learner`: every training row again with RLlib's stock PPO learner
    (`training.lean_learner=false`), right after its own row, as `<row>_stock_learner` (the before of a
    before/after in one run; speedup = sps / that row's sps)."""
    check_seconds(seconds, stock_seconds)
    out: dict = {"configs": {}, "seconds": seconds, "load_avg_1m_start": round(os.getloadavg()[0], 2)}
    stock_learner_set = ("training.lean_learner=false",)
    with tempfile.TemporaryDirectory(prefix="spade_shipped_") as tmp:
        tmp_path = Path(tmp)
        fixed = run_config("quickstart", seconds, tmp_path, extra=FIXED_OVERRIDES, label=FIXED)
        print(f"{'fixed (quickstart, 9x9)':<26} {fixed['sps']:9,.0f} env steps/s | {_phase_line(fixed)}", flush=True)
        if stock_learner:
            base = run_config("quickstart", seconds, tmp_path, extra=(*FIXED_OVERRIDES, *stock_learner_set),
                              label=f"{FIXED}_stock_learner")
            fixed["stock_learner"] = base
            fixed["speedup_over_stock_learner"] = round(fixed["sps"] / base["sps"], 3)
            print(f"{'  with stock PPO learner':<26} {base['sps']:9,.0f} env steps/s | {_phase_line(base)}", flush=True)
        ceiling, over_bare, stock_sps = in_process("quickstart", FIXED_OVERRIDES, ceiling_seconds, stock_seconds)
        print(f"{'learner ceiling':<26} {ceiling:9,.0f} env steps/s | {over_bare:.2f} of a bare torch loop on the "
              f"same module and batch", flush=True)
        if stock_seconds > 0:
            print(f"{'stock RLlib, like fixed':<26} {stock_sps:9,.0f} env steps/s (in process, synchronous)", flush=True)
        out.update(fixed=fixed, fixed_overrides=list(FIXED_OVERRIDES), learner_ceiling_sps=round(ceiling, 1),
                   bare_torch_ceiling_sps=round(ceiling / over_bare, 1), learner_over_bare=round(over_bare, 3),
                   fixed_over_learner=round(fixed["sps"] / ceiling, 3),
                   stock_equal_sps=None if math.isnan(stock_sps) else round(stock_sps, 1),
                   fixed_over_stock=None if math.isnan(stock_sps) else round(fixed["sps"] / stock_sps, 2))
        for name in configs:
            row = run_config(name, seconds, tmp_path)
            row.update(over_fixed=round(row["sps"] / fixed["sps"], 3), over_learner=round(row["sps"] / ceiling, 3))
            out["configs"][name] = row
            print(f"{name:<26} {row['sps']:9,.0f} env steps/s | x{row['over_fixed']:.2f} of fixed | "
                  f"{_phase_line(row)}", flush=True)
            for i, v in enumerate(variants):
                var = run_config(name, seconds, tmp_path, extra=tuple(v.split(";")), label=f"{name}_variant{i}")
                row.setdefault("variants", {})[v] = var
                print(f"{'  with ' + v:<26} {var['sps']:9,.0f} env steps/s | {_phase_line(var)}", flush=True)
            if stock_learner:
                base = run_config(name, seconds, tmp_path, extra=stock_learner_set, label=f"{name}_stock_learner")
                row["stock_learner"] = base
                row["speedup_over_stock_learner"] = round(row["sps"] / base["sps"], 3)
                print(f"{'  with stock PPO learner':<26} {base['sps']:9,.0f} env steps/s | {_phase_line(base)}",
                      flush=True)
    out["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    return out


def check_seconds(seconds: float, stock_seconds: float) -> None:
    """--seconds > 0 and --stock-seconds >= 0, both finite, or one line and exit 2."""
    for flag, value, low in (("--seconds", seconds, 1e-9), ("--stock-seconds", stock_seconds, 0.0)):
        if not (math.isfinite(value) and value >= low):
            print(f"{flag} = {value}: must be a finite number {'> 0' if low else '>= 0'}", file=sys.stderr)
            raise SystemExit(2)


def _phase_line(row: dict) -> str:
    from spade_rllib.training.phases import phase_text

    s = row["spread"]
    return (f"{phase_text(row['phase_s'], 0.005)} | per iteration p10 {s['p10']:,.0f} median {s['median']:,.0f} "
            f"p90 {s['p90']:,.0f}")


def parse_configs(text: str) -> list[str]:
    """'quickstart,flagship' -> names; every name must be a shipped config under tune_configs/."""
    names = [n.strip() for n in (text or ",".join(SHIPPED)).split(",") if n.strip()]
    for n in names:
        if not (ROOT / "tune_configs" / f"{n}.yaml").is_file():
            from spade_rllib.core.validation import did_you_mean

            raise SystemExit(f"--configs: {n!r} is not a config under tune_configs/{did_you_mean(n, SHIPPED)}; "
                             f"shipped: {', '.join(SHIPPED)}")
    return names


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(SHIPPED), help="comma list of tune_configs/<name>.yaml")
    ap.add_argument("--seconds", type=float, default=45.0, help="training seconds per config")
    ap.add_argument("--stock-seconds", type=float, default=20.0, help="stock RLlib's row (0: skip it)")
    ap.add_argument("--stock-learner", action="store_true",
                    help="every row again with RLlib's stock PPO learner (training.lean_learner=false): before/after")
    ap.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra row of each config with this override, right after it (e.g. training.torch_threads=2)")
    args = ap.parse_args(argv)
    for v in args.variant:
        if any("=" not in part for part in v.split(";")):
            print(f"--variant {v!r}: expected KEY=VALUE, e.g. training.torch_threads=2", file=sys.stderr)
            raise SystemExit(2)
        from spade_rllib.config.run_config import ConfigError, load_config

        try:  # a bad key or value says so now, not after the first rows have run
            load_config(ROOT / "tune_configs" / "quickstart.yaml", v.split(";"))
        except ConfigError as e:
            print(f"--variant {v!r}: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    out = shipped_rows(parse_configs(args.configs), args.seconds, stock_seconds=args.stock_seconds,
                       stock_learner=args.stock_learner, variants=tuple(args.variant))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
