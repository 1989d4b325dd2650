"""What the driver tells env runners each iteration: the opponent plan and the level source. No Ray.

`OpponentPlan` decides, per episode, who main plays and which seat (team) main takes. The choice is
a pure function of the plan and the episode's key `(worker_index, env_index, episode_number)`,
never of a mutable counter in a mapping function: two runners with the same plan and key pick the
same opponent, and a restored run with the same plan repeats the same matchups.

Opponent ids understood by `SpadeEnvRunner`:
  "mirror"        main plays every team; every seat's experience trains main
  "random"        uniform over legal actions
  "bot:<name>"    `spade_rllib.bots.make_bot(name)` (MazeRace)
  "slot_<k>"      frozen weights in opponent slot k, loaded by `DriverUpdate.slot_weights`

`LevelSource` is the curriculum's runner-side object (picklable). The runner calls
`reset_options(episode_key)` at every reset; MazeRace's reset keys (`level`, `knobs`, `level_seed`,
`difficulty`) go to `env.reset(options=...)`, every other key (e.g. `level_id`, `level_spec`) is
copied into that episode's outcome record.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np

MIRROR = "mirror"
RANDOM = "random"
BOT_PREFIX = "bot:"
SLOT_PREFIX = "slot_"

EpisodeKey = tuple  # (worker_index, env_index, episode_number)


def slot_id(k: int) -> str:
    return f"{SLOT_PREFIX}{k}"


@dataclass(frozen=True)
class OpponentPlan:
    """Per-episode matchmaking: opponent ids with probabilities, and a seed.

    entries: ((opponent_id, probability), ...), probabilities >= 0 summing to 1.
    seed:    mixes into every choice; the driver may change it each iteration.
    version: increases when the driver publishes a new plan (for logging only).
    """

    entries: tuple = ((MIRROR, 1.0),)
    seed: int = 0
    version: int = 0

    def __post_init__(self):
        if not self.entries:
            raise ValueError("OpponentPlan.entries is empty; give at least one (opponent_id, probability)")
        total = sum(float(p) for _, p in self.entries)
        if any(float(p) < 0 for _, p in self.entries) or not np.isclose(total, 1.0, atol=1e-6):
            raise ValueError(f"OpponentPlan.entries probabilities must be >= 0 and sum to 1, got {self.entries!r}")

    def pick(self, key: EpisodeKey) -> str:
        """The opponent for the episode with this key (pure function of plan and key)."""
        u = np.random.default_rng([int(self.seed) & 0xFFFFFFFF, *(int(k) for k in key)]).random()
        acc = 0.0
        for opp, p in self.entries:
            acc += float(p)
            if u < acc:
                return opp
        return self.entries[-1][0]

    @staticmethod
    def main_team(key: EpisodeKey, num_teams: int) -> int:
        """Main's team for this episode: alternates between consecutive episodes of an env slot."""
        _, env_index, episode_number = key
        return int(episode_number + env_index) % max(1, num_teams)

    def probabilities(self) -> dict:
        return {o: float(p) for o, p in self.entries}


@runtime_checkable
class LevelSource(Protocol):
    """Runner-side level chooser (picklable); see the module docstring."""

    def reset_options(self, key: EpisodeKey) -> Optional[dict]: ...


@dataclass
class DriverUpdate:
    """One broadcast from the driver to every env runner. Fields left as None are unchanged.

    opponent_plan: new `OpponentPlan`.
    slot_weights:  {slot_id: {"member": member id (str), "weights": numpy state dict of main's module}}
                   or {slot_id: None} to empty a slot. Only changed slots need to be sent, except
                   after a runner restart, when `DriverComponent.runner_update(full=True)` sends all.
    level_source:  a `LevelSource`, or the string "none" to go back to the config's fixed levels.
    extra:         free-form values for custom runner code, stored in `runner.driver_extra`.
    """

    opponent_plan: Optional[OpponentPlan] = None
    slot_weights: Optional[dict] = None
    level_source: Any = None
    extra: dict = field(default_factory=dict)

    def merged(self, other: "DriverUpdate") -> "DriverUpdate":
        """Combine two updates (fields of `other` win when both set)."""
        slots = dict(self.slot_weights or {})
        slots.update(other.slot_weights or {})
        return DriverUpdate(
            opponent_plan=other.opponent_plan or self.opponent_plan,
            slot_weights=slots or None,
            level_source=other.level_source if other.level_source is not None else self.level_source,
            extra={**self.extra, **other.extra},
        )
