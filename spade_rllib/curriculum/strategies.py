"""Curriculum strategies: threshold, plr, accel, uniform, fixed. Pure Python/numpy, no Ray.

Every strategy judges a level from main's side (`EpisodeOutcome.learner_score`: win 1, draw 0.5,
loss 0, against the opponent main met there); none reads which seat won. Mirror games (main in
every seat, opponent "mirror") score 0.5 on average by symmetry whatever the level, so the
score-based signals (threshold's score and win_rate, PLR's learnability) skip them.

Every strategy splits into an authoritative part and a sampling part:

* the **strategy object** (owned by the driver under RLlib, or by `AdaptiveCurriculum` standalone)
  holds the state: difficulty and window, or the level buffer; `update(outcomes)` changes it;
  `state_dict()` / `load_state_dict()` round-trip it exactly, RNG included;
* its **sampling state** (`strategy.sampling_state()`) is a small JSON-able dict, everything an
  env runner needs to pick levels; `sample_level(sampling_state, rng)` picks one with the
  runner's own seeded RNG and never changes the state. `strategy.sample(rng)` is exactly
  `sample_level(strategy.sampling_state(), rng or strategy.rng)`, so local and remote sampling
  are the same code.

Sampling-state formats (`format` 1; typed records in `sampling_state.py`, these dicts are their `to_dict()`):
  {"format": 1, "kind": "difficulty", "difficulty": d, "candidates": [knobs dict, ...], "level_seeds": n}
      threshold and fixed: one candidate per family (chosen uniformly), the seed one of n (0 or
      absent: any seed).
  {"format": 1, "kind": "uniform", "agents_per_team": n, "families": [...], "size": [lo, hi],
   "wall_density": [lo, hi], "braid": [lo, hi], "flag_distance_frac": [lo, hi] | None, "level_seeds": n}
  {"format": 1, "kind": "plr", "replay_prob": p, "can_replay": bool, "levels": [spec dict, ...],
   "probs": [float, ...], "new": <a "uniform" sampling state>, "edit_prob": q, "edits": n}
      accel adds edit_prob and edits (plr: absent): a replay draw is edited with probability q.
  {"format": 1, "kind": "joint", "replay_prob": p, "buffers": {opponent: {"can_replay": bool,
   "levels": [...], "probs": [...]}, ...}, "new": <a "uniform" sampling state>}
      maestro: the episode's opponent (the id the runner records in `EpisodeOutcome.opponent`)
      picks its buffer; an opponent without one gets a new level.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

import numpy as np

from spade_rllib.curriculum.curriculum_config import CurriculumConfig
from spade_rllib.curriculum.level_edits import mutate
from spade_rllib.curriculum.plr import replay_probabilities, score_learnability
from spade_rllib.curriculum.sampling_state import (
    SAMPLING_STATE_FORMAT,  # noqa: F401 - re-exported (the package and the glue import it from here)
    DifficultySampling,
    JointSampling,
    PLREntry,
    PLRSampling,
    ReplayBuffer,
    SamplingState,
    UniformSampling,
    sampling_record,
)
from spade_rllib.core.outcome import EpisodeOutcome
from spade_rllib.curriculum.level_spec import (
    LevelSpec,
    outcome_completed,
    outcome_level_summary,
    outcome_spec,
)

SEED_HIGH = 2**31 - 1
KNOB_DECIMALS = 3  # drawn float knobs are rounded: compact specs, exact JSON round-trip

KnobsFn = Callable[[float, "str | None", int], dict]
"""knobs_fn(difficulty, family, agents_per_team) -> Knobs dict (the driver-side difficulty map)."""


def default_knobs_fn(difficulty: float, family: str | None, agents_per_team: int) -> dict:
    """`spade_rllib.envs.knobs_for_difficulty(...).to_dict()`, imported lazily."""
    from spade_rllib.envs import knobs_for_difficulty

    return knobs_for_difficulty(difficulty, family=family, agents_per_team=agents_per_team).to_dict()


@runtime_checkable
class CurriculumStrategy(Protocol):
    """What the wrapper and the RLlib glue call."""

    kind: str

    def sample(self, rng: np.random.Generator | None = None, build: Callable[[LevelSpec], Any] = ...) -> LevelSpec: ...
    def update(self, outcomes: Iterable[EpisodeOutcome]) -> None: ...
    def metrics(self) -> dict[str, float]: ...
    def sampling_state(self) -> dict[str, Any]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


# ---------------------------------------------------------------- sampling (runs on env runners)

def sample_level(sampling_state: SamplingState | Mapping[str, Any], rng: np.random.Generator,
                 build: Callable[[LevelSpec], Any] | None = None, opponent: str | None = None) -> LevelSpec:
    """Pick one level from a broadcast sampling state (a record, or its dict) with the caller's RNG. Pure:
    state unchanged. `build` turns a spec into the game's level (`build_level` bound to the game); ACCEL edits
    need the parent built, so they need it. `opponent`: who main meets in the episode (the `joint` kind only)."""
    state = sampling_record(sampling_state)
    if isinstance(state, DifficultySampling):
        return _sample_difficulty(state, rng)
    if isinstance(state, UniformSampling):
        return _sample_uniform(state, rng)
    if isinstance(state, PLRSampling):
        return _sample_plr(state, rng, build)
    return _sample_joint(state, rng, build, opponent)


def _new_seed(rng: np.random.Generator, level_seeds: int) -> int:
    """A generator seed: one of `level_seeds` (levels repeat, runners build each once), or any."""
    return int(rng.integers(0, level_seeds or SEED_HIGH))


def _sample_difficulty(state: DifficultySampling, rng: np.random.Generator) -> LevelSpec:
    candidates = state.candidates
    index = int(rng.integers(len(candidates))) if len(candidates) > 1 else 0
    return LevelSpec.generated(candidates[index], _new_seed(rng, state.level_seeds), difficulty=state.difficulty)


def _sample_uniform(state: UniformSampling, rng: np.random.Generator) -> LevelSpec:
    # Draw every number in a fixed order whatever the family, so streams stay aligned.
    families = state.families
    family = families[int(rng.integers(len(families)))]
    lo, hi = state.size
    odd_sizes = [s for s in range(lo, hi + 1) if s % 2 == 1]
    size = odd_sizes[int(rng.integers(len(odd_sizes)))]
    wall_density = round(float(rng.uniform(*state.wall_density)), KNOB_DECIMALS)
    braid = round(float(rng.uniform(*state.braid)), KNOB_DECIMALS)
    knobs: dict[str, Any] = {"family": family, "size": size, "agents_per_team": state.agents_per_team}
    if family == "maze":
        knobs["braid"] = braid
    else:
        knobs["wall_density"] = wall_density
    if state.flag_distance_frac is not None:
        frac = float(rng.uniform(*state.flag_distance_frac))
        knobs["flag_distance"] = min(max(2, int(round(frac * (size - 3)))), _max_flag_distance(size, family, braid))
    return LevelSpec.generated(knobs, _new_seed(rng, state.level_seeds))


def _max_flag_distance(size: int, family: str, braid: float) -> int:
    """The largest flag_distance Knobs accepts (docs/CONTRACTS.md): size - 3 for open/rooms,
    floor((2 - braid) * (size - 3)) for mazes larger than 5."""
    if family == "maze" and size > 5:
        return int((2.0 - braid) * (size - 3))
    return max(2, size - 3)


def _sample_plr(state: PLRSampling, rng: np.random.Generator, build: Callable[[LevelSpec], Any]) -> LevelSpec:
    replay = rng.random() < state.replay_prob
    buffer = state.buffer
    if replay and buffer.can_replay and buffer.levels:
        index = int(rng.choice(len(buffer.levels), p=np.asarray(buffer.probs, dtype=np.float64)))
        parent = LevelSpec.from_dict(buffer.levels[index])
        if state.edit_prob and rng.random() < state.edit_prob:
            return edit_level(parent, rng, int(state.edits), build)
        return parent
    return _sample_uniform(state.new, rng)


def _sample_joint(state: JointSampling, rng: np.random.Generator, build: Callable[[LevelSpec], Any],
                  opponent: str | None) -> LevelSpec:
    """The opponent's buffer replayed as PLR does (same draws in the same order); no buffer: a new level."""
    buffer = state.buffers.get(str(opponent)) if opponent is not None else None
    return _sample_plr(PLRSampling(state.replay_prob, buffer or ReplayBuffer(), state.new), rng, build)


