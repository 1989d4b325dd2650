"""Small continuous-action envs for tests/test_foreign_continuous.py, named as a user names their own env.

`continuous_envs:PistonballVector` (a user's env class) is PettingZoo's `pistonball_v6` (continuous actions,
`Box(-1, 1, (1,))` per piston, one shared team reward) as a `ParallelEnv` whose observation is a
small vector per piston instead of a 457x120x3 crop of the screen: the piston's height, its
neighbours' heights, and the ball's position relative to the piston, velocity and spin (all
scaled to about [-1, 1]). The pistonball kwargs pass through (`n_pistons`, `max_cycles`, ...).
"""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
from pettingzoo.butterfly import pistonball_v6
from pettingzoo.utils.env import ParallelEnv

OBS_SIZE = 8


class PistonballVector(ParallelEnv):
    metadata = {"name": "pistonball_vector_v6", "render_modes": [], "is_parallelizable": True}

    def __init__(self, **kwargs):
        kwargs.setdefault("continuous", True)
        self.aec = pistonball_v6.raw_env(**kwargs)
        self.possible_agents = list(self.aec.possible_agents)
        self.agents: list[str] = []
        box = gym.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)
        self.observation_spaces = {a: box for a in self.possible_agents}
        self.action_spaces = {a: self.aec.action_space(a) for a in self.possible_agents}

    @functools.lru_cache(maxsize=None)  # noqa: B019 - one env, a handful of agents
    def observation_space(self, agent):
        return self.observation_spaces[agent]

    @functools.lru_cache(maxsize=None)  # noqa: B019
    def action_space(self, agent):
        return self.action_spaces[agent]

    def _heights(self) -> np.ndarray:
        e = self.aec
        return np.array([p.position[1] for p in e.pistonList], np.float32) / e.screen_height

    def _observations(self) -> dict:
        e = self.aec
        heights = self._heights()
        padded = np.concatenate([heights[:1], heights, heights[-1:]])
        bx, by = e.ball.position
        vx, vy = e.ball.velocity
        out = {}
        for i, agent in enumerate(self.possible_agents):
            px = e.wall_width + e.piston_width * (i + 0.5)
            out[agent] = np.array([padded[i + 1], padded[i], padded[i + 2], (bx - px) / e.screen_width,
                                   by / e.screen_height, vx / 100.0, vy / 100.0, e.ball.angular_velocity / 10.0],
                                  np.float32)
        return out

    def reset(self, seed=None, options=None):
        self.aec.reset(seed=seed, options=options)
        self.agents = list(self.aec.agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions):
        e = self.aec
        for _ in range(len(self.agents)):
            agent = e.agent_selection
            e.step(np.asarray(actions.get(agent, np.zeros(1, np.float32)), np.float32))
        rewards = {a: float(e.rewards[a]) for a in self.agents}
        terms = {a: bool(e.terminations[a]) for a in self.agents}
        truncs = {a: bool(e.truncations[a]) for a in self.agents}
        obs = self._observations()
        if any(terms.values()) or any(truncs.values()):
            self.agents = []
        return obs, rewards, terms, truncs, {a: {} for a in rewards}

    def close(self):
        self.aec.close()

