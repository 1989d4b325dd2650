"""`kernels(*fns)`: plain-loop numpy functions numba-compiled once per process (nogil, cached on disk), or as they
are where numba is missing (it is a declared dependency). The kernels of `cell_memory.py` and `grid_values.py`
share it; each keeps its Python twin for the tests to compare against."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def kernels(*fns) -> tuple:
    try:
        from numba import njit
    except ImportError:  # pragma: no cover - numba is a declared dependency
        return fns
    return tuple(njit(cache=True, nogil=True)(f) for f in fns)
