"""RLlib's seeding (`set_torch_seed` -> `torch.use_deterministic_algorithms(True)`) keeps its effect without
importing TorchInductor at startup (spade_rllib/rllib/torch_determinism.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys, torch
import spade_rllib.rllib.runner  # installs the replacement, as in every env runner process
from ray.rllib.utils.torch_utils import set_torch_seed
set_torch_seed(3)
out = {"on": torch.are_deterministic_algorithms_enabled(), "inductor_imported": "torch._inductor" in sys.modules}
import torch._inductor.config as inductor_config  # a later torch.compile: Inductor sees the same mode
out["inductor_deterministic"] = inductor_config.deterministic
torch.use_deterministic_algorithms(False)  # with Inductor imported: its config follows directly
out["off"] = torch.are_deterministic_algorithms_enabled()
out["inductor_off"] = inductor_config.deterministic
print(json.dumps(out))
"""


def test_seeding_sets_determinism_without_importing_inductor():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"on": True, "inductor_imported": False, "inductor_deterministic": True, "off": False,
                   "inductor_off": False}, out


def test_install_is_idempotent_and_leaves_a_foreign_function_alone(monkeypatch):
    import torch

    from spade_rllib.rllib import torch_determinism

    assert torch_determinism.install() and torch_determinism.install()
    assert torch.use_deterministic_algorithms is torch_determinism.use_deterministic_algorithms

    def foreign(mode, *, warn_only=False):  # someone else's replacement: not ours to override
        return None

    monkeypatch.setattr(torch, "use_deterministic_algorithms", foreign)
    assert not torch_determinism.install() and torch.use_deterministic_algorithms is foreign
