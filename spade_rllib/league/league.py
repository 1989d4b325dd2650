"""The league: pool of frozen opponents, snapshot rule, matchmaking, ratings, payoff. No Ray.

``League`` = hyperparameters (:class:`LeagueConfig`) + explicit state (:class:`LeagueState`).
The RLlib glue only carries it: it feeds episode outcomes to :meth:`League.record`, asks
:meth:`League.should_snapshot` / calls :meth:`League.add_snapshot` with main's weights as a numpy
state dict, ships :meth:`League.plan` and the slot weights to env runners, logs
:meth:`League.metrics`, and stores :meth:`League.state_dict` in the checkpoint.

Conventions
-----------
- **Scores** are from the learner's point of view: win 1, draw 0.5, loss 0. A draw counts as
  half a win in every win rate here (snapshot rule, PFSP, metrics, table).
- **"Decided" games** in the snapshot rule are finished games with a result, draws included
  (as 0.5); the learner's window is cleared at each of its snapshots, because its opponent mix
  changes then.
- **Ratings** move only on games between a learner and a frozen member (snapshot, random, bot);
  mirror games and learner-vs-learner games count in the payoff but rate nobody.
  Elo updates are zero-sum (ML-Agents); a new snapshot starts at its learner's rating.
- **Pool** = every frozen member (``random`` if ``include_random``, snapshots of main and of
  exploiters). ``max_size`` bounds the snapshots with weights; random and bots are free.
- **Main's opponents**: ``latest_ratio`` on its newest snapshot, the rest ``uniform``, ``pfsp`` or
  ``nash`` (the Nash equilibrium of the meta-game among the pool, :meth:`League.meta_game`) over the whole pool (the newest included). No snapshot yet: the pool only. Empty pool:
  mirror self-play (opponent ``main``). Then ``reference_floor``: the fixed references (random,
  ``bots``) together keep at least that share (each an even part of it), for main and league
  exploiters alike. Main uses ``pfsp_weighting``, league exploiters ``exploiter_pfsp_weighting``.
  Last, ``self_play_ratio`` of main's games go to main itself (mirror), the pool keeps the rest.
- **Exploiters** (off by default): every learner gets an equal share of episodes; a main exploiter
  always meets live ``main`` and must be reset by the glue after each of its snapshots
  (:meth:`League.resets_after_snapshot`); a league exploiter samples the pool like main but
  without ``latest_ratio``.
"""
from __future__ import annotations

import collections
import copy
import csv
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from spade_rllib.core import ratings
from spade_rllib.league.league_config import LeagueConfig
from spade_rllib.league.member_ids import MAIN, RANDOM, MemberId, Role, learner_ids
from spade_rllib.league.match_plan import MatchPlan, PlanEntry
from spade_rllib.league.sampling import (allocate_slots, mix_latest, normalise, pfsp_weights, reference_floor,
                                         win_rate_estimate)
from spade_rllib.core.outcome import DRAW, TEAM_LETTERS, EpisodeOutcome

STATE_VERSION = 1
MAX_EVENTS = 100
"""Snapshot / eviction events kept for logging."""
PLAN_SEED_BOUND = 2 ** 63 - 1
TABLE_COLUMNS = ("member", "rating", "games", "main_win_rate", "main_plan_p")
"""``main_plan_p``: main's current matchmaking probability of meeting the member (PFSP weights made visible)."""
LEGACY_TABLE_COLUMNS = ("member", "rating", "games", "main_win_rate")
"""league.csv as written before the plan column; still read."""
PAYOFF_COLUMN = {ratings.SCORE_WIN: 0, ratings.SCORE_DRAW: 1, ratings.SCORE_LOSS: 2}
"""Index into a payoff entry [wins, draws, losses] for each score."""

WeightsDict = Mapping[str, np.ndarray]


@dataclass
class Member:
    """A league member and, for frozen snapshots, its weights (read-only numpy arrays)."""

    id: MemberId
    created_at: int
    """Iteration at which it joined the league."""
    weights: dict[str, np.ndarray] | None = None
    """Numpy state dict of the frozen policy; None for learners, random and bots."""


def _frozen(weights: WeightsDict) -> dict[str, np.ndarray]:
    """A read-only copy of a numpy state dict (a frozen member's weights)."""
    frozen = {}
    for name, value in weights.items():
        array = np.array(value, copy=True)
        array.setflags(write=False)
        frozen[str(name)] = array
    return frozen


