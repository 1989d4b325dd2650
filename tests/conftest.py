"""Shared fixtures. One Ray instance per test session: request `ray_session` in any test that needs Ray.
Under pytest-xdist (`make test`: 2 workers, a file at a time) each worker is a session with its own Ray."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

USER_ENVS = Path(__file__).resolve().parent / "fixtures" / "user_envs"


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


@pytest.fixture
def user_envs(monkeypatch):
    """The folder of a user's own `myenv.py` on sys.path (as the working directory would be); its
    import and the env-id resolver's cache are forgotten afterwards."""
    from spade_rllib.games import resolve_env

    monkeypatch.syspath_prepend(str(USER_ENVS))
    yield
    resolve_env.cache_clear()
    sys.modules.pop("myenv", None)


HEAVY_FIRST = ("test_tune.py", "test_cluster_multinode.py", "test_multi_learner.py", "test_ablation_benches.py",
               "test_league_claim.py", "test_foreign_envs.py", "test_train.py", "test_poker_pipeline.py",
               "test_recurrent_bench.py", "test_foreign_teams.py", "test_console.py", "test_recurrent_learning.py",
               "test_c4_learning.py", "test_fault_cluster.py", "test_load_write_guards.py", "test_trackers.py")
"""The test files that take longest, longest first (summed test times of `make test` on a clean clone, quiet
machine, 2026-12-07), started first: with `--dist loadfile` each file runs on one worker, and a long file last leaves
the other worker idle at the end. The Makefile passes `--no-loadscope-reorder`, without which pytest-xdist orders
files by their number of tests instead (and the long files, which have few, would come last)."""


def pytest_collection_modifyitems(config, items):
    """Tests that use the Ray session count as `ray` tests, so `-m "not ray"` skips them; the heaviest files
    go first (`HEAVY_FIRST`; the order within a file is kept)."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVY_FIRST)))  # stable: file order otherwise kept
