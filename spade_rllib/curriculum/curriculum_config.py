"""`CurriculumConfig`: the `curriculum:` section of a training config, typed and validated.

Every field has a one-line doc. `CurriculumConfig.from_dict(d)` accepts the YAML mapping, rejects
unknown keys with a "did you mean" hint, and every bad value raises `ConfigError` (a `ValueError`)
naming the field, the value and the allowed range, worded as in `spade_rllib.validation`. The run
config's `curriculum:` section embeds it (`enabled` plus these fields).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Mapping

from spade_rllib.validation import not_allowed, out_of_range, unknown_key, wrong_type

STRATEGIES = ("threshold", "plr", "accel", "uniform", "fixed")
SIGNALS = ("score", "win_rate", "completion", "return")
FAMILIES = ("open", "maze", "rooms")
PLR_SCORES = ("learnability", "positive_value_loss")
LEARNABILITY_P = ("score", "completion", "win_share")
"""p of learnability; `win_share` is the old name of `score` (configs written before issue 15 still load)."""
DIFFICULTY_RANGE = (1.0, 10.0)  # knobs_for_difficulty's domain (docs/CONTRACTS.md)
SIZE_RANGE = (5, 25)  # Knobs.size: odd 5..25
WALL_DENSITY_RANGE = (0.0, 0.4)


def _fail(name: str, value: Any, allowed: str) -> None:
    raise out_of_range(name, value, allowed)


def _check_range(name: str, value: Any, lo: float, hi: float, *, lo_open=False, hi_open=False, integer=False) -> None:
    kind = "an integer" if integer else "a number"
    lo_s, hi_s = ("(" if lo_open else "["), (")" if hi_open else "]")
    allowed = f"{kind} in {lo_s}{lo}, {hi}{hi_s}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type(name, value, allowed)
    if integer and not float(value).is_integer():
        raise wrong_type(name, value, allowed)
    if not math.isfinite(value) and not (value == math.inf and hi == math.inf):
        _fail(name, value, allowed)
    if value < lo or value > hi or (lo_open and value == lo) or (hi_open and value == hi):
        _fail(name, value, allowed)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise not_allowed(name, value, choices)


def _check_pair(name: str, value: Any, lo: float, hi: float, integer=False) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        _fail(name, value, f"a [low, high] pair within [{lo}, {hi}]")
    a, b = value
    _check_range(f"{name}[0]", a, lo, hi, integer=integer)
    _check_range(f"{name}[1]", b, lo, hi, integer=integer)
    if a > b:
        _fail(name, value, "low <= high")
    return (int(a), int(b)) if integer else (float(a), float(b))


@dataclass(frozen=True)
class ThresholdConfig:
    """Difficulty control by a performance threshold over a sliding window of episodes."""

    signal: str = "score"
    """Performance signal, per episode from main's side: score (main's win 1, draw 0.5, loss 0; completion
    when nobody can win) | win_rate (main won) | completion (some team captured the flag) | return (main's return)."""
    initial: float | None = None
    """Starting difficulty; None = `min`."""
    min: float = 1.0
    """Lowest difficulty (knobs_for_difficulty's domain is [1, 10])."""
    max: float = 10.0
    """Highest difficulty."""
    window: int = 50
    """Sliding window length, in episodes."""
    min_episodes: int = 20
    """Episodes at the current difficulty required before the next change (the window restarts on a change)."""
    up_threshold: float = 0.8
    """Signal above this multiplies difficulty by `up_factor`."""
    down_threshold: float = 0.3
    """Signal below this multiplies difficulty by `down_factor`."""
    up_factor: float = 1.2
    """Multiplier (> 1) when the signal is high."""
    down_factor: float = 0.9
    """Multiplier in (0, 1) when the signal is low."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.threshold") -> None:
        _check_choice(f"{prefix}.signal", self.signal, SIGNALS)
        _check_range(f"{prefix}.min", self.min, *DIFFICULTY_RANGE)
        _check_range(f"{prefix}.max", self.max, *DIFFICULTY_RANGE)
        if self.min > self.max:
            _fail(f"{prefix}.min", self.min, f"<= {prefix}.max ({self.max})")
        if self.initial is not None:
            _check_range(f"{prefix}.initial", self.initial, self.min, self.max)
        _check_range(f"{prefix}.window", self.window, 1, 1_000_000, integer=True)
        _check_range(f"{prefix}.min_episodes", self.min_episodes, 1, 1_000_000, integer=True)
        if self.signal != "return":
            _check_range(f"{prefix}.up_threshold", self.up_threshold, 0.0, 1.0)
            _check_range(f"{prefix}.down_threshold", self.down_threshold, 0.0, 1.0)
        if self.down_threshold >= self.up_threshold:
            _fail(f"{prefix}.down_threshold", self.down_threshold, f"< up_threshold ({self.up_threshold})")
        _check_range(f"{prefix}.up_factor", self.up_factor, 1.0, 100.0, lo_open=True)
        _check_range(f"{prefix}.down_factor", self.down_factor, 0.0, 1.0, lo_open=True, hi_open=True)

    @property
    def start(self) -> float:
        return float(self.min if self.initial is None else self.initial)


@dataclass(frozen=True)
class UniformConfig:
    """Domain randomization: knobs drawn uniformly from these ranges (also PLR's new-level generator)."""

    families: tuple[str, ...] = FAMILIES
    """Generator families to draw from, uniformly."""
    size: tuple[int, int] = (7, 21)
    """[low, high] level size; odd sizes only are drawn (Knobs.size is odd 5..25)."""
    wall_density: tuple[float, float] = (0.0, 0.3)
    """[low, high] wall density for the open and rooms families."""
    braid: tuple[float, float] = (0.0, 1.0)
    """[low, high] braid (share of dead ends opened) for the maze family."""
    flag_distance_frac: tuple[float, float] | None = (0.5, 1.0)
    """[low, high] spawn-to-flag distance as a fraction of (size - 3), as knobs_for_difficulty scales it
    (result at least 2); None = the generator's default (as far as possible)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.uniform") -> None:
        _validate_families(f"{prefix}.families", self.families)
        lo, hi = _check_pair(f"{prefix}.size", self.size, *SIZE_RANGE, integer=True)
        if lo % 2 == 0 and lo == hi:
            _fail(f"{prefix}.size", self.size, "a range containing an odd size")
        _check_pair(f"{prefix}.wall_density", self.wall_density, *WALL_DENSITY_RANGE)
        _check_pair(f"{prefix}.braid", self.braid, 0.0, 1.0)
        if self.flag_distance_frac is not None:
            _check_pair(f"{prefix}.flag_distance_frac", self.flag_distance_frac, 0.0, 3.0)


@dataclass(frozen=True)
class PLRConfig:
    """Prioritized level replay (Jiang et al. 2021); defaults as in minimax/jaxued where they exist."""

    capacity: int = 256
    """Level buffer size."""
    replay_prob: float = 0.5
    """Chance of replaying a buffered level instead of generating a new one (once min_fill is reached)."""
    temperature: float = 0.3
    """Rank prioritization temperature beta: w_score ~ (1 / rank) ** (1 / beta)."""
    staleness_coeff: float = 0.3
    """rho in (1 - rho) * w_score + rho * w_staleness."""
    min_fill: float = 0.5
    """Replay only once len(buffer) >= min_fill * capacity."""
    score: str = "learnability"
    """Level score: learnability p(1-p) | positive_value_loss (main's mean clipped positive GAE advantage on
    the level, computed by the GAE learner connector; needs the local learner)."""
    learnability_p: str = "score"
    """p for learnability: score (main's mean score on the level, draws half) | completion (single-team tasks)."""
    prior: float = 1.0
    """Beta(prior, prior) pseudo-counts on p, so a level seen once is not scored 0; 0 = raw frequency."""
    level_window: int = 10
    """Score a level on its last this-many games (older games reflect an older policy)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.plr") -> None:
        _check_range(f"{prefix}.capacity", self.capacity, 1, 10_000_000, integer=True)
        _check_range(f"{prefix}.replay_prob", self.replay_prob, 0.0, 1.0)
        _check_range(f"{prefix}.temperature", self.temperature, 0.0, 1000.0, lo_open=True)
        _check_range(f"{prefix}.staleness_coeff", self.staleness_coeff, 0.0, 1.0)
        _check_range(f"{prefix}.min_fill", self.min_fill, 0.0, 1.0)
        _check_choice(f"{prefix}.score", self.score, PLR_SCORES)
        _check_choice(f"{prefix}.learnability_p", self.learnability_p, LEARNABILITY_P)
        _check_range(f"{prefix}.prior", self.prior, 0.0, 1000.0)
        _check_range(f"{prefix}.level_window", self.level_window, 1, 1_000_000, integer=True)


@dataclass(frozen=True)
class AccelConfig:
    """ACCEL (Parker-Holder et al. 2022): PLR whose replayed levels are sometimes edited into new ones."""

    edit_prob: float = 0.5
    """Share of replay draws whose level is edited before it is played (the child is scored on its first
    game and enters the buffer like a new level)."""
    edits: int = 3
    """Fair edits per mutation (`curriculum.level_edits`)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.accel") -> None:
        _check_range(f"{prefix}.edit_prob", self.edit_prob, 0.0, 1.0)
        _check_range(f"{prefix}.edits", self.edits, 1, 100, integer=True)


@dataclass(frozen=True)
class FixedConfig:
    """No curriculum: every level at one difficulty."""

    difficulty: float = 10.0
    """The difficulty of every level (default: the hardest)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.fixed") -> None:
        _check_range(f"{prefix}.difficulty", self.difficulty, *DIFFICULTY_RANGE)


@dataclass(frozen=True)
class CurriculumConfig:
    """The `curriculum:` section. `strategy` picks one of the sub-sections; the others are ignored."""

    strategy: str = "threshold"
    """threshold | plr | accel | uniform | fixed."""
    families: tuple[str, ...] | None = None
    """Generator families for difficulty-driven strategies (threshold, fixed); None = the env's choice per difficulty."""
    agents_per_team: int = 1
    """1 (1v1) or 2 (2v2); passed to the level generator."""
    metrics_window: int = 200
    """Recent episodes behind the `curriculum/*_mean` and completion-rate metrics."""
    level_seeds: int = 512
    """Generator seeds per knob setting: a generated level is drawn from this many per difficulty (or knob
    draw), so runners build each level once and replay it from a cache, as the env's own level pool does
    (issue 17: a fresh 11x11 CTF level costs ~20 ms). 0 = a fresh seed for every level."""
    threshold: ThresholdConfig = field(default_factory=ThresholdConfig)
    """Settings of the `threshold` strategy."""
    plr: PLRConfig = field(default_factory=PLRConfig)
    """Settings of the `plr` strategy (and of `accel`'s buffer)."""
    accel: AccelConfig = field(default_factory=AccelConfig)
    """Settings of the `accel` strategy's level edits."""
    uniform: UniformConfig = field(default_factory=UniformConfig)
    """Knob ranges of the `uniform` strategy and of PLR's new levels."""
    fixed: FixedConfig = field(default_factory=FixedConfig)
    """Settings of the `fixed` strategy."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _check_choice("curriculum.strategy", self.strategy, STRATEGIES)
        if self.families is not None:
            _validate_families("curriculum.families", self.families)
        if self.agents_per_team not in (1, 2) or isinstance(self.agents_per_team, bool):
            _fail("curriculum.agents_per_team", self.agents_per_team, "1 or 2")
        _check_range("curriculum.metrics_window", self.metrics_window, 1, 10_000_000, integer=True)
        _check_range("curriculum.level_seeds", self.level_seeds, 0, 2**31 - 1, integer=True)
        self.threshold.validate()
        self.plr.validate()
        self.accel.validate()
        self.uniform.validate()
        self.fixed.validate()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "CurriculumConfig":
        """Build from the YAML mapping; unknown keys raise with a 'did you mean' hint."""
        return _from_mapping(cls, d or {}, "curriculum")

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(self)


_SUB = {"threshold": ThresholdConfig, "plr": PLRConfig, "accel": AccelConfig, "uniform": UniformConfig, "fixed": FixedConfig}
_PAIRS = {"size", "wall_density", "braid", "flag_distance_frac"}


def _from_mapping(cls, d: Mapping[str, Any], prefix: str):
    if not isinstance(d, Mapping):
        raise wrong_type(prefix, d, "a mapping")
    names = [f.name for f in fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in d.items():
        if key not in names:
            raise unknown_key(f"{prefix}.{key}", names)
        if cls is CurriculumConfig and key in _SUB:
            value = value if isinstance(value, _SUB[key]) else _from_mapping(_SUB[key], {} if value is None else value, f"{prefix}.{key}")
        elif key == "families" and value is not None:
            value = (value,) if isinstance(value, str) else tuple(value)
        elif key in _PAIRS and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    try:
        obj = cls(**kwargs)
    except TypeError as e:  # pragma: no cover - names are checked above
        raise wrong_type(prefix, dict(d), f"a mapping of {', '.join(names)}") from e
    return obj


def _to_plain(obj: Any) -> Any:
    if is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple):
        return [_to_plain(x) for x in obj]
    return obj


def _validate_families(name: str, families: Any) -> None:
    if isinstance(families, str) or not isinstance(families, (list, tuple)) or not families:
        _fail(name, families, f"a non-empty list drawn from {', '.join(FAMILIES)}")
    for i, fam in enumerate(families):
        _check_choice(f"{name}[{i}]", fam, FAMILIES)