def edit_level(parent: LevelSpec, rng: np.random.Generator, edits: int,
               build: Callable[[LevelSpec], Any] | None) -> LevelSpec:
    """ACCEL's child of a replayed level: `edits` fair edits (`level_edits.mutate`) of `build(parent)`, as a
    grid spec; the parent itself when no edit keeps the level valid and fair."""
    if build is None:
        raise ValueError("ACCEL level edits need the game's level builder (build_level bound to the env id)")
    child = mutate(build(parent), rng, edits)
    return parent if child is None else LevelSpec.grid(child.to_ascii())


# ---------------------------------------------------------------- strategies (driver side)

class _StrategyBase:
    """RNG, recent-outcome record for metrics, and the state_dict frame shared by all strategies."""

    kind = "base"

    def __init__(self, config: CurriculumConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)
        # recent: last `metrics_window` outcomes, each {"completed": bool, "replay": bool, size, wall_density,
        # flag_distance, difficulty (float, or None when unknown: the state stays strict JSON)}
        self._recent: deque[dict[str, Any]] = deque(maxlen=config.metrics_window)
        self.episodes = 0  # outcomes received, total

    # --- protocol ---
    def sample(self, rng: np.random.Generator | None = None, build: Callable[[LevelSpec], Any] | None = None) -> LevelSpec:
        return sample_level(self.sampling_state(), self.rng if rng is None else rng, build)

    def sampling_state(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, outcomes: Iterable[EpisodeOutcome | Mapping[str, Any]]) -> None:
        """Fold outcomes in, one at a time and in order (a batch equals the same outcomes one by one).
        Each is an `EpisodeOutcome` (or a dict in its vocabulary, read by `EpisodeOutcome.of`)."""
        if isinstance(outcomes, (Mapping, EpisodeOutcome)):
            raise TypeError("update() takes a list of outcome dicts, got a single dict; wrap it in a list")
        for outcome in map(EpisodeOutcome.of, outcomes):
            replay = self._update_one(outcome)
            self.episodes += 1
            summary = {k: (None if math.isnan(v) else v) for k, v in outcome_level_summary(outcome).items()}
            self._recent.append({"completed": outcome_completed(outcome), "replay": bool(replay),
                                 "score": main_score(outcome) if judges_main(outcome) else None, **summary})

    def _update_one(self, outcome: EpisodeOutcome) -> bool:
        """Update from one outcome; return whether it was a replayed level (PLR)."""
        return False

    def metrics(self) -> dict[str, float]:
        recent = list(self._recent)

        def mean(key: str) -> float:
            vals = [r[key] for r in recent if r[key] is not None]
            return float(np.mean(vals)) if vals else math.nan

        out = {
            "curriculum/difficulty": self._difficulty_metric(mean("difficulty")),
            "curriculum/size_mean": mean("size"),
            "curriculum/wall_density_mean": mean("wall_density"),
            "curriculum/flag_distance_mean": mean("flag_distance"),
            "curriculum/completion_rate": float(np.mean([r["completed"] for r in recent])) if recent else math.nan,
            "curriculum/main_score": mean("score"),
            "curriculum/episodes": float(self.episodes),
        }
        out.update(self._extra_metrics(recent))
        return out

    def _difficulty_metric(self, recent_mean: float) -> float:
        return recent_mean

    def _extra_metrics(self, recent: list[dict[str, Any]]) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config.to_dict(),
            "rng": _copy(self.rng.bit_generator.state),
            "episodes": self.episodes,
            "recent": [dict(r) for r in self._recent],
            **self._state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("kind") != self.kind:
            raise ValueError(f"cannot load a {state.get('kind')!r} curriculum state into a {self.kind!r} strategy")
        self.rng.bit_generator.state = _copy(state["rng"])
        self.episodes = int(state["episodes"])
        self._recent = deque((dict(r) for r in state["recent"]), maxlen=self.config.metrics_window)
        self._load_state_dict(state)

    def _state_dict(self) -> dict[str, Any]:
        return {}

    def _load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass


