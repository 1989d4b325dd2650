"""RLlib glue for the league: the driver component (`spade_rllib.rllib.components`) around `League`.

`make_component(run_config, env_info)` returns a `LeagueComponent` when `league.enabled` is true.
`SpadePPO` calls it once per training iteration, after PPO's sample -> learn -> weight sync:

1. **Results in.** `update(outcomes, ctx)` feeds every `EpisodeOutcome` (spade_rllib/outcome.py)
   to `League.record`. The env runner already names the member behind an opponent slot (the
   member that sat in the slot when the episode *started*); opponent ids are translated by
   `league_member_of`: `main_v3` -> that snapshot, `random` -> `random`, `mirror` -> `main`
   (scored in the payoff, rates nobody). Ignored, and counted in `league/ignored_games_total`:
   single-agent records (`opponent` None), scripted bots that are not in `league.bots`, and episodes whose
   slot was reloaded with another member while they ran (`opponent_swapped`: two policies played
   that seat, so the result belongs to neither).
2. **Snapshot.** For every learner (main, then the exploiters): `snapshot_reason(iteration,
   learner)` -> `add_snapshot(ctx.weights_of(learner), iteration, learner)`: the learner's numpy
   state dict from the RLlib Learner, stored once, on the driver. A main exploiter is then reset
   (`ctx.reset_module(learner, seed)`: seeded fresh weights and optimizer state).
3. **Plan.** `League.plan(iteration)` -> an `OpponentPlan` for the env runners (`plan_to_opponent_plan`:
   each entry names its learner module; a snapshot in slot k -> `slot_<k>`, random -> `random`,
   the learner itself -> `mirror`, another live learner -> `live:<module>`) and the weights of
   the slots whose member changed. Unchanged slots send nothing; `runner_update(full=True)` (runner
   restart, restore) sends every slot. The per-episode draw on the runners is
   `OpponentPlan.pick(key)`, a pure function of the plan's seed and the episode key; main's seat
   alternates between consecutive episodes of an env copy, so it plays both seats equally.
4. **Metrics.** `League.metrics()` (size, main's rating and win rates, ratings and games per
   member) plus this iteration's matchup counts (`league/matchups/<member>`), planned opponent
   probabilities (`league/plan/<member>`), snapshot/eviction events and `league/slot_loads`
   (slot weights sent to the runners this session: the bandwidth the league costs).

Checkpoints: `state_dict()` = the league's state (weights, ratings, payoff, RNG, counters) + the
current plan; `load_state_dict()` restores both exactly, so a restored run sends the same plan and
makes the same next decisions. At the end of a run `finish(trial_dir)` writes `league.csv`
(member, rating, games, main_win_rate) and logs the table (`spade_rllib.league.format_table`).

No Ray import here: the component is plain Python and is unit-tested without Ray.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from spade_rllib.checkpoint_layout import LEAGUE_CORE_KEY, LEAGUE_CSV
from spade_rllib.config import ConfigError, RunConfig
from spade_rllib.league.league_config import LeagueConfig
from spade_rllib.league.ids import MAIN, RANDOM, MemberId, Role
from spade_rllib.league.league import League, format_table
from spade_rllib.league.match_plan import MatchPlan
from spade_rllib.outcome import EpisodeOutcome
from spade_rllib.rllib.components import COPLAYER_PRIORITY, DriverContext, EnvInfo
from spade_rllib.rllib.plan import BOT_PREFIX, LIVE_PREFIX, MIRROR, SLOT_PREFIX, DriverUpdate, OpponentPlan, slot_id
from spade_rllib.rllib.plan import RANDOM as RUNNER_RANDOM

logger = logging.getLogger(__name__)

START_ITERATION = 0
"""Iteration the first plan is made for (before any training)."""
SEED_SALT = 0x1EA6E
"""Mixed into the experiment seed so the league's RNG differs from the other seeded streams."""


