"""The env a config names, checked before Ray: it resolves, its kwargs fit, its teams and roles fit, it builds and steps.

* `resolve_env_id`: an id (or a `ResolvedEnv` read without its entry) names an env that exists, filled in once.
* `check_env`: `env.level_file` parses, `env.kwargs` fit the constructor and the env builds and resets, as each
  env runner will; a foreign env (another package's) through `check_foreign_env`: built once through the game-loop
  adapter, one reset and one step with a legal action.
* `check_teams`, `check_league_teams`, `check_roles`: `env.teams` / `env.mode`, a league's two teams, `env.roles`.

Called by `config.preflight.check_config`; every failure is a one-line `ConfigError`.
"""
from __future__ import annotations

import inspect
from typing import Any

from spade_rllib.config.map_checks import read_level
from spade_rllib.core.validation import ConfigError, did_you_mean
from spade_rllib.games import EnvIdError
from spade_rllib.games.resolved_env import ResolvedEnv, as_resolved, read_env_id


def resolve_env_id(env, key: str = "env.id") -> ResolvedEnv:
    """The env an id (or a `ResolvedEnv` read without its entry) names exists (`spade_rllib.games.resolve_env`:
    a game of the catalog, a PettingZoo registry id, an importable env module, class or factory, or a
    registered Gymnasium id): the record with its entry; one-line `ConfigError` with a "did you mean" and the
    allowed forms otherwise."""
    env_id = env.id if isinstance(env, ResolvedEnv) else env
    try:
        record = env if isinstance(env, ResolvedEnv) and env.imported else read_env_id(env_id)
        return record.with_entry()
    except EnvIdError as e:
        raise ConfigError(f"{key} = {env_id!r}: {e}") from e


def env_factory(env):
    """The constructor of a level game of the catalog (None for other ids); `env`: an id or a `ResolvedEnv`."""
    spec = as_resolved(env).spec
    return spec.make_env if spec is not None and spec.is_level_game else None


def check_env_kwargs(env, kwargs: dict, factory=None, key: str = "env.kwargs") -> None:
    """Every key of `env.kwargs` must be a parameter of the env's constructor (unless it takes **kwargs);
    `env`: an id or a `ResolvedEnv`."""
    env = as_resolved(env)
    factory = factory if factory is not None else env_factory(env)
    if factory is None:
        factory = _foreign_factory(env)
    if factory is None:
        return
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature: nothing to check against
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"]
    for k in kwargs:
        if k not in names:
            raise ConfigError(f"{key}.{k}: unknown key{did_you_mean(k, names)} (allowed: {', '.join(names)})")


def _foreign_factory(env: ResolvedEnv):
    """The constructor behind a foreign id, when the resolver knows it."""
    try:
        return env.resolved_entry().signature_of
    except EnvIdError:  # the env id itself was checked before
        return None


def check_env(cfg) -> None:
    """`env.level_file` parses (file, line, column), `env.kwargs` fit the constructor, and the env builds
    and resets with them, as each env runner will (`check_foreign_env` for an env of another package)."""
    env = cfg.env
    record = as_resolved(cfg.resolved_env or env.id)
    level = read_level(env.level_file, "env.level_file") if env.level_file else None
    factory = env_factory(record)
    check_env_kwargs(record, env.kwargs, factory)
    if factory is None:
        plies = env.random_opening_plies or cfg.evaluation.random_opening_plies
        key = "env.random_opening_plies" if env.random_opening_plies else "evaluation.random_opening_plies"
        check_foreign_env(record, env.kwargs, plies, plies_key=key, roles=env.roles, teams=env.teams, mode=env.mode,
                          api=env.api, league=cfg.league.enabled)
        return
    check_roles(cfg)
    kwargs = dict(env.kwargs)
    if level is not None:
        kwargs["level"] = level
    elif env.difficulty is not None:
        kwargs["difficulty"] = env.difficulty
    try:
        factory(**kwargs).reset(seed=0)
    except (ValueError, TypeError, KeyError) as e:
        what = "env.level_file" if level is not None and "level" in str(e).lower() else "env.kwargs"
        shown = env.level_file if what == "env.level_file" else env.kwargs
        raise ConfigError(f"{what} = {shown!r}: {env.id} refuses it ({e.__class__.__name__}: "
                          f"{' '.join(str(e).split())})") from e


