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


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_the_memory_map_that_ends_the_features_gets_its_own_convolutions(kind):
    """`map_shape` + `map_channels`: the last B*B*C feature entries get conv layers of their own (the CNN's
    window convolutions come first, the vector between them as it is), for either kind; the parameter
    count the preflight estimates is the module's."""
    from spade_rllib.config.resources import parameter_count

    config = {"kind": kind, "hidden": [8], "activation": "relu", "map_shape": [3, 3, 2], "map_channels": [4, 3]}
    if kind == "cnn":
        config.update(window_shape=[3, 3, 2], cnn_channels=[4])
    obs = 3 * 3 * 2 + 5 + 3 * 3 * 2  # window, vector, map
    module = build(config, obs_size=obs)
    encoders = [m for m in module.modules() if hasattr(m, "map_convs")]
    assert encoders and encoders[0].map_convs[0].in_channels == 2 and hasattr(encoders[0], "convs") == (kind == "cnn")
    assert sum(p.numel() for p in module.parameters()) == parameter_count(config, obs, 5)
    x = obs_batch(4, obs)
    moved = x.clone()
    moved[:, -18:] = torch.roll(x[:, -18:].reshape(4, 3, 3, 2), 1, dims=1).reshape(4, 18)  # the map shifts a row
    with torch.no_grad():
        assert module.logits(x).shape == (4, 5)
        assert not torch.allclose(module.logits(moved), module.logits(x))
        assert torch.equal(module.fast_logits(x), module.logits(x))  # no plain-MLP fast path with convolutions
    flat = {k: v for k, v in config.items() if k != "map_channels"}  # a map shape alone: the map enters flat
    assert sum(p.numel() for p in build(flat, obs_size=obs).parameters()) == parameter_count(flat, obs, 5)
    assert not [m for m in build(flat, obs_size=obs).modules() if hasattr(m, "map_convs")]


def test_a_ctf_run_with_the_memory_map_and_map_channels_gives_the_module_its_map_shape():
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.env_description import describe_env
    from spade_rllib.rllib.model_config import model_config_for

    cfg = parse_config({"env": {"id": "CaptureTheFlag-v0", "difficulty": 3.0, "kwargs": {"seen_map": 5}},
                        "agent": {"model": {"map_channels": [8]}}})
    mc = model_config_for(cfg, describe_env(cfg))
    assert mc["map_shape"] == [5, 5, 5] and mc["map_channels"] == [8]
    plain = parse_config({"env": {"id": "CaptureTheFlag-v0", "difficulty": 3.0, "kwargs": {"seen_map": 5}}})
    assert "map_shape" not in model_config_for(plain, describe_env(plain))  # the default: the map enters flat
    from spade_rllib.config.run_config import ConfigError

    with pytest.raises(ConfigError, match=r"agent.model.map_channels = \[8\]: .*has none; turn it on .*seen_map"):
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "agent": {"model": {"map_channels": [8]}}})


@pytest.mark.parametrize("prev", [False, True])
def test_the_preflight_parameter_count_is_the_recurrent_modules(prev):
    from spade_rllib.config.resources import parameter_count

    config = {"kind": "mlp", "hidden": [16, 8], "activation": "relu", "use_lstm": True, "lstm_cell_size": 12,
              "max_seq_len": 5, "lstm_use_prev_action": prev, "lstm_use_prev_reward": prev}
    module = build(config, obs_size=7)
    assert sum(p.numel() for p in module.parameters()) == parameter_count(config, 7, 5)