MIRROR_OPPONENT = "mirror"


def judges_main(outcome: EpisodeOutcome) -> bool:
    """Whether the outcome says how main fares on its level: not a mirror game (main on both sides)."""
    return outcome.opponent != MIRROR_OPPONENT


def main_score(outcome: EpisodeOutcome) -> float:
    """Main's score on the level: win 1, draw 0.5, loss 0 against the opponent it met; in a
    single-team env (nobody to win against) 1 when the level was completed, else 0."""
    score = outcome.learner_score
    if score is None:
        return 1.0 if outcome_completed(outcome) else 0.0
    return float(score)


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


class _DifficultyStrategy(_StrategyBase):
    """Levels from knobs_for_difficulty(difficulty, family) for each configured family."""

    def __init__(self, config: CurriculumConfig, seed: int | None = None, knobs_fn: KnobsFn | None = None):
        super().__init__(config, seed)
        self.knobs_fn = knobs_fn or default_knobs_fn
        self.difficulty = 1.0
        self._candidates_cache: tuple[float, list[dict]] | None = None

    def sampling_state(self) -> dict[str, Any]:
        if self._candidates_cache is None or self._candidates_cache[0] != self.difficulty:
            families = self.config.families or (None,)
            candidates = [dict(self.knobs_fn(self.difficulty, fam, self.config.agents_per_team)) for fam in families]
            self._candidates_cache = (self.difficulty, candidates)
        return DifficultySampling(self.difficulty, self._candidates_cache[1], self.config.level_seeds).to_dict()

    def _difficulty_metric(self, recent_mean: float) -> float:
        return float(self.difficulty)


