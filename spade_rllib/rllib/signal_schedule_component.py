"""The driver component of `env.signal_schedule` (pure core: `spade_rllib.training.signal_schedule`; protocol in
`spade_rllib.rllib.components`).

Each iteration it reads the run's lifetime env steps, reports `signals/<name>` (the value the training envs use
from now on) and, when a value changed, sends `DriverUpdate(env_signals=...)`; each env runner sets them on its
training envs (`set_training_signals`), never on its evaluation envs. After a runner restart or a restore it sends
the current values again. Its state is the values last computed. No Ray import.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from spade_rllib.config.run_config import RunConfig
from spade_rllib.rllib.components import EnvInfo
from spade_rllib.rllib.plan import DriverUpdate
from spade_rllib.training.signal_schedule import initial_values, values_at

METRIC_PREFIX = "signals/"


class SignalScheduleComponent:
    name = "signal_schedule"

    def __init__(self, schedules: Mapping[str, list]):
        self.schedules = {str(k): [list(p) for p in v] for k, v in schedules.items()}
        self.values = initial_values(self.schedules)  # the training envs are built with these
        self._sent: Optional[dict] = dict(self.values)

    def _metrics(self) -> dict:
        return {METRIC_PREFIX + name: v for name, v in self.values.items()}

    def initial_metrics(self) -> dict:
        return self._metrics()

    def update(self, outcomes: list, ctx: Any) -> dict:
        self.values = values_at(self.schedules, int(ctx.env_steps_lifetime))
        return self._metrics()

    def runner_update(self, full: bool) -> Optional[DriverUpdate]:
        if not full and self._sent == self.values:
            return None
        self._sent = dict(self.values)
        return DriverUpdate(env_signals=dict(self.values))

    def state_dict(self) -> dict:
        return {"values": dict(self.values)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.values = {str(k): float(v) for k, v in state["values"].items()}
        self._sent = None  # runners come back built with the schedule's first values: send these again


def make_component(cfg: RunConfig, info: EnvInfo) -> Optional[SignalScheduleComponent]:
    """On when `env.signal_schedule` names at least one signal."""
    return SignalScheduleComponent(cfg.env.signal_schedule) if cfg.env.signal_schedule else None
