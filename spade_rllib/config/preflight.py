"""The checks of a run's config and env that run before Ray starts: beyond the schema, no Ray, one-line `ConfigError`s.

* `check_config(cfg)` (called by `config.parse_config`, machine independent; bot names are checked
  per env by `config._check_opponent_id`): the env id resolves, maps parse (`env.level_file`,
  `evaluation.heldout_levels`, `evaluation.final_heldout_levels` with at least one map within
  `final_heldout_max_size`; the message names file, line and column), `env.kwargs` fit the env
  constructor and the env builds and steps, a `training.stop.metric` is a key a run reports.
* `check_launch(cfg, address=None)` (called by the `train` and `tune` CLIs, about this machine):
  at least one stop condition, a writable storage path (`output_paths.check_storage_path`), and CPU/GPU
  requests this machine can meet (`resources.check_resources`: an embedded Ray waits forever for CPUs it
  does not have).

The other pre-Ray checks, one concept each: `output_paths` (the experiment name, storage paths and URIs,
the outputs of `evaluate`/`export`), `resources` (CPUs, GPUs and the model's memory against this machine),
`model_compat` (a checkpoint's model config against the config's, defaults filled in). Two pre-Ray steps
need the trainer's own code and stand in rllib/, named for what they do:
`rllib.env_description.check_env_builds` (the trainer's `describe_env`, its failure a `ConfigError`) and
`rllib.resume_fit.check_resume` (a checkpoint's modules against the `SpadeModule` the config builds).
"""
from __future__ import annotations

import inspect
import math
import os
from pathlib import Path
from typing import Any, Optional

from spade_rllib.games import EnvIdError
from spade_rllib.games.resolved_env import ResolvedEnv, as_resolved, read_env_id
from spade_rllib.artifacts.output_paths import check_experiment_name, check_storage_path
from spade_rllib.config.resources import check_resources, required_resources
from spade_rllib.core.validation import ConfigError, did_you_mean, out_of_range, wrong_type


# ----------------------------------------------------------------------------------------------
# Machine-independent checks
# ----------------------------------------------------------------------------------------------


def check_config(cfg) -> None:
    """Everything about a parsed `RunConfig` that the schema cannot see; raises `ConfigError`. The env id is
    resolved here once, into `cfg.resolved_env`, which the checks after it take."""
    cfg.resolved_env = resolve_env_id(cfg.resolved_env if cfg.resolved_env is not None else cfg.env.id)
    check_experiment_name(cfg.experiment.name)
    check_env(cfg)
    check_teams(cfg)
    check_heldout_levels(cfg.evaluation.heldout_levels, cfg.env.id)
    check_final_heldout(cfg.evaluation, cfg.env.id)
    check_cell_memory_fits(cfg)
    check_stop_metric(cfg.training.stop.metric)
    check_exploitability(cfg)
    check_schedule("agent.entropy_schedule", cfg.agent.entropy_schedule)
    check_schedule("agent.teacher_schedule", cfg.agent.teacher_schedule)
    check_signal_schedule(cfg)


def check_signal_schedule(cfg) -> None:
    """`env.signal_schedule`: each name a training-only signal (`games.catalog.TRAINING_ONLY_KWARGS`) that the
    env's constructor takes and that is not also in `env.kwargs`, each schedule well formed, and every value one
    the env accepts (it builds with each)."""
    from spade_rllib.games.catalog import TRAINING_ONLY_KWARGS

    schedules = cfg.env.signal_schedule  # a mapping: the schema checked its type
    if not schedules:
        return
    allowed = sorted(TRAINING_ONLY_KWARGS)
    factory = env_factory(as_resolved(cfg.resolved_env or cfg.env.id))
    for name, points in schedules.items():
        key = f"env.signal_schedule.{name}"
        if name not in TRAINING_ONLY_KWARGS:
            raise ConfigError(f"{key}: not a training-only signal{did_you_mean(str(name), allowed)} "
                              f"(allowed: {', '.join(allowed)})")
        if name in cfg.env.kwargs:
            raise ConfigError(f"{key}: env.kwargs.{name} is set too; keep one (the schedule's first value is "
                              f"what the training envs start with)")
        if factory is None or name not in inspect.signature(factory).parameters:
            raise ConfigError(f"{key}: {cfg.env.id} does not take {name} (the training-only signals "
                              f"{', '.join(allowed)} are CaptureTheFlag-v0's)")
        check_schedule(key, points)
        for i, (_, value) in enumerate(points):
            try:
                factory(**{name: value})
            except (ValueError, TypeError) as e:
                raise ConfigError(f"{key}[{i}] = {points[i]!r}: {cfg.env.id} refuses it "
                                  f"({' '.join(str(e).split())})") from e


