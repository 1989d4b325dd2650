"""The env of a run as the trainer sees it: `describe_env(cfg)` builds one env copy on the driver and
returns its `EnvInfo` (spaces, teams, mask size, window and map layout, roles); `env_kwargs_for(cfg)` is
the constructor kwargs of one env copy; `check_env_builds(cfg)` is `describe_env` before Ray starts, any
failure a one-line `ConfigError` (a missing optional dependency of the env, `CarRacing-v3` without box2d,
named now rather than in an env runner's traceback; a magnet on continuous actions)."""
from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym

from spade_rllib.training.signal_schedule import initial_values
from spade_rllib.config.run_config import RunConfig, resolved_env_of
from spade_rllib.games.adapter import game_factory_for
from spade_rllib.rllib.components import EnvInfo
from spade_rllib.core.validation import ConfigError


def env_kwargs_for(cfg: RunConfig) -> dict:
    """Constructor kwargs for one training env copy (level games: level_file and difficulty folded in; the first
    value of each `env.signal_schedule`)."""
    kwargs = {**cfg.env.kwargs, **initial_values(cfg.env.signal_schedule)}
    if resolved_env_of(cfg).is_level_game:
        if cfg.env.level_file:
            from spade_rllib.envs import Level

            kwargs["level"] = Level.from_ascii(Path(os.path.expanduser(cfg.env.level_file)).read_text())
        elif cfg.env.difficulty is not None:
            kwargs["difficulty"] = cfg.env.difficulty
    return kwargs


def describe_env(cfg: RunConfig) -> EnvInfo:
    """Build one env copy on the driver to learn spaces, teams and the mask size."""
    env = resolved_env_of(cfg)
    game = game_factory_for(env, env_kwargs_for(cfg), cfg.to_dict()["env"])()
    window = map_shape = None
    kind = env.kind
    if env.is_level_game:
        level_class = env.spec.level_class
        window = tuple(level_class.obs_layout(int(cfg.env.kwargs.get("view_radius", 4)))[0])
        map_shape = level_class.map_layout(**dict(cfg.env.kwargs))
    from spade_rllib.games.roles import game_roles

    roles = game_roles(game, cfg.env.roles, cfg.env.id)
    role_shapes = {}
    for agent, role in roles.items():
        role_shapes.setdefault(role, tuple(game.agent_shape(agent)))
    info = EnvInfo(cfg.env.id, kind, tuple(game.teams), game.num_actions, game.obs_size, game.mask_size, window,
                   map_shape=None if map_shape is None else tuple(map_shape),
                   action_space=game.action_space(), roles=roles, role_shapes=role_shapes)
    close = getattr(game.raw_env, "close", None)
    if close:
        close()
    return info


def check_env_builds(cfg):
    """`describe_env(cfg)` (one env copy on the driver), with any failure as a one-line `ConfigError`."""
    try:
        info = describe_env(cfg)
    except ConfigError:
        raise
    except Exception as e:
        text = " ".join(str(e).split()) or type(e).__name__
        raise ConfigError(f"env.id = {cfg.env.id!r}: the env cannot be built here ({type(e).__name__}: {text})") from e
    if cfg.agent.magnet_coeff > 0 and isinstance(info.action_space, gym.spaces.Box):
        raise ConfigError(f"agent.magnet_coeff = {cfg.agent.magnet_coeff:g}: discrete actions only; env.id = "
                          f"{cfg.env.id!r} acts in {info.action_space} (set agent.magnet_coeff to 0)")
    return info


__all__ = ["check_env_builds", "describe_env", "env_kwargs_for"]
