"""Experiment trackers: a training run logs to MLflow (local sqlite store) and W&B (offline mode)
through Tune's callbacks, and what they logged is read back with MLflow's own client and from
W&B's offline run files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_logger_without_its_package_is_refused_before_ray(monkeypatch):
    import importlib.util

    from spade_rllib.config.run_config import ConfigError, parse_config

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ConfigError, match=r"experiment.loggers\[1\] = 'wandb': the 'wandb' package is not installed; pip install"):
        parse_config({"experiment": {"loggers": ["mlflow", "wandb"]}})
    with pytest.raises(ConfigError, match=r"experiment.loggers\[0\] = 'tensorbord': not allowed"):
        parse_config({"experiment": {"loggers": ["tensorbord"]}})


@pytest.mark.ray
def test_training_run_is_read_back_from_mlflow_and_wandb(tmp_path):
    pytest.importorskip("mlflow")
    pytest.importorskip("wandb")
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/connect_four.yaml",
           "--set", f"experiment.storage_path={tmp_path}", "--set", "agent.train_batch_size=256",
           "--set", "agent.minibatch_size=128", "--set", "agent.epochs=1", "--set", "training.num_envs_per_runner=4",
           "--set", "evaluation.interval=1", "--set", "evaluation.games=2", "--set", "resources.num_cpus=2",
           "--set", "training.stop.iterations=2", "--set", "training.num_env_runners=0",  # no runner actor to start
           "--final-eval-games", "0", "--logger", "mlflow", "--logger", "wandb"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("connect_four")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["env"] == "pettingzoo.classic:connect_four_v3" and run.info.status == "FINISHED"
    assert [m.value for m in client.get_metric_history(run.info.run_id, "training_iteration")] == [1.0, 2.0]
    win = client.get_metric_history(run.info.run_id, "eval/random/win_rate")
    assert len(win) == 2 and all(0.0 <= m.value <= 1.0 for m in win)

    runs = list((tmp_path / "connect_four" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1, list((tmp_path / "connect_four").rglob("*"))[:40]
    history = wandb_history(runs[0])
    for _ in range(30):  # W&B's service process may still be writing the offline file after the driver exits
        if len(history) >= 2:
            break
        time.sleep(1.0)
        history = wandb_history(runs[0])
    assert [row["training_iteration"] for row in history] == [1, 2]
    assert all(0.0 <= row["eval/random/win_rate"] <= 1.0 for row in history)


def wandb_history(path: Path) -> list[dict]:
    """The history rows (`wandb.log` calls) of an offline run file, read with W&B's own protobuf records.

    The file is W&B's record log: a 7-byte header (':W&B', magic, version), then records of
    (crc32 4 bytes, length 2, type 1: full/first/middle/last) in 32 KiB blocks, each a serialized
    `wandb_internal_pb2.Record`."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    block, head = 32768, 7
    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:8]
    pos, pending, rows = head, b"", []
    while pos + head <= len(data):
        left = block - pos % block
        if left < head:  # the rest of a block too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + head])
        if length == 0 and kind == 0:
            pos += left
            continue
        chunk, pos = data[pos + head:pos + head + length], pos + head + length
        if kind in (1, 2):
            pending = chunk
        else:
            pending += chunk
        if kind not in (1, 4):
            continue
        record = pb.Record()
        record.ParseFromString(pending)
        if record.WhichOneof("record_type") == "history":
            rows.append({(item.key or "/".join(item.nested_key)): json.loads(item.value_json) for item in record.history.item})
    return rows
