"""What a run asks of this machine, checked before an embedded Ray starts: one-line `ConfigError`s.

* CPUs and GPUs: `required_resources(cfg)` (the bundles Ray is asked for: driver, env runners, learners)
  against this machine in `check_resources` (an embedded Ray waits forever for CPUs or GPUs it does not have;
  `machine_gpus` imports torch only when a GPU is asked for).
* Memory: `check_model_memory`, the trained modules' parameters (`parameter_count`) with gradients and Adam's
  two moments in every copy (`BYTES_PER_PARAMETER`) within `MEMORY_SHARE` of `machine_memory()`; the
  message names the `agent.model` key that makes the model large (`memory_cause`).
"""
from __future__ import annotations

import os
from typing import Optional

from spade_rllib.core.validation import ConfigError


CPU_OVERCOMMIT = 4
"""An embedded Ray may declare at most this many CPUs per CPU of the machine."""


def required_resources(cfg) -> dict:
    """{"CPU": n, "GPU": g} a run of `cfg` asks Ray for: the trial's driver (with the local learner),
    each remote env runner and each remote learner (RLlib's `default_resource_request` bundles)."""
    r, t = cfg.resources, cfg.training
    cpu = 1.0 + t.num_env_runners * r.num_cpus_per_env_runner
    gpu = 0.0
    if r.num_learners > 0:
        cpu += r.num_learners * r.num_cpus_per_learner
        gpu += r.num_learners * r.num_gpus_per_learner
    else:
        gpu += r.num_gpus_per_learner  # the local learner takes its GPU in the driver's bundle
    return {"CPU": cpu, "GPU": gpu}


def machine_gpus() -> int:
    """GPUs this machine shows to torch (0 without CUDA)."""
    try:
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:
        return 0


def check_resources(cfg, required: dict, cpus: Optional[float] = None, gpus: Optional[float] = None) -> None:
    """An embedded Ray gets `resources.num_cpus` (or every CPU here) and this machine's GPUs; a run that
    asks for more never starts (Tune waits silently), so refuse it now."""
    machine = os.cpu_count() or 1
    if cpus is None and cfg.resources.num_cpus and cfg.resources.num_cpus > CPU_OVERCOMMIT * machine:
        raise ConfigError(f"resources.num_cpus = {cfg.resources.num_cpus}: out of range, this machine has {machine} CPUs "
                          f"(allowed up to {CPU_OVERCOMMIT}x that, {CPU_OVERCOMMIT * machine}, for the embedded Ray)")
    have_cpu = float(cpus if cpus is not None else (cfg.resources.num_cpus or machine))
    need_cpu, need_gpu = float(required.get("CPU", 0)), float(required.get("GPU", 0))
    have_gpu = float(gpus if gpus is not None else (machine_gpus() if need_gpu > 0 else 0))  # torch only when asked
    r, t = cfg.resources, cfg.training
    learner_cpu = r.num_learners * r.num_cpus_per_learner
    if r.num_learners > 1 and need_cpu > have_cpu + 1e-9 and 1.0 + learner_cpu > have_cpu + 1e-9:
        source = f"resources.num_cpus = {cfg.resources.num_cpus}" if cfg.resources.num_cpus else f"this machine has {have_cpu:g} CPUs"
        raise ConfigError(
            f"resources.num_learners = {r.num_learners}: out of range, the learners alone take {learner_cpu:g} CPUs "
            f"({r.num_learners} x resources.num_cpus_per_learner {r.num_cpus_per_learner:g}) plus 1 for the driver, but {source}; "
            f"lower num_learners or num_cpus_per_learner (fractions allowed, e.g. 0.5)")
    if need_cpu > have_cpu + 1e-9:
        source = f"resources.num_cpus = {cfg.resources.num_cpus}" if cfg.resources.num_cpus else f"this machine has {have_cpu:g} CPUs"
        raise ConfigError(
            f"training.num_env_runners = {t.num_env_runners}: out of range, the run needs {need_cpu:g} CPUs "
            f"(1 driver + {t.num_env_runners} env runners x {r.num_cpus_per_env_runner:g}"
            + (f" + {r.num_learners} learners x {r.num_cpus_per_learner:g}" if r.num_learners else "")
            + f") but {source}; lower num_env_runners or resources.num_cpus_per_env_runner")
    if need_gpu > have_gpu + 1e-9 and have_gpu == 0 and gpus is None:
        raise ConfigError(
            f"resources.num_gpus_per_learner = {r.num_gpus_per_learner:g}: out of range, this machine has no GPU "
            f"(torch.cuda.is_available() is False); set it to 0, or attach to a cluster with GPUs (--address)")
    if need_gpu > have_gpu + 1e-9:
        raise ConfigError(
            f"resources.num_gpus_per_learner = {r.num_gpus_per_learner:g}: out of range, the run needs {need_gpu:g} GPU(s) "
            f"but this machine has {have_gpu:g}; set it to 0 or attach to a cluster with GPUs (--address)")


BYTES_PER_PARAMETER = 4 * 4
"""float32 weights, their gradients and Adam's two moments."""
MEMORY_SHARE = 0.5
"""A run may plan to use at most this share of the machine's memory for model copies."""


def parameter_count(model_config: dict, obs_size: int, num_actions: int) -> int:
    """Parameters of `SpadeModule` for `model_config` (an MLP trunk per head unless shared; the CNN's
    convolutions over its window, and over the memory map with `map_channels`; with `use_lstm` one trunk, the
    LSTM and heads on its cell); an estimate for other kinds, used only to bound memory."""
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
    if model_config.get("use_lstm"):  # one trunk, then the LSTM (PyTorch's two bias vectors); heads on its cell
        cell = int(model_config.get("lstm_cell_size", 256))
        extra = (num_actions if model_config.get("lstm_use_prev_action") else 0) + \
            (1 if model_config.get("lstm_use_prev_reward") else 0)
        count += 4 * cell * (size + extra + cell) + 8 * cell
        return count + cell * num_actions + num_actions + cell + 1
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


def check_model_memory(cfg, model_config: dict, obs_size: int, num_actions: int, modules: int,
                       memory: Optional[int] = None) -> None:
    """The run's model copies fit in this machine's memory: `modules` trained modules of `model_config`
    (the learner's copy with gradients and Adam's two moments, one per remote learner, and one in each env
    runner); `ConfigError` naming the `agent.model` key that makes the model large."""
    memory = memory if memory is not None else machine_memory()
    if not memory:
        return
    params = parameter_count(model_config, obs_size, num_actions)
    copies = modules * (1 + max(1, cfg.resources.num_learners)) + cfg.training.num_env_runners + 1
    need = params * BYTES_PER_PARAMETER * copies
    if need > MEMORY_SHARE * memory:
        key = memory_cause(model_config, obs_size, num_actions)
        value = getattr(cfg.agent.model, key)
        shown = list(value) if isinstance(value, (list, tuple)) else value
        raise ConfigError(
            f"agent.model.{key} = {shown}: out of range, {params:,d} parameters need about "
            f"{need / 2**30:,.1f} GiB ({copies} copies with gradients and optimizer state); this machine has "
            f"{memory / 2**30:,.1f} GiB (limit: {MEMORY_SHARE:.0%} of it)")


__all__ = ["BYTES_PER_PARAMETER", "CPU_OVERCOMMIT", "MEMORY_SHARE", "check_model_memory", "check_resources",
           "machine_gpus", "machine_memory", "memory_cause", "parameter_count", "required_resources"]
