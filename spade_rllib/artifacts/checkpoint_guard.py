"""Is a checkpoint directory whole, and does it stay inside itself? Checked before anything unpickles it.

Checkpoints are pickles: load only checkpoints you trust (docs/reliability.md). These checks do not
make an untrusted pickle safe; they catch accidents and one cheap escape:

* `checkpoint_problem(path)`: every file the restore reads is there and readable, every `*.pkl` is a
  complete pickle stream (read with `pickletools`, which executes nothing) and every `*.json` parses.
  Which files the restore reads is taken from the checkpoint itself (`restore_reads`), the way RLlib's
  `Checkpointable.restore_from_path` walks it: each component directory's metadata file
  (`rllib_checkpoint.json` at the top, `metadata.json` below) names its state file (`<state_file>.pkl`
  or `.msgpack`, which the restore unpickles) and its `class_and_ctor_args.pkl`; the restore recurses
  into every component directory present. RLlib writes a component's metadata first, so a directory
  holding files but no metadata was cut short too. A checkpoint cut short by a killed driver, a full disk
  or a lost file is never taken as the latest; the reason names the file.
* `symlink_escape(path)`: a path under the checkpoint that, through a symbolic link, resolves outside
  the checkpoint directory (so a copied checkpoint cannot make the loader read, say, `~/.ssh`).
* `state_problem(own, saved)`: a saved module state against the module's own state dict (the module
  built from the checkpoint's own constructor arguments, so an MLP and a recurrent module alike):
  exactly the same keys, the same shapes, only finite numbers. RLlib loads module state with
  `strict=False`, so without this an empty or partial state would load as a fresh random policy.
"""
from __future__ import annotations

import json
import os
import pickletools
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import numpy as np

MAX_SCAN_BYTES = 512 * 1024 * 1024
"""Pickles larger than this are only checked for existence (scanning would cost more than it saves)."""


def pickle_problem(path: Path) -> Optional[str]:
    """None when `path` holds one complete pickle stream, else why not (no code runs)."""
    try:
        size = path.stat().st_size
        if size == 0:
            return "empty file"
        if size > MAX_SCAN_BYTES:
            return None
        with open(path, "rb") as f:
            last = None
            for op, _, _ in pickletools.genops(f):
                last = op.name
        return None if last == "STOP" else "ends without a pickle STOP (cut short)"
    except (ValueError, EOFError, OSError) as e:  # genops raises ValueError on truncated/garbled input
        return f"damaged ({e.__class__.__name__}: {' '.join(str(e).split())})"


def symlink_escape(root: str | Path) -> Optional[Path]:
    """The first path under `root` whose symlinks lead outside `root` (None when all stay inside)."""
    root = Path(root)
    real_root = Path(os.path.realpath(root))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                target = Path(os.path.realpath(p))
                if target != real_root and real_root not in target.parents:
                    return p
    return None


METADATA_FILES = ("rllib_checkpoint.json", "metadata.json")
"""RLlib's metadata file of a checkpoint's top directory (`Algorithm.METADATA_FILE_NAME`) and of every component below."""
STATE_SUFFIXES = (".msgpack", ".pkl")
"""The state file's endings, in the order `Checkpointable.restore_from_path` tries them."""


def _component_reads(root: Path, directory: Path, default_state: Optional[str]) -> tuple[list[Path], Optional[str]]:
    """(files the restore of the component at `directory` reads, a problem) for one directory: its state file
    and class_and_ctor_args file as its metadata names them (`default_state` where the top one names none)."""
    rel = directory.relative_to(root)
    meta = next((directory / m for m in METADATA_FILES if (directory / m).is_file()), None)
    if meta is None:
        files = sorted(f.name for f in directory.iterdir() if f.is_file())
        if directory == root:
            return [], f"{METADATA_FILES[0]} is missing (the checkpoint was not written completely)"
        if files:  # RLlib writes a component's metadata before anything else in it
            return [], f"{rel / METADATA_FILES[1]} is missing beside {files[0]} (the checkpoint was not written completely)"
        return [], None
    try:
        data = json.loads(meta.read_text())
    except (ValueError, OSError) as e:
        return [], f"{meta.relative_to(root)} is damaged ({e.__class__.__name__})"
    if not isinstance(data, dict):
        return [], f"{meta.relative_to(root)} holds a {type(data).__name__}, not RLlib's metadata"
    reads = []
    state = data.get("state_file") or (default_state if directory == root else None)
    if isinstance(state, str) and state:
        found = [directory / (state + s) for s in STATE_SUFFIXES if (directory / (state + s)).is_file()]
        if not found:
            return [], f"{rel / (state + '.pkl')} is missing (the checkpoint was not written completely)"
        reads.append(found[0])
    ctor = data.get("class_and_ctor_args_file")
    if isinstance(ctor, str) and ctor:
        if not (directory / ctor).is_file():
            return [], f"{rel / ctor} is missing (the checkpoint was not written completely)"
        reads.append(directory / ctor)
    return reads, None


