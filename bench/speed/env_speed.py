"""Env steps per second with random actions: MazeRace, CaptureTheFlag, PettingZoo's connect_four_v3.

Usage: ``python bench/speed/env_speed.py [--steps 50000] [--seed 0]``. One env step = one ``step()`` call
(all agents act at once in MazeRace and CaptureTheFlag; one player moves in connect_four's AEC env).
MazeRace and CaptureTheFlag generate a new level on every reset, as training does; actions are drawn
up front so the RNG is not measured. Last line: one JSON object with ``maze_11_1v1``, ``maze_21_1v1``,
``maze_15_2v2``, ``ctf_11_1v1``, ``ctf_15_2v2``, ``connect_four``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from spade_rllib.envs import CaptureTheFlag, Knobs, MazeRace

CASES = {
    "maze_11_1v1": Knobs(family="maze", size=11, braid=0.3, agents_per_team=1),
    "maze_21_1v1": Knobs(family="maze", size=21, braid=0.3, agents_per_team=1),
    "maze_15_2v2": Knobs(family="maze", size=15, braid=0.3, agents_per_team=2),
    "ctf_11_1v1": Knobs(family="maze", size=11, braid=0.3, agents_per_team=1),
    "ctf_15_2v2": Knobs(family="maze", size=15, braid=0.3, agents_per_team=2),
}


def bench_maze(knobs: Knobs, steps: int, seed: int, env_cls=MazeRace) -> tuple[float, int]:
    env = env_cls(knobs=knobs, seed=seed)
    env.reset(seed=seed)
    names = env.possible_agents
    rng = np.random.default_rng(seed)
    acts = [dict(zip(names, row)) for row in rng.integers(0, 6, size=(steps, len(names))).tolist()]
    episodes = 0
    t0 = time.perf_counter()
    for a in acts:
        env.step(a)
        if not env.agents:
            env.reset()
            episodes += 1
    return steps / (time.perf_counter() - t0), episodes


def bench_connect_four(steps: int, seed: int) -> float | None:
    try:
        from pettingzoo.classic import connect_four_v3
    except Exception as e:  # pygame missing
        print(f"connect_four_v3 unavailable: {e}")
        return None
    env = connect_four_v3.env()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.last()
        if term or trunc:
            env.reset()
            continue
        mask = env.observe(env.agent_selection)["action_mask"]
        legal = np.flatnonzero(mask)
        env.step(int(legal[rng.integers(len(legal))]))
    return steps / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=50_000, help="env steps per case")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    out: dict[str, float | None] = {}
    for name, knobs in CASES.items():
        sps, eps = bench_maze(knobs, args.steps, args.seed, CaptureTheFlag if name.startswith("ctf") else MazeRace)
        out[name] = round(sps)
        print(f"{name:<14} {sps:>10,.0f} env steps/s  ({eps} episodes, {knobs.family} {knobs.size}x{knobs.size})")
    cf = bench_connect_four(args.steps, args.seed)
    out["connect_four"] = None if cf is None else round(cf)
    if cf is not None:
        print(f"{'connect_four':<14} {cf:>10,.0f} env steps/s  (pettingzoo.classic.connect_four_v3, random legal)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
