"""`AdaptiveCurriculum`: a thin PettingZoo parallel wrapper that picks each episode's level.

On `reset` it asks for a `LevelSpec`, builds the level and resets the inner env with
`options={"level": level}`; when the episode ends it turns the final infos into an `EpisodeOutcome`
(spade_rllib/core/outcome.py) and reports it.

Two modes:
* **local** (`AdaptiveCurriculum(env, strategy=...)`): standalone, no Ray. Levels come from
  `strategy.sample()` (the strategy's own seeded RNG) and every outcome goes straight to
  `strategy.update([outcome])`.
* **remote** (`AdaptiveCurriculum(env, sampling_state=..., seed=...)`): for env runners. Levels come
  from `sample_level(sampling_state, rng)` with the wrapper's own RNG (seeded by `seed`, reseeded
  by `reset(seed=...)`); outcomes queue up until the glue calls `pop_outcomes()` and sends them to
  the driver. `set_sampling_state(state)` installs the driver's broadcast.

Reset options the wrapper reads (all others pass through):
  "outcome_extra": `EpisodeOutcome` fields for this episode's outcome (e.g. {"learner_team": 0,
      "opponent": "gen_3"}; `main_team` is read as `learner_team`); without a learner_team the
      outcome has none (results read from team A's side);
  "level" / "knobs" / "difficulty": the caller chose the level (e.g. held-out evaluation): the
      curriculum is bypassed for this episode and its outcome is not reported.
On the final step each agent's info also gets `level_id` and `curriculum_outcome` (the record).
"""
from __future__ import annotations

import functools
from collections import OrderedDict, deque
from typing import Any, Callable, Mapping

import numpy as np
from pettingzoo.utils.env import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from spade_rllib.curriculum.level_spec import LevelSpec, build_level
from spade_rllib.curriculum.strategies import CurriculumStrategy, sample_level
from spade_rllib.core.outcome import EpisodeOutcome

CALLER_LEVEL_OPTIONS = ("level", "knobs", "difficulty")
LEVEL_CACHE_SIZE = 32  # built levels kept by level_id (PLR replays the same specs)
MAX_BUILD_ATTEMPTS = 5  # sampled specs the builder rejects are redrawn this many times, then it raises
MAX_PENDING_OUTCOMES = 100_000  # remote mode: oldest outcomes dropped beyond this if never drained
LEVEL_STREAM = 0x1E7E1  # mixed into the seed so level picks and the env's own RNG (same seed) differ


def _game_id(env: Any) -> str:
    """The catalog id of the wrapped level game (its `metadata["name"]`)."""
    name = getattr(getattr(env, "unwrapped", env), "metadata", {}).get("name")
    if not isinstance(name, str):
        raise ValueError(f"{type(env).__name__} has no metadata['name']: the curriculum needs the level game's id "
                         "(or pass level_builder=...)")
    return name


def _level_rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(None if seed is None else [int(seed), LEVEL_STREAM])