def check_schedule(key: str, schedule: Optional[list]) -> None:
    """A piecewise-linear schedule as RLlib takes it: [[0, v0], [t1, v1], ...], env steps integers >= 0 rising
    strictly from 0, values finite and >= 0 (None: no schedule)."""
    if schedule is None:
        return
    shape = "a list of [env_steps, value] pairs starting at [0, value], e.g. [[0, 0.1], [10000000, 0.01]]"
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise wrong_type(key, schedule, shape)
    last = -1
    for i, point in enumerate(schedule):
        at = f"{key}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2 or any(isinstance(x, bool) for x in point):
            raise wrong_type(at, point, shape)
        step, value = point
        if not isinstance(step, int) or not isinstance(value, (int, float)):
            raise wrong_type(at, point, "[integer env steps, number]")
        if not math.isfinite(value) or value < 0:
            raise out_of_range(at, point, "a value that is a finite number >= 0")
        if (i == 0 and step != 0) or step <= last:
            raise ConfigError(f"{at} = {point!r}: env steps must start at 0 and rise strictly "
                              f"(got {step} after {last if i else 'the start'})")
        last = step


def check_exploitability(cfg) -> None:
    """`evaluation.exploitability_interval` > 0 needs an OpenSpiel game of the catalog (exact best responses) small
    enough to walk: its histories and information states are counted with a cap first
    (`games.exploitability.game_size_problem`), so a large game is refused in one line naming the cap."""
    every = cfg.evaluation.exploitability_interval
    spec = as_resolved(cfg.resolved_env or cfg.env.id).spec
    if every and (spec is None or spec.openspiel_game is None):
        raise ConfigError(f"evaluation.exploitability_interval = {every}: exact exploitability needs an OpenSpiel "
                          f"game (kuhn_poker, leduc_poker, openspiel:<name>); env.id is {cfg.env.id!r}; set it to 0")
    if every:
        from spade_rllib.games.exploitability import game_size_problem

        problem = game_size_problem(spec.openspiel_game)
        if problem is not None:
            raise ConfigError(f"evaluation.exploitability_interval = {every}: {problem}; set it to 0")


MAX_MAP_BYTES = 1 << 20
"""Largest map file read (1 MiB; the largest map, `envs.level.MAX_SIDE` squared cells, is far smaller)."""


def read_level(path: str, key: str, max_unfairness: Optional[int] = None):
    """Parse an ASCII map file into a `Level`; `ConfigError` naming key, file, line and column."""
    from spade_rllib.envs import Level, LevelError

    p = Path(os.path.expanduser(path))
    try:
        if p.is_file() and p.stat().st_size > MAX_MAP_BYTES:
            raise ConfigError(f"{key} = {path!r}: {p.stat().st_size:,d} bytes; a map file is at most {MAX_MAP_BYTES:,d}")
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{key} = {path!r}: cannot read the map ({e.__class__.__name__}: {e})") from e
    try:
        return Level.from_ascii(text, max_unfairness=max_unfairness)
    except LevelError as e:
        raise ConfigError(f"{key} = {path!r}: bad map in {p}: {' '.join(str(e).split())}") from e


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


