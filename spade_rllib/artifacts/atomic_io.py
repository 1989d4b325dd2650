"""Atomic artifact writes: a file is either its old whole self or its new whole self, never half.

Every artifact (ONNX models, reports, CSVs, plots, league tables, JSON summaries) is written to a
temporary file in the target's own directory and renamed over the target (`os.replace`, atomic on
POSIX within one file system). A write that fails or is interrupted removes its temporary file and
leaves the previous target untouched.

    with atomic_path("model.onnx") as tmp:   # a path to write to (keeps the suffix: ".model.onnx.<x>.tmp.onnx")
        torch.onnx.export(..., dynamo=True).save(str(tmp))
    with atomic_open("payoff.csv", "w", newline="") as f:
        f.write(...)
    write_text("report.md", text)

Ground floor: standard library only.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

TMP_MARK = ".tmp"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary path beside `path`; on a clean exit it replaces `path`, on any error
    (or KeyboardInterrupt) it is removed and `path` keeps what it had."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_MARK + path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an artifact gets the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs) -> Iterator[IO]:
    """`open(path, mode)` through `atomic_path`: the target changes only when the block completes."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f


def write_text(path: str | Path, text: str) -> Path:
    with atomic_open(path, "w") as f:
        f.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_open(path, "wb") as f:
        f.write(data)
    return Path(path)


__all__ = ["atomic_open", "atomic_path", "write_bytes", "write_text"]
