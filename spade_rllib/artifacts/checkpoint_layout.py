"""The checkpoint layout, in one place: where a `SpadePPO` checkpoint keeps what, and how to read it.

    <trial dir>/                      Tune's trial directory: config.yaml (the run config), params.json,
      checkpoint_<n>/                 progress.csv, league.csv
        learner_group/learner/rl_module/<module_id>/    one RLModule per trained module (`module_dir`)
        algorithm_state.pkl           {..., "spade_components": {<component name>: state_dict()}}
                                      league: {"league": League.state_dict(), "plan", "counters", ...}
                                      curriculum: {"strategy", "version", ...}; self_play: {"plan"}

`resolve_checkpoint` accepts a checkpoint, a trial directory or one module directory. Which checkpoint
of a trial (or experiment) is "the latest" has one rule, `newest_checkpoint`: the highest number among
the whole ones (never the mtime, which `cp -r` changes); a damaged newer one is skipped with a note naming its
file, and a checkpoint named directly that is not whole is refused the same way (`checkpoint_problem`). League members are read from the league component's exact entry (`league_member_states`);
the env a run trained on from its metadata (`checkpoint_env_id`). No Ray import; the league's and
the trainer's writers (`rllib/algorithm.py`, `rllib/league_component.py`) use these names.
"""
from __future__ import annotations

import functools
import json
import os
import pickle
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from spade_rllib.artifacts import checkpoint_guard as _guard
from spade_rllib.games import canonical_env_id
from spade_rllib.core.outcome import MAIN

RL_MODULE_SUBPATH = Path("learner_group") / "learner" / "rl_module"
"""Where the learner saves the MultiRLModule, relative to a checkpoint."""
CTOR_FILE = "class_and_ctor_args.pkl"
MODULE_STATE_STEM = "module_state"
ALGORITHM_STATE_FILE = "algorithm_state.pkl"
COMPONENTS_STATE_KEY = "spade_components"
"""Key of the driver components' states in `SpadePPO.get_state()`."""
LEAGUE_COMPONENT = "league"
"""Name of the league's driver component (its key under COMPONENTS_STATE_KEY)."""
LEAGUE_CORE_KEY = "league"
"""Key of `League.state_dict()` inside the league component's state."""
LEAGUE_STATE_FILE = "league_state.pkl"
"""A stand-alone `League.state_dict()` beside a checkpoint (exported leagues), read when the algorithm state has none."""
# Files a training run may leave that name its env (checked in this order).
SPADE_META_FILE = "spade_meta.json"
RUN_CONFIG_FILE = "config.yaml"
TUNE_PARAMS_FILE = "params.json"
LEAGUE_CSV = "league.csv"
"""The final league table a league run writes into its trial directory."""
ROLE_LEAGUES_KEY = "roles"
"""A role game's league component state: {role: that role's league component state}."""
ROLE_SNAPSHOT = re.compile(r"(main_[a-z][a-z0-9_]*?)_v(\d+)")
"""A role main's frozen snapshot id, ``main_<role>_v<k>``: group 1 is the module whose architecture it has."""


def role_league_csv(role: str) -> str:
    """The final table of one role's league: ``league_<role>.csv``."""
    return f"league_{role}.csv"


def member_module(member_id: str) -> str:
    """The trained module whose architecture a league member has: ``main_<role>`` for a role main's
    snapshot ``main_<role>_v<k>``, else main."""
    match = ROLE_SNAPSHOT.fullmatch(member_id)
    return match.group(1) if match and not match.group(1).startswith("main_exploiter") else MAIN


def module_dir(checkpoint: str | Path, module_id: str = MAIN) -> Path:
    """The RLModule directory of `module_id` inside an algorithm checkpoint directory."""
    return Path(checkpoint) / RL_MODULE_SUBPATH / module_id


class CheckpointError(Exception):
    """A checkpoint or module could not be loaded. The message is one line, meant for users."""


