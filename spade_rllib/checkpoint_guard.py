"""Is a checkpoint directory whole, and does it stay inside itself? Checked before anything unpickles it.

Checkpoints are pickles: load only checkpoints you trust (docs/reliability.md). These checks do not
make an untrusted pickle safe; they catch accidents and one cheap escape:

* `checkpoint_problem(path)`: the files a `SpadePPO` checkpoint needs are there, every `*.pkl` is a
  complete pickle stream (read with `pickletools`, which executes nothing) and every `*.json` parses.
  A checkpoint cut short by a killed driver or a full disk is never taken as the latest.
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


def checkpoint_problem(path: str | Path, required_files: tuple[str, ...], module_subpath: Path) -> Optional[str]:
    """None when `path` is a whole algorithm checkpoint that stays inside itself, else a one-line reason.
    The layout (`required_files`, `module_subpath`) comes from `checkpoint_layout.checkpoint_problem`."""
    p = Path(path)
    escape = symlink_escape(p)
    if escape is not None:
        return f"{escape} is a symbolic link to {os.path.realpath(escape)}, outside the checkpoint; refused"
    for name in required_files:
        if not (p / name).is_file():
            return f"{name} is missing (the checkpoint was not written completely)"
    modules = p / module_subpath
    if not modules.is_dir() or not any(d.is_dir() for d in modules.iterdir()):
        return f"{module_subpath} holds no module"
    for d in modules.iterdir():
        if d.is_dir() and not any(d.glob("module_state.*")):
            return f"{module_subpath / d.name} has no module_state (the checkpoint was not written completely)"
    for f in sorted(p.rglob("*")):
        if f.suffix == ".pkl":
            reason = pickle_problem(f)
            if reason:
                return f"{f.relative_to(p)}: {reason}"
        elif f.suffix == ".json":
            try:
                json.loads(f.read_text())
            except (ValueError, OSError) as e:
                return f"{f.relative_to(p)} is damaged ({e.__class__.__name__})"
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


__all__ = ["checkpoint_problem", "pickle_problem", "state_problem", "symlink_escape"]
