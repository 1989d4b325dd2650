"""A worker node lost mid-run on a real two-node cluster on loopback (`bench/faults/fault_cluster.py`, scenario
`node_stop`, shrunk): the lost env runner comes back on the surviving node, the run reaches its budget,
nothing goes backwards, no actor or placement group is left. Marked `multinode` (and `slow`, `ray`): it
starts its own two nodes with `ray start` and never touches another Ray on the machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "faults" / "fault_cluster.py"

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.multinode]


@pytest.mark.timeout(600)
def test_worker_node_stopped_mid_run_runner_recreated_and_budget_reached(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, str(BENCH), "--scenarios", "node_stop", "--env-steps", "16384",
                        "--fault-after", "2", "--out-dir", str(tmp_path / "out"), "--timeout", "420"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=560)
    unit = json.loads((tmp_path / "out" / "units" / "node_stop.json").read_text())
    assert r.returncode == 0, (unit, r.stdout[-3000:], r.stderr[-3000:])
    checks = unit["checks"]
    assert all(checks.values()) and unit["recovered"], checks
    assert checks["a_runner_was_on_the_lost_node"] and checks["runner_recreated_on_a_live_node"]
    assert unit["env_steps_reached"] >= 16384 and unit["setbacks"] == []
    assert unit["orphans"] == {"actors_alive": 0, "placement_groups_left": 0}
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["bench"] == "fault_cluster" and last["all_recovered"]
