"""Sweeps: `python -m spade_rllib.tune` (issue 7).

Fast (no Ray): sweep YAML validation, the bad-name error, Student-t quantiles and intervals, the
report (groups, heatmap), the trial's placement-group request for --gpus-per-trial.
Ray (subprocesses that start their own 2-CPU local Ray, --smoke budgets):
  * PBT: after an exploit/explore step the learner trains with the new lr/entropy/clip
    (read back from `learners/main/trained_with/...`, measured before the update);
  * seeds: killed mid-run (SIGKILL of the whole process group), then `--resume` keeps the finished
    trial, continues the interrupted one from its checkpoint, and writes summary.csv, groups.csv
    (mean, std, t interval), plots and a best checkpoint.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
SWEEP_TIMEOUT = 420  # seconds; a timeout is a failure


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")  # experiment state written every second (resume test)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(args: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "spade_rllib.tune", *args], cwd=REPO, capture_output=True, text=True, env=_env(), **kw)


def _results(trial_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# No Ray
# ---------------------------------------------------------------------------------------------


def test_bad_sweep_name_one_line_error():
    p = _run(["--sweep", "lr_gama"], timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    assert "unknown sweep" in lines[0] and "did you mean 'lr_gamma'" in lines[0]
    for name in ("asha", "lr_gamma", "pbt", "seeds"):
        assert name in lines[0]
    assert "Traceback" not in p.stderr


def _write(tmp_path: Path, text: str) -> str:
    base = tmp_path / "base.yaml"
    base.write_text((REPO / "tune_configs" / "quickstart.yaml").read_text())
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text, needle", [
    ("base: base.yaml\nspaec: {}\n", "spaec: unknown key (did you mean 'space'?)"),
    ("base: base.yaml\nspace: {agent.lr: {gird: [1, 2]}}\n", "space.agent.lr.gird: unknown distribution (did you mean 'grid'?)"),
    ("base: base.yaml\nspace: {agent.lr: {loguniform: [0, 1.0e-3]}}\n", "loguniform needs low > 0"),
    ("base: base.yaml\nspace: {agent.lr: {uniform: [2, 1]}}\n", "low must be < high"),
    ("base: base.yaml\nspace: {agent.lrr: {grid: [1.0e-3]}}\n", "space.agent.lrr = 0.001: agent.lrr: unknown key (did you mean 'lr'?)"),
    ("base: base.yaml\nspace: {agent.gamma: {grid: [0.9, 1.5]}}\n", "space.agent.gamma = 1.5: agent.gamma = 1.5: out of range"),
    ("base: base.yaml\nmetric: {mode: maximum}\n", "metric.mode = 'maximum': not allowed (did you mean 'max'?)"),
    ("base: base.yaml\nscheduler: {type: pbt}\n", "pbt needs at least one hyperparameter to mutate"),
    ("base: base.yaml\nscheduler: {type: hyperband}\n", "scheduler.type = 'hyperband': not allowed"),
    ("base: base.yaml\nscheduler: {type: asha, grace_priod: 2}\n", "scheduler.grace_priod: unknown key (did you mean 'grace_period'?)"),
    ("base: base.yaml\nbudget: {num_samples: 0}\n", "budget.num_samples = 0: out of range"),
    ("base: nope.yaml\n", "base = 'nope.yaml': file not found"),
    ("base: base.yaml\nsmoke: {bugdet: {}}\n", "smoke.bugdet: unknown key (did you mean 'budget'?)"),
    ("base: base.yaml\nspace: {agent.lr: {grid: [1.0e-3]}}\nreport: {heatmap: [agent.lr, agent.gama]}\n", "report.heatmap[1] = 'agent.gama': not a space key"),
    ("base: base.yaml\noverrides: {agent.entropy_schedule: [[0, 0.1], [1000, 0.01]]}\n"
     "space: {agent.entropy: {grid: [0.01, 0.05]}}\n",
     "space.agent.entropy: has no effect, the base config sets agent.entropy_schedule = [[0, 0.1], [1000, 0.01]]"),
    ("base: base.yaml\noverrides: {agent.entropy_schedule: [[0, 0.1], [1000, 0.01]]}\n"
     "scheduler: {type: pbt, mutations: {agent.entropy: {uniform: [0.01, 0.1]}}}\n",
     "scheduler.mutations.agent.entropy: has no effect"),
    ("base: base.yaml\noverrides: {agent.teacher: raider, agent.teacher_schedule: [[0, 1.0], [1000, 0.0]]}\n"
     "space: {agent.teacher_coeff: {grid: [0.5, 1.0]}}\n",
     "space.agent.teacher_coeff: has no effect, the base config sets agent.teacher_schedule"),
    ("base: base.yaml\noverrides: {env.signal_schedule: {tag_reward: [[0, 0.1], [1000, 0.0]]}}\n"
     "scheduler: {type: pbt, mutations: {env.kwargs.tag_reward: {uniform: [0.0, 0.2]}}}\n",
     "env.signal_schedule.tag_reward: env.kwargs.tag_reward is set too"),
])
def test_spec_validation_one_line_errors(tmp_path, text, needle):
    from spade_rllib.sweeps.sweep_spec import load_sweep

    with pytest.raises(ConfigError) as e:
        load_sweep(_write(tmp_path, text))
    msg = str(e.value)
    assert needle in msg, msg
    assert "\n" not in msg


def test_shipped_sweeps_load_and_smoke_is_tiny():
    from spade_rllib.sweeps.sweep_spec import available_sweeps, load_sweep

    assert {"lr_gamma", "seeds", "pbt", "asha"} <= set(available_sweeps())
    full, _ = load_sweep("lr_gamma")
    assert full.num_trials() == 12 and full.report.heatmap == ["agent.lr", "agent.gamma"]
    seeds, _ = load_sweep("seeds")
    assert seeds.space["experiment.seed"].values == (0, 1, 2, 3, 4)
    pbt, _ = load_sweep("pbt")
    assert set(pbt.scheduler.mutations) == {"agent.lr", "agent.entropy", "agent.clip"}
    c4, c4_base = load_sweep("c4_strength")
    assert c4.num_trials() == 4 and c4.budget.max_concurrent == 1 and c4.metric.name == "eval/bot:tactical/win_rate"
    assert c4_base["evaluation"]["random_opening_plies"] == 2 and c4_base["evaluation"]["opponents"] == ["bot:tactical"]
    for name in ("lr_gamma", "seeds", "pbt", "asha", "c4_strength"):
        spec, base = load_sweep(name, smoke=True, sets=("training.torch_threads=1",))
        assert 2 <= spec.num_trials() <= 4, name
        assert 2 <= base["training"]["stop"].get("iterations", 0) <= 4 and "time_s" not in base["training"]["stop"], name
        assert base["agent"]["train_batch_size"] <= 512 and base["training"]["checkpoint_every"] == 1
        assert spec.experiment_name.endswith("-smoke")


def test_the_leduc_ppo_sweep_minimizes_exact_exploitability_on_two_cpus():
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.sweeps.sweep_spec import load_sweep
    from spade_rllib.tune import trial_cpus

    spec, base = load_sweep("leduc_ppo")
    cfg = parse_config(base)
    assert spec.num_trials() == 8 and spec.budget.max_concurrent == 1
    assert (spec.metric.name, spec.metric.mode) == ("exploitability/main", "min")
    assert cfg.env.id == "leduc_poker" and not cfg.league.enabled and cfg.evaluation.exploitability_interval == 5
    assert cfg.training.stop.env_steps == 2_000_000 and trial_cpus(cfg, None) <= 2


def test_auto_metric_prefers_the_heldout_score_then_the_eval_win_rate():
    from types import SimpleNamespace

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.sweeps.sweep_spec import load_sweep, metric_candidates
    from spade_rllib.sweeps.trainable import SweepPPO

    spec, base = load_sweep("lr_gamma")
    keys = metric_candidates(spec, parse_config(base))
    assert keys[:4] == ["heldout/ladder/score", "heldout/rusher_tagger/score", "heldout/rusher_tagger/win_rate",
                        "eval/random/win_rate"]
    trial = SimpleNamespace(_sweep_candidates=keys, _sweep_key=None, _sweep_last=math.nan)
    assert SweepPPO._objective(trial, {"eval": {"random": {"win_rate": 0.75}}}) == 0.75
    # held-out results arrive later and take over; all draws against rusher_tagger score 0.5, not 0
    result = {"eval": {"random": {"win_rate": 1.0}}, "heldout": {"rusher_tagger": {"win_rate": 0.0, "score": 0.5}}}
    assert SweepPPO._objective(trial, result) == 0.5
    assert result["sweep"]["objective_key"] == "heldout/rusher_tagger/score"
    # the ladder mean (over the scripted bots) outranks the single bot once reported
    result = {"heldout": {"ladder": {"score": 0.25}, "rusher_tagger": {"score": 0.5}}}
    assert SweepPPO._objective(trial, result) == 0.25 and result["sweep"]["objective_key"] == "heldout/ladder/score"


@pytest.mark.parametrize("name", ["lr_gamma", "pbt", "asha"])
def test_shipped_sweeps_rank_on_the_heldout_ladder(name):
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.sweeps.sweep_spec import load_sweep, metric_candidates

    spec, base = load_sweep(name)
    cfg = parse_config(base)
    assert spec.metric.name == "auto" and metric_candidates(spec, cfg)[0] == "heldout/ladder/score"
    assert cfg.evaluation.interval >= 1 and len(cfg.evaluation.heldout_levels) == 1
    assert all(Path(p).is_absolute() and Path(p).is_dir() for p in base["evaluation"]["heldout_levels"])
    # --smoke turns held-out off: its first result would come after the 2-4 iterations of a smoke
    # run, so the objective there is the eval win rate (PBT needs a finite one to exploit)
    spec, base = load_sweep(name, smoke=True)
    assert parse_config(base).evaluation.heldout_levels == []


def test_smoke_section_replaces_space_entries_and_set_overrides(tmp_path):
    from spade_rllib.sweeps.sweep_spec import load_sweep

    path = _write(tmp_path, "base: base.yaml\nspace: {agent.lr: {loguniform: [1.0e-4, 1.0e-3]}}\n"
                            "budget: {stop: {time_s: 100}}\nsmoke: {space: {agent.lr: {grid: [1.0e-3]}}}\n")
    spec, base = load_sweep(path)
    assert spec.space["agent.lr"].kind == "loguniform" and base["training"]["stop"] == {"time_s": 100}
    spec, base = load_sweep(path, smoke=True, sets=("training.stop.iterations=3", "agent.gamma=0.9"))
    assert spec.space["agent.lr"].values == (1e-3,) and spec.experiment_name == "sweep-s-smoke"
    assert base["training"]["stop"] == {"iterations": 3} and base["agent"]["gamma"] == 0.9


def test_t_quantile_and_seed_interval():
    from spade_rllib.sweeps.stats import seed_interval, t_cdf, t_quantile

    # scipy.stats.t.ppf reference values
    for p, df, ref in [(0.975, 1, 12.7062047), (0.975, 2, 4.3026527), (0.975, 4, 2.7764451), (0.975, 9, 2.2621572),
                       (0.975, 30, 2.0422725), (0.95, 4, 2.1318468), (0.995, 10, 3.1692727)]:
        assert t_quantile(p, df) == pytest.approx(ref, rel=1e-6), (p, df)
        assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)
    assert t_quantile(0.025, 4) == pytest.approx(-2.7764451, rel=1e-6)
    iv = seed_interval([0.5, 0.6, 0.7, 0.55, 0.65])
    assert iv.n == 5 and iv.mean == pytest.approx(0.6) and iv.std == pytest.approx(0.0790569, rel=1e-5)
    assert (iv.high - iv.mean) == pytest.approx(2.7764451 * 0.0790569 / math.sqrt(5), rel=1e-5)
    assert seed_interval([0.3, float("nan")]).n == 1 and math.isnan(seed_interval([0.3]).low)


def test_iqm_bootstrap_and_intervals_clipped_to_the_metric_range():
    from spade_rllib.sweeps.stats import bootstrap_interval, iqm, metric_bounds, seed_interval

    assert iqm([0.0, 1.0, 2.0, 3.0, 100.0, -100.0, 1.5, 2.5]) == pytest.approx(np.mean([1.0, 1.5, 2.0, 2.5]))
    lo, hi = bootstrap_interval([0.1, 0.2, 0.3, 0.4, 0.5], confidence=0.9, seed=1)
    assert 0.1 <= lo < 0.3 < hi <= 0.5
    assert bootstrap_interval([0.1, 0.2, 0.3, 0.4, 0.5], seed=1) == bootstrap_interval([0.1, 0.2, 0.3, 0.4, 0.5], seed=1)
    assert all(math.isnan(x) for x in bootstrap_interval([0.1, 0.2, 0.3], n_boot=0))  # no bootstrap asked for
    no_boot, full = seed_interval([0.1, 0.2, 0.4], n_boot=0), seed_interval([0.1, 0.2, 0.4])
    assert (no_boot.mean, no_boot.low, no_boot.high) == (full.mean, full.low, full.high) and math.isnan(no_boot.iqm_low)
    # n=2 win rates: the t interval runs far outside [0, 1] unclipped (the old sweep printed [-1.46, 1.71])
    raw = seed_interval([0.05, 0.2])
    assert raw.low < 0 and raw.high > 1
    clipped = seed_interval([0.05, 0.2], bounds=metric_bounds("eval/random/win_rate"))
    assert (clipped.low, clipped.high) == (0.0, 1.0) and 0.0 <= clipped.iqm_low <= clipped.iqm <= clipped.iqm_high <= 1.0
    assert "IQM" in clipped.describe() and "clipped to [0, 1]" in clipped.describe()
    assert metric_bounds("heldout/ladder/score") == (0.0, 1.0) and metric_bounds("env_runners/episode_return_mean") is None


def test_report_groups_and_heatmap(tmp_path):
    from spade_rllib.sweeps.sweep_report import TrialRow, seed_groups, write_report
    from spade_rllib.sweeps.sweep_spec import load_sweep

    spec, _ = load_sweep("lr_gamma")
    rows = []
    for i, (lr, g, seed) in enumerate([(lr, g, s) for lr in (1e-4, 3e-4, 1e-3) for g in (0.95, 0.99) for s in (0, 1)]):
        final = 0.1 * i
        rows.append(TrialRow(f"t{i:02d}", "TERMINATED", {"agent.lr": lr, "agent.gamma": g, "experiment.seed": seed}, 3, 100,
                             final, final, f"/x/t{i}/checkpoint_000002", f"/x/t{i}", "eval/random/win_rate",
                             [(1, 0.0), (2, final / 2), (3, final)]))
    out = []
    rep = write_report(spec, rows, tmp_path, "eval/random/win_rate", printer=out.append)
    names = {f.name for f in rep["files"]}
    assert {"summary.csv", "groups.csv", "metric_over_time.png", "heatmap.png", "best_checkpoint.txt"} <= names
    assert rep["best"].trial_id == "t11"
    assert (tmp_path / "best_checkpoint.txt").read_text().strip() == "/x/t11/checkpoint_000002"
    groups = seed_groups(rows, 0.95)
    assert len(groups) == 6 and all(g.interval.n == 2 for g in groups)
    assert len((tmp_path / "summary.csv").read_text().splitlines()) == 13


def test_gpus_per_trial_sets_learner_gpus_and_placement_group():
    """--gpus-per-trial 0.25 -> RLlib num_gpus_per_learner and the Tune trial's placement group (no GPU needed)."""
    from ray import tune
    from ray.tune.experiment import Trial

    from spade_rllib import tune as cli
    from spade_rllib.sweeps.trainable import SweepPPO, algo_config_from_trial

    tune.register_trainable("SweepPPO_test_resources", SweepPPO)

    def trial_bundles(argv):
        args = cli.parse_args(argv)
        spec, base = cli.resolve(args)
        config = cli.example_trial_config(cli.trial_template(spec, base, args), spec)
        trial = Trial("SweepPPO_test_resources", config=config)
        trial.create_placement_group_factory()
        return algo_config_from_trial(config), trial.placement_group_factory

    algo, pgf = trial_bundles(["--sweep", "seeds", "--smoke", "--gpus-per-trial", "0.25"])
    assert algo.num_gpus_per_learner == 0.25 and algo.num_learners == 0
    assert pgf.bundles == [{"CPU": 1.0, "GPU": 0.25}]  # local learner: the trial's main bundle holds the GPU share
    assert pgf.required_resources == {"CPU": 1.0, "GPU": 0.25}

    algo, pgf = trial_bundles(["--sweep", "seeds", "--smoke", "--gpus-per-trial", "0.25", "--cpus-per-trial", "4",
                               "--set", "resources.num_learners=2", "--set", "curriculum.plr.score=learnability"])
    assert algo.num_gpus_per_learner == 0.125 and algo.num_learners == 2
    assert pgf.bundles == [{"CPU": 2.0}, {"CPU": 1.0, "GPU": 0.125}, {"CPU": 1.0, "GPU": 0.125}]
    assert pgf.required_resources == {"CPU": 4.0, "GPU": 0.25}

    _, pgf = trial_bundles(["--sweep", "seeds", "--smoke"])
    assert pgf.required_resources == {"CPU": 1.0}

    with pytest.raises(ConfigError, match="--cpus-per-trial 2: too few"):
        trial_bundles(["--sweep", "seeds", "--smoke", "--cpus-per-trial", "2", "--set", "training.num_env_runners=2"])


