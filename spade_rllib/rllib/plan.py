"""What the driver tells env runners each iteration: the opponent plan and the level source. No Ray.

`OpponentPlan` decides, per episode, which trained module learns (main by default; league
exploiters when the league has them), who it plays and which seat (team) it takes. The choice is a
pure function of the plan and the episode's key `(worker_index, env_index, episode_number)`, never
of a mutable counter in a mapping function: two runners with the same plan and key pick the same
matchup, and a restored run with the same plan repeats the same matchups.

Opponent ids understood by `SpadeEnvRunner`:
  "mirror"        the learner plays every team; every seat's experience trains it
  "random"        uniform over legal actions
  "bot:<name>"    `spade_rllib.games.make_bot(name, seed, env_id=...)` (a game's scripted bots)
  "slot_<k>"      frozen weights in opponent slot k, loaded by `DriverUpdate.slot_weights`
  "live:<module>" another trained module at its current weights (a main exploiter's opponent is
                  "live:main"); it acts but its side of the game is not recorded

`RunnerSpec` is what the driver hands every env runner at construction (`build_algo_config` puts
`RunnerSpec.to_dict()` under `env_config["spade"]`, a plain mapping, so checkpoints and Tune's
params.json keep it; the runner reads it back once with `RunnerSpec.from_mapping`).

`LevelSource` is the curriculum's runner-side object (picklable). The runner calls
`reset_options(episode_key)` at every reset; the level games' reset keys (`level`, `knobs`, `level_seed`,
`difficulty`) go to `env.reset(options=...)`, every other key (e.g. `level_id`, `level_spec`) is
copied into that episode's outcome record. A source with `opponent_aware = True` is called as
`reset_options(episode_key, opponent=<member id of the episode's opponent>)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np

from spade_rllib.core.keyed_random import keyed_uniform
from spade_rllib.core.outcome import BOT_PREFIX, LIVE_PREFIX, MAIN, MIRROR, RANDOM, SLOT_PREFIX  # noqa: F401 - the ids (outcome.py)

EpisodeKey = tuple  # (worker_index, env_index, episode_number)
RUNNER_SPEC_KEY = "spade"
"""The `env_config` key that carries the `RunnerSpec`."""


@dataclass(frozen=True)
class RunnerSpec:
    """The driver -> env runner handoff: which game, how to sample it, who learns."""

    env_id: str
    env_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    run_config: dict = field(default_factory=dict)
    """The resolved run config (`RunConfig.to_dict()`); the algorithm parses it."""
    packed: bool = False
    """Ship experience packed (local learner with `SpadeGAEConnector`) instead of RLlib episodes."""
    level_pool: int = 0
    """Level games: levels each runner pre-generates for training resets (0 = a fresh level every reset)."""
    random_opening_plies: int = 0
    eval_random_opening_plies: int = 0
    learners: tuple[str, ...] = (MAIN,)
    """The trained module ids (main, then any league exploiters)."""
    roles: dict = field(default_factory=dict)
    """Role games: agent -> role; agent a is played by `main_<role>` (empty: "main" plays every agent)."""
    opponent_plan: Optional["OpponentPlan"] = None
    """The plan runners start with (the driver re-broadcasts it)."""
    reset_options: Optional[dict] = None
    """Fixed reset options of every episode (e.g. one level), when no level source overrides them."""
    teacher: str = ""
    """Kickstarting: the scripted bot whose action labels each learner step (`agent.teacher`; "" none)."""
    runinfo: Optional[dict] = None
    """Driver only: the run's metadata, written into the trial directory."""
    restore_from: Optional[str] = None
    """Driver only: a checkpoint to restore before training."""

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    @classmethod
    def from_mapping(cls, raw: Any) -> "RunnerSpec":
        """From `env_config["spade"]` (a `RunnerSpec` or its dict); unknown keys are refused."""
        if isinstance(raw, RunnerSpec):
            return raw
        if not isinstance(raw, dict) or not isinstance(raw.get("env_id"), str):
            raise ValueError(f"env_config[{RUNNER_SPEC_KEY!r}] must be a RunnerSpec mapping with an env_id, got {raw!r:.80}")
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"env_config[{RUNNER_SPEC_KEY!r}]: unknown keys {unknown}; allowed: {sorted(cls.__dataclass_fields__)}")
        values = dict(raw)
        values["env_kwargs"] = dict(values.get("env_kwargs") or {})
        values["learners"] = tuple(values.get("learners") or (MAIN,))
        values["roles"] = {str(a): str(r) for a, r in (values.get("roles") or {}).items()}
        for key in ("seed", "level_pool", "random_opening_plies", "eval_random_opening_plies"):
            values[key] = int(values.get(key) or 0)
        values["packed"] = bool(values.get("packed", False))
        return cls(**values)


def slot_id(k: int) -> str:
    return f"{SLOT_PREFIX}{k}"