PolicyLoadError = CheckpointError  # the name the policy loader's users know


# --------------------------------------------------------------------------------------------
# Checkpoint resolution
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointInfo:
    """Where the pieces of one checkpoint live on disk."""

    path: Path
    """The directory the user gave, resolved to an algorithm checkpoint (or a module directory)."""
    module_root: Path
    """Directory holding one sub-directory per RLModule id."""
    module_ids: tuple[str, ...]
    """Ids of the RLModules saved by the learner (e.g. ("main",))."""
    trial_dir: Path | None
    """The Tune trial directory above the checkpoint (holds progress.csv), when there is one."""
    single_module: bool = False
    """True when `path` is one RLModule directory rather than an algorithm checkpoint."""
    league_ids: tuple[str, ...] = field(default=())
    """Ids of frozen league members stored in the checkpoint (weights only)."""

    @property
    def all_ids(self) -> tuple[str, ...]:
        return self.module_ids + tuple(i for i in self.league_ids if i not in self.module_ids)

    def module_dir(self, module_id: str) -> Path:
        return self.module_root if self.single_module else self.module_root / module_id


def _is_module_dir(path: Path) -> bool:
    return (path / CTOR_FILE).is_file() and any(path.glob(MODULE_STATE_STEM + ".*"))


def checkpoint_problem(path: str | Path) -> str | None:
    """None when `path` is a whole algorithm checkpoint whose symlinks stay inside it, else why not
    (`checkpoint_guard`: every file the restore reads, found from the checkpoint's own metadata; nothing is
    unpickled). The one completeness rule of resume, evaluate, export and play. Remembered per process while no
    entry under `path` changes (its name, type, size, mtime or link target), so a command that resolves one
    checkpoint several times scans its pickles once."""
    return _checkpoint_problem(str(path), _tree_stamp(Path(path)))


def _tree_stamp(root: Path) -> tuple:
    entries = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
                link = os.readlink(full) if stat.S_ISLNK(st.st_mode) else ""
            except OSError:
                continue
            entries.append((os.path.relpath(full, root), st.st_mode, st.st_size, st.st_mtime_ns, link))
    return tuple(entries)


@functools.lru_cache(maxsize=64)
def _checkpoint_problem(path: str, stamp: tuple) -> str | None:
    return _guard.checkpoint_problem(path, Path(ALGORITHM_STATE_FILE).stem, RL_MODULE_SUBPATH)


def checkpoint_number(path: Path) -> int:
    """The number of `checkpoint_000012` (12); -1 without digits."""
    digits = re.findall(r"\d+", Path(path).name)
    return int(digits[-1]) if digits else -1


def is_algorithm_checkpoint(path: Path) -> bool:
    return (path / RL_MODULE_SUBPATH).is_dir() or (path / ALGORITHM_STATE_FILE).exists()


def newest_checkpoint(root: str | Path, recursive: bool = False, note: bool = True) -> Path | None:
    """The whole `checkpoint_*` directory with the highest number under `root` (its children; with
    `recursive`, anywhere below, e.g. an experiment with several trials: equal numbers go to the newer
    mtime). Damaged ones (`checkpoint_problem`) are skipped, with a `note:` line on stderr; None
    when there is no whole one."""
    root = Path(root)
    found = root.rglob("checkpoint_*") if recursive else root.glob("checkpoint_*")
    candidates = [c for c in found if c.is_dir()]  # a half-written one may not have its layout yet
    for c in sorted(candidates, key=lambda c: (checkpoint_number(c), c.stat().st_mtime), reverse=True):
        problem = checkpoint_problem(c)
        if problem is None:
            return c
        if note:
            print(f"note: skipping incomplete checkpoint {c}: {problem}", file=sys.stderr)
    return None


