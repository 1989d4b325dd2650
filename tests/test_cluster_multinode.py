"""A real two-node Ray cluster on this machine, token authentication on (cluster/multinode_check.py).

Select with `-m multinode` (also marked `slow`). About a minute for the stand-in job; the real
sweep test runs once `spade_rllib.tune` exists.

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
    # Both nodes were stopped, nothing of theirs left running.
    assert report["checks"]["nodes_stopped"]


@pytest.mark.timeout(600)
def test_two_nodes_token_auth_job_on_both_nodes(tmp_path):
    """Stand-in job: Tune trials of a function trainable recording their node id."""
    report = _run_check(tmp_path, timeout=420)
    _assert_multinode(report)
    # Token auth was really on: the GCS and the job API refused clients without the token.
    assert report["checks"]["gcs_refuses_missing_token"]
    assert report["checks"]["http_401_without_token"]
    assert report["checks"]["http_403_wrong_token"]


@pytest.mark.skipif(importlib.util.find_spec("spade_rllib.tune") is None,
                    reason="spade_rllib.tune (the sweep CLI) is not there yet")
@pytest.mark.timeout(1300)
def test_two_nodes_real_lr_gamma_sweep(tmp_path):
    """The issue's job: `python -m spade_rllib.tune --sweep lr_gamma --smoke` on both nodes."""
    report = _run_check(tmp_path, "--sweep", "--job-timeout", "900", timeout=1100)
    _assert_multinode(report)
