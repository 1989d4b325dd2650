"""`CurriculumConfig`: the `curriculum:` section of a training config, typed and validated.

Every field has a one-line doc. `CurriculumConfig.from_dict(d)` accepts the YAML mapping, rejects
unknown keys with a "did you mean" hint, and every bad value raises `ConfigError` (a `ValueError`)
naming the field, the value and the allowed range, worded as in `spade_rllib.core.validation`. The run
config's `curriculum:` section embeds it (`enabled` plus these fields).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Mapping

from spade_rllib.core.validation import check_choice, check_number, out_of_range, setting, unknown_key, validate_fields, wrong_type

STRATEGIES = ("threshold", "plr", "accel", "uniform", "fixed", "maestro")
SIGNALS = ("score", "win_rate", "completion", "return")
FAMILIES = ("open", "maze", "rooms", "halls")
DEFAULT_FAMILIES = ("open", "maze", "rooms")
"""What `curriculum.uniform.families` draws from when a config does not say (`halls` came later: opt in)."""
PLR_SCORES = ("learnability", "positive_value_loss")
COPLAYER_SCORES = ("max", "mean")
LEARNABILITY_P = ("score", "completion", "win_share")
"""p of learnability; `win_share` is an older name of `score`, still accepted."""


def _fail(name: str, value: Any, allowed: str) -> None:
    raise out_of_range(name, value, allowed)


@dataclass(frozen=True)
class ThresholdConfig:
    """Difficulty control by a performance threshold over a sliding window of episodes."""

    signal: str = setting("score", help="Performance signal, per episode from main's side: score (main's win 1, draw 0.5, loss 0; completion when nobody can win) | win_rate (main won) | completion (some team captured the flag) | return (main's return).", choices=SIGNALS)
    initial: float | None = setting(None, help='Starting difficulty; None = `min`.')
    min: float = setting(1.0, help="Lowest difficulty (knobs_for_difficulty's domain is [1, 10]).", min=1.0, max=10.0)
    max: float = setting(10.0, help='Highest difficulty.', min=1.0, max=10.0)
    window: int = setting(50, help='Sliding window length, in episodes.', min=1, max=1_000_000)
    min_episodes: int = setting(20, help='Episodes at the current difficulty required before the next change (the window restarts on a change).', min=1, max=1_000_000)
    up_threshold: float = setting(0.8, help='Signal above this multiplies difficulty by `up_factor`.')
    down_threshold: float = setting(0.3, help='Signal below this multiplies difficulty by `down_factor`.')
    up_factor: float = setting(1.2, help='Multiplier (> 1) when the signal is high.', gt=1.0, max=100.0)
    down_factor: float = setting(0.9, help='Multiplier in (0, 1) when the signal is low.', gt=0.0, lt=1.0)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.threshold") -> None:
        validate_fields(self, prefix)
        if self.min > self.max:
            _fail(f"{prefix}.min", self.min, f"<= {prefix}.max ({self.max})")
        if self.initial is not None:
            check_number(f"{prefix}.initial", self.initial, min=self.min, max=self.max)
        if self.signal != "return":
            check_number(f"{prefix}.up_threshold", self.up_threshold, min=0.0, max=1.0)
            check_number(f"{prefix}.down_threshold", self.down_threshold, min=0.0, max=1.0)
        if self.down_threshold >= self.up_threshold:
            _fail(f"{prefix}.down_threshold", self.down_threshold, f"< up_threshold ({self.up_threshold})")

    @property
    def start(self) -> float:
        return float(self.min if self.initial is None else self.initial)


@dataclass(frozen=True)
class UniformConfig:
    """Domain randomization: knobs drawn uniformly from these ranges (also PLR's new-level generator)."""

    families: tuple[str, ...] = setting(DEFAULT_FAMILIES, help='Generator families to draw from, uniformly (open, maze, rooms, halls).')
    size: tuple[int, int] = setting((7, 21), help='[low, high] level size; odd sizes only are drawn (Knobs.size is odd 5..25).', pair=True, min=5, max=25)
    wall_density: tuple[float, float] = setting((0.0, 0.3), help='[low, high] wall density for the open, rooms and halls families.', pair=True, min=0.0, max=0.4)
    braid: tuple[float, float] = setting((0.0, 1.0), help='[low, high] braid (share of dead ends opened) for the maze family.', pair=True, min=0.0, max=1.0)
    flag_distance_frac: tuple[float, float] | None = setting((0.5, 1.0), help="[low, high] spawn-to-flag distance as a fraction of (size - 3), as knobs_for_difficulty scales it (result at least 2); None = the generator's default (as far as possible).", pair=True, min=0.0, max=3.0)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.uniform") -> None:
        _validate_families(f"{prefix}.families", self.families)
        validate_fields(self, prefix)
        lo, hi = self.size
        if lo % 2 == 0 and lo == hi:
            _fail(f"{prefix}.size", self.size, "a range containing an odd size")


@dataclass(frozen=True)
class PLRConfig:
    """Prioritized level replay (Jiang et al. 2021); defaults as in minimax/jaxued where they exist."""

    capacity: int = setting(256, help='Level buffer size.', min=1, max=10_000_000)
    replay_prob: float = setting(0.5, help='Chance of replaying a buffered level instead of generating a new one (once min_fill is reached).', min=0.0, max=1.0)
    temperature: float = setting(0.3, help='Rank prioritization temperature beta: w_score ~ (1 / rank) ** (1 / beta).', gt=0.0, max=1000.0)
    staleness_coeff: float = setting(0.3, help='rho in (1 - rho) * w_score + rho * w_staleness.', min=0.0, max=1.0)
    min_fill: float = setting(0.5, help='Replay only once len(buffer) >= min_fill * capacity.', min=0.0, max=1.0)
    score: str = setting("learnability", help="Level score: learnability p(1-p) | positive_value_loss (main's mean clipped positive GAE advantage on the level, computed by the GAE learner connector; needs the local learner).", choices=PLR_SCORES)
    learnability_p: str = setting("score", help="p for learnability: score (main's mean score on the level, draws half) | completion (single-team tasks).", choices=LEARNABILITY_P)
    prior: float = setting(1.0, help='Beta(prior, prior) pseudo-counts on p, so a level seen once is not scored 0; 0 = raw frequency.', min=0.0, max=1000.0)
    level_window: int = setting(10, help='Score a level on its last this-many games (older games reflect an older policy).', min=1, max=1_000_000)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.plr") -> None:
        validate_fields(self, prefix)


@dataclass(frozen=True)
class AccelConfig:
    """ACCEL (Parker-Holder et al. 2022): PLR whose replayed levels are sometimes edited into new ones."""

    edit_prob: float = setting(0.5, help='Share of replay draws whose level is edited before it is played (the child is scored on its first game and enters the buffer like a new level).', min=0.0, max=1.0)
    edits: int = setting(3, help='Fair edits per mutation (`curriculum.level_edits`).', min=1, max=100)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.accel") -> None:
        validate_fields(self, prefix)


@dataclass(frozen=True)
class MaestroConfig:
    """MAESTRO (Samvelyan et al. 2023): one PLR buffer per co-player, scored like `plr`; co-players drawn by regret."""

    capacity: int = setting(64, help="Levels in each co-player's buffer (the `plr` section's other settings apply to every buffer).", min=1, max=1_000_000)
    max_coplayers: int = setting(32, help="Co-player buffers kept; beyond this the one played least recently is dropped.", min=1, max=100_000)
    coplayer_mix: float = setting(0.5, help="Share of main's league opponent distribution drawn by co-player regret; the rest follows the league's PFSP plan (0 = levels per co-player only, PFSP picks the co-player).", min=0.0, max=1.0)
    coplayer_score: str = setting("max", help="A co-player's regret: max (its highest-scored level) | mean (its buffer's mean score).", choices=COPLAYER_SCORES)
    coplayer_temperature: float = setting(1.0, help="Rank temperature of the co-player draw: w ~ (1 / rank) ** (1 / beta).", gt=0.0, max=1000.0)
    coplayer_staleness_coeff: float = setting(0.3, help="rho of the co-player draw: (1 - rho) * w_regret + rho * w_staleness (episodes since it was last met).", min=0.0, max=1.0)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.maestro") -> None:
        validate_fields(self, prefix)


@dataclass(frozen=True)
class FixedConfig:
    """No curriculum: every level at one difficulty."""

    difficulty: float = setting(10.0, help='The difficulty of every level (default: the hardest).', min=1.0, max=10.0)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "curriculum.fixed") -> None:
        validate_fields(self, prefix)


