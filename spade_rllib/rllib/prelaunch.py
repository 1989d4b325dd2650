"""Checks `train` runs after the config is valid and before Ray starts, each a one-line `ConfigError`.

* `check_env_builds(cfg)`: one env copy builds here, so a missing optional dependency of the env
  (`CarRacing-v3` without box2d) is named now, not in an env runner's traceback;
* `check_model_memory(cfg, info)`: the model's parameters (with gradients and Adam's two moments, in
  the learner and in every env runner's copy) fit in this machine's memory;
* `check_resume(cfg, checkpoint)`: the checkpoint's weights load and fit their modules exactly
  (`policy.load_module`), its env is the config's env, and each trained module's observation size,
  action count and `model_config` are what the config builds now (a mismatch would otherwise fail
  inside Ray as a size mismatch).
"""
from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from spade_rllib.validation import ConfigError

BYTES_PER_PARAMETER = 4 * 4
"""float32 weights, their gradients and Adam's two moments."""
MEMORY_SHARE = 0.5
"""A run may plan to use at most this share of the machine's memory for model copies."""


def check_env_builds(cfg):
    """`describe_env(cfg)` (one env copy on the driver), with any failure as a one-line `ConfigError`."""
    from spade_rllib.rllib.algorithm import describe_env  # noqa: PLC0415

    try:
        return describe_env(cfg)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a missing extra (ImportError, DependencyNotInstalled) or a broken env
        text = " ".join(str(e).split()) or type(e).__name__
        raise ConfigError(f"env.id = {cfg.env.id!r}: the env cannot be built here ({type(e).__name__}: {text})") from e


def parameter_count(model_config: dict, obs_size: int, num_actions: int) -> int:
    """Parameters of `SpadeModule` for `model_config` (an MLP trunk per head unless shared; the CNN's
    convolutions over its window, and over the memory map with `map_channels`); an estimate for other kinds,
    used only to bound memory."""
    hidden = [int(h) for h in model_config.get("hidden", [128, 128])]
    feat = obs_size - int(model_config.get("mask_size", 0))
    size, count = feat, 0
    convs = []  # (shape, widths) of the window's and the memory map's convolutions
    if model_config.get("kind") == "cnn" and model_config.get("window_shape"):
        convs.append((model_config["window_shape"], model_config.get("cnn_channels", [16, 32])))
    if model_config.get("map_shape") and model_config.get("map_channels"):
        convs.append((model_config["map_shape"], model_config["map_channels"]))
    for shape, widths in convs:
        h, w, c = (int(x) for x in shape)
        in_c = c
        for out_c in (int(x) for x in widths):
            count += in_c * out_c * 9 + out_c
            in_c = out_c
        size += in_c * h * w - h * w * c
    for width in hidden:
        count += size * width + width
        size = width
    trunks = 1 if model_config.get("vf_share_layers") else 2
    return trunks * count + size * num_actions + num_actions + size + 1


def machine_memory() -> Optional[int]:
    """Bytes of physical memory here (None when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def check_model_memory(cfg, info, memory: Optional[int] = None) -> None:
    from spade_rllib.rllib.algorithm import learner_module_ids, model_config_for  # noqa: PLC0415

    memory = memory if memory is not None else machine_memory()
    if not memory:
        return
    params = parameter_count(model_config_for(cfg, info), info.obs_size, info.num_actions)
    copies = len(learner_module_ids(cfg, info)) * (1 + max(1, cfg.resources.num_learners)) + cfg.training.num_env_runners + 1
    need = params * BYTES_PER_PARAMETER * copies
    if need > MEMORY_SHARE * memory:
        raise ConfigError(
            f"agent.model.hidden = {list(cfg.agent.model.hidden)}: out of range, {params:,d} parameters need about "
            f"{need / 2**30:,.1f} GiB ({copies} copies with gradients and optimizer state); this machine has "
            f"{memory / 2**30:,.1f} GiB (limit: {MEMORY_SHARE:.0%} of it)")


def _comparable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


def check_resume(cfg, checkpoint: str, info=None) -> None:
    """The checkpoint fits the config it resumes with (see the module docstring)."""
    from spade_rllib.checkpoint_layout import CheckpointError, checkpoint_env_id, resolve_checkpoint  # noqa: PLC0415
    from spade_rllib.games import canonical_env_id  # noqa: PLC0415
    from spade_rllib.policy import load_module  # noqa: PLC0415
    from spade_rllib.rllib.algorithm import learner_module_ids, model_config_for  # noqa: PLC0415

    info = info if info is not None else check_env_builds(cfg)
    try:
        ckpt = resolve_checkpoint(checkpoint)
    except CheckpointError as e:
        raise ConfigError(f"--resume: {e}") from e
    recorded = checkpoint_env_id(ckpt)
    if recorded is not None and canonical_env_id(recorded) != canonical_env_id(cfg.env.id):
        raise ConfigError(f"--resume: {ckpt.path} was trained on {recorded}; the config says env.id = {cfg.env.id!r}")
    learners = set(learner_module_ids(cfg, info))
    for module_id in ckpt.module_ids:
        want = _comparable(model_config_for(cfg, info, module_id))
        obs_size, _, num_actions = info.module_shape(module_id)
        try:
            module = load_module(ckpt, module_id)
        except CheckpointError as e:
            raise ConfigError(f"--resume: {e}") from e
        obs = int(np.prod(module.observation_space.shape or ()))
        space = module.action_space
        n = int(space.n) if hasattr(space, "n") else int(np.prod(getattr(space, "shape", None) or (-1,)))  # Box: its size
        if module_id in learners and (obs, n) != (obs_size, num_actions):
            raise ConfigError(f"--resume: module {module_id!r} of {ckpt.path} observes {obs} values with {n} actions; "
                              f"{cfg.env.id} with this config gives {obs_size} and {num_actions} "
                              "(env.kwargs or the map changed?)")
        saved = _comparable(dict(getattr(module, "model_config", None) or {}))
        if module_id in learners:
            for key in sorted(set(want) & set(saved)):  # an older checkpoint may not record every key
                if saved.get(key) != want.get(key):
                    shown = f"agent.model.{key}" if key not in ("mask_size", "window_shape") else key
                    raise ConfigError(f"--resume: module {module_id!r} of {ckpt.path} was trained with {key} = "
                                      f"{saved.get(key)!r}; the config gives {want.get(key)!r} ({shown})")
    for member in ckpt.league_ids:
        try:
            load_module(ckpt, member)
        except CheckpointError as e:
            raise ConfigError(f"--resume: {e}") from e


__all__ = ["check_env_builds", "check_model_memory", "check_resume", "parameter_count"]
