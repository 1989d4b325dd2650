"""`SpadeModule.fast_logits` (the env runner's acting path) equals `logits` exactly, follows in-place
weight loads, and falls back to `logits` for the CNN."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from spade_rllib.rllib.module import SpadeModule


def build(model_config: dict, obs_size: int = 30, actions: int = 5):
    torch.manual_seed(0)
    spec = RLModuleSpec(module_class=SpadeModule, observation_space=gym.spaces.Box(-1, 1, (obs_size,), np.float32),
                        action_space=gym.spaces.Discrete(actions), model_config=model_config)
    module = spec.build()
    with torch.no_grad():
        module.pi_head.weight.normal_(0.0, 1.0)
    return module


def obs_batch(rows: int, size: int, mask_size: int = 0) -> torch.Tensor:
    x = np.random.default_rng(1).uniform(-1, 1, (rows, size)).astype(np.float32)
    if mask_size:
        x[:, -mask_size:] = np.random.default_rng(2).integers(0, 2, (rows, mask_size))
        x[:, -1] = 1.0  # at least one legal action
    return torch.from_numpy(x)


@pytest.mark.parametrize("config", [
    {"kind": "mlp", "hidden": [16, 8], "activation": "tanh"},
    {"kind": "mlp", "hidden": [16], "activation": "relu", "vf_share_layers": True},
    {"kind": "mlp", "hidden": [12, 12], "activation": "tanh", "mask_size": 5},
], ids=["tanh", "relu-shared", "masked"])
def test_fast_logits_equal_logits_and_follow_weight_loads(config):
    module = build(config)
    x = obs_batch(7, 30, config.get("mask_size", 0))
    with torch.no_grad():
        assert torch.allclose(module.fast_logits(x), module.logits(x), atol=1e-6)
        other = build({**config})
        with torch.no_grad():
            for p in other.parameters():
                p.add_(0.5)
        module.set_state(other.get_state())  # RLlib's weight sync: an in-place load
        assert torch.allclose(module.fast_logits(x), other.logits(x), atol=1e-6)
        assert not torch.allclose(module.fast_logits(x), build(config).logits(x), atol=1e-3)


def test_cnn_falls_back_to_logits():
    module = build({"kind": "cnn", "hidden": [8], "activation": "relu", "window_shape": [3, 3, 2],
                    "cnn_channels": [4]}, obs_size=20)
    x = obs_batch(4, 20)
    with torch.no_grad():
        assert torch.equal(module.fast_logits(x), module.logits(x))
