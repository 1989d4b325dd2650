"""Checks `train` runs after the config is valid and before Ray starts, each a one-line `ConfigError`.

* `check_env_builds(cfg)`: one env copy builds here, so a missing optional dependency of the env
  (`CarRacing-v3` without box2d) is named now, not in an env runner's traceback;
* `check_model_memory(cfg, info)`: the model's parameters (with gradients and Adam's two moments, in
  the learner and in every env runner's copy) fit in this machine's memory;
* `check_resume(cfg, checkpoint)`: the checkpoint's weights load and fit their modules exactly
  (`policy.load_module`), its env is the config's env, and each trained module's observation size,
  action count and effective `model_config` (defaults filled in: a key recorded only when on counts)
  are what the config builds now, and a module built from the config (CPU, no Ray) takes every saved
  tensor by name and shape (a mismatch would otherwise fail inside Ray, or leave the trunk random).
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
    from spade_rllib.rllib.algorithm import describe_env

    try:
        return describe_env(cfg)
    except ConfigError:
        raise
    except Exception as e:
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


def memory_cause(model_config: dict, obs_size: int, num_actions: int) -> str:
    """The `agent.model` key that makes the model large: the one whose removal (convolutions turned
    off) cuts the parameter count the most, when that cut is most of it; else `hidden`."""
    total = parameter_count(model_config, obs_size, num_actions)
    smaller = {"map_channels": {**model_config, "map_channels": []},
               "cnn_channels": {**model_config, "kind": "mlp"}}
    cuts = {key: total - parameter_count(mc, obs_size, num_actions) for key, mc in smaller.items()
            if model_config.get(key) or (key == "cnn_channels" and model_config.get("kind") == "cnn")}
    best = max(cuts, key=cuts.get, default=None)
    return best if best is not None and cuts[best] * 2 > total else "hidden"


def check_model_memory(cfg, info, memory: Optional[int] = None) -> None:
    from spade_rllib.rllib.algorithm import learner_module_ids, model_config_for

    memory = memory if memory is not None else machine_memory()
    if not memory:
        return
    model_config = model_config_for(cfg, info)
    params = parameter_count(model_config, info.obs_size, info.num_actions)
    copies = len(learner_module_ids(cfg, info)) * (1 + max(1, cfg.resources.num_learners)) + cfg.training.num_env_runners + 1
    need = params * BYTES_PER_PARAMETER * copies
    if need > MEMORY_SHARE * memory:
        key = memory_cause(model_config, info.obs_size, info.num_actions)
        value = getattr(cfg.agent.model, key)
        shown = list(value) if isinstance(value, (list, tuple)) else value
        raise ConfigError(
            f"agent.model.{key} = {shown}: out of range, {params:,d} parameters need about "
            f"{need / 2**30:,.1f} GiB ({copies} copies with gradients and optimizer state); this machine has "
            f"{memory / 2**30:,.1f} GiB (limit: {MEMORY_SHARE:.0%} of it)")


def _comparable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


MODEL_DEFAULTS = {"kind": "mlp", "use_lstm": False, "map_channels": None, "hidden": [128, 128], "activation": "tanh",
                  "vf_share_layers": False, "cnn_channels": [16, 32], "lstm_cell_size": 256, "max_seq_len": 20,
                  "lstm_use_prev_action": False, "lstm_use_prev_reward": False, "log_std_init": 0.0, "mask_size": 0,
                  "window_shape": None, "map_shape": None}
"""What `SpadeModule.setup` assumes for a key a `model_config` leaves out (keys recorded only when on)."""
FREE_ON_RESUME = ("train_bf16",)
"""Keys a resume may change: they change how the learner computes, not which tensors the module holds."""
DERIVED_KEYS = ("mask_size", "window_shape", "map_shape")
"""Keys that come from the env (its kwargs or map), not from `agent.model`."""


def effective_model_config(model_config: dict) -> dict:
    """`model_config` with `SpadeModule`'s defaults filled in and the keys it ignores dropped (the CNN's
    keys of an MLP, the memory map's without `map_channels`, the LSTM's without `use_lstm`), so two
    configs that build the same module compare equal whichever keys each recorded."""
    out = {**MODEL_DEFAULTS, **_comparable(dict(model_config))}
    for key in FREE_ON_RESUME:
        out.pop(key, None)
    if out["kind"] != "cnn":
        out.pop("window_shape"), out.pop("cnn_channels")
    if not (out["map_shape"] and out["map_channels"]):
        out["map_shape"] = out["map_channels"] = None
    if not out["use_lstm"]:
        for key in ("lstm_cell_size", "max_seq_len", "lstm_use_prev_action", "lstm_use_prev_reward"):
            out.pop(key)
    else:
        out["vf_share_layers"] = None  # the recurrent module always shares its encoder and LSTM
    return out


IMPLIED = {"kind": ("cnn_channels", "window_shape"), "map_channels": ("map_shape",),
           "use_lstm": ("vf_share_layers", "lstm_cell_size", "max_seq_len", "lstm_use_prev_action", "lstm_use_prev_reward")}
"""Keys that differ only because the switch before them differs (left out of the message)."""


def model_differences(saved: dict, want: dict) -> list[str]:
    """Keys whose effective values differ (`effective_model_config`), `agent.model` keys first."""
    a, b = effective_model_config(saved), effective_model_config(want)
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    implied = {k for switch in keys for k in IMPLIED.get(switch, ())}
    keys = [k for k in keys if k not in implied]
    return sorted(keys, key=lambda k: (k in DERIVED_KEYS, list(MODEL_DEFAULTS).index(k) if k in MODEL_DEFAULTS else 99))


def _config_key(key: str) -> str:
    from spade_rllib.rllib.model_config import config_key

    return key if key in DERIVED_KEYS else f"agent.model.{config_key(key)}"


def _module_misfit(module, model_config: dict) -> str | None:
    """Build the module the config makes now (same spaces, on CPU, no Ray) and check the saved
    tensors against it: the first key or shape that would not load, else None."""
    from spade_rllib.checkpoint_guard import state_problem
    from spade_rllib.rllib.module import SpadeModule

    try:
        fresh = SpadeModule(observation_space=module.observation_space, action_space=module.action_space,
                            inference_only=False, model_config=dict(model_config))
    except Exception as e:
        return f"the module cannot be built from it ({type(e).__name__}: {' '.join(str(e).split())})"
    return state_problem(fresh.get_state(), module.get_state())


def check_resume(cfg, checkpoint: str, info=None) -> None:
    """The checkpoint fits the config it resumes with (see the module docstring): every learner module's
    effective `model_config` equals what the config builds now (defaults filled in, so a key recorded
    only when on still counts), and the module the config builds takes every saved tensor, name and shape."""
    from spade_rllib.checkpoint_layout import CheckpointError, checkpoint_env_id, resolve_checkpoint
    from spade_rllib.games import canonical_env_id
    from spade_rllib.policy import load_module
    from spade_rllib.rllib.algorithm import learner_module_ids, model_config_for

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
        if module_id not in learners:
            continue
        saved = _comparable(dict(getattr(module, "model_config", None) or {}))
        keys = model_differences(saved, want)
        if keys:
            a, b = effective_model_config(saved), effective_model_config(want)
            key = keys[0]
            more = f"; also differs: {', '.join(_config_key(k) for k in keys[1:])}" if keys[1:] else ""
            raise ConfigError(f"--resume: module {module_id!r} of {ckpt.path} was trained with {key} = {a.get(key)!r}; "
                              f"the config gives {b.get(key)!r} ({_config_key(key)}){more}; resume with the run's "
                              "model settings, or start a new run")
        misfit = _module_misfit(module, want)
        if misfit:
            raise ConfigError(f"--resume: module {module_id!r} of {ckpt.path}: the saved weights do not fit the module "
                              f"this config builds: {misfit}")
    for member in ckpt.league_ids:
        try:
            load_module(ckpt, member)
        except CheckpointError as e:
            raise ConfigError(f"--resume: {e}") from e


__all__ = ["check_env_builds", "check_model_memory", "check_resume", "parameter_count"]