class ThresholdStrategy(_DifficultyStrategy):
    """Difficulty x up_factor when the windowed signal is above up_threshold, x down_factor below
    down_threshold; at least `min_episodes` at the current difficulty between changes.

    Outcomes from levels generated at another difficulty (sampled before the last change, e.g. still
    in flight on an env runner) are counted in the metrics but not in the window."""

    kind = "threshold"

    def __init__(self, config: CurriculumConfig, seed: int | None = None, knobs_fn: KnobsFn | None = None):
        super().__init__(config, seed, knobs_fn)
        self.params = config.threshold
        self.difficulty = self.params.start
        self.window: deque[float] = deque(maxlen=self.params.window)  # per-episode signal values
        self.episodes_since_change = 0
        self.stale_outcomes = 0  # outcomes skipped because played at another difficulty
        self.changes = 0
        self.last_signal: float | None = None  # window mean at the last decision (kept across the window reset)
        self.mirror_outcomes = 0  # mirror games skipped by the score / win_rate signals

    def signal_value(self, outcome: EpisodeOutcome | Mapping[str, Any]) -> float:
        outcome = EpisodeOutcome.of(outcome)
        signal = self.params.signal
        if signal == "score":
            return main_score(outcome)
        if signal == "completion":
            return 1.0 if outcome_completed(outcome) else 0.0
        if signal == "win_rate":
            return 1.0 if outcome.learner_result == "win" else 0.0  # draws count as not won
        return outcome.learner_return

    def _update_one(self, outcome: EpisodeOutcome) -> bool:
        played_at = outcome.difficulty
        if played_at is not None and abs(float(played_at) - self.difficulty) > 1e-9:
            self.stale_outcomes += 1
            return False
        if self.params.signal in ("score", "win_rate") and not judges_main(outcome):
            self.mirror_outcomes += 1
            return False
        self.window.append(self.signal_value(outcome))
        self.episodes_since_change += 1
        if self.episodes_since_change >= self.params.min_episodes:
            self.last_signal = float(np.mean(self.window))
            self._maybe_change(self.last_signal)
        return False

    def _maybe_change(self, signal: float) -> None:
        p = self.params
        if signal > p.up_threshold:
            new = min(self.difficulty * p.up_factor, p.max)
        elif signal < p.down_threshold:
            new = max(self.difficulty * p.down_factor, p.min)
        else:
            return
        if new != self.difficulty:
            self.difficulty = new
            self.window.clear()
            self.episodes_since_change = 0
            self.changes += 1

    def _extra_metrics(self, recent):
        return {
            # the current window's mean; right after a change (empty window) the one that caused it
            "curriculum/signal": float(np.mean(self.window)) if self.window else
            (math.nan if self.last_signal is None else self.last_signal),
            "curriculum/changes": float(self.changes),
            "curriculum/stale_outcomes": float(self.stale_outcomes),
            "curriculum/mirror_outcomes": float(self.mirror_outcomes),
        }

    def _state_dict(self):
        return {"difficulty": self.difficulty, "window": list(self.window),
                "episodes_since_change": self.episodes_since_change,
                "stale_outcomes": self.stale_outcomes, "changes": self.changes, "last_signal": self.last_signal,
                "mirror_outcomes": self.mirror_outcomes}

    def _load_state_dict(self, state):
        self.difficulty = float(state["difficulty"])
        self.window = deque((float(v) for v in state["window"]), maxlen=self.params.window)
        self.episodes_since_change = int(state["episodes_since_change"])
        self.stale_outcomes = int(state["stale_outcomes"])
        self.changes = int(state["changes"])
        self.last_signal = None if state.get("last_signal") is None else float(state["last_signal"])
        self.mirror_outcomes = int(state.get("mirror_outcomes", 0))