@dataclass(frozen=True)
class CurriculumConfig:
    """The `curriculum:` section. `strategy` picks one of the sub-sections; the others are ignored."""

    strategy: str = setting("threshold", help='threshold | plr | accel | uniform | fixed | maestro.', choices=STRATEGIES)
    families: tuple[str, ...] | None = setting(None, help="Generator families for difficulty-driven strategies (threshold, fixed); None = the env's choice per difficulty.")
    agents_per_team: int = setting(1, help='1 (1v1) or 2 (2v2); passed to the level generator.', choices=(1, 2))
    metrics_window: int = setting(200, help='Recent episodes behind the `curriculum/*_mean` and completion-rate metrics.', min=1, max=10_000_000)
    level_seeds: int = setting(512, help="Generator seeds per knob setting: a generated level is drawn from this many per difficulty (or knob draw), so runners build each level once and replay it from a cache, as the env's own level pool does. 0 = a fresh seed for every level.", min=0, max=2**31 - 1)
    threshold: ThresholdConfig = setting(help='Settings of the `threshold` strategy.', factory=ThresholdConfig)
    plr: PLRConfig = setting(help="Settings of the `plr` strategy (and of `accel`'s buffer).", factory=PLRConfig)
    accel: AccelConfig = setting(help="Settings of the `accel` strategy's level edits.", factory=AccelConfig)
    uniform: UniformConfig = setting(help="Knob ranges of the `uniform` strategy and of PLR's new levels.", factory=UniformConfig)
    fixed: FixedConfig = setting(help='Settings of the `fixed` strategy.', factory=FixedConfig)
    maestro: MaestroConfig = setting(help="Settings of the `maestro` strategy (joint curriculum over levels and co-players).", factory=MaestroConfig)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.families is not None:
            _validate_families("curriculum.families", self.families)
        validate_fields(self, "curriculum")
        self.threshold.validate()
        self.plr.validate()
        self.accel.validate()
        self.uniform.validate()
        self.fixed.validate()
        self.maestro.validate()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "CurriculumConfig":
        """Build from the YAML mapping; unknown keys raise with a 'did you mean' hint."""
        return _from_mapping(cls, d or {}, "curriculum")

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(self)


_SUB = {"threshold": ThresholdConfig, "plr": PLRConfig, "accel": AccelConfig, "uniform": UniformConfig, "fixed": FixedConfig,
        "maestro": MaestroConfig}
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
        elif key == "families" and isinstance(value, (str, list, tuple)):  # anything else: the validator names it
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
        check_choice(f"{name}[{i}]", fam, FAMILIES)