# ----------------------------------------------------------------------------------------------
# id translation (structured ids both ways; strings only at the runner boundary)
# ----------------------------------------------------------------------------------------------
def league_member_of(opponent: Any) -> Optional[MemberId]:
    """The league member an outcome record's `opponent` names, or None when it is no league game."""
    if opponent is None:
        return None
    if isinstance(opponent, MemberId):
        return opponent
    text = str(opponent)
    if text == MIRROR:
        return MAIN
    if text.startswith(LIVE_PREFIX):
        text = text[len(LIVE_PREFIX):]
    if text.startswith(BOT_PREFIX) or text.startswith(SLOT_PREFIX):
        return None  # bots are not league members; a bare slot id has lost its member
    try:
        return MemberId.parse(text)
    except ValueError:
        return None


def runner_opponent_id(member: MemberId, slot: Optional[int], learner: MemberId = MAIN) -> str:
    """The env runner's opponent id for a plan entry of `learner`."""
    if slot is not None:
        return slot_id(slot)
    if member == RANDOM:
        return RUNNER_RANDOM
    if member.is_learner:
        return MIRROR if member == learner else f"{LIVE_PREFIX}{member}"
    if member.role is Role.BOT:
        return f"{BOT_PREFIX}{member.name}"
    raise ValueError(f"plan entry for {member} has no weight slot and is not random, a learner or a bot")


def plan_to_opponent_plan(plan: MatchPlan, version: int) -> OpponentPlan:
    """The runner-side `OpponentPlan` of a league `MatchPlan` (learners are RLlib module ids)."""
    probabilities: dict[tuple[str, str], float] = {}
    for entry in plan.entries:
        key = (str(entry.learner), runner_opponent_id(entry.opponent, entry.opponent_slot, entry.learner))
        probabilities[key] = probabilities.get(key, 0.0) + entry.probability
    total = sum(probabilities.values())
    return OpponentPlan(entries=tuple((lrn, opp, p / total) for (lrn, opp), p in probabilities.items()),
                        seed=int(plan.seed), version=int(version))


def reset_seed(seed: int, learner: MemberId, generation: int) -> int:
    """Seed of a learner's fresh weights after its snapshot `generation` (deterministic across restores)."""
    role = list(Role).index(learner.role)
    return int(np.random.SeedSequence([seed, role, learner.index, generation]).generate_state(1)[0])


