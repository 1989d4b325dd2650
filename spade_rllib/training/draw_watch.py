"""Watch for the all-draw collapse of self-play: pure Python, no Ray.

Under mirror self-play (and PFSP leagues that feed main its losses) a two-team game can fall into a
draw equilibrium: defending is safe, attacking risks a loss, so main stops attacking, every mirror
game times out and nothing more is learned (measured on CaptureTheFlag with PFSP `hard`: 100%
mirror draws, no capture, the curriculum stuck). `DrawWatch` keeps main's last `window` games and
reports, every iteration:

    draws/mirror_draw_rate     share of main's mirror games (main in both seats) that were draws
    draws/draw_rate            share of all main's games that were draws
    draws/captures_per_game    captures per game, both teams together (games whose env counts captures)
    draws/main_captures_per_game  main's own captures per game (in a mirror game: both seats' captures)
    draws/collapsed            1 while the window shows the collapse, else 0: at least `min_games`
                               mirror games, mirror draw rate >= `mirror_draw_rate` and main's
                               captures per game <= `captures_per_game` (when the env counts
                               captures): main has stopped attacking, whoever still captures against it.
                               Stopped: in some earlier window main captured more than that. A main
                               that has not yet learned to capture (large levels early in a run) is no
                               collapse; its mirror games are draws for another reason.
    draws/main_peak_captures_per_game  the highest `main_captures_per_game` of any window so far
    draws/collapsed_iterations consecutive iterations in collapse

`update` returns True on the iteration the run enters the collapse, so the glue can warn once.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from spade_rllib.core.outcome import MAIN, EpisodeOutcome

MIRROR = "mirror"


@dataclass(frozen=True)
class DrawWatchConfig:
    window: int = 500
    """Main's most recent games the rates are computed over."""
    min_games: int = 100
    """Mirror games in the window before the watch may call a collapse."""
    mirror_draw_rate: float = 0.95
    """Collapse: at least this share of mirror games drawn ..."""
    captures_per_game: float = 0.05
    """... and main captures at most this many times per game (ignored when the env counts no captures)."""


class DrawWatch:
    """Main's recent games and the collapse verdict (module docstring)."""

    def __init__(self, config: DrawWatchConfig | None = None):
        self.config = config or DrawWatchConfig()
        # (mirror, draw, captures of both teams, main's captures); NaN when the env counts none
        self.games: deque[tuple[bool, bool, float, float]] = deque(maxlen=self.config.window)
        self.collapsed_iterations = 0
        self.collapses = 0  # times the run entered the collapse
        self.peak_captures = 0.0  # main's best captures per game over any window of >= min_games games

    def record(self, outcomes: Iterable[EpisodeOutcome | Mapping[str, Any]]) -> None:
        for o in map(EpisodeOutcome.of, outcomes):
            if o.learner != MAIN or o.learner_result is None:
                continue
            mirror = o.opponent == MIRROR
            if "captures" in o.counters:
                captures = float(sum(o.counters["captures"]))
                mine = captures if mirror else float(o.counter("captures")[0])
            else:
                captures = mine = math.nan
            self.games.append((mirror, o.learner_result == "draw", captures, mine))

    def _main_captures(self) -> tuple[int, float]:
        """(games whose env counts captures, main's captures per game over them; NaN when none)."""
        mine = [g[3] for g in self.games if not math.isnan(g[3])]
        return len(mine), (sum(mine) / len(mine) if mine else math.nan)

    def metrics(self) -> dict[str, float]:
        mirror = [g[1] for g in self.games if g[0]]
        caps = [g[2] for g in self.games if not math.isnan(g[2])]
        return {
            "draws/mirror_draw_rate": sum(mirror) / len(mirror) if mirror else math.nan,
            "draws/draw_rate": sum(g[1] for g in self.games) / len(self.games) if self.games else math.nan,
            "draws/captures_per_game": sum(caps) / len(caps) if caps else math.nan,
            "draws/main_captures_per_game": self._main_captures()[1],
            "draws/main_peak_captures_per_game": self.peak_captures,
            "draws/collapsed": float(self.collapsed()),
            "draws/collapsed_iterations": float(self.collapsed_iterations),
        }

    def collapsed(self) -> bool:
        c = self.config
        mirror = [g[1] for g in self.games if g[0]]
        if len(mirror) < c.min_games or sum(mirror) / len(mirror) < c.mirror_draw_rate:
            return False
        counted, mine = self._main_captures()
        if not counted:
            return True  # the env counts no captures: the mirror draws alone tell
        return self.peak_captures > c.captures_per_game and mine <= c.captures_per_game

    def update(self, outcomes: Iterable[EpisodeOutcome | Mapping[str, Any]]) -> bool:
        """Record one iteration's outcomes; True when the run has just entered the collapse."""
        self.record(outcomes)
        counted, mine = self._main_captures()
        if counted >= self.config.min_games:
            self.peak_captures = max(self.peak_captures, mine)
        if not self.collapsed():
            self.collapsed_iterations = 0
            return False
        self.collapsed_iterations += 1
        if self.collapsed_iterations == 1:
            self.collapses += 1
            return True
        return False

    def state_dict(self) -> dict[str, Any]:
        return {"games": [[m, d, *(None if math.isnan(x) else x for x in (c, k))] for m, d, c, k in self.games],
                "collapsed_iterations": self.collapsed_iterations, "collapses": self.collapses,
                "peak_captures": self.peak_captures}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.games = deque(((bool(m), bool(d), *(math.nan if x is None else float(x) for x in (c, k)))
                            for m, d, c, k in state["games"]), maxlen=self.config.window)
        self.collapsed_iterations = int(state["collapsed_iterations"])
        self.collapses = int(state.get("collapses", 0))
        self.peak_captures = float(state.get("peak_captures", 0.0))