def restorable_checkpoint(path: str | Path) -> Path:
    """`path` when it is whole, else the newest whole checkpoint beside it with a lower number, with a `note:`
    line naming the missing or damaged file (what a trial retry under `training.max_failures` restores, so no
    retry repeats a restore that is certain to fail). `CheckpointError` when there is none."""
    path = Path(path)
    problem = checkpoint_problem(path)
    if problem is None:
        return path
    number = checkpoint_number(path)
    older = [c for c in path.parent.glob("checkpoint_*") if c.is_dir() and c != path and checkpoint_number(c) < number]
    for c in sorted(older, key=lambda c: (checkpoint_number(c), c.stat().st_mtime), reverse=True):
        if checkpoint_problem(c) is None:
            print(f"note: checkpoint {path} cannot be restored: {problem}; restoring {c.name}, the newest whole one "
                  "before it", file=sys.stderr, flush=True)
            return c
    raise CheckpointError(f"checkpoint {path} cannot be restored: {problem}; no whole checkpoint before it")


def _find_trial_dir(ckpt: Path) -> Path | None:
    for candidate in (ckpt.parent, ckpt.parent.parent):
        if any((candidate / name).is_file() for name in ("progress.csv", TUNE_PARAMS_FILE, RUN_CONFIG_FILE)):
            return candidate
    return None


def natural_key(text: str) -> tuple:
    """Sort key that orders "main_v2" before "main_v10"."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def resolve_checkpoint(checkpoint: str | Path) -> CheckpointInfo:
    """Find the RLModules inside `checkpoint` (see module docstring for accepted layouts)."""
    path = Path(checkpoint).expanduser()
    if not path.exists():
        raise PolicyLoadError(f"checkpoint path does not exist: {path}")
    if not path.is_dir():
        raise PolicyLoadError(
            f"not a checkpoint: {path} is a file; pass the checkpoint directory "
            f"(the one holding {RL_MODULE_SUBPATH}/)"
        )
    path = path.resolve()
    escape = _guard.symlink_escape(path)  # a copied checkpoint may not lead the loader elsewhere
    if escape is not None:
        raise PolicyLoadError(f"refused: {escape} is a symbolic link to {escape.resolve()}, outside the checkpoint {path}")
    if not (path / RL_MODULE_SUBPATH).is_dir() and not _is_module_dir(path):
        if any(c.is_dir() and is_algorithm_checkpoint(c) for c in path.glob("checkpoint_*")):
            newest = newest_checkpoint(path)
            if newest is None:
                raise PolicyLoadError(f"every checkpoint in {path} is damaged (see the notes above)")
            path = newest
    elif is_algorithm_checkpoint(path):  # named directly: the same rule as a trial's newest
        problem = checkpoint_problem(path)
        if problem is not None:
            raise PolicyLoadError(f"{path} is not a whole checkpoint: {problem}; give its trial directory to use "
                                  "the newest whole one")
    if (path / RL_MODULE_SUBPATH).is_dir():
        root = path / RL_MODULE_SUBPATH
        ids = tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and _is_module_dir(p)))
        info = CheckpointInfo(path=path, module_root=root, module_ids=ids, trial_dir=_find_trial_dir(path))
        league = tuple(sorted(league_member_states(info, ids_only=True), key=natural_key))
        return CheckpointInfo(
            path=path, module_root=root, module_ids=ids, trial_dir=info.trial_dir, league_ids=league
        )
    if _is_module_dir(path):
        return CheckpointInfo(
            path=path, module_root=path, module_ids=(path.name,), trial_dir=None, single_module=True
        )
    raise PolicyLoadError(
        f"not an RLlib checkpoint: {path} has no {RL_MODULE_SUBPATH}/ and no checkpoint_* folders"
    )


@functools.lru_cache(maxsize=16)
def _read_pickle(path: str, stamp: tuple[int, int]) -> Any:
    """Unpickle `path`; cached per (mtime_ns, size) so Ray workers read each league state once."""
    with open(path, "rb") as f:
        return pickle.load(f)


def _stamp(file: Path) -> tuple[int, int]:
    stat = file.stat()
    return stat.st_mtime_ns, stat.st_size


def _load_pickle(file: Path) -> Any:
    try:
        return _read_pickle(str(file), _stamp(file))
    except Exception as e:
        raise PolicyLoadError(f"cannot read {file}: {type(e).__name__}: {e}") from e


def algorithm_state(info: CheckpointInfo) -> Mapping[str, Any] | None:
    """`SpadePPO.get_state()`'s algorithm part as saved in `algorithm_state.pkl`, or None."""
    file = info.path / ALGORITHM_STATE_FILE
    if info.single_module or not file.is_file():
        return None
    state = _load_pickle(file)
    return state if isinstance(state, Mapping) else None


