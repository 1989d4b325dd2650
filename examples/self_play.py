"""Self-play with a league, in one file: build a config, train, evaluate, then act with the trained policy.

    python examples/self_play.py                    # MazeRace 1v1, 30 iterations (61,440 env steps, ~1.5 min)
    python examples/self_play.py --iterations 2     # a smoke run (what `make test` runs)

The moving parts, in the order they run:
1. A run config: the same sections a `tune_configs/*.yaml` file has, checked before Ray starts (a bad key
   or value is one `ConfigError` line naming it).
2. `build_algo_config(cfg).build_algo()`: RLlib's PPO with this package's env runner (main plays every
   seat; its opponents, league snapshots and bots, run inside the runner) and driver components (the
   league adds a frozen snapshot of main every `league.every_n_iterations` and picks opponents by PFSP).
3. `algo.train()`: one PPO iteration; the result holds the league's table and the training games' scores.
4. `algo.evaluate_main(...)`: main against fixed opponents on fresh levels, scored win + draw/2.
5. `load_policy(checkpoint)`: the trained module without Ray, acting on an env's observations.
`python -m spade_rllib.train --config tune_configs/league.yaml` runs the same pieces under Tune, with
checkpoints, a live console, a summary and a report (docs/usage.md).
"""
from __future__ import annotations

import argparse
import tempfile

import ray

from spade_rllib.config.run_config import parse_config
from spade_rllib.games import make_env
from spade_rllib.players.policy import load_policy
from spade_rllib.rllib.algo_config import build_algo_config
from spade_rllib.rllib.local_ray import init_local_ray

ENV_ID = "MazeRace-v0"
OPPONENTS = ["random", "bot:rusher"]


def make_config(seed: int) -> dict:
    """A small league run: MazeRace 1v1 on 9x9 levels, a snapshot of main every 2 iterations."""
    return {
        "experiment": {"name": "self_play_example", "seed": seed},
        "env": {"id": ENV_ID, "difficulty": 2.0},
        "agent": {"lr": 0.001, "train_batch_size": 2048, "minibatch_size": 1024, "epochs": 2,
                  "model": {"hidden": [64, 64]}},
        # 20% of main's games against a random player, the rest against itself and the league
        "self_play": {"mode": "mirror", "opponent_mix": {"random": 0.2}},
        "league": {"enabled": True, "every_n_iterations": 2, "sampling": "pfsp", "win_rate_threshold": None},
        # one env runner in this process: nothing to pickle to other workers
        "training": {"num_env_runners": 0, "num_envs_per_runner": 16},
        "evaluation": {"interval": 0},  # evaluated once, below
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--games", type=int, default=40, help="evaluation games per opponent")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    cfg = parse_config(make_config(args.seed))  # 1. validated before Ray starts
    init_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False)  # ray.init on 127.0.0.1 only
    try:
        algo = build_algo_config(cfg).build_algo()  # 2.
        for _ in range(args.iterations):  # 3.
            result = algo.train()
            league = result.get("league", {})
            steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            print(f"iteration {result['training_iteration']:3d}  env steps {steps:8,d}  "
                  f"league size {league.get('size', 0):3.0f}  main's rating {league.get('main_rating', float('nan')):7.1f}")

        scores = algo.evaluate_main(OPPONENTS, games=args.games)  # 4.
        for opponent in OPPONENTS:
            win, draw = scores[f"eval/{opponent}/win_rate"], scores[f"eval/{opponent}/draw_rate"]
            print(f"main vs {opponent}: score {win + draw / 2:.2f} (win {win:.2f}, draw {draw:.2f}, {args.games} games)")

        checkpoint = algo.save_to_path(tempfile.mkdtemp(prefix="self_play_example_"))
        algo.stop()
    finally:
        ray.shutdown()

    policy = load_policy(checkpoint)  # 5. no Ray from here on
    env = make_env(ENV_ID, difficulty=2.0)
    obs, _ = env.reset(seed=args.seed)
    agent = env.possible_agents[0]
    print(f"{policy!r} picks action {policy.act(obs[agent])} for {agent} at the start of a new game")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
