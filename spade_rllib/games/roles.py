"""Roles: which trained module plays each agent of a game. No Ray, no torch.

A symmetric game (every agent with the same spaces and no `env.roles`) has no roles: one trained
module, ``main``, plays every agent. A role game gives each agent a role and trains one module per
role, ``main_<role>`` (`role_module_id`). The role of each agent comes from `env.roles`:

  * a mapping ``{agent_or_prefix: role}``: a key names one agent (``agent_0``) or every agent whose
    name minus its trailing ``_<n>`` is the key (``adversary`` -> ``adversary_0``, ``adversary_1``);
    every agent needs a role and every key must name an agent;
  * a ``"pkg.module:function"`` path: ``function(agent) -> role``;
  * absent (None): inferred when the agents' spaces differ, by PettingZoo's naming convention (the
    agent's name minus its trailing ``_<n>``: ``adversary_0`` -> ``adversary``); same spaces: no roles.

Agents of one role must share their spaces (one network plays them all). One role in all is a
symmetric game. `resolve_roles` returns ``{agent: role}`` (empty for a symmetric game) or raises a
one-line `ConfigError`; the config, preflight and the driver call it with the same arguments.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Optional, Sequence

from spade_rllib.core.validation import ConfigError, did_you_mean

ROLE_MODULE_PREFIX = "main_"
ROLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SUFFIX = re.compile(r"_\d+$")
# Role names that would make `main_<role>` read as another league id (exploiters, snapshots).
_RESERVED = re.compile(r"exploiter.*|(.*_)?v\d+")
Shape = tuple  # (obs size, mask size, number of actions), as `Game.agent_shape` gives it


def role_module_id(role: str) -> str:
    """The trained module of a role: ``main_<role>``."""
    return f"{ROLE_MODULE_PREFIX}{role}"


def role_of_module(module_id: str) -> Optional[str]:
    """The role behind ``main_<role>``, None for any other module id."""
    if module_id.startswith(ROLE_MODULE_PREFIX) and ROLE_NAME.fullmatch(module_id[len(ROLE_MODULE_PREFIX):]):
        return module_id[len(ROLE_MODULE_PREFIX):]
    return None


def name_stem(agent: str) -> str:
    """PettingZoo's group name of an agent: its name minus a trailing ``_<n>`` (``adversary_0`` -> ``adversary``)."""
    return _SUFFIX.sub("", agent)


def role_names(roles: Mapping[str, str]) -> tuple[str, ...]:
    """The roles of an ``{agent: role}`` mapping in the order their first agent appears."""
    return tuple(dict.fromkeys(roles.values()))


def check_spec(value: Any, key: str = "env.roles") -> None:
    """The syntax of `env.roles`: None, a mapping of names to role names, or a ``"pkg.module:function"`` path."""
    if value is None:
        return
    if isinstance(value, str):
        if value.count(":") != 1 or not all(value.split(":")):
            raise ConfigError(f"{key} = {value!r}: not allowed; allowed: a mapping {{agent_or_prefix: role}} or a "
                              "'pkg.module:function' path of a function agent -> role")
        return
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{key} = {value!r}: wrong type, expected a non-empty mapping {{agent_or_prefix: role}} "
                          "or a 'pkg.module:function' path")
    for name, role in value.items():
        if not isinstance(name, str) or not isinstance(role, str):
            raise ConfigError(f"{key}.{name} = {role!r}: wrong type, expected agent names mapped to role names (strings)")
        _check_role_name(f"{key}.{name}", role)


def _check_role_name(key: str, role: Any) -> None:
    if not isinstance(role, str) or not ROLE_NAME.fullmatch(role) or _RESERVED.fullmatch(role):
        raise ConfigError(f"{key} = {role!r}: not allowed; allowed: a lower_snake_case role name (module "
                          "main_<role>), not starting with 'exploiter' nor ending in v<n>")


def _role_function(path: str, key: str) -> Callable[[str], Any]:
    from spade_rllib.games.env_ids import import_env_module

    try:
        fn = import_env_module(path)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{key} = {path!r}: cannot import it ({e.__class__.__name__}: {e})") from e
    if not callable(fn):
        raise ConfigError(f"{key} = {path!r}: not callable; expected a function agent -> role")
    return fn