def component_state(info: CheckpointInfo, name: str) -> Mapping[str, Any] | None:
    """The saved `state_dict()` of driver component `name` ("league", "curriculum", ...), or None."""
    components = (algorithm_state(info) or {}).get(COMPONENTS_STATE_KEY)
    state = components.get(name) if isinstance(components, Mapping) else None
    return state if isinstance(state, Mapping) else None


def league_state(info: CheckpointInfo) -> Mapping[str, Any] | None:
    """`League.state_dict()` stored with the checkpoint: the league component's `"league"` entry,
    else a stand-alone `league_state.pkl` beside the checkpoint's files; None without a league."""
    component = component_state(info, LEAGUE_COMPONENT)
    if component is not None:
        return component.get(LEAGUE_CORE_KEY)  # None for a role game's leagues (`league_member_states` reads them)
    file = info.path / LEAGUE_STATE_FILE
    if not info.single_module and file.is_file():
        return _load_pickle(file)
    return None


def league_member_states(info: CheckpointInfo, ids_only: bool = False) -> dict[str, Any]:
    """Frozen league members stored in the checkpoint: {member_id: numpy state dict of main's module}.

    `League.state_dict()["members"]` is a list of {"id", "created_at", "weights"}; members without
    weights (main itself, random, bots) are skipped. {} when the checkpoint holds no league.
    """
    component = component_state(info, LEAGUE_COMPONENT)
    if component is not None and ROLE_LEAGUES_KEY in component:
        return _role_league_members(component[ROLE_LEAGUES_KEY], ids_only)
    state = league_state(info)
    if state is None:
        return {}
    out: dict[str, Any] = {}
    for member in state["members"]:
        if member.get("weights") is not None and str(member["id"]) != MAIN:
            out[str(member["id"])] = None if ids_only else member["weights"]
    return out


def _role_league_members(roles: Mapping[str, Any], ids_only: bool) -> dict[str, Any]:
    """A role game's frozen members by their outside ids: role r's league holds snapshots ``main_v<k>`` of
    the other role's main, ``main_<other>_v<k>`` (two roles)."""
    out: dict[str, Any] = {}
    names = list(roles)
    for role, state in roles.items():
        other = next((r for r in names if r != role), role)
        for member in state[LEAGUE_CORE_KEY]["members"]:
            match = re.fullmatch(r"main_v(\d+)", str(member["id"]))
            if member.get("weights") is not None and match:
                out[f"main_{other}_v{match.group(1)}"] = None if ids_only else member["weights"]
    return out


def _env_from_mapping(config: Any) -> str | None:
    """`env` or `env_config.spade.env_id` of an algorithm config dict (Tune's params.json, ctor args)."""
    if not isinstance(config, Mapping):
        config = getattr(config, "__dict__", {})
    env = config.get("env")
    if isinstance(env, str) and env:
        return env
    env_config = config.get("env_config")
    if isinstance(env_config, Mapping):
        spade = env_config.get("spade")
        if isinstance(spade, Mapping) and isinstance(spade.get("env_id"), str):
            return spade["env_id"]
        if isinstance(env_config.get("env_id"), str):
            return env_config["env_id"]
    return None