@dataclass
class LeagueState:
    """Everything the league remembers; ``League.state_dict`` serialises exactly this."""

    members: dict[MemberId, Member] = field(default_factory=dict)
    """Insertion order = join order. Learners, random and snapshots."""
    elo: dict[MemberId, float] = field(default_factory=dict)
    """Online Elo per member (points)."""
    skill: dict[MemberId, tuple[float, float]] = field(default_factory=dict)
    """OpenSkill (mu, sigma) per member; only kept when ``rating == 'openskill'``."""
    payoff: dict[tuple[MemberId, MemberId], list[int]] = field(default_factory=dict)
    """(player, opponent) -> [wins, draws, losses] of player, as recorded (one direction per game).
    Kept for evicted members too."""
    recent: dict[MemberId, collections.deque] = field(default_factory=dict)
    """Learner -> its last ``window`` scores against other members (snapshot rule); cleared at its snapshots."""
    recent_vs: dict[tuple[MemberId, MemberId], collections.deque] = field(default_factory=dict)
    """(learner, member) -> the learner's last ``pfsp_window`` scores against that member (PFSP)."""
    snapshot_count: dict[MemberId, int] = field(default_factory=dict)
    """Learner -> snapshot generations handed out so far."""
    last_snapshot_iteration: dict[MemberId, int] = field(default_factory=dict)
    """Learner -> iteration of its last snapshot (start iteration before the first)."""
    counters: dict[str, int] = field(default_factory=dict)
    """games, stale_games (against members no longer in the league), snapshots, evictions, plans."""
    events: collections.deque = field(default_factory=lambda: collections.deque(maxlen=MAX_EVENTS))
    """Recent {'iteration', 'kind': 'snapshot'|'eviction', 'member'} records."""
    meta_payoff: dict[tuple[MemberId, MemberId], float] = field(default_factory=dict)
    """(a, b) -> a's score rate against b in [0, 1] (draws half) for the meta-game among members (``sampling:
    nash``): when a learner is frozen, its recent PFSP-window rates against the pool become its snapshot's
    row (the snapshot holds the weights those games were played with); `League.set_meta_payoff` may
    overwrite an entry with an exact value. Both directions are stored (b's entry is 1 - a's)."""
    slots: tuple[MemberId | None, ...] = ()
    """The last plan's opponent slot assignment (kept so slots change as little as possible)."""
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    """Matchmaking RNG (plan seeds, slot allocation)."""


COUNTER_NAMES = ("games", "stale_games", "snapshots", "evictions", "plans")


def is_reference(member: MemberId) -> bool:
    """A fixed reference opponent (random or a scripted bot): never changes, never evicted."""
    return member.role in (Role.RANDOM, Role.BOT)


