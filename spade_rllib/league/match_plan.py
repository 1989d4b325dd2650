"""Matchmaking plans: which learner meets which opponent, in which seat, per episode.

A :class:`MatchPlan` is made once per iteration on the driver by ``League.plan`` and shipped to
env runners (``to_dict`` / ``from_dict`` are plain JSON-able data). Env runners never count or
mutate anything: :meth:`MatchPlan.matchup` is a pure function of ``(plan.seed, stream,
episode_index)``, so every process, retry and restore draws the same matchups.

Seats: the learner sits in seat ``(episode_index + stream) % 2`` (seat 0 is team ``A`` /
``player_0``, the first mover in connect four), so along any stream of consecutive episodes it
plays both seats equally, independently of which opponent was drawn.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from spade_rllib.core.keyed_random import keyed_uniform
from spade_rllib.league.member_ids import MemberId

NUM_SEATS = 2
PROBABILITY_TOLERANCE = 1e-9
"""How far the entry probabilities may sum away from 1."""


@dataclass(frozen=True)
class PlanEntry:
    """One outcome of the per-episode draw: ``learner`` vs ``opponent`` with ``probability``."""

    learner: MemberId
    opponent: MemberId
    opponent_slot: int | None
    """Env-runner slot holding the opponent's weights; None for opponents without weights
    (random, bots) and for live learners (main), which RLlib already holds."""
    probability: float


@dataclass(frozen=True)
class Matchup:
    """The matchup of one episode."""

    learner: MemberId
    opponent: MemberId
    opponent_slot: int | None
    learner_seat: int
    """0 or 1: the team / player index the learner controls; the opponent takes the other."""

    @property
    def opponent_seat(self) -> int:
        return NUM_SEATS - 1 - self.learner_seat


@dataclass(frozen=True)
class MatchPlan:
    """A seeded, serializable matchmaking plan for one iteration."""

    seed: int
    iteration: int
    entries: tuple[PlanEntry, ...]
    slots: tuple[MemberId | None, ...] = field(default=())
    """``slots[k]``: the member whose weights go into opponent slot k (None: slot unused)."""

    def __post_init__(self):
        if not self.entries:
            raise ValueError("a MatchPlan needs at least one entry")
        total = sum(entry.probability for entry in self.entries)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE or min(e.probability for e in self.entries) < 0:
            raise ValueError(f"MatchPlan entry probabilities must be >= 0 and sum to 1; they sum to {total!r}")
        for entry in self.entries:
            if entry.opponent_slot is not None and (
                    entry.opponent_slot >= len(self.slots) or self.slots[entry.opponent_slot] != entry.opponent):
                raise ValueError(f"entry {entry} points at slot {entry.opponent_slot}, which does not hold "
                                 f"{entry.opponent}")

    @cached_property
    def _cumulative(self) -> list[float]:
        cumulative = np.cumsum([entry.probability for entry in self.entries]).tolist()
        cumulative[-1] = 1.0  # guard the last bin against rounding
        return cumulative

    def matchup(self, episode_index: int, stream: int = 0) -> Matchup:
        """The matchup of episode ``episode_index`` on ``stream`` (e.g. env runner * envs + env index).

        Pure: the same arguments always give the same matchup, in any process.
        """
        if episode_index < 0 or stream < 0:
            raise ValueError(f"episode_index = {episode_index!r} and stream = {stream!r} must be >= 0")
        draw = keyed_uniform(self.seed, stream, episode_index)
        entry = self.entries[bisect.bisect_right(self._cumulative, draw)]
        return Matchup(entry.learner, entry.opponent, entry.opponent_slot, (episode_index + stream) % NUM_SEATS)

    def probabilities(self) -> dict[tuple[MemberId, MemberId], float]:
        """Probability of each (learner, opponent) pair, summed over slots."""
        merged: dict[tuple[MemberId, MemberId], float] = {}
        for entry in self.entries:
            key = (entry.learner, entry.opponent)
            merged[key] = merged.get(key, 0.0) + entry.probability
        return merged

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "iteration": self.iteration,
            "entries": [[str(e.learner), str(e.opponent), e.opponent_slot, e.probability] for e in self.entries],
            "slots": [None if s is None else str(s) for s in self.slots],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "MatchPlan":
        entries = tuple(PlanEntry(MemberId.parse(learner), MemberId.parse(opponent), slot, float(probability))
                        for learner, opponent, slot, probability in data["entries"])
        slots = tuple(None if s is None else MemberId.parse(s) for s in data["slots"])
        return cls(int(data["seed"]), int(data["iteration"]), entries, slots)