def _run_config_env(directory: Path) -> Mapping | None:
    """The `env` section of the resolved `config.yaml` a spade run writes into its trial directory."""
    file = directory / RUN_CONFIG_FILE
    if not file.is_file():
        return None
    try:
        import yaml

        data = yaml.safe_load(file.read_text())
    except Exception as e:
        raise CheckpointError(f"{file}: the run's {RUN_CONFIG_FILE} is damaged ({type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]}); restore it from the run or delete it") from e
    if data is not None and not isinstance(data, Mapping):
        raise CheckpointError(f"{file}: the run's {RUN_CONFIG_FILE} holds a {type(data).__name__}, not a config "
                              "mapping; restore it from the run or delete it")
    env = data.get("env") if isinstance(data, Mapping) else None
    return env if isinstance(env, Mapping) else None


def _env_from_run_config(directory: Path) -> str | None:
    """env.id of the resolved `config.yaml` a spade run writes into its trial directory."""
    env = _run_config_env(directory)
    env_id = env.get("id") if env is not None else None
    return env_id if isinstance(env_id, str) else None


def checkpoint_env_setup(info: CheckpointInfo) -> dict:
    """How the run built its env, from its `config.yaml`: the keyword arguments of the game-loop adapter's
    `make_game_factory` beyond the id (``{"kwargs": env.kwargs, "teams": ..., "mode": ..., "api": ...}``);
    {} when the run records none. Envs of other packages are evaluated and played with them."""
    directories = [info.path] + ([info.trial_dir] if info.trial_dir else []) + list(info.path.parents)[:2]
    for directory in dict.fromkeys(directories):
        env = _run_config_env(directory)
        if env is None:
            continue
        kwargs = env.get("kwargs")
        setup: dict = {"kwargs": dict(kwargs) if isinstance(kwargs, Mapping) else {}}
        for key in ("teams", "mode", "api"):
            if env.get(key) is not None:
                setup[key] = env[key]
        return setup
    return {}


def checkpoint_env_roles(info: CheckpointInfo):
    """The run's `env.roles` setting from its `config.yaml` (a mapping, a function path, or None:
    inferred from the agent names, `spade_rllib.games.roles`)."""
    directories = [info.path] + ([info.trial_dir] if info.trial_dir else []) + list(info.path.parents)[:2]
    for directory in dict.fromkeys(directories):
        env = _run_config_env(directory)
        if env is not None:
            roles = env.get("roles")
            return dict(roles) if isinstance(roles, Mapping) else roles
    return None


def checkpoint_env_id(info: CheckpointInfo) -> str | None:
    """The env id the checkpoint was trained on, from run metadata; None when nothing records it.

    Looked up in order: `spade_meta.json` (checkpoint or trial dir), the run's `config.yaml`
    (`env.id`), Tune's `params.json` (`env` or `env_config.spade.env_id`), and the algorithm's
    pickled constructor config.
    """
    directories = [info.path] + ([info.trial_dir] if info.trial_dir else []) + list(info.path.parents)[:2]
    for directory in dict.fromkeys(directories):
        meta = directory / SPADE_META_FILE
        if meta.is_file():
            try:
                env = json.loads(meta.read_text()).get("env_id")
            except (OSError, ValueError, AttributeError):
                env = None
            if env:
                return canonical_env_id(env)
    for directory in dict.fromkeys(directories):
        env = _env_from_run_config(directory)
        if env:
            return canonical_env_id(env)
    for directory in dict.fromkeys(directories):
        params = directory / TUNE_PARAMS_FILE
        if params.is_file():
            try:
                env = _env_from_mapping(json.loads(params.read_text()))
            except (OSError, ValueError):
                env = None
            if env:
                return canonical_env_id(env)
    ctor = info.path / CTOR_FILE
    if not info.single_module and ctor.is_file():
        try:
            data = _read_pickle(str(ctor), _stamp(ctor))
            env = _env_from_mapping(data["ctor_args_and_kwargs"][0][0])
        except Exception:
            env = None
        if env:
            return canonical_env_id(env)
    return None