# ----------------------------------------------------------------------------------------------
# the component
# ----------------------------------------------------------------------------------------------
class LeagueComponent:
    """Driver component owning the `League` (see the module docstring)."""

    name = "league"

    def __init__(self, config: LeagueConfig, seed: int = 0):
        self.league = League(config, seed=seed, start_iteration=START_ITERATION)
        self.seed = int(seed)
        self.num_slots = config.num_opponent_slots
        self.counters = {"ignored_games": 0, "swapped_games": 0}  # checkpointed
        self.slot_loads = 0  # weights sent to the runners in this session (not checkpointed: transport only)
        # Slots as the env runners hold them (None: nothing loaded there by us).
        self._runner_slots: list[Optional[MemberId]] = [None] * self.num_slots
        self._plan_sent = False
        self._reported: set[str] = set()  # members that have per-member metric keys
        self.set_plan(self.league.plan(START_ITERATION))

    # ------------------------------------------------------------------ plan
    def set_plan(self, plan: MatchPlan) -> None:
        """Use `plan` for the coming episodes (sent to the runners with the next broadcast)."""
        self.plan = MatchPlan.from_dict(plan.to_dict())  # plain floats/ints, as it comes back from a checkpoint
        self.opponent_plan = plan_to_opponent_plan(plan, self.league.state.counters["plans"])
        self._plan_sent = False

    def _changed_slots(self) -> list[int]:
        return [k for k, member in enumerate(self.plan.slots)
                if member is not None and member != self._runner_slots[k]]

    def runner_update(self, full: bool) -> Optional[DriverUpdate]:
        """The plan (when new) and the weights of slots whose member changed; everything when `full`."""
        slots = range(self.num_slots) if full else self._changed_slots()
        if not full and self._plan_sent and not slots:
            return None
        weights: dict[str, Any] = {}
        for k in slots:
            member = self.plan.slots[k] if k < len(self.plan.slots) else None
            if member is None:
                weights[slot_id(k)] = None
            else:
                weights[slot_id(k)] = {"member": str(member), "weights": self.league.weights(member)}
                self.slot_loads += 1
            self._runner_slots[k] = member
        self._plan_sent = True
        return DriverUpdate(opponent_plan=self.opponent_plan, slot_weights=weights or None)

    def _bot_member(self, opponent: Any) -> Optional[MemberId]:
        """`bot:<name>` -> that bot when it is in the league's pool (`league.bots`), else None."""
        text = str(opponent)
        if not text.startswith(BOT_PREFIX):
            return None
        member = MemberId.bot(text[len(BOT_PREFIX):])
        return member if member in self.league.state.members else None

    def _member_of_runner_id(self, opponent: str) -> Optional[MemberId]:
        """The league member behind an outcome's opponent id (`bot:rusher`, `main_v3`, `random`, `mirror`)."""
        return league_member_of(opponent) or self._bot_member(opponent)

    # ------------------------------------------------------------------ per iteration
    def record_outcomes(self, outcomes: list[EpisodeOutcome]) -> dict[MemberId, dict[MemberId, int]]:
        """Record the league games among `outcomes`; returns {learner: {opponent member: games}}."""
        counts: dict[MemberId, dict[MemberId, int]] = {}
        for outcome in map(EpisodeOutcome.of, outcomes):
            member = league_member_of(outcome.opponent) or self._bot_member(outcome.opponent)
            learner = league_member_of(outcome.learner)
            if member is None or learner is None or outcome.winner is None or outcome.learner_team is None:
                self.counters["ignored_games"] += 1
                continue
            if outcome.opponent_swapped:
                self.counters["swapped_games"] += 1
                self.counters["ignored_games"] += 1
                continue
            self.league.record(outcome.with_fields(opponent=str(member), learner=str(learner)))
            row = counts.setdefault(learner, {})
            row[member] = row.get(member, 0) + 1
        return counts

    def update(self, outcomes: list, ctx: DriverContext) -> dict:
        counts = self.record_outcomes(outcomes)
        iteration = int(ctx.iteration)
        events_before = self.league.state.counters["snapshots"], self.league.state.counters["evictions"]
        for learner in self.league.learners():
            reason = self.league.snapshot_reason(iteration, learner)
            if reason is None:
                continue
            member = self.league.add_snapshot(ctx.weights_of(str(learner)), iteration, learner)
            logger.info("league: iteration %d: snapshot %s (%s); %d snapshots, %s rating %.1f", iteration, member,
                        reason, len(self.league.snapshots()), learner, self.league.rating(member))
            if self.league.resets_after_snapshot(learner):
                if ctx.reset_module is None:
                    raise RuntimeError(f"{learner} must be reset after its snapshot, but the driver gave no reset_module")
                ctx.reset_module(str(learner), reset_seed(self.seed, learner, member.generation))
        coplayer = (ctx.extra or {}).get(COPLAYER_PRIORITY)
        if coplayer is not None:  # the joint curriculum's regret per co-player, as league members
            priority, mix = coplayer
            members = {self._member_of_runner_id(k): p for k, p in priority.items()}
            self.league.set_coplayer_priority({m: p for m, p in members.items() if m is not None}, mix)
        self.set_plan(self.league.plan(iteration))
        snapshots = self.league.state.counters["snapshots"] - events_before[0]
        evictions = self.league.state.counters["evictions"] - events_before[1]
        return self.metrics(counts, snapshots, evictions)

    # ------------------------------------------------------------------ metrics
    def metrics(self, counts: Optional[Mapping[MemberId, Mapping[MemberId, int]]] = None, snapshots: int = 0,
                evictions: int = 0) -> dict:
        out = self.league.metrics()
        counts = counts or {}
        out["league/games_this_iter"] = float(sum(sum(row.values()) for row in counts.values()))
        for learner in self.league.learners():
            if learner != MAIN:
                out[f"league/learner/{learner}/games_this_iter"] = float(sum(counts.get(learner, {}).values()))
        main_counts = counts.get(MAIN, {})
        out["league/snapshot_event"] = float(snapshots)
        out["league/eviction_event"] = float(evictions)
        out["league/ignored_games_total"] = float(self.counters["ignored_games"])
        out["league/swapped_games_total"] = float(self.counters["swapped_games"])
        out["league/slot_loads"] = float(self.slot_loads)
        newest = self.league.newest_snapshot(MAIN)
        out["league/latest_rating"] = math.nan if newest is None else float(self.league.rating(newest))
        rate = None if newest is None else self.league.win_rate(MAIN, newest)
        out["league/win_rate_vs_latest"] = math.nan if rate is None else rate
        # Main's view: its matchups this iteration and its planned opponent distribution (sums to 1).
        planned = {member: p for (learner, member), p in self.plan.probabilities().items() if learner == MAIN}
        main_share = sum(planned.values()) or 1.0
        planned = {member: p / main_share for member, p in planned.items()}
        for member in [*self.league.pool(), MAIN]:
            out[f"league/matchups/{member}"] = float(main_counts.get(member, 0))
            out[f"league/plan/{member}"] = float(planned.get(member, 0.0))
        # Members evicted since they were last reported: blank their per-member keys, because the
        # algorithm keeps the last value of every key it was ever given.
        current = {str(m) for m in self.league.members()}
        for name in sorted(self._reported - current):
            for group in ("rating", "win_rate_vs"):
                out[f"league/{group}/{name}"] = math.nan
            for group in ("matchups", "plan"):
                out[f"league/{group}/{name}"] = 0.0
        self._reported |= current
        return out

    def initial_metrics(self) -> dict:
        """Metrics before the first iteration (so progress.csv has the league columns from the start)."""
        return self.metrics()

    # ------------------------------------------------------------------ checkpoints, end of run
    def state_dict(self) -> dict:
        return {LEAGUE_CORE_KEY: self.league.state_dict(), "plan": self.plan.to_dict(), "counters": dict(self.counters),
                "reported": sorted(self._reported)}

    def load_state_dict(self, state: dict) -> None:
        self.league.load_state_dict(state[LEAGUE_CORE_KEY])
        self.counters = {k: int(state.get("counters", {}).get(k, 0)) for k in self.counters}
        self._reported = set(state.get("reported", ()))
        self._runner_slots = [None] * self.num_slots  # unknown after a restore: the next update sends all
        self.set_plan(MatchPlan.from_dict(state["plan"]))

    def table(self) -> list[dict]:
        return self.league.table()

    def finish(self, trial_dir) -> Optional[Path]:
        """End of run: write `league.csv` into `trial_dir` and log the final table."""
        if trial_dir is None:
            return None
        path = Path(trial_dir) / LEAGUE_CSV
        path.parent.mkdir(parents=True, exist_ok=True)
        self.league.write_table_csv(path)
        logger.info("final league table (%s):\n%s", path, format_table(self.table()))
        return path


def make_component(cfg: RunConfig, env_info: EnvInfo) -> Optional[LeagueComponent]:
    """The league component for `cfg`, or None when `league.enabled` is false."""
    if not cfg.league.enabled:
        return None
    if len(env_info.teams) < 2:
        raise ConfigError(f"league.enabled = true: env {env_info.env_id!r} has one team, so no opponent; turn the league off")
    return LeagueComponent(cfg.league.to_core(), seed=int(cfg.experiment.seed) ^ SEED_SALT)


__all__ = ["LEAGUE_CSV", "LeagueComponent", "league_member_of", "make_component", "plan_to_opponent_plan",
           "runner_opponent_id"]