class League:
    """Pure-python league core. See the module docstring for the conventions."""

    def __init__(self, config: LeagueConfig | None = None, seed: int = 0, start_iteration: int = 0):
        self.config = config or LeagueConfig()
        self._rater = ratings.OpenSkillRater(self.config.openskill_model) if self.config.rating == "openskill" \
            else None
        self.state = LeagueState(rng=np.random.default_rng(seed))
        self._coplayer: tuple[dict[MemberId, float], float] = ({}, 0.0)  # set_coplayer_priority
        self.state.counters = {name: 0 for name in COUNTER_NAMES}
        for learner in self._learner_ids():
            self._add_member(Member(learner, start_iteration))
            self.state.recent[learner] = collections.deque(maxlen=self.config.window)
            self.state.snapshot_count[learner] = 0
            self.state.last_snapshot_iteration[learner] = start_iteration
        if self.config.include_random:
            self._add_member(Member(RANDOM, start_iteration))
        for name in self.config.bots:
            self._add_member(Member(MemberId.bot(name), start_iteration))

    # ------------------------------------------------------------------------------------------
    # members
    # ------------------------------------------------------------------------------------------
    def _learner_ids(self) -> list[MemberId]:
        return learner_ids(self.config.main_exploiters, self.config.league_exploiters)

    def _add_member(self, member: Member, rating_from: MemberId | None = None) -> None:
        self.state.members[member.id] = member
        if rating_from is None:
            self.state.elo[member.id] = float(self.config.elo_initial)
            if self._rater is not None:
                self.state.skill[member.id] = self._rater.initial()
        else:
            self.state.elo[member.id] = self.state.elo[rating_from]
            if self._rater is not None:
                self.state.skill[member.id] = self.state.skill[rating_from]

    def learners(self) -> list[MemberId]:
        """Trainable members: main, then main exploiters, then league exploiters."""
        return [m for m in self.state.members if m.is_learner]

    def members(self) -> list[MemberId]:
        """All current members in join order."""
        return list(self.state.members)

    def pool(self) -> list[MemberId]:
        """Frozen members opponents are drawn from (random and snapshots), join order."""
        return [m for m in self.state.members if m.is_frozen]

    def snapshots(self) -> list[MemberId]:
        """Frozen members that hold weights, join order."""
        return [m for m in self.state.members if m.has_weights]

    def newest_snapshot(self, learner: MemberId = MAIN) -> MemberId | None:
        own = [m for m in self.snapshots() if m.learner == learner]
        return max(own, key=lambda m: m.generation) if own else None

    def weights(self, member: MemberId) -> WeightsDict:
        """The frozen weights of a snapshot (read-only arrays)."""
        record = self.state.members.get(member)
        if record is None or record.weights is None:
            raise KeyError(f"{member} holds no weights in this league; snapshots: "
                           f"{', '.join(map(str, self.snapshots())) or 'none'}")
        return record.weights

    def rating(self, member: MemberId) -> float:
        """The configured rating: Elo points, or OpenSkill mu."""
        if self._rater is not None:
            return self.state.skill[member][0]
        return self.state.elo[member]

    # ------------------------------------------------------------------------------------------
    # results
    # ------------------------------------------------------------------------------------------
    def record(self, outcome: EpisodeOutcome | Mapping[str, Any]) -> bool:
        """Record one episode's `EpisodeOutcome` (or a dict in its vocabulary); False if it is no league
        game (no opponent, or no learner seat). The learner's score comes from `learner_score`; the
        opponent (a member id string) and the learner (default main) name the payoff cell."""
        outcome = EpisodeOutcome.of(outcome)
        if outcome.opponent is None or outcome.learner_team is None:
            return False
        if outcome.winner not in (*TEAM_LETTERS[:2], DRAW):  # league games are two-sided
            raise ValueError(f"outcome winner = {outcome.winner!r} is not valid; allowed: 'A', 'B', 'draw'")
        score = {"win": ratings.SCORE_WIN, "draw": ratings.SCORE_DRAW, "loss": ratings.SCORE_LOSS}[outcome.learner_result]
        self.record_result(MemberId.parse(outcome.learner), MemberId.parse(outcome.opponent), score)
        return True

    def record_many(self, outcomes: Iterable[Mapping[str, Any]]) -> int:
        """Record several outcome records; returns how many were league games."""
        return sum(self.record(outcome) for outcome in outcomes)

    def record_result(self, player: MemberId, opponent: MemberId, score: float) -> None:
        """Record one game between two members, ``score`` from ``player``'s view (1 / 0.5 / 0)."""
        score = float(score)
        if score not in (ratings.SCORE_WIN, ratings.SCORE_DRAW, ratings.SCORE_LOSS):
            raise ValueError(f"score = {score!r} is not valid; allowed: 1.0 win, 0.5 draw, 0.0 loss")
        state = self.state
        counts = state.payoff.setdefault((player, opponent), [0, 0, 0])
        counts[PAYOFF_COLUMN[score]] += 1
        state.counters["games"] += 1
        if player not in state.members or opponent not in state.members:
            state.counters["stale_games"] += 1
            return
        if opponent.is_learner and player.is_frozen:
            player, opponent, score = opponent, player, 1.0 - score
        if not player.is_learner or player == opponent:
            return
        state.recent[player].append(score)
        state.recent_vs.setdefault((player, opponent), collections.deque(maxlen=self.config.pfsp_window)
                                   ).append(score)
        if opponent.is_frozen:
            self._rate(player, opponent, score)

    def _rate(self, player: MemberId, opponent: MemberId, score: float) -> None:
        state = self.state
        state.elo[player], state.elo[opponent] = ratings.elo_update(
            state.elo[player], state.elo[opponent], score, self.config.elo_k)
        if self._rater is not None:
            state.skill[player], state.skill[opponent] = self._rater.rate(
                state.skill[player], state.skill[opponent], score)

    def payoff(self, player: MemberId, opponent: MemberId) -> tuple[int, int, int]:
        """(wins, draws, losses) of ``player`` against ``opponent`` over the whole run, both directions."""
        forward = self.state.payoff.get((player, opponent), [0, 0, 0])
        backward = self.state.payoff.get((opponent, player), [0, 0, 0])
        return forward[0] + backward[2], forward[1] + backward[1], forward[2] + backward[0]

    def win_rate(self, learner: MemberId = MAIN, opponent: MemberId | None = None) -> float | None:
        """Recent win rate (draws half) of ``learner``: over its snapshot window, or against ``opponent``
        over the PFSP window. None without games."""
        scores = self.state.recent[learner] if opponent is None else self.state.recent_vs.get((learner, opponent))
        return float(np.mean(scores)) if scores else None

    # ------------------------------------------------------------------------------------------
    # snapshots
    # ------------------------------------------------------------------------------------------
    def snapshot_reason(self, iteration: int, learner: MemberId = MAIN) -> str | None:
        """'every_n_iterations' or 'win_rate_threshold' if the learner should be frozen now, else None."""
        config = self.config
        since = iteration - self.state.last_snapshot_iteration[learner]
        if since < config.min_iterations_between:
            return None
        if config.every_n_iterations is not None and since >= config.every_n_iterations:
            return "every_n_iterations"
        recent = self.state.recent[learner]
        if (config.win_rate_threshold is not None and len(recent) >= config.window
                and float(np.mean(recent)) >= config.win_rate_threshold):
            return "win_rate_threshold"
        return None

    def should_snapshot(self, iteration: int, learner: MemberId = MAIN) -> bool:
        """Snapshot rule: win rate over the last ``window`` games >= threshold, and/or every N
        iterations; never within ``min_iterations_between`` of the previous snapshot."""
        return self.snapshot_reason(iteration, learner) is not None

    def resets_after_snapshot(self, learner: MemberId) -> bool:
        """True for main exploiters: the glue re-initialises their weights after each snapshot."""
        return learner.role is Role.MAIN_EXPLOITER

    def add_snapshot(self, weights: WeightsDict, iteration: int, learner: MemberId = MAIN) -> MemberId:
        """Freeze ``weights`` (numpy state dict of ``learner``) as a new member; evict if over ``max_size``."""
        state = self.state
        reason, generation = self._next_snapshot(iteration, learner)
        member = learner.snapshot_of(generation)
        for opponent in self.pool():  # the new snapshot's meta-game row: its learner's recent rates
            scores = state.recent_vs.get((learner, opponent), ())
            if scores:
                self.set_meta_payoff(member, opponent, float(np.mean(scores)))
        self._add_member(Member(member, iteration, _frozen(weights)), rating_from=learner)
        self._mark_snapshot(iteration, learner, generation)
        state.counters["snapshots"] += 1
        state.events.append({"iteration": iteration, "kind": "snapshot", "member": str(member),
                             "reason": reason})
        if self.resets_after_snapshot(learner):
            self._reset_learner(learner)
        while len(self.snapshots()) > self.config.max_size:
            self._evict(self._eviction_candidate(protect=member), iteration)
        return member

    def _next_snapshot(self, iteration: int, learner: MemberId) -> tuple[str, int]:
        """(why, generation) of ``learner``'s next snapshot; refuses a member that is not a learner."""
        if learner not in self.state.recent:
            raise ValueError(f"{learner} is not a learner of this league; learners: "
                             f"{', '.join(map(str, self.learners()))}")
        return self.snapshot_reason(iteration, learner) or "requested", self.state.snapshot_count[learner] + 1

    def _mark_snapshot(self, iteration: int, learner: MemberId, generation: int) -> None:
        state = self.state
        state.snapshot_count[learner] = generation
        state.last_snapshot_iteration[learner] = iteration
        state.recent[learner].clear()

    def note_snapshot(self, iteration: int, learner: MemberId = MAIN) -> int:
        """A snapshot of ``learner`` whose weights join another league (a role game: the other role's pool,
        :meth:`add_frozen`): only the learner's bookkeeping here (generation, last snapshot iteration, its
        window cleared, an event). Returns the snapshot's generation."""
        reason, generation = self._next_snapshot(iteration, learner)
        self._mark_snapshot(iteration, learner, generation)
        self.state.events.append({"iteration": iteration, "kind": "snapshot_out",
                             "member": str(learner.snapshot_of(generation)), "reason": reason})
        return generation

    def add_frozen(self, weights: WeightsDict, iteration: int, generation: int) -> MemberId:
        """A frozen opponent from another league joins this pool as snapshot ``generation`` (a role game:
        the other role's main, frozen by that league's :meth:`note_snapshot`), at main's rating; evicts
        over ``max_size`` like :meth:`add_snapshot`."""
        member = MemberId.snapshot(int(generation))
        if member in self.state.members:
            raise ValueError(f"{member} is already a member of this league")
        self._add_member(Member(member, iteration, _frozen(weights)), rating_from=MAIN)
        self.state.counters["snapshots"] += 1
        self.state.events.append({"iteration": iteration, "kind": "snapshot", "member": str(member), "reason": "opponent"})
        while len(self.snapshots()) > self.config.max_size:
            self._evict(self._eviction_candidate(protect=member), iteration)
        return member

    def _reset_learner(self, learner: MemberId) -> None:
        self.state.elo[learner] = float(self.config.elo_initial)
        if self._rater is not None:
            self.state.skill[learner] = self._rater.initial()
        for key in [k for k in self.state.recent_vs if k[0] == learner]:
            del self.state.recent_vs[key]

    def _eviction_candidate(self, protect: MemberId) -> MemberId:
        order = {m: i for i, m in enumerate(self.state.members)}
        first = MemberId.snapshot(1)
        candidates = [m for m in self.snapshots()
                      if m != protect and not (self.config.keep_first and m == first)]
        if self.config.eviction == "lowest_rated":
            return min(candidates, key=lambda m: (self.rating(m), order[m]))
        return min(candidates, key=lambda m: (self.state.members[m].created_at, order[m]))

    def _evict(self, member: MemberId, iteration: int) -> None:
        state = self.state
        del state.members[member]
        del state.elo[member]
        state.skill.pop(member, None)
        for key in [k for k in state.recent_vs if k[1] == member]:
            del state.recent_vs[key]
        state.counters["evictions"] += 1
        state.events.append({"iteration": iteration, "kind": "eviction", "member": str(member), "reason":
                             self.config.eviction})

    # ------------------------------------------------------------------------------------------
    # matchmaking
    # ------------------------------------------------------------------------------------------
    def set_meta_payoff(self, member: MemberId, opponent: MemberId, score: float) -> None:
        """``member``'s score rate against ``opponent`` in the meta-game (``opponent`` gets 1 - score)."""
        score = float(score)
        if not 0.0 <= score <= 1.0:  # NaN fails too
            raise ValueError(f"meta payoff score = {score!r}: out of range, allowed a number in [0, 1]")
        self.state.meta_payoff[(member, opponent)] = score
        self.state.meta_payoff[(opponent, member)] = 1.0 - score

    def meta_game(self, members: list[MemberId] | None = None) -> np.ndarray:
        """The zero-sum meta-game among ``members`` (default: the pool): ``A[i, j] = 2 p_ij - 1`` from the
        score rates of `set_meta_payoff` (0, an even game, where no rate is known; 0 on the diagonal)."""
        members = self.pool() if members is None else list(members)
        payoff = np.zeros((len(members), len(members)))
        for i, a in enumerate(members):
            for j, b in enumerate(members):
                rate = self.state.meta_payoff.get((a, b))
                if i != j and rate is not None:
                    payoff[i, j] = 2.0 * rate - 1.0
        return payoff

    def nash_distribution(self, members: list[MemberId] | None = None) -> dict[MemberId, float]:
        """The Nash equilibrium of `meta_game` over ``members`` (default: the pool), PSRO's meta-strategy."""
        from spade_rllib.league.nash import zero_sum_nash

        members = self.pool() if members is None else list(members)
        if not members:
            return {}
        strategy = zero_sum_nash(self.meta_game(members)).strategy
        return {m: float(p) for m, p in zip(members, strategy)}

    def _pool_distribution(self, learner: MemberId, pool: list[MemberId]) -> np.ndarray:
        if self.config.sampling == "uniform":
            return np.full(len(pool), 1.0 / len(pool))
        if self.config.sampling == "nash":
            nash = self.nash_distribution(pool)
            return np.array([nash[m] for m in pool])
        rates = []
        for member in pool:
            scores = self.state.recent_vs.get((learner, member), ())
            rates.append(win_rate_estimate(float(sum(scores)), len(scores), self.config.pfsp_prior_games))
        weighting = self.config.pfsp_weighting if learner == MAIN else self.config.exploiter_pfsp_weighting
        return normalise(pfsp_weights(rates, weighting))

    def set_coplayer_priority(self, priority: Mapping[MemberId, float] | None, mix: float) -> None:
        """Co-player weights from outside (the joint curriculum's regret per co-player) that main's
        pool distribution mixes in: ``(1 - mix) * (PFSP + latest) + mix * priority`` (renormalised over
        the pool members it names), before ``reference_floor`` and ``self_play_ratio``. Not part of
        the league's state: the curriculum owns it and hands it over before every plan."""
        if not 0.0 <= float(mix) <= 1.0:
            raise ValueError(f"co-player mix = {mix!r}: out of range, allowed a number in [0, 1]")
        self._coplayer = (dict(priority or {}), float(mix))

    def opponent_distribution(self, learner: MemberId = MAIN) -> dict[MemberId, float]:
        """This iteration's opponent probabilities for ``learner`` (before mapping onto slots)."""
        if learner.role is Role.MAIN_EXPLOITER:
            return {MAIN: 1.0}
        pool = self.pool()
        if not pool:
            return {MAIN: 1.0}
        probabilities = self._pool_distribution(learner, pool)
        if learner == MAIN:
            newest = self.newest_snapshot(MAIN)
            probabilities = mix_latest(probabilities, None if newest is None else pool.index(newest),
                                       self.config.latest_ratio)
            priority, mix = self._coplayer
            regret = np.array([float(priority.get(m, 0.0)) for m in pool])
            if mix > 0 and regret.sum() > 0:
                probabilities = (1.0 - mix) * normalise(probabilities) + mix * regret / regret.sum()
        probabilities = reference_floor(probabilities, [is_reference(m) for m in pool], self.config.reference_floor)
        mirror = self.config.self_play_ratio if learner == MAIN else 0.0
        if mirror > 0:  # main against itself (the runner's "mirror"), the pool shares the rest
            out = {member: float(p) * (1.0 - mirror) for member, p in zip(pool, probabilities) if p > 0}
            return {MAIN: mirror, **out}
        return {member: float(p) for member, p in zip(pool, probabilities) if p > 0}

    def learner_shares(self) -> dict[MemberId, float]:
        """Share of episodes each learner plays: equal."""
        learners = self.learners()
        return {learner: 1.0 / len(learners) for learner in learners}

    def plan(self, iteration: int) -> MatchPlan:
        """Make this iteration's matchmaking plan (advances the league RNG)."""
        shares = self.learner_shares()
        distributions = {learner: self.opponent_distribution(learner) for learner in shares}
        weighted_mass: dict[MemberId, float] = {}
        for learner, distribution in distributions.items():
            for member, p in distribution.items():
                if member.has_weights:
                    weighted_mass[member] = weighted_mass.get(member, 0.0) + shares[learner] * p
        slots, scale = self._assign_slots(weighted_mass)
        entries = []
        for learner, distribution in distributions.items():
            for member, p in distribution.items():
                if not member.has_weights:
                    entries.append(PlanEntry(learner, member, None, shares[learner] * p))
                    continue
                holding = [k for k, s in enumerate(slots) if s == member]
                for k in holding:
                    entries.append(PlanEntry(learner, member, k, shares[learner] * p * scale[member] / len(holding)))
        total = sum(e.probability for e in entries)
        entries = [PlanEntry(e.learner, e.opponent, e.opponent_slot, e.probability / total)
                   for e in entries if e.probability > 0]
        seed = int(self.state.rng.integers(PLAN_SEED_BOUND))
        self.state.slots = slots
        self.state.counters["plans"] += 1
        return MatchPlan(seed=seed, iteration=iteration, entries=tuple(entries), slots=slots)

    def _assign_slots(self, weighted_mass: dict[MemberId, float]
                      ) -> tuple[tuple[MemberId | None, ...], dict[MemberId, float]]:
        """Map weighted opponents onto K slots; returns the slots and each member's probability scale.

        Up to K members: one slot each, scale 1 (the plan is exactly the distribution). More: slot
        counts by unbiased residual resampling, scale count / expected count, so the expected
        per-episode probability over iterations is exactly the distribution (for one learner).
        """
        num_slots = self.config.num_opponent_slots
        members = list(weighted_mass)
        if len(members) <= num_slots:
            counts = {m: 1 for m in members}
            scale = {m: 1.0 for m in members}
        else:
            masses = np.array([weighted_mass[m] for m in members])
            allocated = allocate_slots(masses, num_slots, self.state.rng)
            expected = num_slots * masses / masses.sum()
            counts = {m: int(c) for m, c in zip(members, allocated) if c > 0}
            scale = {m: counts.get(m, 0) / e for m, e in zip(members, expected)}
        return self._arrange(counts, num_slots), scale

    def _arrange(self, counts: dict[MemberId, int], num_slots: int) -> tuple[MemberId | None, ...]:
        """Place members into slots, keeping each in the slot it held last plan where possible."""
        slots: list[MemberId | None] = [None] * num_slots
        left = dict(counts)
        for k, previous in enumerate(self.state.slots[:num_slots]):
            if previous is not None and left.get(previous, 0) > 0:
                slots[k] = previous
                left[previous] -= 1
        free = iter(k for k in range(num_slots) if slots[k] is None)
        for member, count in left.items():
            for _ in range(count):
                slots[next(free)] = member
        return tuple(slots)

    def slot_weights(self, plan: MatchPlan) -> list[WeightsDict | None]:
        """Weights to load into each env-runner opponent slot for ``plan`` (None: leave empty)."""
        return [None if member is None else self.weights(member) for member in plan.slots]

    # ------------------------------------------------------------------------------------------
    # reporting
    # ------------------------------------------------------------------------------------------
    def games(self, member: MemberId) -> int:
        """Recorded games involving ``member`` (all opponents, whole run)."""
        return sum(sum(counts) for (a, b), counts in self.state.payoff.items() if member in (a, b) and a != b)

    def main_win_rate_vs(self, member: MemberId) -> float | None:
        """Main's whole-run score rate against ``member`` (draws half); None without games."""
        wins, draws, losses = self.payoff(MAIN, member)
        played = wins + draws + losses
        return (wins + ratings.SCORE_DRAW * draws) / played if played else None

    def metrics(self) -> dict[str, float]:
        """Flat ``league/...`` metrics (floats; NaN where there are no games yet, so columns exist early)."""
        state = self.state
        out: dict[str, float] = {
            "league/size": float(len(self.pool())),
            "league/snapshots": float(len(self.snapshots())),
            "league/snapshots_total": float(state.counters["snapshots"]),
            "league/evictions_total": float(state.counters["evictions"]),
            "league/games_total": float(state.counters["games"]),
            "league/stale_games_total": float(state.counters["stale_games"]),
            "league/main_rating": float(self.rating(MAIN)),
            "league/last_snapshot_iteration": float(state.last_snapshot_iteration[MAIN]),
        }
        main_rate = self.win_rate(MAIN)
        out["league/main_win_rate"] = math.nan if main_rate is None else main_rate
        for learner in self.learners():  # exploiters: their snapshot-rule win rate and snapshot count
            if learner != MAIN:
                rate = self.win_rate(learner)
                out[f"league/learner/{learner}/win_rate"] = math.nan if rate is None else rate
                out[f"league/learner/{learner}/snapshots"] = float(state.snapshot_count[learner])
        for member in self.members():
            if member == MAIN:
                continue
            out[f"league/rating/{member}"] = float(self.rating(member))
            out[f"league/games_vs/{member}"] = float(sum(self.payoff(MAIN, member)))
            rate = self.win_rate(MAIN, member)
            out[f"league/win_rate_vs/{member}"] = math.nan if rate is None else rate
        return out

    def events(self) -> list[dict[str, Any]]:
        """Recent snapshot and eviction events (oldest first)."""
        return [dict(e) for e in self.state.events]

    def table(self) -> list[dict[str, Any]]:
        """League table rows, best rated first: member, rating, games, main_win_rate (None for main) and
        main_plan_p, main's current probability of meeting the member (0 outside the pool; for main itself
        the mirror share)."""
        plan = self.opponent_distribution(MAIN)
        rows = [{"member": str(m), "rating": float(self.rating(m)), "games": self.games(m),
                 "main_win_rate": None if m == MAIN else self.main_win_rate_vs(m),
                 "main_plan_p": float(plan.get(m, 0.0))} for m in self.members()]
        return sorted(rows, key=lambda row: -row["rating"])

    def write_table_csv(self, path) -> None:
        """Write :meth:`table` as ``league.csv`` (empty cell where a value is None)."""
        write_table_rows(path, self.table())

    # ------------------------------------------------------------------------------------------
    # checkpointing
    # ------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain data (str keys, lists, floats, ints, numpy weight arrays); round-trips exactly.

        Weight arrays are the league's own read-only arrays, not copies.
        """
        state = self.state
        return {
            "version": STATE_VERSION,
            "config": self.config.to_dict(),
            "members": [{"id": str(m.id), "created_at": m.created_at,
                         "weights": None if m.weights is None else dict(m.weights)}
                        for m in state.members.values()],
            "elo": {str(m): r for m, r in state.elo.items()},
            "skill": {str(m): list(s) for m, s in state.skill.items()},
            "payoff": [[str(a), str(b), *counts] for (a, b), counts in state.payoff.items()],
            "recent": {str(m): list(scores) for m, scores in state.recent.items()},
            "recent_vs": [[str(a), str(b), list(scores)] for (a, b), scores in state.recent_vs.items()],
            "snapshot_count": {str(m): n for m, n in state.snapshot_count.items()},
            "last_snapshot_iteration": {str(m): n for m, n in state.last_snapshot_iteration.items()},
            "counters": dict(state.counters),
            "events": [dict(e) for e in state.events],
            "slots": [None if s is None else str(s) for s in state.slots],
            "meta_payoff": [[str(a), str(b), p] for (a, b), p in state.meta_payoff.items()],
            "rng": copy.deepcopy(state.rng.bit_generator.state),
        }

    def load_state_dict(self, data: Mapping[str, Any]) -> None:
        """Restore from :meth:`state_dict` output (the config stays this league's own)."""
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"league state version {data.get('version')!r} is not supported; expected "
                             f"{STATE_VERSION}")
        parse = MemberId.parse
        state = LeagueState()
        for record in data["members"]:
            weights = None
            if record["weights"] is not None:
                weights = {}
                for name, value in record["weights"].items():
                    array = np.array(value, copy=True)
                    array.setflags(write=False)
                    weights[name] = array
            member = Member(parse(record["id"]), int(record["created_at"]), weights)
            state.members[member.id] = member
        state.elo = {parse(m): float(r) for m, r in data["elo"].items()}
        state.skill = {parse(m): (float(s[0]), float(s[1])) for m, s in data["skill"].items()}
        state.payoff = {(parse(a), parse(b)): [int(w), int(d), int(l)] for a, b, w, d, l in data["payoff"]}
        state.recent = {parse(m): collections.deque(map(float, s), maxlen=self.config.window)
                        for m, s in data["recent"].items()}
        state.recent_vs = {(parse(a), parse(b)): collections.deque(map(float, s), maxlen=self.config.pfsp_window)
                           for a, b, s in data["recent_vs"]}
        state.snapshot_count = {parse(m): int(n) for m, n in data["snapshot_count"].items()}
        state.last_snapshot_iteration = {parse(m): int(n) for m, n in data["last_snapshot_iteration"].items()}
        state.counters = {name: int(data["counters"].get(name, 0)) for name in COUNTER_NAMES}
        state.events = collections.deque((dict(e) for e in data["events"]), maxlen=MAX_EVENTS)
        state.slots = tuple(None if s is None else parse(s) for s in data["slots"])
        state.meta_payoff = {(parse(a), parse(b)): float(p) for a, b, p in data.get("meta_payoff", ())}
        state.rng = np.random.default_rng(0)  # state overwritten next line
        state.rng.bit_generator.state = copy.deepcopy(data["rng"])
        if self._rater is not None and not state.skill:
            state.skill = {m: self._rater.initial() for m in state.members}
        self.state = state


