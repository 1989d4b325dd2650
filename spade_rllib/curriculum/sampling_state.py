"""The curriculum's typed records: a PLR buffer entry and the sampling state a strategy broadcasts. Pure Python.

`PLREntry` is one level in a PLR buffer (`PLRStrategy.entries`, one buffer per co-player under MAESTRO).
The sampling states are what an env runner needs to pick levels (`strategies.sample_level`), one record per
kind: `DifficultySampling` (threshold, fixed), `UniformSampling`, `PLRSampling` (plr, accel) and
`JointSampling` (maestro). Each has `to_dict()`, the JSON-able form the driver broadcasts and checkpoints
hold (format `SAMPLING_STATE_FORMAT`, unchanged), and `from_dict()`, which reads that form back (entries
written before these records existed included). `sampling_record(mapping)` reads any kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

SAMPLING_STATE_FORMAT = 1


@dataclass
class PLREntry:
    """One level in a PLR buffer. `spec` is the level's `LevelSpec.to_dict()` (knobs + seed, or a grid)."""

    spec: dict[str, Any]
    score: float = 0.0
    """Learnability or positive value loss: what ranks the level for replay."""
    timestamp: int = 0
    """The buffer's `episode_count` when the level was last played (staleness = episode_count - timestamp)."""
    history: list[float] = field(default_factory=list)
    """Main's scores there (1 win, 0.5 draw, 0 loss; completion 1/0 in single-team games), the last `level_window`."""
    pvl: float | None = None
    """The latest positive value loss of main's steps on the level (from the GAE connector), or None."""
    plays: int = 1
    """Games played on it while buffered."""

    @property
    def level_id(self) -> str:
        return self.spec["level_id"]

    def to_dict(self) -> dict[str, Any]:
        return {"spec": dict(self.spec), "history": list(self.history), "pvl": self.pvl,
                "timestamp": self.timestamp, "plays": self.plays, "score": self.score}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PLREntry:
        return cls(spec=dict(d["spec"]), score=float(d["score"]), timestamp=int(d["timestamp"]),
                   history=[float(s) for s in d["history"]], pvl=None if d.get("pvl") is None else float(d["pvl"]),
                   plays=int(d.get("plays", 1)))


def _pair(v: Any) -> list[float]:
    return [v[0], v[1]]


@dataclass
class DifficultySampling:
    """threshold and fixed: one candidate knobs dict per family (chosen uniformly), at `difficulty`; the seed
    is one of `level_seeds` (0: any seed)."""

    difficulty: float
    candidates: list[dict[str, Any]]
    level_seeds: int = 0
    kind = "difficulty"

    def to_dict(self) -> dict[str, Any]:
        return {"format": SAMPLING_STATE_FORMAT, "kind": self.kind, "difficulty": self.difficulty,
                "candidates": [dict(c) for c in self.candidates], "level_seeds": self.level_seeds}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DifficultySampling:
        return cls(d["difficulty"], list(d["candidates"]), int(d.get("level_seeds") or 0))


@dataclass
class UniformSampling:
    """Every knob drawn uniformly from its range (domain randomization; PLR's new levels)."""

    agents_per_team: int
    families: list[str]
    size: list[int]
    wall_density: list[float]
    braid: list[float]
    flag_distance_frac: list[float] | None = None
    level_seeds: int = 0
    kind = "uniform"

    def to_dict(self) -> dict[str, Any]:
        return {"format": SAMPLING_STATE_FORMAT, "kind": self.kind, "agents_per_team": self.agents_per_team,
                "families": list(self.families), "size": list(self.size), "wall_density": list(self.wall_density),
                "braid": list(self.braid),
                "flag_distance_frac": None if self.flag_distance_frac is None else list(self.flag_distance_frac),
                "level_seeds": self.level_seeds}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UniformSampling:
        frac = d.get("flag_distance_frac")
        return cls(d["agents_per_team"], list(d["families"]), _pair(d["size"]), _pair(d["wall_density"]),
                   _pair(d["braid"]), None if frac is None else _pair(frac), int(d.get("level_seeds") or 0))


@dataclass
class ReplayBuffer:
    """What a runner sees of one PLR buffer: its levels, their replay probabilities, whether it may replay."""

    levels: list[dict[str, Any]] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    can_replay: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"can_replay": self.can_replay, "levels": [dict(s) for s in self.levels], "probs": list(self.probs)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReplayBuffer:
        return cls(list(d["levels"]), list(d["probs"]), bool(d["can_replay"]))


@dataclass
class PLRSampling:
    """plr and accel: replay a buffered level with probability `replay_prob` (once the buffer `can_replay`),
    else a new one from `new`; accel edits a replayed level with probability `edit_prob` (`edits` edits)."""

    replay_prob: float
    buffer: ReplayBuffer
    new: UniformSampling
    edit_prob: float | None = None
    edits: int | None = None
    kind = "plr"

    def to_dict(self) -> dict[str, Any]:
        out = {"format": SAMPLING_STATE_FORMAT, "kind": self.kind, "replay_prob": self.replay_prob,
               **self.buffer.to_dict(), "new": self.new.to_dict()}
        if self.edit_prob is not None:
            out.update(edit_prob=self.edit_prob, edits=self.edits)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PLRSampling:
        return cls(d["replay_prob"], ReplayBuffer.from_dict(d), UniformSampling.from_dict(d["new"]),
                   d.get("edit_prob"), None if d.get("edits") is None else int(d["edits"]))


@dataclass
class JointSampling:
    """maestro: the episode's opponent picks its buffer, replayed as PLR does; an opponent without one
    gets a new level from `new`."""

    replay_prob: float
    buffers: dict[str, ReplayBuffer]
    new: UniformSampling
    kind = "joint"

    def to_dict(self) -> dict[str, Any]:
        return {"format": SAMPLING_STATE_FORMAT, "kind": self.kind, "replay_prob": self.replay_prob,
                "buffers": {k: b.to_dict() for k, b in self.buffers.items()}, "new": self.new.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JointSampling:
        return cls(d["replay_prob"], {str(k): ReplayBuffer.from_dict(b) for k, b in d["buffers"].items()},
                   UniformSampling.from_dict(d["new"]))


SamplingState = Union[DifficultySampling, UniformSampling, PLRSampling, JointSampling]
SAMPLING_KINDS: dict[str, type] = {c.kind: c for c in (DifficultySampling, UniformSampling, PLRSampling, JointSampling)}


def sampling_record(state: SamplingState | Mapping[str, Any]) -> SamplingState:
    """The typed record of a sampling state (a record is returned as it is); ValueError for an unknown
    format or kind."""
    if isinstance(state, tuple(SAMPLING_KINDS.values())):
        return state
    if state.get("format", SAMPLING_STATE_FORMAT) != SAMPLING_STATE_FORMAT:
        raise ValueError(f"sampling state format {state.get('format')!r} is not supported "
                         f"(this code reads format {SAMPLING_STATE_FORMAT})")
    kind = state.get("kind")
    if kind not in SAMPLING_KINDS:
        raise ValueError(f"sampling state kind {kind!r} is unknown; expected difficulty, uniform, plr or joint")
    return SAMPLING_KINDS[kind].from_dict(state)
