"""Compact, exactly-replayable level specs, and what the strategies read from an `EpisodeOutcome`.

A `LevelSpec` is what a curriculum hands out and stores: either generator knobs plus a seed
(replayed by `generate_level(Knobs.from_dict(knobs), seed)`, deterministic by contract) or an
ASCII grid. Its `level_id` is a content hash (sha1, never Python's per-process `hash()`), so the
same level has the same id on the driver and on every env runner.

Outcomes are `EpisodeOutcome` records (spade_rllib/core/outcome.py); the strategies read the learner's
result and return from it, `difficulty` and `level_id` from `outcome.level`, and rebuild a level
from `outcome.level_spec` (PLR), with the helpers at the end of this module.
No Ray import; building a `Level` imports `spade_rllib.envs` lazily.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from spade_rllib.core.outcome import DRAW, EpisodeOutcome

COMPLETED_REASONS = frozenset({"flag", "both_flag", "capture"})  # MazeRace; CaptureTheFlag


def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, (tuple, np.ndarray)):
        return list(obj)
    raise TypeError(f"level knob value {obj!r} of type {type(obj).__name__} is not JSON-serializable")


def _plain(value: Any) -> Any:
    """numpy scalars / tuples -> plain Python, so specs pickle, JSON and compare cleanly."""
    return json.loads(_canonical_json(value))


@dataclass(frozen=True)
class LevelSpec:
    """One level, compact and exactly replayable. Build with `LevelSpec.generated` or `LevelSpec.grid`.

    knob_items: sorted (knob, value) pairs for generator levels (hashable form of the knobs dict).
    seed:       generator seed for generator levels.
    ascii:      the map for grid levels (`#` wall, `.` floor, `F` flag, `A`/`B` spawns).
    difficulty: the difficulty the knobs came from, when known (metadata, not part of the id).
    name:       a human name for grid levels (metadata, not part of the id).
    level_id:   stable content hash, `gen-<12 hex>` or `grid-<12 hex>`.
    """

    knob_items: tuple[tuple[str, Any], ...] | None = None
    seed: int | None = None
    ascii: str | None = None
    difficulty: float | None = None
    name: str | None = None
    level_id: str = ""

    def __post_init__(self) -> None:
        generated = self.knob_items is not None
        if generated == (self.ascii is not None):
            raise ValueError("LevelSpec needs exactly one of knobs+seed (generator level) or ascii (grid level)")
        if generated and self.seed is None:
            raise ValueError("LevelSpec for a generator level needs a seed")
        expected = self._compute_id()
        if self.level_id and self.level_id != expected:
            raise ValueError(f"LevelSpec level_id {self.level_id!r} does not match its content (expected {expected!r})")
        object.__setattr__(self, "level_id", expected)

    # ----- constructors -----
    @classmethod
    def generated(cls, knobs: Mapping[str, Any], seed: int, difficulty: float | None = None) -> "LevelSpec":
        plain = _plain(dict(knobs))
        items = tuple(sorted((k, _freeze(v)) for k, v in plain.items()))
        return cls(knob_items=items, seed=int(seed), difficulty=None if difficulty is None else float(difficulty))

    @classmethod
    def grid(cls, ascii: str, name: str | None = None) -> "LevelSpec":
        return cls(ascii=normalize_ascii(ascii), name=name)

    # ----- views -----
    @property
    def is_generated(self) -> bool:
        return self.knob_items is not None

    @property
    def knobs(self) -> dict[str, Any]:
        """The generator knobs as a fresh dict ({} for grid levels)."""
        return {k: _thaw(v) for k, v in (self.knob_items or ())}

    def summary(self) -> dict[str, Any]:
        """What the outcome's `level` dict carries: knobs (or grid size), level_id, difficulty."""
        out: dict[str, Any] = self.knobs
        if not self.is_generated:
            rows = self.ascii.split("\n")
            out["size"] = max(len(rows), max(len(r) for r in rows))
            out["family"] = "grid"
            if self.name:
                out["name"] = self.name
        out["level_id"] = self.level_id
        if self.difficulty is not None:
            out["difficulty"] = self.difficulty
        return out

    def to_dict(self) -> dict[str, Any]:
        if self.is_generated:
            d: dict[str, Any] = {"level_id": self.level_id, "knobs": self.knobs, "seed": self.seed}
            if self.difficulty is not None:
                d["difficulty"] = self.difficulty
            return d
        d = {"level_id": self.level_id, "ascii": self.ascii}
        if self.name is not None:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LevelSpec":
        if "ascii" in d:
            spec = cls.grid(d["ascii"], name=d.get("name"))
        elif "knobs" in d and "seed" in d:
            spec = cls.generated(d["knobs"], d["seed"], d.get("difficulty"))
        else:
            raise ValueError(f"level spec dict needs 'knobs'+'seed' or 'ascii'; got keys {sorted(d)}")
        if d.get("level_id") and d["level_id"] != spec.level_id:
            raise ValueError(f"level spec dict has level_id {d['level_id']!r} but its content hashes to {spec.level_id!r}")
        return spec

    def _compute_id(self) -> str:
        if self.knob_items is not None:
            payload = _canonical_json({"knobs": self.knobs, "seed": self.seed})
            return "gen-" + hashlib.sha1(payload.encode()).hexdigest()[:12]
        return "grid-" + hashlib.sha1(self.ascii.encode()).hexdigest()[:12]


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _thaw(v: Any) -> Any:
    return list(_thaw(x) for x in v) if isinstance(v, tuple) else v