class FixedStrategy(_DifficultyStrategy):
    """No curriculum: every level at `fixed.difficulty`."""

    kind = "fixed"

    def __init__(self, config: CurriculumConfig, seed: int | None = None, knobs_fn: KnobsFn | None = None):
        super().__init__(config, seed, knobs_fn)
        self.difficulty = float(config.fixed.difficulty)


class UniformStrategy(_StrategyBase):
    """Domain randomization: every knob drawn uniformly from its configured range."""

    kind = "uniform"

    def sampling_state(self) -> dict[str, Any]:
        return uniform_sampling_state(self.config)


def uniform_sampling_state(config: CurriculumConfig) -> dict[str, Any]:
    return uniform_sampling(config).to_dict()


def uniform_sampling(config: CurriculumConfig) -> UniformSampling:
    u = config.uniform
    return UniformSampling(config.agents_per_team, list(u.families), list(u.size), list(u.wall_density), list(u.braid),
                           None if u.flag_distance_frac is None else list(u.flag_distance_frac), config.level_seeds)


class PLRStrategy(_StrategyBase):
    """Prioritized level replay over a buffer of compact level specs.

    The buffer holds at most `capacity` `PLREntry` records (`sampling_state.py`), one per level. New levels come from the `uniform` ranges. A new level enters while the buffer has room;
    once full, it replaces the lowest-scored entry (first in buffer order on ties) only when it
    scores strictly higher.
    """

    kind = "plr"

    def __init__(self, config: CurriculumConfig, seed: int | None = None):
        super().__init__(config, seed)
        self.params = config.plr
        self.entries: list[PLREntry] = []
        self.episode_count = 0
        self.missing_values = 0  # outcomes without positive_value_loss when score = positive_value_loss
        self.unreplayable = 0  # outcomes without a level spec (cannot enter the buffer)

    # --- views ---
    @property
    def min_fill_size(self) -> int:
        return max(1, math.ceil(self.params.min_fill * self.params.capacity - 1e-9))

    @property
    def can_replay(self) -> bool:
        return len(self.entries) >= self.min_fill_size

    def replay_probabilities(self) -> np.ndarray:
        """P(i) over buffer entries, in buffer order."""
        return replay_probabilities([e.score for e in self.entries], [e.timestamp for e in self.entries],
                                    self.episode_count, self.params.temperature, self.params.staleness_coeff)

    def replay_buffer(self) -> ReplayBuffer:
        """What a runner sees of this buffer: its levels in buffer order, their replay probabilities."""
        return ReplayBuffer([dict(e.spec) for e in self.entries], [float(p) for p in self.replay_probabilities()],
                            self.can_replay)

    def sampling_record(self) -> PLRSampling:
        return PLRSampling(self.params.replay_prob, self.replay_buffer(), uniform_sampling(self.config))

    def sampling_state(self) -> dict[str, Any]:
        return self.sampling_record().to_dict()

    # --- scoring ---
    def score_entry(self, entry: PLREntry) -> float:
        """positive_value_loss: the level's latest pvl (0 until one arrives). learnability: p(1-p) with
        p the chance main wins there (`plr.score_learnability`: the variance of main's score over the level's
        history, which is p(1-p) when no game was drawn), with `prior` pseudo-wins and pseudo-losses."""
        if self.params.score == "positive_value_loss":
            return 0.0 if entry.pvl is None else float(entry.pvl)
        return score_learnability(entry.history, self.params.prior)

    # --- update ---
    def _update_one(self, outcome: EpisodeOutcome) -> bool:
        self.episode_count += 1
        if self.params.learnability_p == "completion":
            result: list[float] = [1.0 if outcome_completed(outcome) else 0.0]
        else:  # a mirror game says nothing of main's chance on the level: played, not scored
            result = [main_score(outcome)] if judges_main(outcome) else []
        pvl = outcome.positive_value_loss
        if self.params.score == "positive_value_loss" and pvl is None:
            self.missing_values += 1
        level_id = outcome.level_id
        index = next((i for i, e in enumerate(self.entries) if e.level_id == level_id), None)
        if index is not None:
            entry = self.entries[index]
            entry.history = (entry.history + result)[-self.params.level_window:]
            if pvl is not None:
                entry.pvl = float(pvl)
            entry.timestamp = self.episode_count
            entry.plays += 1
            entry.score = self.score_entry(entry)
            return True
        spec = outcome_spec(outcome)
        if spec is None:
            self.unreplayable += 1
            return False
        entry = PLREntry(spec.to_dict(), history=result, pvl=None if pvl is None else float(pvl),
                         timestamp=self.episode_count, plays=1)
        entry.score = self.score_entry(entry)
        self.insert(entry)
        return False

    def insert(self, entry: PLREntry) -> int:
        """Insert a scored entry; return its index, or -1 when it did not beat the lowest score."""
        if len(self.entries) < self.params.capacity:
            self.entries.append(entry)
            return len(self.entries) - 1
        lowest = int(np.argmin([e.score for e in self.entries]))
        if entry.score > self.entries[lowest].score:
            self.entries[lowest] = entry
            return lowest
        return -1

    def _extra_metrics(self, recent):
        scores = [e.score for e in self.entries]
        return {
            "curriculum/buffer_size": float(len(self.entries)),
            "curriculum/score_mean": float(np.mean(scores)) if scores else math.nan,
            "curriculum/score_max": float(np.max(scores)) if scores else math.nan,
            "curriculum/replay_share": float(np.mean([r["replay"] for r in recent])) if recent else math.nan,
        }

    def _state_dict(self):
        return {"entries": [e.to_dict() for e in self.entries], "episode_count": self.episode_count,
                "missing_values": self.missing_values, "unreplayable": self.unreplayable}

    def _load_state_dict(self, state):
        entries = [PLREntry.from_dict(e) for e in state["entries"]]
        if len(entries) > self.params.capacity:
            raise ValueError(f"PLR state holds {len(entries)} levels but curriculum.plr.capacity is {self.params.capacity}")
        for e in entries:
            LevelSpec.from_dict(e.spec)  # validates content against level_id
        self.entries = entries
        self.episode_count = int(state["episode_count"])
        self.missing_values = int(state["missing_values"])
        self.unreplayable = int(state["unreplayable"])