def resolve_roles(agents: Sequence[str], shapes: Mapping[str, Shape], spec: Any = None,
                  key: str = "env.roles", env_id: str = "the env") -> dict[str, str]:
    """``{agent: role}`` for a role game, ``{}`` for a symmetric one (see the module docstring)."""
    check_spec(spec, key)
    agents = list(agents)
    differ = len({tuple(shapes[a]) for a in agents}) > 1
    if spec is None:
        if not differ:
            return {}
        roles = {a: name_stem(a) for a in agents}
        how = "inferred from the agent names"
    elif isinstance(spec, str):
        fn = _role_function(spec, key)
        roles = {}
        for a in agents:
            role = fn(a)
            _check_role_name(f"{key}({a!r})", role)
            roles[a] = role
        how = f"from {spec}"
    else:
        stems = {name_stem(a) for a in agents}
        for name in spec:
            if name not in agents and name not in stems:
                hint = did_you_mean(name, [*stems, *agents])
                raise ConfigError(f"{key}.{name}: names no agent of {env_id}{hint}; agents: {', '.join(agents)}")
        roles = {}
        for a in agents:
            role = spec.get(a, spec.get(name_stem(a)))
            if role is not None:
                roles[a] = role
        missing = [a for a in agents if a not in roles]
        if missing:
            raise ConfigError(f"{key}: agents {', '.join(missing)} of {env_id} have no role; give every agent one "
                              f"(by name or by prefix, e.g. {name_stem(missing[0])!r}: <role>)")
        how = "from env.roles"
    for role in role_names(roles):
        _check_role_name(f"{key} role", role)
        members = [a for a in agents if roles[a] == role]
        if len({tuple(shapes[a]) for a in members}) > 1:
            detail = ", ".join(f"{a} {_describe(shapes[a])}" for a in members)
            fix = "set env.roles: {agent_or_prefix: role}" if spec is None else "give them different roles"
            raise ConfigError(f"{key}: role {role!r} ({how}) holds agents with different spaces ({detail}); one "
                              f"network plays a role: {fix}")
    # One role: a symmetric game (its agents share their spaces, checked above).
    return roles if len(role_names(roles)) >= 2 else {}


def _describe(shape: Shape) -> str:
    obs, mask, actions = shape
    return f"(obs {obs}{f' incl. mask {mask}' if mask else ''}, {actions} actions)"




def game_roles(game: Any, spec: Any = None, env_id: str = "the env") -> dict[str, str]:
    """`resolve_roles` for a built `Game` (its agents and their spaces)."""
    agents = list(game.agents)
    roles = resolve_roles(agents, {a: game.agent_shape(a) for a in agents}, spec, env_id=env_id)
    if roles and getattr(game, "continuous", False):
        raise ConfigError(f"env.roles: {env_id} has roles {', '.join(role_names(roles))} and continuous (Box) actions; "
                          "role games need Discrete actions for now")
    return roles


def env_roles(env: Any, kwargs: Optional[dict], spec: Any = None) -> dict[str, str]:
    """The roles of an env (an id or a `ResolvedEnv`): builds one copy (unless it is a level game without
    `env.roles`: those are symmetric) and resolves them; a one-line `ConfigError` on a bad mapping. For preflight."""
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.games.env_ids import LEVEL_KIND
    from spade_rllib.games.resolved_env import as_resolved

    check_spec(spec)
    env = as_resolved(env)
    env_id, kind = env.id, env.kind
    if spec is None and kind == LEVEL_KIND:
        return {}
    if spec is not None and kind == "gymnasium":
        raise ConfigError(f"env.roles = {spec!r}: only allowed with a multi-agent env (env.id {env_id!r} is a "
                          "single-agent Gymnasium env)")
    game = make_game_factory(env, kwargs)()
    try:
        return game_roles(game, spec, env_id)
    finally:
        close = getattr(game.raw_env, "close", None)
        if close:
            close()


__all__ = ["ROLE_MODULE_PREFIX", "check_spec", "env_roles", "game_roles", "name_stem", "resolve_roles",
           "role_module_id", "role_names", "role_of_module"]
