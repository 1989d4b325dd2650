"""Checkpoints by time, trial retries and the work a failure cost (`spade_rllib.rllib.recovery`); no Ray started."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from spade_rllib.config.run_config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
MAZERACE = str(ROOT / "tune_configs" / "mazerace.yaml")


@pytest.mark.parametrize("item,needle", [
    ("training.checkpoint_every_s=nan", "training.checkpoint_every_s"),
    ("training.checkpoint_every_s=0", "training.checkpoint_every_s = 0"),
    ("training.checkpoint_every_s=fast", "training.checkpoint_every_s"),
    ("training.max_failures=-1", "training.max_failures = -1"),
    ("training.max_failures=2.5", "training.max_failures"),
    ("training.max_failure=2", "did you mean 'max_failures'"),
])
def test_new_keys_are_validated(item, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        load_config(MAZERACE, [item])


def test_run_config_gets_retries_and_timed_checkpoints():
    from spade_rllib.rllib.recovery import CLUSTER_MAX_FAILURES, TimedCheckpoints
    from spade_rllib.training.tuner_inputs import make_tune_run_config

    cfg = load_config(MAZERACE)
    local, attached = make_tune_run_config(cfg), make_tune_run_config(cfg, attached=True)
    assert local.failure_config.max_failures == 0 and attached.failure_config.max_failures == CLUSTER_MAX_FAILURES
    assert not any(isinstance(c, TimedCheckpoints) for c in local.callbacks)
    cfg = load_config(MAZERACE, ["training.max_failures=5", "training.checkpoint_every_s=60"])
    rc = make_tune_run_config(cfg)
    assert rc.failure_config.max_failures == 5
    assert [c.every_s for c in rc.callbacks if isinstance(c, TimedCheckpoints)] == [60.0]


def _result(lifetime: int, this: int) -> dict:
    return {"env_runners": {"num_env_steps_sampled_lifetime": lifetime, "num_env_steps_sampled": this}}


def test_timed_checkpoints_ask_tune_for_a_checkpoint_after_every_s():
    from ray.tune.result import SHOULD_CHECKPOINT

    from spade_rllib.rllib.recovery import TimedCheckpoints

    now = [0.0]
    cb = TimedCheckpoints(10.0, clock=lambda: now[0])
    trial = SimpleNamespace(trial_id="t")
    cb.on_trial_start(0, [], trial)
    flags = []
    for t in (4.0, 9.0, 11.0, 15.0, 22.0):
        now[0] = t
        r = _result(1, 1)
        cb.on_trial_result(0, [], trial, r)
        flags.append(bool(r.get(SHOULD_CHECKPOINT)))
        if r.get(SHOULD_CHECKPOINT):
            cb.on_checkpoint(0, [], trial, None)
    assert flags == [False, False, True, False, True]


def test_ledger_reports_env_steps_lost_after_a_retry_and_a_resume(tmp_path):
    from spade_rllib.rllib.recovery import RecoveryLedger, reached_env_steps, recovery_callbacks

    ledger = RecoveryLedger()
    trial = SimpleNamespace(trial_id="t")
    for lifetime in (100, 200, 300):  # checkpoint at 200, failure after 300
        ledger.on_trial_result(0, [], trial, _result(lifetime, 100))
    ledger.on_trial_recover(0, [], trial)
    ledger.on_trial_result(0, [], trial, _result(300, 100))  # restored at 200, one iteration on
    ledger.on_trial_result(0, [], trial, _result(400, 100))
    assert [(s.reached, s.restarted_at, s.lost) for s in ledger.setbacks] == [(300, 200, 100)]
    assert ledger.lost() == 100 and ledger.retries == 1
    assert "100 env steps lost and redone" in ledger.lines()[0] and "retries: 1" in ledger.lines()[1]
    # --resume: the resumed run had reached 350 (its result.json; a cut last line is skipped)
    trial_dir = tmp_path / "trial"
    trial_dir.mkdir()
    rows = [json.dumps(_result(n, 100)) for n in (100, 200, 350)]
    (trial_dir / "result.json").write_text("\n".join(rows) + '\n{"env_runners": {"num_env_st')
    assert reached_env_steps(trial_dir) == 350
    (trial_dir / "result.json").unlink()  # a killed driver's result.json may never reach the storage
    (trial_dir / "iterations.log").write_text("iter    3 | steps     1,536 | 1,740 sps | ret +nan\n"
                                              "iter    4 | steps     2,048 | 1,923 sps | ret -0.100\n")
    assert reached_env_steps(trial_dir) == 2048
    (trial_dir / "iterations.log").unlink()
    (trial_dir / "result.json").write_text("\n".join(rows) + '\n{"env_runners": {"num_env_st')
    resumed = recovery_callbacks(load_config(MAZERACE), resumed_from=str(trial_dir / "checkpoint_000001"))[0]
    resumed.on_trial_result(0, [], SimpleNamespace(trial_id="u"), _result(300, 100))
    assert resumed.lost() == 150
    fresh = RecoveryLedger()
    fresh.on_trial_result(0, [], trial, {**_result(100, 100), "training_iteration": 1, "iterations_since_restore": 1})
    assert fresh.lines() == []
    # restored from the newest checkpoint (Tune retry or --resume): a setback that lost nothing
    fresh.on_trial_result(0, [], trial, {**_result(200, 100), "training_iteration": 2, "iterations_since_restore": 1})
    assert [(s.reached, s.restarted_at, s.lost) for s in fresh.setbacks] == [(100, 100, 0)]
    assert "0 env steps lost and redone" in fresh.lines()[0]


def test_fault_bench_history_allows_going_back_only_to_a_checkpoint():
    import sys

    sys.path.insert(0, str(ROOT))
    from bench.faults.fault_cluster import history_checks

    def row(it, since, lifetime, t):
        return {"training_iteration": it, "iterations_since_restore": since, "timestamp": t,
                "env_runners": {"num_env_steps_sampled_lifetime": lifetime, "num_env_steps_sampled": 512}}

    steady = [row(i, i, 512 * i, i) for i in range(1, 6)]
    assert history_checks(steady, {1: "c1", 2: "c2"}) == {"setbacks": [], "never_backwards_but_to_a_checkpoint": True}
    retried = steady + [row(4, 1, 512 * 4, 7), row(5, 2, 512 * 5, 8)]  # back to the checkpoint of iteration 3
    got = history_checks(retried, {3: "c3"})
    assert got["never_backwards_but_to_a_checkpoint"]
    assert [(s["to_checkpoint_iteration"], s["env_steps_lost"]) for s in got["setbacks"]] == [(3, 512 * 2)]
    assert not history_checks(retried, {2: "c2"})["never_backwards_but_to_a_checkpoint"]  # no checkpoint at 3
    newest = steady + [row(6, 1, 512 * 6, 7)]  # a retry from the newest checkpoint loses nothing
    got = history_checks(newest, {5: "c5"})
    assert [(s["to_checkpoint_iteration"], s["env_steps_lost"]) for s in got["setbacks"]] == [(5, 0)]


@pytest.mark.ray
@pytest.mark.timeout(400)
def test_checkpoints_by_time(tmp_path):
    """A real run: with `checkpoint_every: 0` (only at the end) and `checkpoint_every_s` shorter than an
    iteration, every iteration is checkpointed (Tune saves on the result `TimedCheckpoints` marks). The
    summary after a retry or a resume: `bench/faults/fault_cluster.py` (learner_kill, driver_kill)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    base = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/connect_four.yaml",
            "--set", f"experiment.storage_path={tmp_path}", "--set", "agent.train_batch_size=256",
            "--set", "agent.minibatch_size=128", "--set", "agent.epochs=1", "--set", "training.num_envs_per_runner=4",
            "--set", "evaluation.interval=0", "--set", "resources.num_cpus=2", "--set", "training.num_env_runners=0",
            "--set", "training.checkpoint_every=0", "--set", "training.checkpoint_every_s=0.001",
            "--set", "training.checkpoint_keep=10", "--final-eval-games", "0", "--final-replays", "0"]
    proc = subprocess.run(base + ["--set", "training.stop.iterations=3"], capture_output=True, text=True, timeout=240,
                          cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    trial = next((tmp_path / "connect_four").glob("connect_four_*"))
    assert len(list(trial.glob("checkpoint_*"))) == 3, sorted(p.name for p in trial.iterdir())

