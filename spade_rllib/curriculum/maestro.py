"""MAESTRO (Samvelyan et al., ICLR 2023): a joint curriculum over levels and co-players. Pure Python/numpy.

The paper has no public code; this follows its description on top of our PLR:

* **One level buffer per co-player.** Every opponent main meets (a league snapshot `main_v3`, a
  bot `bot:rusher`, `random`, `mirror`) has its own PLR buffer (`PLRStrategy` with
  `maestro.capacity` levels and every other `plr` setting). A (level, co-player) pair is scored
  by the same regret proxy as PLR: with `plr.score: positive_value_loss` the mean clipped
  positive GAE advantage of main's steps on that level *against that co-player* (the glue tags
  main's experience with `value_key(level_id, opponent)`, so the GAE connector sums per pair);
  with `learnability`, p(1-p) of main's score there against that co-player.
* **Levels per co-player.** An episode against opponent o replays o's buffer with probability
  `plr.replay_prob` (once it holds `plr.min_fill` of its capacity), by PLR's rank + staleness
  probabilities, else draws a new level from the `uniform` ranges. So main replays the maps
  it fares worst on against the very opponent it meets there.
* **Co-players by regret.** A co-player's regret is its buffer's highest level score
  (`maestro.coplayer_score: max`; `mean` is the alternative); `coplayer_priority()` turns them
  into probabilities with PLR's formula (rank weights at `coplayer_temperature`, mixed with
  staleness `coplayer_staleness_coeff`: episodes since main last met it). The league mixes
  them into main's PFSP distribution (`maestro.coplayer_mix`; docs/curriculum.md says why).
* At most `maestro.max_coplayers` buffers are kept; the co-player met least recently goes first
  (league snapshots come and go).

The sampling state is `{"kind": "joint", "replay_prob", "buffers": {opponent: {"can_replay",
"levels", "probs"}}, "new"}` (`strategies.sample_level(state, rng, build, opponent=...)`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import numpy as np

from spade_rllib.curriculum.curriculum_config import CurriculumConfig
from spade_rllib.curriculum.level_spec import LevelSpec
from spade_rllib.curriculum.plr import replay_probabilities
from spade_rllib.curriculum.strategies import (
    STRATEGY_CLASSES,
    PLRStrategy,
    _StrategyBase,
    sample_level,
    uniform_sampling,
)
from spade_rllib.curriculum.sampling_state import JointSampling
from spade_rllib.core.outcome import EpisodeOutcome

NO_OPPONENT = "none"
"""Buffer key of outcomes without an opponent (single-team games)."""
VALUE_KEY_SEPARATOR = "@"


def value_key(level_id: str, opponent: str | None) -> str:
    """The tag main's experience on (level, opponent) carries, under which the GAE connector sums its
    positive advantages: `<level_id>@<opponent>`."""
    return f"{level_id}{VALUE_KEY_SEPARATOR}{NO_OPPONENT if opponent is None else opponent}"


def opponent_key(outcome: EpisodeOutcome) -> str:
    return NO_OPPONENT if outcome.opponent is None else str(outcome.opponent)


class MaestroStrategy(_StrategyBase):
    """Per-co-player PLR buffers and a regret-based co-player distribution (module docstring)."""

    kind = "maestro"

    def __init__(self, config: CurriculumConfig, seed: int | None = None):
        super().__init__(config, seed)
        self.params = config.maestro
        # every buffer is a PLR strategy with the per-co-player capacity; only its buffer is used
        self._buffer_config = dataclasses.replace(config, plr=dataclasses.replace(config.plr, capacity=self.params.capacity),
                                                  metrics_window=1)
        self.buffers: dict[str, PLRStrategy] = {}  # co-player -> its buffer, in order of creation
        self.last_played: dict[str, int] = {}  # co-player -> episode_count when main last met it
        self.episode_count = 0
        self.dropped_coplayers = 0

    # --- buffers ---
    def _buffer(self, opponent: str) -> PLRStrategy:
        buf = self.buffers.get(opponent)
        if buf is None:
            buf = PLRStrategy(self._buffer_config, seed=0)
            self.buffers[opponent] = buf
            while len(self.buffers) > self.params.max_coplayers:
                stalest = min((k for k in self.buffers if k != opponent), key=lambda k: self.last_played.get(k, -1))
                del self.buffers[stalest]
                self.last_played.pop(stalest, None)
                self.dropped_coplayers += 1
        return buf

    def _update_one(self, outcome: EpisodeOutcome) -> bool:
        self.episode_count += 1
        opponent = opponent_key(outcome)
        buf = self._buffer(opponent)
        self.last_played[opponent] = self.episode_count
        return buf._update_one(outcome)

    # --- co-players ---
    def coplayer_regret(self) -> dict[str, float]:
        """{co-player: regret} over co-players whose buffer holds a level: the max (or mean) level score."""
        reduce = max if self.params.coplayer_score == "max" else (lambda xs: float(np.mean(xs)))
        return {k: float(reduce([e.score for e in b.entries])) for k, b in self.buffers.items() if b.entries}

    def coplayer_priority(self, candidates: Any = None) -> dict[str, float]:
        """Probabilities over co-players with a buffer (only those in `candidates`, when given): PLR's
        rank weights of their regret mixed with their staleness. {} when none qualifies."""
        regret = self.coplayer_regret()
        keys = [k for k in regret if candidates is None or k in candidates]
        if not keys:
            return {}
        probs = replay_probabilities([regret[k] for k in keys], [self.last_played.get(k, 0) for k in keys],
                                     self.episode_count, self.params.coplayer_temperature,
                                     self.params.coplayer_staleness_coeff)
        return {k: float(p) for k, p in zip(keys, probs)}

    # --- sampling ---
    def sampling_state(self) -> dict[str, Any]:
        return JointSampling(self.config.plr.replay_prob, {k: b.replay_buffer() for k, b in self.buffers.items()},
                             uniform_sampling(self.config)).to_dict()

    def sample(self, rng: np.random.Generator | None = None, build: Callable[[LevelSpec], Any] | None = None,
               opponent: str | None = None) -> LevelSpec:
        return sample_level(self.sampling_state(), self.rng if rng is None else rng, build, opponent=opponent)

    # --- metrics and state ---
    def _extra_metrics(self, recent):
        scores = [e.score for b in self.buffers.values() for e in b.entries]
        out = {
            "curriculum/buffer_size": float(len(scores)),
            "curriculum/coplayers": float(len(self.buffers)),
            "curriculum/score_mean": float(np.mean(scores)) if scores else math.nan,
            "curriculum/score_max": float(np.max(scores)) if scores else math.nan,
            "curriculum/replay_share": float(np.mean([r["replay"] for r in recent])) if recent else math.nan,
        }
        priority = self.coplayer_priority()
        for k, r in self.coplayer_regret().items():
            out[f"curriculum/coplayer_regret/{k}"] = r
            out[f"curriculum/coplayer_p/{k}"] = priority.get(k, 0.0)
        return out

    def _state_dict(self):
        return {"buffers": [[k, b._state_dict()] for k, b in self.buffers.items()],
                "last_played": dict(self.last_played), "episode_count": self.episode_count,
                "dropped_coplayers": self.dropped_coplayers}

    def _load_state_dict(self, state):
        if len(state["buffers"]) > self.params.max_coplayers:
            raise ValueError(f"MAESTRO state holds {len(state['buffers'])} co-players but curriculum.maestro.max_coplayers "
                             f"is {self.params.max_coplayers}")
        self.buffers = {}
        for k, sub in state["buffers"]:
            buf = PLRStrategy(self._buffer_config, seed=0)
            buf._load_state_dict(sub)
            self.buffers[str(k)] = buf
        self.last_played = {str(k): int(v) for k, v in state["last_played"].items()}
        self.episode_count = int(state["episode_count"])
        self.dropped_coplayers = int(state.get("dropped_coplayers", 0))


STRATEGY_CLASSES[MaestroStrategy.kind] = MaestroStrategy  # make_strategy builds it (the package imports this module)


def coplayer_priority_of(strategy: Any) -> Mapping[str, float] | None:
    """The strategy's co-player probabilities when it has them (MAESTRO), else None."""
    fn = getattr(strategy, "coplayer_priority", None)
    return fn() if callable(fn) else None
