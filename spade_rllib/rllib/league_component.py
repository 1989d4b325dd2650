"""RLlib glue for the league: the driver component (`spade_rllib.rllib.components`) around `League`.

`make_component(run_config, env_info)` returns a `LeagueComponent` when `league.enabled` is true.
`SpadePPO` calls it once per training iteration, after PPO's sample -> learn -> weight sync:

1. **Results in.** `update(outcomes, ctx)` feeds every `EpisodeOutcome` (spade_rllib/core/outcome.py)
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
4. **The league for later components.** `update` puts the `League` into `ctx.extra[LEAGUE_CONTEXT_KEY]`: the
   exploitability component (OpenSpiel games) scores its mixtures and writes the exact meta-game into it.
5. **Metrics.** `League.metrics()` (size, main's rating and win rates, ratings and games per
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

from dataclasses import dataclass

from spade_rllib.artifacts.checkpoint_layout import LEAGUE_CORE_KEY, LEAGUE_CSV, ROLE_LEAGUES_KEY, role_league_csv
from spade_rllib.config.run_config import ConfigError, RunConfig
from spade_rllib.games.roles import role_module_id
from spade_rllib.league.league_config import LeagueConfig
from spade_rllib.league.member_ids import MAIN, RANDOM, SNAPSHOT_SUFFIX, MemberId, Role
from spade_rllib.league.league import League, format_table, write_table_rows
from spade_rllib.league.match_plan import MatchPlan
from spade_rllib.core.outcome import EpisodeOutcome
from spade_rllib.rllib.components import COPLAYER_PRIORITY, DriverContext, EnvInfo
from spade_rllib.rllib.exploitability_component import LEAGUE_CONTEXT_KEY
from spade_rllib.rllib.plan import BOT_PREFIX, LIVE_PREFIX, MIRROR, SLOT_PREFIX, DriverUpdate, OpponentPlan, slot_id
from spade_rllib.rllib.plan import RANDOM as RUNNER_RANDOM

logger = logging.getLogger(__name__)

MEMBER_METRIC_GROUPS = ("rating", "games_vs", "win_rate_vs", "matchups", "plan")
"""`league/<group>/<member>` metric keys (the member is renamed outside a role league)."""
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


@dataclass(frozen=True)
class RoleView:
    """How one role's league is seen from outside in a role game (two roles): its learner ``main`` is the
    trained module ``main_<role>``; its pool's snapshots ``main_v<k>`` are snapshots of the other role's
    main, ``main_<other>_v<k>`` to the runners, outcome records, metrics and checkpoints; its slots are
    ``slot_offset`` .. ``slot_offset + K - 1`` of the runner."""

    role: str
    other: str
    slot_offset: int = 0

    @property
    def module(self) -> str:
        return role_module_id(self.role)

    @property
    def other_module(self) -> str:
        return role_module_id(self.other)

    def outside(self, member: MemberId) -> str:
        """The name of a member of this league outside it."""
        if member == MAIN:
            return self.module
        if member.role is Role.SNAPSHOT:
            return f"{self.other_module}{SNAPSHOT_SUFFIX}{member.generation}"
        return str(member)

    def inside(self, text: Any) -> Optional[MemberId]:
        """The member of this league an outside name stands for (None: not one of its members)."""
        text = str(text)
        if text == self.module or text == MIRROR:
            return MAIN
        prefix = f"{self.other_module}{SNAPSHOT_SUFFIX}"
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return MemberId.snapshot(int(text[len(prefix):]))
        if text.startswith(LIVE_PREFIX) or text.startswith(SLOT_PREFIX) or text.startswith("main"):
            return None
        return league_member_of(text)


def plan_to_opponent_plan(plan: MatchPlan, version: int, view: Optional[RoleView] = None) -> OpponentPlan:
    """The runner-side `OpponentPlan` of a league `MatchPlan` (learners are RLlib module ids; a role
    league's learner is its role's main and its slots start at the view's offset)."""
    probabilities: dict[tuple[str, str], float] = {}
    for entry in plan.entries:
        slot = entry.opponent_slot if view is None or entry.opponent_slot is None else entry.opponent_slot + view.slot_offset
        learner = str(entry.learner) if view is None else view.module
        key = (learner, runner_opponent_id(entry.opponent, slot, entry.learner))
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

    def __init__(self, config: LeagueConfig, seed: int = 0, view: Optional[RoleView] = None):
        self.view = view  # a role game's role league; None: the one league of a symmetric game
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
        self.opponent_plan = plan_to_opponent_plan(plan, self.league.state.counters["plans"], self.view)
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
        offset = 0 if self.view is None else self.view.slot_offset
        for k in slots:
            member = self.plan.slots[k] if k < len(self.plan.slots) else None
            if member is None:
                weights[slot_id(k + offset)] = None
            elif self.view is None:
                weights[slot_id(k)] = {"member": str(member), "weights": self.league.weights(member)}
                self.slot_loads += 1
            else:  # a snapshot of the other role's main: built with that module's spaces
                weights[slot_id(k + offset)] = {"member": self.view.outside(member), "module": self.view.other_module,
                                                "weights": self.league.weights(member)}
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
            if self.view is not None:
                if outcome.learner != self.view.module:
                    continue  # another role's game: its own league records it
                member = self.view.inside(outcome.opponent) or self._bot_member(outcome.opponent)
                learner = MAIN
            else:
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
        if ctx.extra is not None:  # the exploitability component (later in registry order) scores the league's mixture
            ctx.extra[LEAGUE_CONTEXT_KEY] = self.league
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
        return out if self.view is None else self._outside_keys(out)

    def _outside_keys(self, metrics: dict) -> dict:
        """A role league's metrics as `league/<role>/...`, its members by their outside names."""
        out = {}
        for key, value in metrics.items():
            parts = key.split("/")[1:]
            if len(parts) == 2 and parts[0] in MEMBER_METRIC_GROUPS:
                try:
                    parts[1] = self.view.outside(MemberId.parse(parts[1]))
                except ValueError:
                    pass
            out["/".join(["league", self.view.role, *parts])] = value
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
        rows = self.league.table()
        if self.view is not None:
            for row in rows:
                row["member"] = self.view.outside(MemberId.parse(row["member"]))
        return rows

    def finish(self, trial_dir) -> Optional[Path]:
        """End of run: write `league.csv` (a role league: `league_<role>.csv`) into `trial_dir` and log the final table."""
        if trial_dir is None:
            return None
        name = LEAGUE_CSV if self.view is None else role_league_csv(self.view.role)
        path = Path(trial_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.view is None:
            self.league.write_table_csv(path)
        else:
            write_table_rows(path, self.table())
        logger.info("final league table (%s):\n%s", path, format_table(self.table()))
        return path


class RoleLeaguesComponent:
    """A role game's leagues: one `LeagueComponent` per role (see `RoleView`), owning that role main's
    league: the pool of frozen snapshots of the other role's main it trains against, its ratings, its
    matchmaking and its snapshot rule. When a role's rule fires, its main's weights join the other role's
    pool. Each role's main plays an equal share of the episodes; the runners get one merged plan."""

    name = "league"

    def __init__(self, config: LeagueConfig, roles: tuple[str, ...], seed: int = 0):
        if len(roles) != 2:
            raise ConfigError(f"league.enabled = true: a league needs a two-role game; this one has roles "
                              f"{', '.join(roles)}; turn the league off")
        self.roles = tuple(roles)
        k = config.num_opponent_slots
        self.leagues = {role: LeagueComponent(config, seed=int(np.random.SeedSequence([seed, i]).generate_state(1)[0]),
                                              view=RoleView(role, roles[1 - i], slot_offset=i * k))
                        for i, role in enumerate(self.roles)}

    @property
    def opponent_plan(self) -> OpponentPlan:
        """The runners' plan: every role's entries, each role with an equal share."""
        plans = [c.opponent_plan for c in self.leagues.values()]
        entries = tuple((lrn, opp, p / len(plans)) for plan in plans for lrn, opp, p in plan.entries)
        seed = int(np.random.SeedSequence([int(p.seed) & 0xFFFFFFFF for p in plans]).generate_state(1)[0])
        return OpponentPlan(entries=entries, seed=seed, version=sum(int(p.version) for p in plans))

    def runner_update(self, full: bool) -> Optional[DriverUpdate]:
        updates = [c.runner_update(full) for c in self.leagues.values()]
        if all(u is None for u in updates):
            return None
        slots: dict = {}
        for u in updates:
            slots.update((u.slot_weights or {}) if u is not None else {})
        return DriverUpdate(opponent_plan=self.opponent_plan, slot_weights=slots or None)

    def record_outcomes(self, outcomes: list) -> dict:
        return {role: c.record_outcomes(outcomes) for role, c in self.leagues.items()}

    def update(self, outcomes: list, ctx: DriverContext) -> dict:
        iteration = int(ctx.iteration)
        counts = self.record_outcomes(outcomes)
        before = {r: (c.league.state.counters["snapshots"], c.league.state.counters["evictions"]) for r, c in self.leagues.items()}
        for role, comp in self.leagues.items():
            reason = comp.league.snapshot_reason(iteration, MAIN)
            if reason is None:
                continue
            generation = comp.league.note_snapshot(iteration, MAIN)
            other = self.leagues[comp.view.other]
            member = other.league.add_frozen(ctx.weights_of(comp.view.module), iteration, generation)
            logger.info("league: iteration %d: snapshot %s (%s) joins %s's pool", iteration, other.view.outside(member),
                        reason, comp.view.other)
        out: dict = {}
        for role, comp in self.leagues.items():
            comp.set_plan(comp.league.plan(iteration))
            counters = comp.league.state.counters
            out.update(comp.metrics(counts[role], counters["snapshots"] - before[role][0],
                                    counters["evictions"] - before[role][1]))
        return out

    def metrics(self) -> dict:
        out: dict = {}
        for comp in self.leagues.values():
            out.update(comp.metrics())
        return out

    def initial_metrics(self) -> dict:
        return self.metrics()

    def state_dict(self) -> dict:
        return {ROLE_LEAGUES_KEY: {role: c.state_dict() for role, c in self.leagues.items()}}

    def load_state_dict(self, state: dict) -> None:
        saved = state.get(ROLE_LEAGUES_KEY)
        if not isinstance(saved, Mapping) or set(saved) != set(self.leagues):
            raise ValueError(f"league state holds roles {sorted(saved or {})}; this run has roles {sorted(self.leagues)}")
        for role, comp in self.leagues.items():
            comp.load_state_dict(saved[role])

    def table(self) -> list[dict]:
        return [{**row, "role": role} for role, c in self.leagues.items() for row in c.table()]

    def finish(self, trial_dir) -> list:
        return [c.finish(trial_dir) for c in self.leagues.values()]


def make_component(cfg: RunConfig, env_info: EnvInfo):
    """The league component for `cfg` (`RoleLeaguesComponent` in a role game), or None when `league.enabled` is false."""
    if not cfg.league.enabled:
        return None
    if env_info.roles:
        roles = tuple(dict.fromkeys(env_info.roles.values()))
        return RoleLeaguesComponent(cfg.league.to_core(), roles, seed=int(cfg.experiment.seed) ^ SEED_SALT)
    if len(env_info.teams) < 2:
        raise ConfigError(f"league.enabled = true: env {env_info.env_id!r} has one team, so no opponent; turn the league off")
    return LeagueComponent(cfg.league.to_core(), seed=int(cfg.experiment.seed) ^ SEED_SALT)


__all__ = ["LEAGUE_CSV", "LeagueComponent", "RoleLeaguesComponent", "RoleView", "league_member_of", "make_component",
           "plan_to_opponent_plan", "runner_opponent_id"]
