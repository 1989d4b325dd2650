"""The draw watch's driver component (`spade_rllib.training.draw_watch`; protocol in `spade_rllib.rllib.components`).

On in every run of a two-team game: each iteration it folds main's outcomes into the watch and
reports `draws/*` (mirror draw rate, draw rate, captures per game, `draws/collapsed`); on the
iteration a run falls into the all-draw collapse it logs one warning that says what to try.
It sends nothing to the env runners. No Ray import.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from spade_rllib.config.run_config import RunConfig
from spade_rllib.training.draw_watch import DrawWatch
from spade_rllib.rllib.components import EnvInfo

logger = logging.getLogger(__name__)

COLLAPSE_HINT = ("main's mirror games are all draws and main no longer captures (the all-draw collapse): try "
                 "env.kwargs.draw_reward < 0 (a draw costs both teams), a league.reference_floor that keeps "
                 "random in the mix, or a curriculum with small levels; see docs/league.md")


class DrawWatchComponent:
    name = "draw_watch"

    def __init__(self):
        self.watch = DrawWatch()

    def update(self, outcomes: list, ctx: Any = None) -> dict:
        if self.watch.update(outcomes):
            logger.warning("iteration %s: %s", getattr(ctx, "iteration", "?"), COLLAPSE_HINT)
        return self.watch.metrics()

    def initial_metrics(self) -> dict:
        return self.watch.metrics()

    def runner_update(self, full: bool):
        return None

    def state_dict(self) -> dict:
        return self.watch.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.watch.load_state_dict(state)


def make_component(cfg: RunConfig, info: EnvInfo) -> Optional[DrawWatchComponent]:
    """On for every env with two teams (nothing to draw against otherwise)."""
    return DrawWatchComponent() if len(info.teams) >= 2 else None
