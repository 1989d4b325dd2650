"""`EpisodeOutcome`: the one typed record of a finished episode, and the ids every floor shares.

The env runner (`rllib/runner.py`) and the curriculum wrapper (`curriculum/wrapper.py`) write it
with `EpisodeOutcome.from_final_info`; the league, the curriculum strategies, the held-out
evaluation and the console line read it. "How did the learner score" is answered here once
(`learner_result`, `learner_score`, `learner_return`); nobody else maps winner letters to seats.

Ground floor: no import from the rest of the package, no Ray, no torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

MAIN = "main"
"""Module id of the trained main policy (RLlib module id, league member id, checkpoint directory)."""
# Opponent ids (configs, opponent plans, evaluation, outcome records):
MIRROR = "mirror"
"""The learner plays every team; every seat's experience trains it."""
RANDOM = "random"
"""Uniform over legal actions."""
BOT_PREFIX = "bot:"
"""``bot:<name>``: a scripted bot of the game (``spade_rllib.games.make_bot``)."""
SLOT_PREFIX = "slot_"
"""``slot_<k>``: frozen weights in the env runner's opponent slot k."""
LIVE_PREFIX = "live:"
"""``live:<module>``: another trained module at its current weights; acts, not recorded."""


def team_letter(t: int) -> str:
    """Team index -> its label, the letter envs report as `winner`: 0 -> "A", 25 -> "Z", 26 -> "AA", ...
    (spreadsheet columns; MazeRace and CaptureTheFlag use the first two). Any number of teams."""
    t = int(t)
    if t < 0:
        raise ValueError(f"team index {t} is negative")
    out = ""
    t += 1
    while t:
        t, r = divmod(t - 1, 26)
        out = chr(ord("A") + r) + out
    return out


def team_index(label: object) -> Optional[int]:
    """The index of a team label ("A" -> 0, "AA" -> 26); None when `label` is not one."""
    if not isinstance(label, str) or not label or not label.isascii() or not label.isalpha() or not label.isupper():
        return None
    n = 0
    for ch in label:
        n = n * 26 + (ord(ch) - ord("A") + 1)
    return n - 1


TEAM_LETTERS = tuple(team_letter(t) for t in range(26))
"""The first 26 team labels ("A".."Z"); `team_letter` names any team index."""
DRAW = "draw"
COUNTER_NAMES = ("tags", "flag_pickups", "captures")
"""Per-team integer counters an env may report in its final info, each a dict team letter -> int."""
RESULTS = ("win", "draw", "loss")
SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


