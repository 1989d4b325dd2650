"""The embedded local Ray, bound to loopback: `init_local_ray(**ray_init_kwargs)`.

A single-machine run needs no network: GCS, raylet, the workers' gRPC ports, the dashboard and its
agent all listen on 127.0.0.1 only (token auth stays on). A cluster joined with `--address` (or
started with `ray up`) keeps its own settings; this module is for the cluster `ray.init` starts.

Ray 2.60 has no public switch for this: `ray.init(_node_ip_address="127.0.0.1")` maps a loopback
address to the machine's outward IP (`ray._private.services.resolve_ip_for_localhost`) before the
node starts, and every service then listens on all interfaces. So that one function is wrapped
during `ray.init` to keep 127.0.0.1; with node IP 127.0.0.1 Ray's own rule binds each service to
loopback. Should the private function move, Ray starts as before (the socket test in
`tests/test_reliability.py` would then fail).
"""
from __future__ import annotations

import contextlib
from typing import Any

LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def _keep_loopback():
    try:
        from ray._private import services
    except ImportError:
        yield
        return
    original = getattr(services, "resolve_ip_for_localhost", None)
    if original is None:
        yield
        return
    services.resolve_ip_for_localhost = lambda host: host if host == LOOPBACK else original(host)
    try:
        yield
    finally:
        services.resolve_ip_for_localhost = original


def init_local_ray(**kwargs: Any):
    """`ray.init(**kwargs)` for a new local cluster whose services listen on 127.0.0.1 only."""
    import ray

    kwargs.setdefault("dashboard_host", LOOPBACK)
    with _keep_loopback():
        return ray.init(_node_ip_address=LOOPBACK, **kwargs)


__all__ = ["LOOPBACK", "init_local_ray"]
