"""`kill -9` the training driver mid-run, then resume: nothing of the last checkpoint is lost.

    python bench/faults/fault_kill_resume.py [--checkpoints 4] [--timeout 600] [--lstm]

1. Trains a small league + threshold-curriculum MazeRace run (`python -m spade_rllib.train`, its own
   process group, a checkpoint every iteration) and sends SIGKILL to the whole group as soon as
   `--checkpoints` checkpoints exist, so the next checkpoint may be half written.
2. `train.find_checkpoint` must pick a whole checkpoint (a half-written one is skipped).
3. Restores it into a fresh `SpadePPO` (as `train --resume` does) and compares, bit for bit
   (`spade_rllib.testing.assert_exactly_equal`), the driver components' state (league members and
   their weights, ratings, payoff, matchmaking plan and RNG; curriculum state) and main's weights
   with what the checkpoint files hold. Two restores must also give the same state (the next
   matchmaking decisions are a pure function of it).
4. Runs `python -m spade_rllib.train --resume <trial>` for one more iteration: it must exit 0.

`--lstm`: main is recurrent (`agent.model.memory: lstm`), so are its league snapshots.

Ends with one JSON line. Exit 0 when every check holds.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import league_curriculum_config  # noqa: E402

LSTM_MODEL = {"memory": "lstm", "lstm_cell_size": 32, "max_seq_len": 16}


def small_config(storage: Path, lstm: bool = False) -> dict:
    return league_curriculum_config(
        "killed", 3, storage_path=str(storage), window=20, hidden=[32], train_batch_size=1024, minibatch_size=512,
        lstm=LSTM_MODEL if lstm else None, league={"every_n_iterations": 1, "min_iterations_between": 1, "max_size": 4},
        training={"stop": {"iterations": 500, "time_s": 900}, "num_env_runners": 0, "num_envs_per_runner": 16,
                  "checkpoint_every": 1, "checkpoint_keep": 100})


def checkpoints(storage: Path) -> list[Path]:
    return sorted(storage.rglob("checkpoint_*"))


def expected_state(ckpt: Path) -> tuple[dict, dict]:
    """(spade components' state, main's module state) as the checkpoint files hold them."""
    with open(ckpt / "algorithm_state.pkl", "rb") as f:
        components = pickle.load(f)["spade_components"]
    with open(ckpt / "learner_group" / "learner" / "rl_module" / "main" / "module_state.pkl", "rb") as f:
        module = pickle.load(f)
    return components, module


def restored_state(cfg, ckpt: Path) -> tuple[dict, dict]:
    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(cfg, restore_from=str(ckpt)).build_algo()
    try:
        state = algo.get_state(components=["spade_components"])["spade_components"]
        module = algo.learner_group.get_state(components="learner/rl_module/main")["learner"]["rl_module"]["main"]
    finally:
        algo.stop()
    return state, module


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoints", type=int, default=4, help="kill once this many checkpoints exist")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--lstm", action="store_true", help="a recurrent main (and recurrent league snapshots)")
    args = ap.parse_args(argv)
    from spade_rllib.testing import assert_exactly_equal

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.train import find_checkpoint

    out: dict = {"checks": {}}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="spade_kill_") as tmp:
        tmp = Path(tmp)
        raw = small_config(tmp / "results", lstm=args.lstm)
        cfg_file = tmp / "cfg.yaml"
        cfg_file.write_text(yaml.safe_dump(raw))
        cmd = [sys.executable, "-m", "spade_rllib.train", "--config", str(cfg_file), "--final-eval-games", "0"]
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        t0 = time.time()
        try:
            while len(checkpoints(tmp / "results")) < args.checkpoints:
                if proc.poll() is not None:
                    raise SystemExit(f"training ended early with exit {proc.returncode}")
                if time.time() - t0 > args.timeout:
                    raise SystemExit("no checkpoints within the timeout")
                time.sleep(0.2)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything it started (its own session)
            proc.wait()
        out["killed_after_s"] = round(time.time() - t0, 1)
        found = checkpoints(tmp / "results")
        out["checkpoints_on_disk"] = len(found)
        trial = found[0].parent
        ckpt = Path(find_checkpoint(str(trial)))
        out["resumed_from"] = ckpt.name
        cfg = parse_config(raw)
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            want_components, want_module = expected_state(ckpt)
            got_components, got_module = restored_state(cfg, ckpt)
            again_components, _ = restored_state(cfg, ckpt)
        finally:
            ray.shutdown()
        for name, a, b in (("components_equal_checkpoint", want_components, got_components),
                           ("main_weights_equal_checkpoint", want_module, got_module),
                           ("two_restores_equal", got_components, again_components)):
            try:
                assert_exactly_equal(a, b, name)
                out["checks"][name] = True
            except AssertionError as e:
                out["checks"][name] = False
                out.setdefault("differences", []).append(str(e)[:300])
        league = want_components.get("league", {}).get("league", {})
        out["league_members"] = [m.get("id") for m in league.get("members", [])]
        out["curriculum_keys"] = sorted(want_components.get("curriculum", {}))
        it = int(json.loads((ckpt / "rllib_checkpoint.json").read_text()).get("training_iteration", 0) or 0)
        resume = subprocess.run([sys.executable, "-m", "spade_rllib.train", "--resume", str(trial), "--final-eval-games",
                                 "0", "--set", f"training.stop.iterations={max(it, 1) + 1}"],
                                cwd=tmp, env=env, capture_output=True, text=True, timeout=args.timeout)
        out["checks"]["train_resume_exit_0"] = resume.returncode == 0
        if resume.returncode != 0:
            out["resume_tail"] = resume.stdout.splitlines()[-5:] + resume.stderr.splitlines()[-5:]
        out["lstm"] = bool(args.lstm)
        out["seconds"] = round(time.time() - t0, 1)
    ok = all(out["checks"].values())
    out["ok"] = ok
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
