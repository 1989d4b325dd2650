"""Bring your own env: a tiny PettingZoo game of your own, trained by self-play through the same pipeline.

    python examples/bring_your_own_env.py                   # 15 iterations, 30,720 env steps
    python examples/bring_your_own_env.py --iterations 2    # a smoke run (what `make test` runs)

`LineRace` is a two-player PettingZoo `ParallelEnv`: both players start at the left end of a line of
`length` cells and move at the same time (0 stay, 1 forward, 2 back); the first to reach the right end
wins (+1, the other -1), both at once is a draw, and at `max_steps` the game ends in a draw. A random
player wanders; a trained one walks straight ahead, so main should beat `random` after a few iterations.

What the package needs from an env (docs/envs.md): the PettingZoo API, a `Box` observation and a
`Discrete` (or `Box`) action per agent, and an id it can import: `env.id = "<module>:<class or
factory>"`. Here the module is this file (`bring_your_own_env`, importable because Python puts the
script's folder on `sys.path`), so the whole walk-through fits in one file. Everything else, the
config, training, evaluation, the Ray-free policy, is as in `examples/self_play.py`.
"""
from __future__ import annotations

import argparse
import tempfile

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

STAY, FORWARD, BACK = 0, 1, 2


class LineRace(ParallelEnv):
    metadata = {"name": "line_race_v0", "render_modes": ["ansi"]}

    def __init__(self, length: int = 6, max_steps: int = 20, render_mode: str | None = None):
        self.length, self.max_steps, self.render_mode = length, max_steps, render_mode
        self.possible_agents = ["player_0", "player_1"]
        # own position, the other's position (both as a fraction of the line), the time left
        self._obs_space = spaces.Box(0.0, 1.0, (3,), np.float32)
        self._act_space = spaces.Discrete(3)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observe(self) -> dict:
        end = self.length - 1
        p0, p1 = self.pos["player_0"] / end, self.pos["player_1"] / end
        left = 1.0 - self.t / self.max_steps
        return {"player_0": np.array([p0, p1, left], np.float32), "player_1": np.array([p1, p0, left], np.float32)}

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.pos = {a: 0 for a in self.agents}
        self.t = 0
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        for agent, action in actions.items():
            move = {STAY: 0, FORWARD: 1, BACK: -1}[int(action)]
            self.pos[agent] = min(self.length - 1, max(0, self.pos[agent] + move))
        self.t += 1
        home = [a for a in self.agents if self.pos[a] == self.length - 1]
        done = bool(home) or self.t >= self.max_steps
        rewards = {a: 0.0 for a in self.agents}
        if len(home) == 1:  # one player home first: it wins; both at once is a draw
            winner = home[0]
            rewards = {a: 1.0 if a == winner else -1.0 for a in self.agents}
        obs = self._observe()
        terms = {a: bool(home) for a in self.agents}
        truncs = {a: not home and done for a in self.agents}
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def render(self):
        return " ".join(f"{a}@{p}" for a, p in self.pos.items())


def make_config(seed: int) -> dict:
    return {
        "experiment": {"name": "line_race", "seed": seed},
        "env": {"id": "bring_your_own_env:LineRace", "kwargs": {"length": 6, "max_steps": 20}},
        "agent": {"lr": 0.001, "train_batch_size": 2048, "minibatch_size": 512, "epochs": 2,
                  "model": {"hidden": [32, 32]}},
        "self_play": {"mode": "mirror", "opponent_mix": {"random": 0.5}},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 16},
        "evaluation": {"interval": 0},
    }


def main(argv=None) -> int:
    import ray

    from spade_rllib.config.run_config import parse_config
    from spade_rllib.players.policy import load_policy
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.local_ray import init_local_ray

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=15)
    ap.add_argument("--games", type=int, default=40, help="evaluation games against random")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    cfg = parse_config(make_config(args.seed))  # resolves env.id: imports this file as `bring_your_own_env`
    init_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_algo_config(cfg).build_algo()
        for _ in range(args.iterations):
            result = algo.train()
            steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            print(f"iteration {result['training_iteration']:3d}  env steps {steps:7,d}  "
                  f"episode length {result['env_runners'].get('episode_len_mean', float('nan')):5.1f}")
        scores = algo.evaluate_main(["random"], games=args.games)
        win, draw = scores["eval/random/win_rate"], scores["eval/random/draw_rate"]
        print(f"main vs random: score {win + draw / 2:.2f} (win {win:.2f}, draw {draw:.2f}, {args.games} games)")
        checkpoint = algo.save_to_path(tempfile.mkdtemp(prefix="line_race_"))
        algo.stop()
    finally:
        ray.shutdown()

    policy = load_policy(checkpoint, env_id=cfg.env.id)  # no Ray: play one game, main against itself
    env = LineRace(length=6, max_steps=20)
    obs, _ = env.reset(seed=args.seed)
    while env.agents:
        obs, rewards, *_ = env.step({a: policy.act(obs[a]) for a in env.agents})
    print(f"one game of the trained policy against itself: {env.render()}, rewards {rewards}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
