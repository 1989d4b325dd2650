"""The runner's per-lane state: `LaneStates` (N env copies and each one's episode bookkeeping) and
`LearnerTrajectory` (a learner agent's transitions not yet emitted as an episode chunk).

Recurrent networks (`use_lstm`): each lane keeps one hidden state per agent seat (`LaneStates.state`,
flat rows [h, c]) for whichever network controls that seat; the learner's trajectories record the
state each step acted from (`LearnerTrajectory.states`) and the previous action and reward.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from spade_rllib.outcome import MAIN
from spade_rllib.games.adapter import Game
from spade_rllib.games.roles import role_names
from spade_rllib.rllib.plan import MIRROR


class LearnerTrajectory:
    """The learner's pending transitions for one agent in one lane (recurrent learners also keep the
    state each step acted from and that step's previous action / reward)."""

    __slots__ = ("obs", "actions", "logp", "logits", "rewards", "states", "prev_actions", "prev_rewards", "boot_state")

    def __init__(self):
        self.obs: list = []
        self.actions: list = []
        self.logp: list = []
        self.logits: list = []
        self.rewards: list = []
        self.states: list = []
        self.prev_actions: list = []
        self.prev_rewards: list = []
        self.boot_state: Optional[np.ndarray] = None  # the state after the last step (set when emitted)

    def head(self, n: int) -> "LearnerTrajectory":
        """The first n steps (obs: n + 1 rows when available)."""
        out = LearnerTrajectory()
        out.obs, out.actions, out.logp, out.logits, out.rewards = self.obs[:n + 1], self.actions[:n], self.logp[:n], self.logits[:n], self.rewards[:n]
        out.states, out.prev_actions, out.prev_rewards = self.states[:n], self.prev_actions[:n], self.prev_rewards[:n]
        return out

    def tail(self, n: int) -> "LearnerTrajectory":
        """The last n steps (with their obs)."""
        out = LearnerTrajectory()
        out.obs, out.actions, out.logp, out.logits, out.rewards = self.obs[-n:], self.actions[-n:], self.logp[-n:], self.logits[-n:], self.rewards[-n:]
        out.states, out.prev_actions, out.prev_rewards = self.states[-n:], self.prev_actions[-n:], self.prev_rewards[-n:]
        return out


class LaneStates:
    """N env copies stepped in lock-step, each with its own episode bookkeeping."""

    def __init__(self, games: list[Game], record: bool, roles: Optional[dict] = None):
        self.games = games
        self.n = len(games)
        self.record = record  # keep the learner's transitions (training) or only outcomes (evaluation)
        g0 = games[0]
        # Sides of an episode's outcome: the teams, or in a role game the roles (side k = k-th role).
        if roles:
            self.sides = tuple(tuple(a for a in g0.agents if roles[a] == r) for r in role_names(roles))
        else:
            self.sides = tuple(g0.teams)
        self.team_of = {a: t for t, team in enumerate(self.sides) for a in team}
        self.num_teams = len(self.sides)
        self.active = [False] * self.n
        self.episode_number = [-1] * self.n
        self.opponent = [MIRROR] * self.n
        self.member = [MIRROR] * self.n  # league member behind the opponent id when the episode started
        self.learner = [MAIN] * self.n  # the trained module whose experience this episode records
        self.main_team = [0] * self.n  # the learner's team
        self.controller: list[dict] = [{} for _ in range(self.n)]  # agent -> learner module id or opponent id
        self.recorders: list[frozenset] = [frozenset() for _ in range(self.n)]  # trained modules recording this episode
        self.pending: list[dict] = [{} for _ in range(self.n)]  # agent -> obs to act on now
        self.last_obs: list[dict] = [{} for _ in range(self.n)]
        self.traj: list[dict] = [{} for _ in range(self.n)]  # agent -> LearnerTrajectory (learning agents)
        self.agent_return: list[dict] = [{} for _ in range(self.n)]
        self.length = [0] * self.n
        self.extras: list[dict] = [{} for _ in range(self.n)]  # level-source extras for the outcome
        # Recurrent networks: agent -> its state row [h, c] (absent = zeros), previous action, and
        # the reward it got since it last acted.
        self.state: list[dict] = [{} for _ in range(self.n)]
        self.prev_action: list[dict] = [{} for _ in range(self.n)]
        self.prev_reward: list[dict] = [{} for _ in range(self.n)]

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
