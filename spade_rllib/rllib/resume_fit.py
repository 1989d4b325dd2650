"""`check_resume(cfg, checkpoint)`: a checkpoint fits the config it resumes with, checked before Ray starts.

The checkpoint's weights load and fit their modules exactly (`policy.load_module`), its env is the
config's env, and each trained module's observation size, action count and effective `model_config`
(defaults filled in: a key recorded only when on counts; `model_compat.model_differences`) are what the
config builds now, and a module built from the config (`SpadeModule`, CPU, no Ray) takes every saved
tensor by name and shape (a mismatch would otherwise fail inside Ray, or leave the trunk random). Each
refusal is a one-line `ConfigError`. It stands in rllib/ because it builds the trainer's own module; the
checks that need only the config, the games and this machine are in `spade_rllib.config.preflight`, `resources`
and `output_paths`.
"""
from __future__ import annotations

import numpy as np

from spade_rllib.config.model_compat import (comparable_value, effective_model_config, model_config_key, model_config_value,
                                     model_differences)
from spade_rllib.core.validation import ConfigError


def _module_misfit(module, model_config: dict) -> str | None:
    """Build the module the config makes now (same spaces, on CPU, no Ray) and check the saved
    tensors against it: the first key or shape that would not load, else None."""
    from spade_rllib.artifacts.checkpoint_guard import state_problem
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
    from spade_rllib.artifacts.checkpoint_layout import CheckpointError, checkpoint_env_id, resolve_checkpoint
    from spade_rllib.games import canonical_env_id
    from spade_rllib.players.policy import load_module
    from spade_rllib.rllib.env_description import check_env_builds
    from spade_rllib.rllib.model_config import learner_module_ids, model_config_for

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
        want = comparable_value(model_config_for(cfg, info, module_id))
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
        saved = comparable_value(dict(getattr(module, "model_config", None) or {}))
        keys = model_differences(saved, want)
        if keys:
            a, b = effective_model_config(saved), effective_model_config(want)
            key = keys[0]
            more = f"; also differs: {', '.join(model_config_key(k) for k in keys[1:])}" if keys[1:] else ""
            name, was, now = model_config_key(key), model_config_value(key, a.get(key)), model_config_value(key, b.get(key))
            raise ConfigError(f"--resume: module {module_id!r} of {ckpt.path} was trained with {name} = {was!r}; "
                              f"the config gives {now!r}{more}; resume with the run's "
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


__all__ = ["check_resume"]