def check_heldout_levels(paths: list, env_id: str, key: str = "evaluation.heldout_levels", max_size: int = 0,
                         size_key: str = "evaluation.final_heldout_max_size") -> None:
    """Each held-out map loads as the held-out evaluation will load it (a map of this game; errors name
    the file), and with `max_size` at least one map has at most that many rows and columns."""
    if not paths:
        return
    from spade_rllib.curriculum.heldout_maps import heldout_map_files, load_heldout_levels

    try:
        files = heldout_map_files(paths)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{key} = {paths!r}: {' '.join(str(e).split())}") from e
    for f in files:
        try:
            load_heldout_levels([f], env_id=env_id)  # a MazeRace map cannot play CTF, nor the reverse
        except (OSError, ValueError) as e:
            raise ConfigError(f"{key}: bad map in {f}: {' '.join(str(e).split())}") from e
    try:
        levels = load_heldout_levels(paths)  # two maps of the same name, across directories
    except (OSError, ValueError) as e:
        raise ConfigError(f"{key} = {paths!r}: {' '.join(str(e).split())}") from e
    if max_size:
        sizes = sorted(max(level.height, level.width) for level in levels.values())
        if not any(s <= max_size for s in sizes):
            raise ConfigError(f"{size_key} = {max_size}: out of range, it leaves none of the {len(sizes)} maps of {key} "
                              f"(the smallest is {sizes[0]} cells on its longer side); allowed 0 (every map) or >= {sizes[0]}")


def check_cell_memory_fits(cfg) -> None:
    """A level game's `env.kwargs.cell_memory` (the grid's cells a side) holds every level the run plays: the
    curriculum's largest size and every held-out map (they are played in full after training)."""
    side = dict(cfg.env.kwargs).get("cell_memory") if isinstance(cfg.env.kwargs, dict) else None
    if not side or isinstance(side, bool) or not isinstance(side, int):
        return
    largest: list[tuple[int, str]] = []
    if cfg.curriculum.enabled:
        largest.append((int(cfg.curriculum.uniform.size[1]), "curriculum.uniform.size"))
    for key in ("heldout_levels", "final_heldout_levels"):
        paths = getattr(cfg.evaluation, key)
        if paths:
            from spade_rllib.curriculum.heldout_maps import load_heldout_levels

            for name, level in load_heldout_levels(paths).items():
                largest.append((max(level.height, level.width), f"map {name} of evaluation.{key}"))
    if largest:
        size, where = max(largest)
        if size > side:
            raise ConfigError(f"env.kwargs.cell_memory = {side}: smaller than the largest level this run plays "
                              f"({size}x{size}, {where}); allowed >= {size} (did you mean cell_memory: {size}?)")


def check_final_heldout(ev, env_id: str) -> None:
    """`evaluation.final_heldout_levels` (with `final_heldout_max_size`) checked now, as the held-out
    line after training will load it (`check_heldout_levels`), not after the whole budget."""
    check_heldout_levels(ev.final_heldout_levels, env_id, key="evaluation.final_heldout_levels",
                         max_size=ev.final_heldout_max_size)


# Result keys a SpadePPO run reports (Tune's "a/b/c" paths). A stop metric outside these would never
# be reached, and Tune only says so in a warning listing every key.
TOP_LEVEL_KEYS = ("training_iteration", "time_total_s", "time_this_iter_s", "time_since_restore",
                  "iterations_since_restore", "num_env_steps_sampled_lifetime", "num_training_step_calls_per_iteration",
                  "timesteps_total", "episodes_total")
ENV_RUNNER_KEYS = ("episode_return_mean", "episode_return_max", "episode_return_min", "episode_len_mean",
                   "episode_len_max", "episode_len_min", "episode_duration_sec_mean", "num_episodes",
                   "num_episodes_lifetime", "num_env_steps_sampled", "num_env_steps_sampled_lifetime",
                   "num_agent_steps_sampled", "num_agent_steps_sampled_lifetime", "num_module_steps_sampled",
                   "num_module_steps_sampled_lifetime", "agent_episode_returns_mean", "module_episode_returns_mean",
                   "num_env_steps_sampled_lifetime_throughput", "vs")