@dataclass(frozen=True)
class OpponentPlan:
    """Per-episode matchmaking: (learner, opponent) pairs with probabilities, and a seed.

    entries: ((learner_module_id, opponent_id, probability), ...), probabilities >= 0 summing to 1.
             A 2-tuple (opponent_id, probability) means learner "main"; entries are stored as 3-tuples.
    seed:    mixes into every choice; the driver may change it each iteration.
    version: increases when the driver publishes a new plan (for logging only).
    """

    entries: tuple = ((MAIN, MIRROR, 1.0),)
    seed: int = 0
    version: int = 0

    def __post_init__(self):
        if not self.entries:
            raise ValueError("OpponentPlan.entries is empty; give at least one (opponent_id, probability)")
        entries = []
        for e in self.entries:
            if len(e) == 2:
                e = (MAIN, *e)
            if len(e) != 3:
                raise ValueError(f"OpponentPlan entry {e!r} is not (opponent_id, probability) or "
                                 "(learner_module_id, opponent_id, probability)")
            entries.append((str(e[0]), str(e[1]), float(e[2])))
        object.__setattr__(self, "entries", tuple(entries))
        total = sum(p for _, _, p in entries)
        if any(p < 0 for _, _, p in entries) or not np.isclose(total, 1.0, atol=1e-6):
            raise ValueError(f"OpponentPlan.entries probabilities must be >= 0 and sum to 1, got {self.entries!r}")

    def pick_matchup(self, key: EpisodeKey) -> tuple[str, str]:
        """(learner module id, opponent id) of the episode with this key (pure function of plan and key)."""
        u = keyed_uniform(self.seed, *key)
        acc = 0.0
        for learner, opp, p in self.entries:
            acc += p
            if u < acc:
                return learner, opp
        return self.entries[-1][0], self.entries[-1][1]

    def pick(self, key: EpisodeKey) -> str:
        """The opponent of the episode with this key (see `pick_matchup`)."""
        return self.pick_matchup(key)[1]

    def learners(self) -> tuple[str, ...]:
        """Module ids that learn under this plan, in entry order."""
        return tuple(dict.fromkeys(learner for learner, _, _ in self.entries))

    @staticmethod
    def main_team(key: EpisodeKey, num_teams: int) -> int:
        """Main's team for this episode: alternates between consecutive episodes of an env slot."""
        _, env_index, episode_number = key
        return int(episode_number + env_index) % max(1, num_teams)

    def spread_over(self, learners: tuple[str, ...]) -> "OpponentPlan":
        """Role games: every entry of learner "main" split evenly over `learners` (the role modules),
        so a plan made for one main (the config's self-play mix) trains every role's main."""
        if MAIN not in self.learners():
            return self
        entries = []
        for learner, opp, p in self.entries:
            if learner == MAIN:
                entries.extend((module, opp, p / len(learners)) for module in learners)
            else:
                entries.append((learner, opp, p))
        return OpponentPlan(entries=tuple(entries), seed=self.seed, version=self.version)

    def probabilities(self, learner: Optional[str] = None) -> dict:
        """{opponent_id: probability} summed over learners, or of one learner's entries only."""
        out: dict = {}
        for lrn, opp, p in self.entries:
            if learner is None or lrn == learner:
                out[opp] = out.get(opp, 0.0) + p
        return out


@runtime_checkable
class LevelSource(Protocol):
    """Runner-side level chooser (picklable); see the module docstring."""

    def reset_options(self, key: EpisodeKey) -> Optional[dict]: ...


@dataclass
class DriverUpdate:
    """One broadcast from the driver to every env runner. Fields left as None are unchanged.

    opponent_plan: new `OpponentPlan`.
    slot_weights:  {slot_id: {"member": member id (str), "weights": numpy state dict of a snapshot}}
                   or {slot_id: None} to empty a slot. Only changed slots need to be sent, except
                   after a runner restart, when `DriverComponent.runner_update(full=True)` sends all.
    level_source:  a `LevelSource`, or the string "none" to go back to the config's fixed levels.
    env_signals:   {training-only signal: value} for the runner's training envs (`env.signal_schedule`).
    extra:         free-form values for custom runner code, stored in `runner.driver_extra`.
    """

    opponent_plan: Optional[OpponentPlan] = None
    slot_weights: Optional[dict] = None
    level_source: Any = None
    env_signals: Optional[dict] = None
    extra: dict = field(default_factory=dict)

    def merged(self, other: "DriverUpdate") -> "DriverUpdate":
        """Combine two updates (fields of `other` win when both set)."""
        slots = dict(self.slot_weights or {})
        slots.update(other.slot_weights or {})
        return DriverUpdate(
            opponent_plan=other.opponent_plan or self.opponent_plan,
            slot_weights=slots or None,
            level_source=other.level_source if other.level_source is not None else self.level_source,
            env_signals={**(self.env_signals or {}), **(other.env_signals or {})} or None,
            extra={**self.extra, **other.extra},
        )