def check_teams(cfg) -> None:
    """`env.teams` / `env.mode` of a level game fit its agents (each agent in exactly one team): builds one
    env copy, only when the config sets either (`check_foreign_env` checks them for other envs)."""
    env = cfg.env
    record = as_resolved(cfg.resolved_env or env.id)
    if env_factory(record) is None or (env.teams is None and env.mode == "auto" and env.api == "auto"):
        return
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.games.teams import TeamError

    try:
        game = make_game_factory(record, env.kwargs, teams=env.teams, mode=env.mode, api=env.api)()
    except TeamError as e:
        raise ConfigError(str(e)) from e
    except ValueError as e:
        if "env.api" in str(e):
            raise ConfigError(str(e)) from e
        raise
    try:
        check_league_teams(game, cfg.league.enabled, {}, env.id)
    finally:
        close = getattr(game.raw_env, "close", None)
        if close:
            close()


def check_league_teams(game, league: bool, roles: dict, env_id: str) -> None:
    """A league records two-sided results (main's team against the opponent's): with `league` on, a game
    of more than two teams (a free-for-all) and no roles is a one-line `ConfigError`."""
    teams = len(game.teams)
    if not league or roles or teams <= 2:
        return
    raise ConfigError(f"league.enabled = true: env.id {env_id!r} has {teams} teams (a free-for-all) and a league "
                      "records two-team games only; set env.teams with two teams (env.teams: {A: [...], B: [...]}) "
                      "or league.enabled: false")


def check_roles(cfg) -> None:
    """`env.roles` of a catalog game names only its agents and leaves none without a role where the agents'
    spaces differ (`spade_rllib.games.roles`; a foreign env is checked by `check_foreign_env`)."""
    from spade_rllib.games.roles import env_roles

    env_roles(as_resolved(cfg.resolved_env or cfg.env.id), cfg.env.kwargs, cfg.env.roles)


def check_foreign_env(env, kwargs: dict, opening_plies: int = 0, key: str = "env.id",
                      plies_key: str = "env.random_opening_plies", roles: Any = None, *, teams=None,
                      mode: str = "auto", api: str = "auto", league: bool = False) -> None:
    """Build the env once through the game-loop adapter, as every env runner will, then one reset and one
    step with a legal action: unsupported spaces (`spade_rllib.games.spaces`), agents whose spaces differ
    without roles to tell them apart (`env.roles`, `spade_rllib.games.roles`), constructor arguments the
    env refuses, envs that fail on their first step and (with `league`) a league on more than two teams
    are one-line `ConfigError`s before Ray starts."""
    from spade_rllib.games.roles import game_roles
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.games.spaces import UnsupportedSpace
    from spade_rllib.games.teams import TeamError

    env = as_resolved(env)  # an id, or the run's `ResolvedEnv`
    env_id = env.id
    game = None
    try:
        make = make_game_factory(env, kwargs, opening_plies=opening_plies, teams=teams, mode=mode, api=api)
        try:
            game = make()
        except (UnsupportedSpace, ValueError, TypeError):
            raise
        except Exception as e:
            raise ConfigError(f"{key} = {env_id!r}: the env cannot be built here ({e.__class__.__name__}: "
                              f"{_one_line(e)})") from e
        resolved = game_roles(game, roles, env_id)  # one trained module per role: agents of a role share their spaces
        check_league_teams(game, league, resolved, env_id)
        obs = game.reset(seed=0)
        if obs:
            actions = {agent: _first_legal(game, o, agent) for agent, o in obs.items()}
            game.step(actions)
    except ConfigError:
        raise
    except TeamError as e:  # env.teams / env.mode against the env's agents
        raise ConfigError(str(e)) from e
    except UnsupportedSpace as e:
        raise ConfigError(f"{key} = {env_id!r}: {e}") from e
    except ValueError as e:
        if "opening plies" in str(e):
            raise ConfigError(f"{plies_key} = {opening_plies}: {e}") from e
        if str(e).startswith("env.api"):
            raise ConfigError(_one_line(e)) from e
        raise ConfigError(f"{key} = {env_id!r}: the env fails before training ({e.__class__.__name__}: "
                          f"{_one_line(e)})" + (f" with env.kwargs = {kwargs!r}" if kwargs else "")) from e
    except TypeError as e:
        raise ConfigError(f"env.kwargs = {kwargs!r}: {env_id} refuses it ({e.__class__.__name__}: {_one_line(e)})") from e
    except Exception as e:
        raise ConfigError(f"{key} = {env_id!r}: the env fails on its first reset/step ({e.__class__.__name__}: "
                          f"{_one_line(e)})") from e
    finally:
        close = getattr(getattr(game, "raw_env", None), "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                pass


def _first_legal(game, obs, agent=None):
    if game.continuous:  # Box: the zero vector (the game clips it into the bounds)
        return [0.0] * game.num_actions
    legal = game.legal_actions(obs, agent)
    return int(legal[0]) if len(legal) else 0


def _one_line(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
