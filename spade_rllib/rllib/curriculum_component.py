"""The curriculum's driver component for `SpadePPO` (see `spade_rllib.rllib.components`). No Ray import.

The driver owns one strategy. Each iteration:
  update(outcomes, ctx)  folds main's `EpisodeOutcome`s on curriculum-chosen levels (those carrying
                         `level_spec`; league exploiters' episodes are not main's progress: a main
                         exploiter freshly reset would drag the difficulty down) into the strategy
                         and returns `strategy.metrics()` (`curriculum/...`); each such outcome
                         first gets `positive_value_loss` from `ctx.level_value_loss` (the GAE
                         connector's per-level sums of main's clipped positive advantages);
  runner_update(full)    returns a `DriverUpdate(level_source=CurriculumLevelSource(...))` when the
                         sampling state changed since the last broadcast (always when `full`);
  state_dict()           strategy state (difficulty, window, buffer, RNG) + broadcast version.
With `strategy: maestro` the positive value loss is looked up per (level, opponent) pair
(`outcome_value_key`), and `ctx.extra[COPLAYER_PRIORITY]` carries the co-player regret distribution
and `maestro.coplayer_mix` to the league component, which runs next.
Registered as "curriculum" in `spade_rllib.rllib.component_registry` (`make_component`).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping, Optional

from spade_rllib.config.run_config import ConfigError, RunConfig
from spade_rllib.curriculum.curriculum_config import CurriculumConfig
from spade_rllib.curriculum.level_spec import build_level
from spade_rllib.curriculum.maestro import coplayer_priority_of, value_key
from spade_rllib.curriculum.source import CurriculumLevelSource
from spade_rllib.games import LEVEL_KIND, spade_env_ids
from spade_rllib.curriculum.strategies import KnobsFn, make_strategy
from spade_rllib.core.outcome import MAIN, EpisodeOutcome
from spade_rllib.rllib.components import COPLAYER_PRIORITY, EnvInfo
from spade_rllib.rllib.plan import DriverUpdate


class CurriculumComponent:
    """Driver-side owner of the curriculum state (the `DriverComponent` protocol)."""

    name = "curriculum"

    def __init__(self, config: CurriculumConfig, env_id: str, seed: int = 0, knobs_fn: KnobsFn | None = None):
        self.config = config
        self.env_id = env_id  # the level game whose generator builds the levels
        self.seed = int(seed)
        self.strategy = make_strategy(config, seed=self.seed, knobs_fn=knobs_fn)
        self.version = 0  # broadcast counter; bumps when the sampling state changes
        self._last_state: Optional[dict] = None
        self._sent_version = -1
        self.ignored_outcomes = 0  # outcomes of levels it did not choose (no level_spec) or not main's

    def update(self, outcomes: list[EpisodeOutcome], ctx: Any = None) -> dict:
        outcomes = [EpisodeOutcome.of(o) for o in outcomes]
        mine = [o for o in outcomes if o.level_spec and o.learner == MAIN]
        key = outcome_value_key if self.config.strategy == "maestro" else None
        mine = with_positive_value_loss(mine, getattr(ctx, "level_value_loss", None) or {}, key)
        self.ignored_outcomes += len(outcomes) - len(mine)
        self.strategy.update(mine)
        priority = coplayer_priority_of(self.strategy)
        if priority is not None and ctx is not None:  # the league mixes it into main's opponent distribution
            ctx.extra[COPLAYER_PRIORITY] = (priority, float(self.config.maestro.coplayer_mix))
        metrics = dict(self.strategy.metrics())
        metrics["curriculum/version"] = float(self.version)
        return metrics

    def _current_state(self) -> dict:
        state = self.strategy.sampling_state()
        if state != self._last_state:
            self._last_state = state
            self.version += 1
        return state

    def level_source(self) -> CurriculumLevelSource:
        """The runner-side object for the current sampling state."""
        return CurriculumLevelSource(self._current_state(), seed=self.seed, version=self.version,
                                     level_builder=functools.partial(build_level, env_id=self.env_id))

    def runner_update(self, full: bool):
        source = self.level_source()
        if not full and self._sent_version == self.version:
            return None
        self._sent_version = self.version
        return DriverUpdate(level_source=source)

    def state_dict(self) -> dict:
        return {"strategy": self.strategy.state_dict(), "version": self.version,
                "ignored_outcomes": self.ignored_outcomes}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.strategy.load_state_dict(state["strategy"])
        self.version = int(state["version"])
        self.ignored_outcomes = int(state.get("ignored_outcomes", 0))
        self._last_state = self.strategy.sampling_state()
        self._sent_version = -1  # the next runner_update sends, whatever `full` says


def outcome_value_key(outcome: EpisodeOutcome) -> str:
    """The joint curriculum's tag of an outcome: its (level, opponent) pair (`maestro.value_key`)."""
    return value_key(outcome.level_id or "", outcome.opponent)


def with_positive_value_loss(outcomes: list[EpisodeOutcome], level_sums: Mapping[str, tuple[float, int]],
                             key: Optional[Callable[[EpisodeOutcome], str]] = None) -> list[EpisodeOutcome]:
    """Main's outcomes with `positive_value_loss` = the mean clipped positive GAE advantage of main's
    steps on the outcome's level this iteration (sum / steps from the GAE connector; `key` names the
    tag to look up, default the level_id); outcomes on levels without steps this iteration, or that
    already carry a value, are left as they are."""
    out = []
    for o in outcomes:
        total, steps = level_sums.get(key(o) if key is not None else (o.level_id or ""), (0.0, 0))
        if steps and o.positive_value_loss is None:
            o = o.with_fields(positive_value_loss=float(total) / int(steps))
        out.append(o)
    return out


def make_component(cfg: RunConfig, info: EnvInfo) -> Optional[CurriculumComponent]:
    """Factory of the "curriculum" component: None when `curriculum.enabled` is false."""
    if not cfg.curriculum.enabled:
        return None
    if info.kind != LEVEL_KIND:
        raise ConfigError(f"curriculum.enabled = true needs a level-driven env ({', '.join(spade_env_ids())}); env kind is {info.kind!r}")
    config = cfg.curriculum.to_core()
    if info.teams:  # the env decides the team size
        config = dataclasses.replace(config, agents_per_team=len(info.teams[0]))
    return CurriculumComponent(config, seed=int(cfg.experiment.seed), env_id=info.env_id)
