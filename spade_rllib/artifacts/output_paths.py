"""Where a command writes, checked before Ray starts: one-line `ConfigError`s, nothing created.

* `check_experiment_name`: the experiment directory is one path component under the storage path.
* `check_storage_path` / `check_storage_uri`: a local storage directory can be created and written (no
  regular file on the way, no read-only parent); a URI has a known scheme (`STORAGE_SCHEMES`) whose pyarrow
  filesystem is available here.
* Outputs of `evaluate`, `export` and the benches: `check_output_path` (file or directory, writable parent),
  `check_not_in_checkpoint` (never inside an input checkpoint), `check_overwrite` (only a previous output of
  the same command is replaced without --force), `check_fresh_directory` (new or empty without --force).
"""
from __future__ import annotations

import os
from pathlib import Path

from spade_rllib.core.validation import ConfigError, did_you_mean


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
    from spade_rllib.artifacts.checkpoint_layout import CTOR_FILE, is_algorithm_checkpoint

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


__all__ = ["STORAGE_SCHEMES", "check_experiment_name", "check_fresh_directory", "check_not_in_checkpoint",
           "check_output_path", "check_overwrite", "check_storage_path", "check_storage_uri"]
