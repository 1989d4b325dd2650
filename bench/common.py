"""Pieces the benches share: the checkout root, the small league + curriculum config that the fault
and soak benches start from, and one local Ray for the length of a bench. Not a bench itself.

A bench runs from a checkout without installing: it puts the checkout root first on `sys.path`
and imports this module as `bench.common`.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Mapping, Optional

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tune_configs"


def league_curriculum_config(name: str, seed: int, *, storage_path: str, window: int, hidden: list[int],
                             train_batch_size: int, minibatch_size: int, league: Mapping,
                             training: Mapping, lstm: Optional[Mapping] = None) -> dict:
    """`tune_configs/league.yaml` (CTF, league on) with `tune_configs/curriculum.yaml`'s threshold curriculum
    (its `window` and `min_episodes` set to `window`; no fixed difficulty), one epoch per batch, a small
    tanh MLP of `hidden` widths (`lstm`: extra model keys, e.g. use_lstm), no evaluation during training.
    `league` updates the league section, `training` replaces the training section."""
    from spade_rllib.config import read_yaml

    raw = read_yaml((CONFIGS / "league.yaml").read_text())
    cur = read_yaml((CONFIGS / "curriculum.yaml").read_text())["curriculum"]
    cur["threshold"].update({"window": window, "min_episodes": window})
    raw["curriculum"] = cur
    raw["env"].pop("difficulty", None)
    raw["experiment"] = {"name": name, "seed": seed, "storage_path": storage_path}
    raw["agent"].update({"epochs": 1, "minibatch_size": minibatch_size, "train_batch_size": train_batch_size,
                         "model": {"kind": "mlp", "hidden": list(hidden), "activation": "tanh", **(lstm or {})}})
    raw["league"].update(league)
    raw["training"] = dict(training)
    raw["evaluation"] = {"interval": 0}
    return raw


@contextlib.contextmanager
def local_ray(cpus: int = 2, quiet: bool = False, address: Optional[str] = None) -> Iterator[None]:
    """A local Ray with `cpus` CPUs and no dashboard while the block runs (`quiet`: errors only, repeated
    worker logs folded); with `address` ("auto" inside `ray job submit`), the running cluster instead."""
    import ray

    extra = {}
    if quiet:
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        extra["logging_level"] = "ERROR"
    if address:
        ray.init(address=address, log_to_driver=False, **extra)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, **extra)
    try:
        yield
    finally:
        ray.shutdown()
