"""A real two-node Ray cluster on this machine, token authentication on (cluster/multinode_check.py).

Select with `-m multinode` (also marked `slow`). The `lr_gamma` sweep on both nodes (about 50 s) and the
flagship training (`--flagship`: `python -m
spade_rllib.train --config tune_configs/flagship.yaml --address auto` shrunk, env runners on both
nodes, then the checkpoint evaluated on this machine alone) about 60-75 s. Both check token authentication too. The stand-in job
(`python cluster/multinode_check.py` without a mode) stays a manual check.

It starts its own head and second node (`ray start`, 1 CPU each, own ports, temp dirs and
loopback IPs), never touches another Ray on the machine, and stops both nodes at the end. It does
not use the session's `ray_session` fixture.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "cluster" / "multinode_check.py"

# `ray`: needs Ray (so `-m "not ray"` skips it); `multinode`: select just these.
pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.multinode]


def _run_check(tmp_path: Path, *args: str, timeout: float) -> dict:
    report_path = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)}
    proc = subprocess.Popen(
        [sys.executable, str(CHECK), "--report", str(report_path), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # SIGTERM: the check stops its two nodes before exiting
        try:
            out, _ = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"multinode check ran over {timeout}s:\n{out[-4000:]}")
    assert report_path.exists(), f"no report (exit {proc.returncode}):\n{out[-6000:]}"
    report = json.loads(report_path.read_text())
    report["_stdout"] = out
    report["_rc"] = proc.returncode
    return report


def _assert_multinode(report: dict) -> None:
    failed = [name for name, ok in report["checks"].items() if not ok]
    assert not report.get("error") and not failed, (
        f"failed checks {failed}, error {report.get('error')}\n"
        f"{report.get('job_log_tail', '')}\n{report['_stdout'][-3000:]}"
    )
    assert report["ok"] and report["_rc"] == 0
    head, worker = report["head_node_id"], report["worker_node_id"]
    assert head != worker
    used = set(report["trial_nodes"].values())
    assert {head, worker} <= used, report["trial_nodes"]
    assert report["api_job_status"] == "SUCCEEDED"
    # Token auth was really on: the GCS and the job API refused clients without the token.
    assert report["checks"]["gcs_refuses_missing_token"]
    assert report["checks"]["http_401_without_token"] and report["checks"]["http_403_wrong_token"]
    # Both nodes were stopped, nothing of theirs left running.
    assert report["checks"]["nodes_stopped"]


@pytest.mark.skipif(importlib.util.find_spec("spade_rllib.tune") is None,
                    reason="spade_rllib.tune (the sweep CLI) is not there yet")
@pytest.mark.timeout(1300)
def test_two_nodes_real_lr_gamma_sweep(tmp_path):
    """The issue's job: `python -m spade_rllib.tune --sweep lr_gamma --smoke` on both nodes."""
    report = _run_check(tmp_path, "--sweep", "--job-timeout", "900", timeout=1100)
    _assert_multinode(report)


@pytest.mark.timeout(900)
def test_two_nodes_flagship_training_as_users_run_it(tmp_path):
    """The flagship recipe (league + PLR), shrunk, through `ray job submit -- python -m spade_rllib.train
    --config tune_configs/flagship.yaml --address auto`: its two env runners on the two nodes, the
    league grew, the curriculum reported, and the checkpoint evaluates on this machine once the
    cluster is gone."""
    report = _run_check(tmp_path, "--flagship", "--job-timeout", "480", timeout=720)
    failed = [name for name, ok in report["checks"].items() if not ok]
    assert not report.get("error") and not failed and report["ok"] and report["_rc"] == 0, (
        f"failed checks {failed}, error {report.get('error')}\n{report.get('job_log_tail', '')}\n"
        f"{json.dumps(report.get('evaluate'), indent=1)}\n{report['_stdout'][-3000:]}"
    )
    assert report["mode"] == "flagship" and not report["failed_checks"]
    assert "--config tune_configs/flagship.yaml --address auto" in report["entrypoint"]
    head, worker = report["head_node_id"], report["worker_node_id"]
    # (a) the env runners ran on both nodes (the dashboard's state API, actor by actor)
    runners = [a for a in report["actors"].values() if a["class_name"] == "SpadeEnvRunner"]
    assert len(runners) >= 2 and {a["node_id"] for a in runners} == {head, worker}, report["actors"]
    # the league grew every iteration and the PLR curriculum reported
    its = report["flagship"]["iterations"]
    assert [i["iteration"] for i in its] == [1, 2, 3], its
    sizes = [i["league_size"] for i in its]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0], sizes
    assert its[-1]["curriculum_buffer_size"] > 0 and its[-1]["curriculum_episodes"] > 0, its
    assert report["flagship"]["checkpoints"], report["flagship"]
    # (b) the checkpoint restores on one machine without the cluster (after both nodes stopped)
    ev = report["evaluate"]
    assert ev["rc"] == 0 and ev["games"] >= 2 and "report.md" in ev["files"], ev
    assert report["checks"]["nodes_stopped"] and report["api_job_status"] == "SUCCEEDED"
