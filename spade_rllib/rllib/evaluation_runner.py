"""Evaluation games on an env runner: `RunnerEvaluation.evaluate_main`, mixed into `SpadeEnvRunner`.

It plays the requested (opponent, level, game) jobs on a separate set of lanes that record no
experience, through the same step loop as training (`sampling.LaneStepping`), and returns the
outcome records; the training lanes, opponent plan and level source are left as they were.
"""
from __future__ import annotations

from collections import deque

from spade_rllib.core.outcome import EpisodeOutcome
from spade_rllib.rllib.action_sampling import single_torch_thread
from spade_rllib.rllib.lanes import LaneStates
from spade_rllib.rllib.plan import RANDOM


class RunnerEvaluation:
    """`SpadeEnvRunner`'s evaluation methods (they use its lanes, step loop and modules)."""

    def evaluate_main(self, spec: dict) -> list[EpisodeOutcome]:
        """Play evaluation games and return their outcome records (training state untouched).

        spec: {"opponents": [ids], "games": games per opponent (and per level), "greedy": bool,
               "levels": optional list of reset-option dicts (each played `games` times per opponent),
               "share": (k, n) to play only this runner's k-th of n shares}.
        Main's team alternates between games; `spec["learner"]` names the trained module evaluated (a
        role's main plays its role's agents, the opponent every other agent). A level's extra reset options (`heldout_level`) land in
        the records (`sampling.OUTCOME_EXTRA_FIELDS`).
        """
        with single_torch_thread():
            return self._evaluate_main(spec)

    def _evaluate_main(self, spec: dict) -> list[EpisodeOutcome]:
        opponents = list(spec.get("opponents", [RANDOM]))
        levels = list(spec.get("levels") or [None])
        games = int(spec.get("games", 10))
        k, n = spec.get("share", (0, 1))
        jobs = [(o, li, g) for o in opponents for li in range(len(levels)) for g in range(games)]
        jobs = jobs[k::n]
        if not jobs:
            return []
        if self._eval_lanes is None:
            self._eval_lanes = LaneStates([self._make_eval_game() for _ in range(min(self.num_envs, 32))], record=False,
                                      roles=self.roles)
        lanes = self._eval_lanes
        queue = deque(jobs)
        results: list[EpisodeOutcome] = []
        self._eval_learner = str(spec.get("learner") or self.learner_ids[0])
        if self._eval_learner not in self.learner_ids:
            raise ValueError(f"evaluation learner {self._eval_learner!r}; this runner trains {', '.join(self.learner_ids)}")
        saved = (self.plan, self.level_source)
        try:
            lanes.active = [False] * lanes.n
            for i in range(lanes.n):
                if queue:
                    self._start_eval_episode(lanes, i, queue.popleft(), levels)
            while any(lanes.active):
                self._step_lanes(lanes, None, greedy=bool(spec.get("greedy", False)), eval_queue=(queue, levels, results))
        finally:
            self.plan, self.level_source = saved
        return results

    def _start_eval_episode(self, lanes: LaneStates, i: int, job: tuple, levels: list) -> None:
        opp, li, g = job
        options = levels[li]
        learner = self._eval_learner
        team = g % lanes.num_teams if not self.roles else self._role_side(learner)
        self._start_episode(lanes, i, seed=int(self._rng.integers(2**31)), opponent=opp, main_team=team,
                            options=options, learner=learner)
