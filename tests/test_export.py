"""ONNX export: onnxruntime's logits equal torch's within 1e-5 (plain, masked, league snapshot)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from spade_rllib.export import example_inputs, export_onnx, onnx_logits, torch_logits
from spade_rllib.players.policy import load_policy
from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_ckpts")
    return {"maze": save_tiny_checkpoint(root / "maze", "MazeRace-v0", snapshots=1, hidden=(32, 32)),
            "c4": save_tiny_checkpoint(root / "c4", "connect_four_v3", seed=2)}


@pytest.mark.parametrize("which,module_id", [("maze", "main"), ("maze", "main_v1"), ("c4", "main")])
def test_onnx_round_trip(ckpts, tmp_path, which, module_id):
    import onnx

    policy = load_policy(ckpts[which], module_id)
    path = export_onnx(policy, tmp_path / f"{which}_{module_id}.onnx")
    onnx.checker.check_model(onnx.load(str(path)))
    for batch in (1, 5):  # the batch axis is dynamic
        inputs = example_inputs(policy, batch=batch, seed=batch)
        ours, ref = onnx_logits(path, *inputs), torch_logits(policy, *inputs)
        assert ours.shape == (batch, policy.num_actions)
        assert np.max(np.abs(ours - ref)) <= TOLERANCE
        assert list(ours.argmax(axis=1)) == list(ref.argmax(axis=1))
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert meta["module_id"] == module_id and int(meta["num_actions"]) == policy.num_actions


def test_masked_onnx_respects_mask(ckpts, tmp_path):
    policy = load_policy(ckpts["c4"])
    path = export_onnx(policy, tmp_path / "c4.onnx")
    (x,) = example_inputs(policy, batch=16, seed=7)
    mask = x[:, policy.feature_size:]
    actions = onnx_logits(path, x).argmax(axis=1)
    assert all(mask[i, a] == 1 for i, a in enumerate(actions))


def test_export_cli(ckpts, tmp_path):
    out = tmp_path / "main.onnx"
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.export", "--checkpoint", str(ckpts["maze"]),
                           "--module", "main", "--out", str(out)], capture_output=True, text=True, timeout=180,
                          check=True)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.is_file() and out.stat().st_size > 0
    assert summary["max_abs_diff_vs_torch"] <= TOLERANCE


@pytest.mark.parametrize("model", [None, {"map_shape": [5, 5, 5], "map_channels": [4]},
                                   {"kind": "cnn", "window_shape": [9, 9, 10], "cnn_channels": [4], "map_shape": [5, 5, 5],
                                    "map_channels": [4]}], ids=["mlp", "mlp-map-convs", "cnn-map-convs"])
def test_onnx_of_a_run_with_the_memory_map_acts_on_its_envs_observations(tmp_path, model):
    """A CaptureTheFlag run with `env.kwargs.seen_map` (a longer observation; with `map_channels`, convolutions
    over the map) exports, and the ONNX model gives torch's logits on real observations of an env built with
    the run's kwargs."""
    from spade_rllib.envs import CaptureTheFlag

    kwargs = {"seen_map": 5}
    policy = load_policy(save_tiny_checkpoint(tmp_path / "ctf", "CaptureTheFlag-v0", seed=4, env_kwargs=kwargs,
                                              model=model))
    env = CaptureTheFlag(difficulty=5, seed=0, **kwargs)
    obs, _ = env.reset(seed=0)
    x = np.stack([obs[a] for a in env.possible_agents]).astype(np.float32)
    assert policy.feature_size == x.shape[1] == CaptureTheFlag.obs_layout(4)[1] + 9 * 9 * 10 + 5 * 5 * 5
    path = export_onnx(policy, tmp_path / "ctf.onnx")
    assert np.max(np.abs(onnx_logits(path, x) - torch_logits(policy, x))) <= TOLERANCE