LEARNER_KEYS = ("total_loss", "policy_loss", "vf_loss", "vf_loss_unclipped", "vf_explained_var", "entropy",
                "mean_kl_loss", "curr_kl_coeff", "curr_entropy_coeff", "default_optimizer_learning_rate",
                "gradients_default_optimizer_global_norm", "num_module_steps_trained",
                "num_module_steps_trained_lifetime", "num_trainable_parameters", "num_env_steps_trained",
                "num_env_steps_trained_lifetime", "weights_seq_no", "module_train_batch_size_mean", "trained_with",
                "num_non_trainable_parameters", "teacher_loss", "teacher_agreement", "curr_teacher_coeff")
GAME_STATS = ("win_rate", "draw_rate", "loss_rate", "games", "mean_length", "score")
FREE_ROOTS = ("league", "curriculum", "heldout", "timers", "perf", "fault_tolerance", "spade", "env_runner_group",
              "config", "info")
"""Roots whose keys depend on the run (league members, levels): only the root is checked."""


def check_stop_metric(metric: Optional[str], key: str = "training.stop.metric") -> None:
    """`metric` must be a key a run can report (see the constants above); `ConfigError` otherwise."""
    if metric is None:
        return
    parts = metric.split("/")
    if any(not p for p in parts):
        raise ConfigError(f"{key} = {metric!r}: not allowed, a result key has no empty parts (e.g. 'env_runners/episode_return_mean')")
    root = parts[0]
    roots = ("env_runners", "learners", "train", "eval", *FREE_ROOTS)
    ok = False
    if len(parts) == 1:
        ok = root in TOP_LEVEL_KEYS
        suggestions = list(TOP_LEVEL_KEYS) + [f"env_runners/{k}" for k in ENV_RUNNER_KEYS]
    elif root == "env_runners":
        ok = parts[1] in ENV_RUNNER_KEYS
        suggestions = [f"env_runners/{k}" for k in ENV_RUNNER_KEYS]
    elif root == "learners":
        ok = len(parts) >= 3 and parts[2] in LEARNER_KEYS
        suggestions = [f"learners/main/{k}" for k in LEARNER_KEYS]
    elif root in ("train", "eval"):
        ok = len(parts) == 3 and parts[2] in GAME_STATS
        suggestions = [f"{root}/random/{k}" for k in GAME_STATS]
    else:
        ok = root in FREE_ROOTS
        suggestions = [*(f"{r}/..." for r in roots), *TOP_LEVEL_KEYS]
    if not ok:
        raise ConfigError(f"{key} = {metric!r}: not a result key a run reports{did_you_mean(metric, suggestions)}; "
                          f"allowed: {', '.join(TOP_LEVEL_KEYS[:3])}, env_runners/<{'|'.join(ENV_RUNNER_KEYS[:3])}|...>, "
                          f"learners/<module>/<loss...>, train|eval/<opponent>/<{'|'.join(GAME_STATS)}>, "
                          f"{'|'.join(FREE_ROOTS[:3])}/...")


# ----------------------------------------------------------------------------------------------
# This machine
# ----------------------------------------------------------------------------------------------


def check_launch(cfg, *, address: Optional[str] = None, need_stop: bool = True,
                 required: Optional[dict] = None) -> None:
    """Checks about launching here: a stop condition, storage, CPUs/GPUs (the latter only for an
    embedded Ray: a cluster has its own). `required` is the run's resource bundle total
    ({"CPU": n, "GPU": g}); computed from the config when None."""
    if need_stop:
        check_stop_present(cfg)
    check_storage_path(cfg.experiment.storage_path)
    if address is None:
        check_resources(cfg, required if required is not None else required_resources(cfg))


def check_stop_present(cfg) -> None:
    s = cfg.training.stop
    if s.time_s is None and s.env_steps is None and s.iterations is None and s.metric is None:
        raise ConfigError("training.stop = {}: no stop condition, the run would never end; give at least one of "
                          "time_s, env_steps, iterations, metric+target (e.g. --set training.stop.time_s=300)")


__all__ = ["check_cell_memory_fits", "check_config", "check_env", "check_env_kwargs", "check_exploitability", "check_final_heldout",
           "check_foreign_env", "check_heldout_levels", "check_launch", "check_league_teams", "check_roles",
           "check_schedule", "check_stop_metric", "check_stop_present", "check_teams", "env_factory", "read_level",
           "resolve_env_id"]
