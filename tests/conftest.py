"""Shared fixtures. One Ray instance per test session: request `ray_session` in any test that needs Ray."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory):
    """Start one local Ray for the whole session (2 CPUs, no dashboard) and stop it at the end."""
    import ray

    if not ray.is_initialized():
        ray.init(
            num_cpus=int(os.environ.get("SPADE_TEST_CPUS", "2")),
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=str(tmp_path_factory.mktemp("ray")),
        )
    yield ray
    ray.shutdown()


def pytest_collection_modifyitems(config, items):
    """Tests that use the Ray session count as `ray` tests, so `-m "not ray"` skips them."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
