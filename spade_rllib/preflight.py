"""The one home of the checks that run before Ray starts: beyond the schema, no Ray, one-line `ConfigError`s.

* `check_config(cfg)` (called by `config.parse_config`, machine independent; bot names are checked
  per env by `config._check_opponent_id`): the env id resolves, maps parse (`env.level_file`,
  `evaluation.heldout_levels`, `evaluation.final_heldout_levels` with at least one map within
  `final_heldout_max_size`; the message names file, line and column), `env.kwargs` fit the env
  constructor and the env builds and steps, a `training.stop.metric` is a key a run reports.
* `check_launch(cfg, address=None)` (called by the `train` and `tune` CLIs, about this machine):
  at least one stop condition, a writable storage path, and CPU/GPU requests this machine can meet
  (an embedded Ray waits forever for CPUs it does not have).
* The model: `check_model_memory` (its parameters, with gradients and Adam's moments in every copy,
  fit in this machine's memory) and `model_differences` (a checkpoint's model config against the
  config's, defaults filled in).

Where a check lives: here when it needs only the config, the pure core (games, levels) and this machine.
Two pre-Ray steps need the trainer's own code and stand in rllib/, named for what they do:
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
from spade_rllib.validation import ConfigError, did_you_mean, out_of_range, wrong_type


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
    check_stop_metric(cfg.training.stop.metric)
    check_exploitability(cfg)
    check_schedule("agent.entropy_schedule", cfg.agent.entropy_schedule)


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
    """`evaluation.exploitability_interval` > 0 needs an OpenSpiel game of the catalog (exact best responses)."""
    every = cfg.evaluation.exploitability_interval
    spec = as_resolved(cfg.resolved_env or cfg.env.id).spec
    if every and (spec is None or spec.openspiel_game is None):
        raise ConfigError(f"evaluation.exploitability_interval = {every}: exact exploitability needs an OpenSpiel "
                          f"game (kuhn_poker, leduc_poker, openspiel:<name>); env.id is {cfg.env.id!r}; set it to 0")


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
                "num_non_trainable_parameters")
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


def check_experiment_name(name: str, key: str = "experiment.name") -> None:
    """One path component: the experiment directory is `storage_path/name`, never somewhere else."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\x00") or name != name.strip():
        raise ConfigError(f"{key} = {name!r}: not allowed, the name is one directory name (no '/', '\\', "
                          "'..', NUL or surrounding spaces), e.g. 'quickstart'")


STORAGE_SCHEMES = {"file": None, "s3": "S3FileSystem", "gs": "GcsFileSystem", "gcs": "GcsFileSystem"}
"""URI schemes a storage path may use, with the pyarrow filesystem each needs (Tune writes through pyarrow)."""


def check_storage_uri(uri: str, key: str = "experiment.storage_path") -> None:
    """A storage URI: a known scheme whose pyarrow filesystem is available here (nothing is contacted)."""
    from urllib.parse import urlparse

    parsed = urlparse(str(uri))
    scheme = parsed.scheme.lower()
    if scheme not in STORAGE_SCHEMES:
        raise ConfigError(f"{key} = {uri!r}: unknown storage scheme {scheme!r}{did_you_mean(scheme, list(STORAGE_SCHEMES))}; "
                          f"allowed: a local path or {', '.join(s + '://' for s in STORAGE_SCHEMES)}")
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ConfigError(f"{key} = {uri!r}: a file:// URI names a local path (file:///abs/path)")
        check_storage_path(parsed.path or "/", key)
        return
    if not parsed.netloc:
        raise ConfigError(f"{key} = {uri!r}: no bucket; expected {scheme}://BUCKET/PATH")
    try:
        import pyarrow.fs

        getattr(pyarrow.fs, STORAGE_SCHEMES[scheme])
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{key} = {uri!r}: the {scheme}:// filesystem is not available here (pyarrow without "
                          f"{STORAGE_SCHEMES[scheme]}: {e.__class__.__name__}); use a local path or install pyarrow with it") from e


def check_storage_path(path: str, key: str = "experiment.storage_path") -> None:
    """The storage directory can be created and written: no regular file on the way, no read-only parent.
    A URI (s3://, gs://, file://) goes to `check_storage_uri`."""
    if "://" in str(path):
        check_storage_uri(str(path), key)
        return
    if "\x00" in str(path):
        raise ConfigError(f"{key} = {path!r}: not allowed, a path cannot hold a NUL byte")
    p = Path(os.path.expanduser(str(path))).absolute()
    probe = p
    while not probe.exists():
        if probe.is_symlink():  # a dangling link: mkdir would fail on it
            raise ConfigError(f"{key} = {path!r}: {probe} is a broken symbolic link")
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{key} = {path!r}: {probe} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{key} = {path!r}: {probe} is not writable")