def initial_sampling_state(config: CurriculumConfig | Mapping[str, Any] | None,
                           knobs_fn: KnobsFn | None = None) -> dict[str, Any]:
    """The sampling state a freshly built strategy broadcasts: what an env runner can start from before
    the driver's first broadcast (identical to the driver's own initial state; no RNG involved)."""
    return make_strategy(config, seed=0, knobs_fn=knobs_fn).sampling_state()


class AccelStrategy(PLRStrategy):
    """ACCEL (Parker-Holder et al. 2022): PLR whose replay draws are edited with probability
    `accel.edit_prob` by `accel.edits` fair edits before play (on the env runner, with its seeded RNG).
    A child is a new grid level: scored on its first game, it enters the buffer like any new level
    (replacing the lowest-scored entry once the buffer is full, only when it scores higher)."""

    kind = "accel"

    def sampling_record(self) -> PLRSampling:
        record = super().sampling_record()
        record.edit_prob, record.edits = self.config.accel.edit_prob, self.config.accel.edits
        return record

    def _extra_metrics(self, recent):
        out = super()._extra_metrics(recent)
        out["curriculum/edited_share"] = float(np.mean(["ascii" in e.spec for e in self.entries])) if self.entries else math.nan
        return out


STRATEGY_CLASSES = {"threshold": ThresholdStrategy, "plr": PLRStrategy, "accel": AccelStrategy,
                    "uniform": UniformStrategy, "fixed": FixedStrategy}
"""strategy name -> class; `curriculum.maestro` (built on this module) adds "maestro" when the package loads."""


def make_strategy(config: CurriculumConfig | Mapping[str, Any] | None, seed: int | None = None,
                  knobs_fn: KnobsFn | None = None) -> CurriculumStrategy:
    """Build the configured strategy. `config` may be a `CurriculumConfig` or the YAML mapping;
    `knobs_fn` overrides the difficulty -> knobs map (default: the env's knobs_for_difficulty)."""
    if not isinstance(config, CurriculumConfig):
        config = CurriculumConfig.from_dict(config)
    cls = STRATEGY_CLASSES[config.strategy]
    if cls in (ThresholdStrategy, FixedStrategy):
        return cls(config, seed, knobs_fn)
    return cls(config, seed)