@dataclass(frozen=True)
class EpisodeOutcome:
    """One finished episode, seen from its learner (the trained module whose experience it recorded).

    winner:        the winning team's label ("A", "B", ..., `team_letter`) | "draw"; None for single-team
                   envs and cooperative games (nobody to win against).
    reason:        why it ended ("flag", "both_flag", "timeout", "terminal", "unknown", ...).
    length:        env steps.
    learner_team:  the learner's team index; None when no learner sat at the table (a curriculum
                   wrapper used outside the trainer): results then read from team A's side.
    learner:       module id of the learner (MAIN, or an exploiter such as "main_exploiter_0").
    opponent:      who played the other seats: a league member id ("main_v3", "random"), a bot
                   ("bot:rusher"), "mirror" (the learner itself); None when there was no opponent.
    opponent_swapped: the opponent's weight slot was reloaded with another member mid-episode, so
                   two policies played that seat (the league ignores such games).
    level:         what the level was: the env's knobs, `level_id`, `difficulty` (one place; {} if unknown).
    level_spec:    the curriculum's replayable spec of the level (`LevelSpec.to_dict()`), only when
                   the curriculum chose the level; read it to rebuild the level, not for its difficulty.
    heldout_level: name of the held-out map played (held-out evaluation), else None.
    returns:       mean per-agent return of each team, by team index.
    counters:      counter name (COUNTER_NAMES) -> per-team ints, by team index; only those the env reported.
    success:       the env's own success flag of the episode (final info `success` / `is_success`), else None.
    positive_value_loss: PLR's score of the episode, when the glue computed one.
    """

    winner: Optional[str]
    reason: str = "unknown"
    length: int = 0
    learner_team: Optional[int] = 0
    learner: str = MAIN
    opponent: Optional[str] = None
    opponent_swapped: bool = False
    level: Mapping[str, Any] = field(default_factory=dict)
    level_spec: Optional[Mapping[str, Any]] = None
    heldout_level: Optional[str] = None
    returns: tuple[float, ...] = ()
    counters: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    positive_value_loss: Optional[float] = None
    success: Optional[bool] = None

    def __post_init__(self):
        if self.winner is not None and self.winner != DRAW and team_index(self.winner) is None:
            raise ValueError(f"outcome winner = {self.winner!r} is not valid; allowed: a team letter ('A', 'B', ...), 'draw' or None")
        if self.learner_team is not None and not 0 <= int(self.learner_team):
            raise ValueError(f"outcome learner_team = {self.learner_team!r} is not valid; allowed: a team index >= 0 or None")
        n = len(self.returns)
        if n and self.winner not in (None, DRAW) and team_index(self.winner) >= n:
            raise ValueError(f"outcome winner = {self.winner!r} is not valid for {n} teams; allowed: {team_letter(0)}..{team_letter(n - 1)} or 'draw'")
        if n and self.learner_team is not None and int(self.learner_team) >= n:
            raise ValueError(f"outcome learner_team = {self.learner_team!r} is not valid for {n} teams; allowed: 0..{n - 1} or None")

    # ------------------------------------------------------------------ the learner's view
    @property
    def learner_letter(self) -> str:
        """The learner's team letter (team A when no learner sat at the table)."""
        return team_letter(self.learner_team or 0)

    @property
    def learner_result(self) -> Optional[str]:
        """"win" | "draw" | "loss" for the learner's team; None when nobody could win (one team)."""
        if self.winner is None:
            return None
        if self.winner == DRAW:
            return "draw"
        return "win" if self.winner == self.learner_letter else "loss"

    @property
    def learner_score(self) -> Optional[float]:
        """1 for a win, 0.5 for a draw, 0 for a loss (None when nobody could win)."""
        result = self.learner_result
        return None if result is None else SCORES[result]

    @property
    def learner_return(self) -> float:
        """The learner team's mean return, else +1 win / 0 draw / -1 loss."""
        team = self.learner_team or 0
        if team < len(self.returns) and not math.isnan(self.returns[team]):
            return float(self.returns[team])
        return {"win": 1.0, "loss": -1.0}.get(self.learner_result or "", 0.0)

    def counter(self, name: str) -> tuple[int, int]:
        """(learner's team, opponents' teams together) for one of COUNTER_NAMES; (0, 0) when not reported."""
        per_team = self.counters.get(name, ())
        team = self.learner_team or 0
        mine = int(per_team[team]) if team < len(per_team) else 0
        return mine, int(sum(per_team)) - mine

    # ------------------------------------------------------------------ the level
    @property
    def difficulty(self) -> Optional[float]:
        value = self.level.get("difficulty")
        return None if value is None else float(value)

    @property
    def level_id(self) -> Optional[str]:
        return self.level.get("level_id") or None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_final_info(cls, info: Optional[Mapping[str, Any]], *, team_returns: tuple[float, ...] = (),
                        length: int = 0, truncated: bool = False, **fields: Any) -> "EpisodeOutcome":
        """The record of an episode from the env's final info (`winner`, `reason`, `episode_length`,
        `level`, COUNTER_NAMES) and what only the caller knows (`learner_team`, `opponent`, ...).
        Without a `winner` in the info, the team returns decide; with one team there is no winner."""
        info = info or {}
        returns = tuple(float(r) for r in team_returns)
        winner = info.get("winner")
        if winner is not None and winner != DRAW and team_index(winner) is None:
            winner = None  # a foreign env's own "winner" (an agent id, a bool): the team returns decide
        if winner is None and len(returns) >= 2:
            winner = winner_from_returns(returns)
        counters = {name: tuple(int(value.get(team_letter(t), 0)) for t in range(max(2, len(returns))))
                    for name in COUNTER_NAMES if isinstance(value := info.get(name), Mapping)}
        success = info.get("success", info.get("is_success"))
        if success is not None and "success" not in fields:
            fields["success"] = bool(success)
        level = dict(info.get("level") or {})
        spec = fields.get("level_spec")
        if spec:  # the curriculum's id and difficulty, when the env did not report them
            for key in ("level_id", "difficulty"):
                if level.get(key) is None and spec.get(key) is not None:
                    level[key] = spec[key]
        return cls(winner=winner, reason=str(info.get("reason") or ("timeout" if truncated else "terminal")),
                   length=int(info.get("episode_length", length)), level=level, returns=returns,
                   counters=counters, **fields)

    @classmethod
    def of(cls, record: "EpisodeOutcome | Mapping[str, Any]") -> "EpisodeOutcome":
        """`record` itself, or the record a hand-written dict in the documented vocabulary stands for
        (keys as the fields, `main_team` for `learner_team`, `returns` as {letter: value}, `return`
        for the learner's return). Tests and notebooks write dicts; the code passes records."""
        if isinstance(record, EpisodeOutcome):
            return record
        if not isinstance(record, Mapping):
            raise TypeError(f"an episode outcome must be an EpisodeOutcome or a mapping, got {type(record).__name__}")
        team = record.get("main_team", record.get("learner_team"))
        team = None if team is None else int(team)
        raw_returns = record.get("returns") or {}
        if isinstance(raw_returns, Mapping):
            n = max([team_index(k) + 1 for k in raw_returns if team_index(k) is not None] or [0])
            returns = [float(raw_returns.get(team_letter(t), math.nan)) for t in range(n)]
        else:
            returns = [float(r) for r in raw_returns]
        if record.get("return") is not None:  # the learner's own return wins over the team table
            t = team or 0
            returns += [math.nan] * (t + 1 - len(returns))
            returns[t] = float(record["return"])
        counters = {name: tuple(int(value.get(letter, 0)) for letter in TEAM_LETTERS[:2])
                    for name in COUNTER_NAMES if isinstance(value := record.get(name), Mapping)}
        level = dict(record.get("level") or {})
        spec = record.get("level_spec") or None
        for key in ("level_id", "difficulty"):
            if level.get(key) is None:
                value = record.get(key) if key == "level_id" else None
                if value is None and spec:
                    value = spec.get(key)
                if value is not None:
                    level[key] = value
        opponent = record.get("opponent")
        pvl = record.get("positive_value_loss")
        return cls(winner=record.get("winner"), reason=str(record.get("reason") or "unknown"),
                   length=int(record.get("length", 0) or 0), learner_team=team,
                   learner=str(record.get("learner") or MAIN), opponent=None if opponent is None else str(opponent),
                   opponent_swapped=bool(record.get("opponent_swapped", False)), level=level, level_spec=spec,
                   heldout_level=record.get("heldout_level"), returns=tuple(returns), counters=counters,
                   positive_value_loss=None if pvl is None else float(pvl))

    def with_fields(self, **changes: Any) -> "EpisodeOutcome":
        """A copy with some fields replaced (records are frozen)."""
        return replace(self, **changes)


def winner_from_returns(team_returns: tuple[float, ...]) -> str:
    """The winner letter by highest team return, "draw" on a tie at the top."""
    best = max(team_returns)
    leaders = [t for t, r in enumerate(team_returns) if r == best]
    return team_letter(leaders[0]) if len(leaders) == 1 else DRAW


__all__ = ["COUNTER_NAMES", "DRAW", "EpisodeOutcome", "MAIN", "RESULTS", "SCORES", "TEAM_LETTERS", "team_index", "team_letter",
           "winner_from_returns"]