def check_output_path(path: str, key: str, *, directory: bool) -> None:
    """An output file (or directory) can be written: not under a regular file, not a directory where
    a file goes (or the reverse), a writable parent. Nothing is created."""
    p = Path(os.path.expanduser(str(path))).absolute()
    if p.exists() and directory and not p.is_dir():
        raise ConfigError(f"{key} = {path!r}: {p} is a file, not a directory")
    if p.exists() and not directory and p.is_dir():
        raise ConfigError(f"{key} = {path!r}: {p} is a directory, expected a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{key} = {path!r}: {p} is not writable")
    check_storage_path(str(p if directory else p.parent), key=key)


def check_not_in_checkpoint(path: str, key: str, inputs: tuple = ()) -> None:
    """An output may not land inside a checkpoint (an algorithm checkpoint, a module directory, or
    one of the command's `inputs`): writing there would change what the next load reads."""
    from spade_rllib.checkpoint_layout import CTOR_FILE, is_algorithm_checkpoint

    target = Path(os.path.expanduser(str(path))).resolve()
    roots = {Path(os.path.expanduser(str(p))).resolve() for p in inputs}
    for parent in (target, *target.parents):
        if parent in roots or (parent.is_dir() and (is_algorithm_checkpoint(parent) or (parent / CTOR_FILE).is_file())):
            raise ConfigError(f"{key} = {path!r}: inside the checkpoint {parent}; refused (it would change the "
                              "input); write the output elsewhere")


def check_overwrite(path: str, key: str, force: bool, ours, what: str) -> None:
    """Refuse to replace an existing file that `ours(path)` does not recognise as `what` (a previous
    output of the same command), unless `force`."""
    p = Path(os.path.expanduser(str(path)))
    if force or not p.is_file():
        return
    if not ours(p):
        raise ConfigError(f"{key} = {path!r}: the file exists and is not {what}; refused (pass --force to overwrite it)")


def check_fresh_directory(path: str, key: str, force: bool) -> None:
    """An output directory must be new or empty, unless `force`."""
    p = Path(os.path.expanduser(str(path)))
    if not force and p.is_dir() and any(p.iterdir()):
        raise ConfigError(f"{key} = {path!r}: the directory exists and is not empty; refused (give a new "
                          "directory, or pass --force to write into it)")


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


# ----------------------------------------------------------------------------------------------
# The model: its size against this machine's memory, and the model config a checkpoint was trained with
# ----------------------------------------------------------------------------------------------


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


def comparable_value(value: Any) -> Any:
    """`value` with every tuple a list, nested (a saved model config compares equal to the config's)."""
    if isinstance(value, (list, tuple)):
        return [comparable_value(v) for v in value]
    if isinstance(value, dict):
        return {k: comparable_value(v) for k, v in value.items()}
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
MODULE_KEY_SOURCES = {"kind": "encoder", "use_lstm": "memory"}
"""Module model_config keys (RLlib's DefaultModelConfig naming, as checkpoints store them) whose `agent.model`
key is spelled otherwise: `kind` holds the encoder, `use_lstm: True` is `memory: lstm`."""


def effective_model_config(model_config: dict) -> dict:
    """`model_config` with `SpadeModule`'s defaults filled in and the keys it ignores dropped (the CNN's
    keys of an MLP, the memory map's without `map_channels`, the LSTM's without `use_lstm`), so two
    configs that build the same module compare equal whichever keys each recorded."""
    out = {**MODEL_DEFAULTS, **comparable_value(dict(model_config))}
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


def model_config_key(key: str) -> str:
    """The config key a model-config key comes from (`agent.model.<key>`, or the env's for a derived key)."""
    return key if key in DERIVED_KEYS else f"agent.model.{MODULE_KEY_SOURCES.get(key, key)}"


def model_config_value(key: str, value: Any) -> Any:
    """A module model-config value as `agent.model` spells it (`use_lstm: True` is `memory: "lstm"`)."""
    if key == "use_lstm":
        return "lstm" if value else "none"
    return value


__all__ = ["check_config", "check_env", "check_league_teams", "check_env_kwargs", "check_foreign_env", "check_teams", "resolve_env_id", "check_experiment_name", "check_fresh_directory", "check_storage_uri", "check_heldout_levels", "check_final_heldout",
           "check_launch", "check_not_in_checkpoint", "check_output_path", "check_overwrite",
           "check_resources", "check_schedule", "check_stop_metric", "check_stop_present", "check_storage_path", "read_level",
           "required_resources", "check_model_memory", "effective_model_config", "machine_memory", "model_config_key", "model_config_value",
           "model_differences",
           "parameter_count"]
