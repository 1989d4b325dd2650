"""`FrozenOpponentComponent`: every training game of main against one frozen policy. No Ray import.

The exploitability test (AlphaStar): a fresh learner trained for a fixed budget against the frozen
final main of another run; its score against that policy measures how exploitable the policy is
(lower is more robust). The component publishes one opponent plan (main vs opponent slot 0 in
every episode) and loads the frozen weights into slot 0 of every env runner; it has no state worth
checkpointing (the weights are the experiment's input). Add it to a built `SpadePPO`'s
`components` and broadcast (`bench/ablations/league_ablation.py`).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from spade_rllib.core.outcome import MAIN
from spade_rllib.rllib.plan import DriverUpdate, OpponentPlan, slot_id

FROZEN_SLOT = slot_id(0)


class FrozenOpponentComponent:
    """Driver component: main plays `weights` (a numpy state dict of the same module) in every game."""

    name = "frozen_opponent"

    def __init__(self, weights: Mapping[str, Any], member: str = "target", seed: int = 0):
        self.weights = dict(weights)
        self.member = str(member)
        self.plan = OpponentPlan(entries=((MAIN, FROZEN_SLOT, 1.0),), seed=int(seed), version=1)
        self._sent = False

    def update(self, outcomes: list, ctx: Any = None) -> dict:
        return {}

    def runner_update(self, full: bool) -> Optional[DriverUpdate]:
        if self._sent and not full:
            return None
        self._sent = True
        return DriverUpdate(opponent_plan=self.plan,
                            slot_weights={FROZEN_SLOT: {"member": self.member, "weights": self.weights}})

    def state_dict(self) -> dict:
        return {"member": self.member}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._sent = False  # runners come back blank: send the plan and the weights again


__all__ = ["FROZEN_SLOT", "FrozenOpponentComponent"]
