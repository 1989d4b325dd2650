"""A run's provenance, written as `runinfo.json`: versions, seeds, git commit, command line (no Ray import).

`collect_runinfo(cfg)` is called on the driver before Ray starts; `SpadePPO.setup` writes it as
`runinfo.json` (with the resolved `config.yaml`) into the trial directory.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

PACKAGES = ("ray", "torch", "pettingzoo", "gymnasium", "numpy", "spade_rllib")


def _version(pkg: str) -> Optional[str]:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_info(start: Optional[Path] = None) -> dict:
    """{"commit": sha or None, "dirty": bool or None} of the repository holding `start` (or cwd)."""
    where = str(start or Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if sha.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
        return {"commit": sha.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def collect_runinfo(seed: int, config_path: Optional[str] = None, extra: Optional[dict] = None) -> dict:
    """Everything needed to say what ran: versions, seeds, git, host, command."""
    info = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": [sys.executable, *sys.argv],
        "cwd": os.getcwd(),
        "config_path": config_path,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "versions": {p: _version(p) for p in PACKAGES},
        "git": git_info(),
        "seeds": {
            "experiment": seed,
            "rllib_seed": seed,
            "env_runner_rule": "env copy i of runner w resets first with seed*1000003 + 7919*w + i; "
                               "action sampling and opponents use numpy default_rng([seed, w, 17]); "
                               "matchmaking uses OpponentPlan(seed) per (w, i, episode)",
        },
    }
    if extra:
        info.update(extra)
    return info


def write_runinfo(trial_dir: Path, runinfo: dict, config_yaml: str) -> None:
    """The trial directory's `config.yaml` (the resolved run config, as text) and `runinfo.json`."""
    trial_dir.mkdir(parents=True, exist_ok=True)
    (trial_dir / "config.yaml").write_text(config_yaml)
    (trial_dir / "runinfo.json").write_text(json.dumps(runinfo, indent=2, sort_keys=True, default=str))