def normalize_ascii(text: str) -> str:
    """Strip trailing spaces and blank lines at both ends, so equal maps hash equally."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ValueError("ASCII level is empty")
    return "\n".join(lines)


def build_level(spec: LevelSpec, env_id: str):
    """Turn a spec into a `Level` of the game `env_id` (generated specs use that game's generator;
    imports `spade_rllib.envs` lazily). The level's meta gets `level_id` (and `difficulty` when
    known), so the env's end-of-episode `level` info carries them."""
    from spade_rllib.envs import Knobs, Level
    from spade_rllib.games.catalog import game

    tags = {"level_id": spec.level_id}
    if spec.difficulty is not None:
        tags["difficulty"] = spec.difficulty
    if spec.is_generated:
        level = game(env_id).level_generator(Knobs.from_dict(spec.knobs), spec.seed)
        level.meta.update(tags)
        return level
    return Level.from_ascii(spec.ascii, meta={"family": "grid", "name": spec.name, **tags})


# ----- what the strategies read from an EpisodeOutcome (spade_rllib/core/outcome.py) -----

def outcome_completed(outcome: EpisodeOutcome) -> bool:
    """Some team captured the flag before timeout."""
    if outcome.reason not in (None, "unknown"):
        return outcome.reason in COMPLETED_REASONS
    return outcome.winner not in (None, DRAW)


def outcome_spec(outcome: EpisodeOutcome) -> LevelSpec | None:
    """The level spec an outcome was played on, if it carries enough to rebuild the level."""
    return LevelSpec.from_dict(outcome.level_spec) if outcome.level_spec else None


def outcome_level_summary(outcome: EpisodeOutcome) -> dict[str, float]:
    """Numbers for the `curriculum/*_mean` metrics: size, wall_density, flag_distance, difficulty."""
    level = dict(outcome.level)
    if "size" not in level and outcome.level_spec:  # a hand-written record with the spec only
        level = {**LevelSpec.from_dict(outcome.level_spec).summary(), **level}
    flag = next((level[k] for k in ("measured_flag_distance", "flag_distance_actual", "flag_distance")
                 if level.get(k) is not None), None)
    return {
        "size": _num(level.get("size")),
        "wall_density": _num(level.get("wall_density")),
        "flag_distance": _num(flag),
        "difficulty": _num(level.get("difficulty")),
    }


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
