"""The runner's per-lane state: `LaneStates` (N env copies and each one's episode bookkeeping) and
`LearnerTrajectory` (a learner agent's transitions not yet emitted as an episode chunk). Both are slotted
dataclasses: the sampler reads and writes them on every env step.

Recurrent networks (`agent.model.memory: lstm`): each lane keeps one hidden state per agent seat (`LaneStates.state`,
flat rows [h, c]) for whichever network controls that seat; the learner's trajectories record the
state each step acted from (`LearnerTrajectory.states`) and the previous action and reward.
"""
from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any, Optional

import numpy as np

from spade_rllib.games.adapter import Game
from spade_rllib.games.roles import role_names
from spade_rllib.core.outcome import MAIN
from spade_rllib.rllib.plan import MIRROR


@dataclass(slots=True, eq=False)
class LearnerTrajectory:
    """The learner's pending transitions for one agent in one lane, one entry per step (`obs` may hold one
    more: the observation after the last step). Recurrent learners also keep the state each step acted
    from and that step's previous action / reward."""

    obs: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    logp: list = field(default_factory=list)
    logits: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    states: list = field(default_factory=list)
    prev_actions: list = field(default_factory=list)
    prev_rewards: list = field(default_factory=list)
    teacher: list = field(default_factory=list)
    """Kickstarting: the teacher bot's action at each step (empty without a teacher)."""
    boot_state: Optional[np.ndarray] = None
    """The recurrent state after the last step (set when the chunk is emitted)."""

    def head(self, n: int) -> "LearnerTrajectory":
        """The first n steps (obs: n + 1 rows when available)."""
        return LearnerTrajectory(self.obs[:n + 1], self.actions[:n], self.logp[:n], self.logits[:n], self.rewards[:n],
                                 self.states[:n], self.prev_actions[:n], self.prev_rewards[:n], self.teacher[:n])

    def tail(self, n: int) -> "LearnerTrajectory":
        """The last n steps (with their obs)."""
        return LearnerTrajectory(self.obs[-n:], self.actions[-n:], self.logp[-n:], self.logits[-n:], self.rewards[-n:],
                                 self.states[-n:], self.prev_actions[-n:], self.prev_rewards[-n:], self.teacher[-n:])


def _per_lane(n: int, factory) -> list:
    return [factory() for _ in range(n)]


@dataclass(slots=True, eq=False, repr=False)
class LaneStates:
    """N env copies stepped in lock-step, each with its own episode bookkeeping. Every list has one entry
    per lane (index i = `games[i]`); `LaneStates(games, record, roles)` starts them all inactive."""

    games: list[Game]
    record: bool
    """Keep the learner's transitions (training) or only outcomes (evaluation)."""
    roles: InitVar[Optional[dict]] = None
    """Role games: agent -> role; an outcome's sides are then the roles (side k = k-th role), else the teams."""
    n: int = field(init=False)
    sides: tuple[tuple[str, ...], ...] = field(init=False)
    num_teams: int = field(init=False)
    active: list[bool] = field(init=False)
    episode_number: list[int] = field(init=False)
    opponent: list[str] = field(init=False)
    member: list[str] = field(init=False)
    """The league member behind the opponent id when the episode started."""
    learner: list[str] = field(init=False)
    """The trained module whose experience the episode records."""
    main_team: list[int] = field(init=False)
    """The learner's team."""
    controller: list[dict[str, str]] = field(init=False)
    """agent -> learner module id or opponent id."""
    recorders: list[frozenset] = field(init=False)
    """The trained modules recording the episode."""
    pending: list[dict[str, Any]] = field(init=False)
    """agent -> the observation to act on now."""
    last_obs: list[dict[str, Any]] = field(init=False)
    traj: list[dict[str, LearnerTrajectory]] = field(init=False)
    """agent -> its pending transitions (learning agents of a recording lane)."""
    agent_return: list[dict[str, float]] = field(init=False)
    length: list[int] = field(init=False)
    extras: list[dict[str, Any]] = field(init=False)
    """Level-source extras for the outcome."""
    state: list[dict[str, np.ndarray]] = field(init=False)
    """Recurrent networks: agent -> its state row [h, c] (absent = zeros)."""
    prev_action: list[dict[str, Any]] = field(init=False)
    prev_reward: list[dict[str, float]] = field(init=False)
    """agent -> the reward it got since it last acted."""

    def __post_init__(self, roles: Optional[dict]) -> None:
        n = self.n = len(self.games)
        g0 = self.games[0]
        if roles:
            self.sides = tuple(tuple(a for a in g0.agents if roles[a] == r) for r in role_names(roles))
        else:
            self.sides = tuple(g0.teams)
        self.num_teams = len(self.sides)
        self.active = [False] * n
        self.episode_number = [-1] * n
        self.opponent = [MIRROR] * n
        self.member = [MIRROR] * n
        self.learner = [MAIN] * n
        self.main_team = [0] * n
        self.recorders = [frozenset()] * n
        self.length = [0] * n
        self.controller, self.pending, self.last_obs, self.traj = (_per_lane(n, dict) for _ in range(4))
        self.agent_return, self.extras, self.state, self.prev_action, self.prev_reward = (_per_lane(n, dict) for _ in range(5))

    def reset_seats_of(self, who: str) -> None:
        """Zero the recurrent state of every seat `who` controls (its weights were swapped)."""
        for i in range(self.n):
            for agent, ctrl in self.controller[i].items():
                if ctrl == who:
                    self.state[i].pop(agent, None)


def curriculum_level(lanes: LaneStates, i: int) -> str:
    """The curriculum's level_id of lane i's episode ("" when the curriculum did not choose the level)."""
    extras = lanes.extras[i]
    return str(extras.get("level_id") or "") if extras.get("level_spec") else ""