# ---------------------------------------------------------------------------------------------
# Ray (subprocesses with their own small local Ray)
# ---------------------------------------------------------------------------------------------

RAY_CPUS = ["--set", "resources.num_cpus=2"]


@pytest.mark.ray
@pytest.mark.slow
def test_pbt_perturbation_reaches_the_learner(tmp_path):
    p = _run(["--sweep", "pbt", "--smoke", "--storage", str(tmp_path), *RAY_CPUS], timeout=SWEEP_TIMEOUT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    exp = tmp_path / "sweep-pbt-smoke"
    assert (exp / "summary.csv").is_file()
    exploits = [(f.stem[len("pbt_policy_"):], json.loads(line)) for f in exp.glob("pbt_policy_*.txt")
                for line in f.read_text().splitlines() if line.strip()]
    assert exploits, "PBT made no exploit/explore step in 3 iterations:\n" + p.stdout[-3000:]
    checked = 0
    for trial_id, (target_tag, donor_tag, target_iter, donor_iter, donor_cfg, new_cfg) in exploits:
        trial_dir = next(d for d in exp.glob(f"SweepPPO_{trial_id}_*") if d.is_dir())
        rows = _results(trial_dir)
        new = {k: new_cfg[k] for k in ("agent.lr", "agent.entropy", "agent.clip")}
        # The first iteration trained after the exploit: the trial's params are the new ones.
        after = [r for r in rows if r["sweep"]["params"] == new]
        if not after:  # an exploit at the last iteration has no training step after it
            continue
        first = after[0]
        # Continued from the donor's checkpoint, not restarted. (Synchronous PBT logs the
        # donor's iteration differently, so check the iteration counter went on instead.)
        assert first["training_iteration"] >= 2
        used = first["learners"]["main"]["trained_with"]
        assert used["lr"] == pytest.approx(new["agent.lr"], rel=1e-9), (used, new, donor_cfg["agent.lr"])
        assert used["entropy_coeff"] == pytest.approx(new["agent.entropy"], rel=1e-6)
        assert used["clip_param"] == pytest.approx(new["agent.clip"], rel=1e-9)
        # Meaningful: the donor's checkpoint carried a different lr (the value a restore would leak).
        assert donor_cfg["agent.lr"] != pytest.approx(new["agent.lr"], rel=1e-6)
        checked += 1
    assert checked >= 1


def _trial_dirs(exp: Path) -> list[Path]:
    return sorted(d for d in exp.glob("SweepPPO_*") if d.is_dir())


def _iters(trial_dir: Path) -> list[int]:
    f = trial_dir / "result.json"
    if not f.is_file():
        return []
    out = []
    for line in f.read_text().splitlines():
        try:
            out.append(int(json.loads(line)["training_iteration"]))
        except (ValueError, KeyError):
            pass  # a line being written
    return out


@pytest.mark.ray
@pytest.mark.slow
def test_seeds_sweep_killed_then_resumed_and_summarized(tmp_path):
    """Seeds one after the other; SIGKILL while the 2nd runs; --resume keeps the 1st, continues the 2nd; summary with CI."""
    iters = 10  # a smoke iteration takes ~0.2 s on a quiet machine: the kill window (2..iters-2 results) must outlast a poll
    args = ["--sweep", "seeds", "--smoke", "--storage", str(tmp_path), "--max-concurrent", "1",
            "--set", f"training.stop.iterations={iters}", *RAY_CPUS]
    exp = tmp_path / "sweep-seeds-smoke"
    proc = subprocess.Popen([PY, "-m", "spade_rllib.tune", *args], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    killed_at: dict = {}
    try:
        deadline = time.time() + SWEEP_TIMEOUT
        while time.time() < deadline and proc.poll() is None:
            dirs = _trial_dirs(exp) if exp.is_dir() else []
            done = [d for d in dirs if len(_iters(d)) >= iters]
            # >= 2 results: its first checkpoint is an iteration old, so the experiment state (written every
            # second here, TUNE_GLOBAL_CHECKPOINT_S) knows it; the finished trial ended while this one started.
            running = [d for d in dirs if 2 <= len(_iters(d)) < iters - 1]
            if done and running:
                killed_at = {d.name: _iters(d) for d in dirs}
                os.killpg(proc.pid, signal.SIGKILL)  # the sweep driver and its local Ray, all started here
                break
            time.sleep(0.1)
        assert killed_at, f"never saw one finished and one running trial; output:\n{proc.communicate(timeout=60)[0][-3000:]}"
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=60)
    finished = [n for n, it in killed_at.items() if len(it) >= iters]
    interrupted = [n for n, it in killed_at.items() if 1 <= len(it) < iters]
    assert finished and interrupted, killed_at

    p = _run([*args, "--resume"], timeout=SWEEP_TIMEOUT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "resuming sweep" in p.stdout
    for name in finished:  # kept: not run again
        assert _iters(exp / name) == killed_at[name], name
    for name in interrupted:  # continued from its checkpoint, never back to iteration 1
        before, now = killed_at[name], _iters(exp / name)
        assert now[: len(before)] == before and now[-1] == iters, (before, now)
        resumed = now[len(before):]
        assert resumed and resumed[0] > 1, (before, now)  # from a checkpoint, not from scratch
        assert resumed == list(range(resumed[0], iters + 1)), now

    # Report: table, summary.csv, groups.csv with the interval, plots, best checkpoint usable by evaluate.
    assert "across seeds" in p.stdout and "95% CI" in p.stdout and "per seed:" in p.stdout
    summary = (exp / "summary.csv").read_text().splitlines()
    assert len(summary) == 3 and summary[0].startswith("trial_id,status,experiment.seed,iterations")
    groups = (exp / "groups.csv").read_text().splitlines()
    assert len(groups) == 2 and groups[0].startswith("n,mean,std,ci_low,ci_high")
    assert (exp / "metric_over_time.png").stat().st_size > 1000
    best = (exp / "best_checkpoint.txt").read_text().strip()
    assert (Path(best) / "learner_group" / "learner" / "rl_module" / "main").is_dir()
    assert f"python -m spade_rllib.evaluate --checkpoint {best}" in p.stdout
    assert all(list(d.glob("events.out.tfevents*")) for d in _trial_dirs(exp))  # tensorboard --logdir <sweep dir>


def test_heldout_ladder_score_is_the_mean_over_the_scripted_bots():
    from spade_rllib.rllib.periodic_heldout_eval import ladder_score, placeholder_metrics

    m = {"heldout/rusher/score": 0.2, "heldout/rusher_tagger/score": 0.4, "heldout/self/score": 0.5}
    assert ladder_score(m, ["rusher", "rusher_tagger", "self"]) == {"heldout/ladder/score": pytest.approx(0.3)}
    assert math.isnan(placeholder_metrics(["open_room"], ["rusher", "rusher_tagger", "self"])["heldout/ladder/score"])  # the column from iteration 1


# ---------------------------------------------------------------------------------------------
# Bayesian search (optuna / hyperopt)
# ---------------------------------------------------------------------------------------------


def test_search_section_is_validated(tmp_path):
    from spade_rllib.sweeps.sweep_spec import load_sweep

    base = tmp_path / "base.yaml"
    base.write_text((REPO / "tune_configs" / "quickstart.yaml").read_text())
    cases = [
        ("search: optuan\nspace: {agent.lr: {loguniform: [1.0e-4, 1.0e-3]}}\n", "search.type = 'optuan': not allowed (did you mean 'optuna'?)"),
        ("search: optuna\nspace: {agent.lr: {grid: [1.0e-4, 1.0e-3]}}\n", "space.agent.lr = {grid: ..}: not allowed with search 'optuna'"),
        ("search: hyperopt\n", "space: missing; search 'hyperopt' needs"),
        ("search: {type: optuna, max_concurent: 2}\nspace: {agent.lr: {uniform: [1.0e-4, 1.0e-3]}}\n", "search.max_concurent: unknown key (did you mean 'max_concurrent'?)"),
    ]
    for i, (text, message) in enumerate(cases):
        path = tmp_path / f"s{i}.yaml"
        path.write_text(f"base: base.yaml\n{text}")
        with pytest.raises(ConfigError) as err:
            load_sweep(str(path))
        assert message in str(err.value), (text, str(err.value))
    spec, _ = load_sweep("optuna", smoke=True)
    assert (spec.search.type, spec.search.max_concurrent, spec.budget.num_samples) == ("optuna", 1, 3)
    spec, _ = load_sweep("optuna")
    assert (spec.search.type, spec.search.max_concurrent, spec.budget.num_samples) == ("optuna", 2, 12)


def test_searchers_are_tunes_own_behind_a_concurrency_limiter():
    pytest.importorskip("optuna")
    pytest.importorskip("hyperopt")
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.hyperopt import HyperOptSearch
    from ray.tune.search.optuna import OptunaSearch

    from spade_rllib.sweeps.sweep_spec import load_sweep
    from spade_rllib.tune import make_searcher

    spec, _ = load_sweep("optuna")
    searcher = make_searcher(spec, seed=0)
    assert isinstance(searcher, ConcurrencyLimiter) and isinstance(searcher.searcher, OptunaSearch)
    assert searcher.max_concurrent == 2
    spec.search.type = "hyperopt"
    assert isinstance(make_searcher(spec, seed=0).searcher, HyperOptSearch)
    spec.search.type = "none"
    assert make_searcher(spec, seed=0) is None


@pytest.mark.ray
@pytest.mark.slow
def test_optuna_sweep_smoke_killed_then_resumed(tmp_path):
    """Optuna suggests one trial at a time; SIGKILL after the first finished; --resume keeps it and the
    searcher's state, runs the rest, and every trial's values lie in the searched ranges."""
    pytest.importorskip("optuna")
    args = ["--sweep", "optuna", "--smoke", "--storage", str(tmp_path), *RAY_CPUS]
    exp = tmp_path / "sweep-optuna-smoke"
    proc = subprocess.Popen([PY, "-m", "spade_rllib.tune", *args], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    killed_at: dict = {}
    try:
        deadline = time.time() + SWEEP_TIMEOUT
        while time.time() < deadline and proc.poll() is None:
            dirs = _trial_dirs(exp) if exp.is_dir() else []
            if any(len(_iters(d)) >= 2 for d in dirs):
                time.sleep(1.5)  # the experiment state (written every second here) records the finished trial
                killed_at = {d.name: _iters(d) for d in _trial_dirs(exp)}
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.3)
        assert killed_at, f"no trial finished; output:\n{proc.communicate(timeout=60)[0][-3000:]}"
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=60)
    finished = [n for n, it in killed_at.items() if len(it) >= 2]
    assert finished and len(killed_at) < 3, killed_at

    p = _run([*args, "--resume"], timeout=SWEEP_TIMEOUT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "resuming sweep" in p.stdout and "search:       optuna" in p.stdout
    dirs = _trial_dirs(exp)
    assert len(dirs) == 3 and all(_iters(d) == [1, 2] for d in dirs), {d.name: _iters(d) for d in dirs}
    for name in finished:
        assert _iters(exp / name) == killed_at[name]  # kept, not run again
    params = [_results(d)[-1]["sweep"]["params"] for d in dirs]
    for p_ in params:
        assert 1e-4 <= p_["agent.lr"] <= 3e-3 and 1e-3 <= p_["agent.entropy"] <= 5e-2 and 0.95 <= p_["agent.gamma"] <= 0.995
    assert len({p_["agent.lr"] for p_ in params}) == 3  # three suggestions, none repeated
    assert list(exp.glob("searcher-state-*.pkl")), sorted(x.name for x in exp.iterdir())
    summary = (exp / "summary.csv").read_text().splitlines()
    assert len(summary) == 4
