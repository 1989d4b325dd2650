"""bench/ablations/ablation_per_map.py refuses bad input in one line before Ray (its full run is measured in docs)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "ablations" / "ablation_per_map.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("extra, message", [
    ((), "no cached unit"),
    (("--units", "pfsp_seed0"), "pfsp_seed0 is not cached"),
    (("--units", "selfplay_seed0"), "is not <arm>_seed<k>"),
    (("--bots", "rusherr"), "unknown bot 'rusherr'"),
    (("--games", "0"), "--games 0: must be >= 1"),
])
def test_refusals(tmp_path, extra, message):
    (tmp_path / "units").mkdir()
    proc = run("--out-dir", str(tmp_path), *extra)
    assert proc.returncode == 2 and message in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert "Traceback" not in proc.stderr and list((tmp_path / "units").iterdir()) == []


def test_missing_out_dir(tmp_path):
    proc = run("--out-dir", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "no units/ folder" in proc.stderr