def write_table_rows(path, rows: list[Mapping[str, Any]]) -> None:
    """Write league table rows (:meth:`League.table`, members maybe renamed) as a ``league.csv``."""
    from spade_rllib.artifacts.atomic_io import atomic_open

    with atomic_open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=TABLE_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in TABLE_COLUMNS})


def format_table(rows: list[Mapping[str, Any]]) -> str:
    """The league table as aligned text (rows from `League.table()` or read back from league.csv)."""
    lines = [f"{'member':<24} {'rating':>8} {'games':>7} {'main_win_rate':>14} {'main_plan_p':>12}"]
    for row in rows:
        rate, plan = row.get("main_win_rate"), row.get("main_plan_p")
        rate_text = "-" if rate in (None, "") else f"{float(rate):.3f}"
        plan_text = "-" if plan in (None, "") else f"{float(plan):.3f}"
        lines.append(f"{str(row['member']):<24} {float(row['rating']):>8.1f} {int(float(row['games'])):>7d} "
                     f"{rate_text:>14} {plan_text:>12}")
    return "\n".join(lines)


def read_table(path) -> list[dict]:
    """Rows of a `league.csv` (strings, as written)."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) not in (TABLE_COLUMNS, LEGACY_TABLE_COLUMNS):
            raise ValueError(f"{path}: columns {reader.fieldnames} are not {list(TABLE_COLUMNS)}")
        return list(reader)