def restore_reads(path: str | Path, default_state: Optional[str] = None) -> tuple[list[Path], Optional[str]]:
    """(every file restoring the checkpoint at `path` reads, the first problem or None): a walk of the
    checkpoint's component directories as the module docstring says; `default_state` is the top state file's
    stem where its metadata names none (a checkpoint written by hand, e.g. `testing.tiny_checkpoints`)."""
    root = Path(path)
    reads: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root, followlinks=False):
        dirnames.sort()
        found, problem = _component_reads(root, Path(dirpath), default_state)
        if problem:
            return reads, problem
        reads += found
    return reads, None


def file_problem(path: Path) -> Optional[str]:
    """None when `path` can be read whole (a pickle: one complete stream; JSON: parses), else why not."""
    if path.suffix == ".pkl":
        return pickle_problem(path)
    try:
        with open(path, "rb") as f:
            data = f.read() if path.suffix == ".json" else f.read(1)
    except OSError as e:
        return f"cannot be read ({e.__class__.__name__}: {' '.join(str(e).split())})"
    if path.suffix == ".json":
        try:
            json.loads(data)
        except ValueError as e:
            return f"is damaged ({e.__class__.__name__})"
    elif path.suffix == ".msgpack" and not data:
        return "is an empty file"
    return None


def checkpoint_problem(path: str | Path, default_state: str, module_subpath: Path) -> Optional[str]:
    """None when `path` is a whole algorithm checkpoint that stays inside itself, else a one-line reason naming
    the file. `default_state` (the algorithm's state file stem) and `module_subpath` (where the loaders find the
    modules) come from `checkpoint_layout.checkpoint_problem`."""
    p = Path(path)
    escape = symlink_escape(p)
    if escape is not None:
        return f"{escape} is a symbolic link to {os.path.realpath(escape)}, outside the checkpoint; refused"
    _, problem = restore_reads(p, default_state)
    if problem:
        return problem
    modules = p / module_subpath
    if not modules.is_dir() or not any(d.is_dir() for d in modules.iterdir()):
        return f"{module_subpath} holds no module"
    for d in modules.iterdir():
        if d.is_dir() and not any(d.glob("module_state.*")):
            return f"{module_subpath / d.name} has no module_state (the checkpoint was not written completely)"
    for f in sorted(p.rglob("*")):
        if f.is_file():
            reason = file_problem(f)
            if reason:
                return f"{f.relative_to(p)}: {reason}" if f.suffix == ".pkl" else f"{f.relative_to(p)} {reason}"
    return None


def state_problem(own: Mapping[str, Any], saved: Any, optional: Callable[[str], bool] = lambda key: False) -> Optional[str]:
    """None when `saved` holds exactly the keys of `own` (those `optional(key)` says may be left out
    aside), each with `own`'s shape and only finite numbers; else the first problem, in one line."""
    if not isinstance(saved, Mapping):
        return f"holds a {type(saved).__name__}, not a state dict"
    for key in own:
        if key not in saved and not optional(key):
            return f"key {key!r} is missing ({len(saved)} of the module's {len(own)} keys saved)"
    for key in saved:
        if key not in own:
            return f"key {key!r} is not a key of the module"
    for key, value in saved.items():
        try:
            arr = np.asarray(value)
        except Exception as e:
            return f"key {key!r} is not an array ({type(e).__name__})"
        want = tuple(np.shape(own[key]))
        if tuple(arr.shape) != want:
            return f"key {key!r} has shape {tuple(arr.shape)}, the module has {want}"
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            return f"key {key!r} holds NaN or inf ({int(np.size(arr) - np.isfinite(arr).sum())} of {arr.size} entries)"
        if arr.dtype.kind not in "fciub":
            return f"key {key!r} holds {arr.dtype}, not numbers"
    return None


__all__ = ["METADATA_FILES", "checkpoint_problem", "file_problem", "pickle_problem", "restore_reads", "state_problem",
           "symlink_escape"]
