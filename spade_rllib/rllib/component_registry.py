"""Which driver components a run has: config section -> factory, imported by name.

Order matters: runner updates merge in this order, later entries win (the league's opponent plan
replaces the self-play plan when the league is on). Each factory is `make(run_config, env_info)`
and returns None when its section is off (`spade_rllib.rllib.components` has the protocol).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from spade_rllib.config.run_config import RunConfig
from spade_rllib.rllib import (curriculum_component, draw_watch_component, exploitability_component, league_component,
                               signal_schedule_component)
from spade_rllib.rllib.components import EnvInfo, make_self_play_component

ComponentFactory = Callable[[RunConfig, EnvInfo], Optional[Any]]

COMPONENT_FACTORIES: dict[str, ComponentFactory] = {
    "self_play": make_self_play_component,
    "curriculum": curriculum_component.make_component,
    "league": league_component.make_component,
    "draw_watch": draw_watch_component.make_component,  # no config section: on for every two-team game
    # evaluation.exploitability_interval: after the league, which hands it the live League (ctx.extra)
    "exploitability": exploitability_component.make_component,
    "signal_schedule": signal_schedule_component.make_component,  # env.signal_schedule
}


def build_components(cfg: RunConfig, info: EnvInfo) -> list:
    """Instantiate the components the config turns on, in `COMPONENT_FACTORIES` order."""
    components = (factory(cfg, info) for factory in COMPONENT_FACTORIES.values())
    return [c for c in components if c is not None]


__all__ = ["COMPONENT_FACTORIES", "ComponentFactory", "build_components"]
