"""`CurriculumLevelSource`: the curriculum's runner-side object for the RLlib glue. No Ray.

It implements `spade_rllib.rllib.plan.LevelSource`. The driver ships it inside a `DriverUpdate`
(pickled), and the env runner calls `reset_options(key)` at every reset. The level is a pure
function of (sampling state, seed, version, episode key), like `OpponentPlan.pick`. Two runners
with the same source and key get the same level, runner state never drifts, and a restored run
repeats its levels.

`reset_options` returns `{"level": Level, "level_id": str, "level_spec": dict}`. MazeRace reads
`level`, and the runner copies `level_id` and `level_spec` into the episode's outcome record, which
is what the driver's strategy needs (PLR stores the spec, threshold reads its difficulty).

A joint (MAESTRO) sampling state picks the level by the episode's opponent too: such a source has
`opponent_aware = True`, the runner calls `reset_options(key, opponent=<member id>)`, and the
returned `level_id` is `maestro.value_key(level_id, opponent)`, the tag under which the GAE connector
sums main's positive advantages (per level *and* co-player).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Mapping

import numpy as np

from spade_rllib.curriculum.level_spec import LevelSpec
from spade_rllib.curriculum.maestro import value_key
from spade_rllib.curriculum.strategies import sample_level

SOURCE_CACHE_SIZE = 512  # built levels per process, by (builder, level_id): as many as `training.level_pool` holds
MAX_BUILD_ATTEMPTS = 5  # a spec the generator rejects is redrawn (from the same keyed RNG), then it raises


_BUILT: OrderedDict[tuple, Any] = OrderedDict()
"""Process-wide LRU of built levels. A new source arrives with every broadcast; levels of specs seen
before (PLR replays, `level_seeds` repeats) are reused with the observation templates the env cached
on them, so a runner builds each level once (building levels was a large share of the runner's time)."""


def _builder_key(builder: Callable) -> tuple:
    """Equal for builders that build the same levels: a `functools.partial` by its function and arguments
    (each broadcast ships a new partial), anything else by identity."""
    func = getattr(builder, "func", None)
    if func is not None:
        return (func, tuple(getattr(builder, "args", ())), tuple(sorted((getattr(builder, "keywords", None) or {}).items())))
    return (builder,)


def clear_level_cache() -> None:
    """Forget every built level (tests; a long-lived process that wants its memory back)."""
    _BUILT.clear()


class CurriculumLevelSource:
    """Picks each episode's level from a broadcast sampling state.

    sampling_state: `strategy.sampling_state()` from the driver (plain JSON-able dict).
    seed:           the run's seed, mixed into every pick.
    version:        the driver's broadcast counter, mixed in so each broadcast draws fresh levels.
    level_builder:  LevelSpec -> what goes into `options["level"]` (the curriculum component passes
                    `build_level` bound to its game).
    """

    def __init__(self, sampling_state: Mapping[str, Any], level_builder: Callable[[LevelSpec], Any], seed: int = 0,
                 version: int = 0):
        self.sampling_state = dict(sampling_state)
        self.seed = int(seed)
        self.version = int(version)
        self.level_builder = level_builder
        self.opponent_aware = self.sampling_state.get("kind") == "joint"

    def spec_for(self, key: tuple, attempt: int = 0, opponent: str | None = None) -> LevelSpec:
        """The level spec for the episode with this key (worker_index, env_index, episode_number) and
        opponent (read by joint sampling states only)."""
        rng = np.random.default_rng([self.seed & 0xFFFFFFFF, self.version, attempt, *(int(k) for k in key)])
        return sample_level(self.sampling_state, rng, self._build, opponent=opponent)

    def reset_options(self, key: tuple, opponent: str | None = None) -> dict[str, Any]:
        error: Exception | None = None
        for attempt in range(MAX_BUILD_ATTEMPTS):
            spec = self.spec_for(key, attempt, opponent)
            try:
                level = self._build(spec)
            except (RuntimeError, ValueError) as e:
                error = e
                continue
            tag = value_key(spec.level_id, opponent) if self.opponent_aware else spec.level_id
            return {"level": level, "level_id": tag, "level_spec": spec.to_dict()}
        raise RuntimeError(f"CurriculumLevelSource: {MAX_BUILD_ATTEMPTS} levels drawn for episode {key} failed to "
                           f"build; last spec {spec.to_dict()}") from error

    def _build(self, spec: LevelSpec) -> Any:
        key = (_builder_key(self.level_builder), spec.level_id)
        level = _BUILT.get(key)
        if level is None:
            level = self.level_builder(spec)
            _BUILT[key] = level
            if len(_BUILT) > SOURCE_CACHE_SIZE:
                _BUILT.popitem(last=False)
        else:
            _BUILT.move_to_end(key)
        return level

    def __repr__(self) -> str:
        return (f"CurriculumLevelSource(kind={self.sampling_state.get('kind')!r}, seed={self.seed}, "
                f"version={self.version})")