class AdaptiveCurriculum(BaseParallelWrapper):
    """Curriculum-driven level selection around any env whose reset accepts `options={"level": ...}`."""

    def __init__(
        self,
        env: ParallelEnv,
        strategy: CurriculumStrategy | None = None,
        *,
        sampling_state: Mapping[str, Any] | None = None,
        seed: int | None = None,
        level_builder: Callable[[LevelSpec], Any] | None = None,
        report_outcomes: bool = True,
    ):
        """
        env: the level-driven ParallelEnv (MazeRace or CaptureTheFlag).
        strategy: local mode; the strategy samples levels and receives outcomes.
        sampling_state: remote mode; the driver's broadcast `strategy.sampling_state()`.
        seed: remote mode RNG seed (e.g. derived from worker and env index).
        level_builder: LevelSpec -> the object passed as options["level"] (default: `build_level`
            with the wrapped game's generator, read from the env's `metadata["name"]`).
        report_outcomes: False for evaluation runners: levels are sampled, outcomes are not kept.
        """
        super().__init__(env)
        if (strategy is None) == (sampling_state is None):
            raise ValueError("AdaptiveCurriculum needs exactly one of strategy= (local mode) "
                             "or sampling_state= (remote mode)")
        self.strategy = strategy
        self.mode = "local" if strategy is not None else "remote"
        self._sampling_state = None if sampling_state is None else dict(sampling_state)
        self._rng = _level_rng(seed)
        self._level_builder = level_builder or functools.partial(build_level, env_id=_game_id(env))
        self.report_outcomes = report_outcomes
        self._pending: deque[EpisodeOutcome] = deque(maxlen=MAX_PENDING_OUTCOMES)
        self._level_cache: OrderedDict[str, Any] = OrderedDict()
        self.level_spec: LevelSpec | None = None  # this episode's spec (None when the caller chose the level)
        self.last_outcome: EpisodeOutcome | None = None
        self._outcome_extra: dict[str, Any] = {}
        self._returns: dict[Any, float] = {}
        self._steps = 0
        self._episode_open = False
        self.build_failures = 0  # sampled specs the level builder rejected (redrawn)

    # ----- remote-mode plumbing for the RLlib glue -----
    def set_sampling_state(self, sampling_state: Mapping[str, Any]) -> None:
        """Install the driver's broadcast sampling state (remote mode); used from the next reset on."""
        if self.mode != "remote":
            raise ValueError("set_sampling_state() is for remote mode; this wrapper owns a local strategy")
        self._sampling_state = dict(sampling_state)

    @property
    def sampling_state(self) -> dict[str, Any] | None:
        return self._sampling_state

    def pop_outcomes(self) -> list[EpisodeOutcome]:
        """Return and clear the outcomes queued since the last call (remote mode)."""
        out = list(self._pending)
        self._pending.clear()
        return out

    # ----- ParallelEnv -----
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        self._outcome_extra = dict(options.pop("outcome_extra", None) or {})
        if seed is not None and self.mode == "remote":
            self._rng = _level_rng(seed)
        if any(options.get(key) is not None for key in CALLER_LEVEL_OPTIONS):
            self.level_spec = None
        else:
            self.level_spec, options["level"] = self._sample_and_build()
        obs, infos = self.env.reset(seed=seed, options=options)
        self._returns = {agent: 0.0 for agent in self.env.possible_agents}
        self._steps = 0
        self._episode_open = True
        self.last_outcome = None
        return obs, infos

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        self._steps += 1
        for agent, reward in rewards.items():
            self._returns[agent] = self._returns.get(agent, 0.0) + float(reward)
        done = not self.env.agents or all(
            terminations.get(a, False) or truncations.get(a, False) for a in rewards)
        if done and self._episode_open:
            self._episode_open = False
            if self.level_spec is not None:
                outcome = self._make_outcome(infos)
                self.last_outcome = outcome
                for info in infos.values():
                    info["level_id"] = self.level_spec.level_id
                    info["curriculum_outcome"] = outcome
                self._report(outcome)
        return obs, rewards, terminations, truncations, infos

    # ----- internals -----
    def _sample_spec(self) -> LevelSpec:
        if self.mode == "local":
            return self.strategy.sample(build=self._build)
        return sample_level(self._sampling_state, self._rng, self._build)

    def _sample_and_build(self) -> tuple[LevelSpec, Any]:
        """Sample a spec and build it; a spec the generator cannot build is redrawn (bounded)."""
        for attempt in range(MAX_BUILD_ATTEMPTS):
            spec = self._sample_spec()
            try:
                return spec, self._build(spec)
            except (RuntimeError, ValueError) as e:
                self.build_failures += 1
                error = e
        raise RuntimeError(f"AdaptiveCurriculum: {MAX_BUILD_ATTEMPTS} sampled levels in a row failed to build; "
                           f"last spec {spec.to_dict()}") from error

    def _build(self, spec: LevelSpec) -> Any:
        level = self._level_cache.get(spec.level_id)
        if level is None:
            level = self._level_builder(spec)
            self._level_cache[spec.level_id] = level
            if len(self._level_cache) > LEVEL_CACHE_SIZE:
                self._level_cache.popitem(last=False)
        else:
            self._level_cache.move_to_end(spec.level_id)
        return level

    def _report(self, outcome: EpisodeOutcome) -> None:
        if not self.report_outcomes:
            return
        if self.mode == "local":
            self.strategy.update([outcome])
        else:
            self._pending.append(outcome)

    def _team_of(self, agent: Any) -> int:
        team_of = getattr(self.env.unwrapped, "team_of", None)
        if callable(team_of):
            return int(team_of(agent))
        agents = list(self.env.possible_agents)
        return 0 if agents.index(agent) < len(agents) / 2 else 1

    def _make_outcome(self, infos: Mapping[Any, Mapping[str, Any]]) -> EpisodeOutcome:
        """The episode's `EpisodeOutcome`, with `level_spec`, the spec's summary in `level` and per-team mean returns."""
        team_returns: list[list[float]] = [[], []]
        for agent, ret in self._returns.items():
            team_returns[self._team_of(agent)].append(ret)
        returns = tuple(float(np.mean(v)) if v else 0.0 for v in team_returns)
        final = next((i for i in infos.values() if isinstance(i, Mapping) and "winner" in i), None)
        if final is None:  # env without MazeRace infos: the team returns decide
            final = {"reason": "unknown"}
        env_level = final.get("level") if isinstance(final.get("level"), Mapping) else {}
        level = {**env_level, **self.level_spec.summary()}
        measured = self._measured_flag_distance()
        if measured is not None:
            level["measured_flag_distance"] = measured
        extra = dict(self._outcome_extra)
        if "main_team" in extra:  # the older name of learner_team
            extra["learner_team"] = extra.pop("main_team")
        extra.setdefault("learner_team", None)
        outcome = EpisodeOutcome.from_final_info({**final, "level": level, "reason": final.get("reason", "unknown")},
                                                 team_returns=returns, length=self._steps,
                                                 level_spec=self.level_spec.to_dict(), **extra)
        return outcome

    def _measured_flag_distance(self) -> float | None:
        """Team A's mean BFS distance from spawn to flag on this level, when the level can tell."""
        level = getattr(self.env.unwrapped, "level", None)
        try:
            dist = level.distance_to_flag()
            return float(np.mean([dist[tuple(cell)] for cell in level.spawns[0]]))
        except (AttributeError, TypeError, IndexError, KeyError, ValueError):
            return None
