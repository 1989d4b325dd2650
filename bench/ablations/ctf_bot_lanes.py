"""A CaptureTheFlag bot played in several lanes at once, one instance per seat against one shared by all lanes.

Usage: ``python bench/ablations/ctf_bot_lanes.py [--bot hybrid] [--opponent rusher] [--lanes 4] [--rounds 3]``.
The env runner steps its lanes in turn; a bot that keeps state over its episode (the hybrid's guard spell) only
plays as written when each seat has its own instance (how the runner plays bots since commit 2acf4c4; before, one
instance served every lane). `--bot` plays team A in every lane, `--opponent` team B (one instance per seat).
Prints one line per held-out map; the last line is one JSON object {map: {"per_seat": score, "shared": score}}.
"""
from __future__ import annotations

import argparse
import json

from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import CaptureTheFlag
from spade_rllib.games import make_bot
from spade_rllib.games.catalog import heldout_dir

ENV_ID = "CaptureTheFlag-v0"


def lanes_score(level, bot: str, opponent: str, lanes: int, seed: int, shared: bool) -> float:
    """Team A's (`bot`) mean score (win + draw/2) over `lanes` games stepped in turn, one step per lane each round."""
    envs = [CaptureTheFlag(level=level) for _ in range(lanes)]
    for k, env in enumerate(envs):
        env.reset(seed=seed * 1000 + k)
    one = make_bot(bot, seed=seed, env_id=ENV_ID)
    players = {(k, a): (one if shared and env.team_of(a) == 0 else
                        make_bot(bot if env.team_of(a) == 0 else opponent, seed=seed * 1000 + 10 * k + j, env_id=ENV_ID))
               for k, env in enumerate(envs) for j, a in enumerate(env.possible_agents)}
    scores: list = [None] * lanes
    while any(s is None for s in scores):
        for k, env in enumerate(envs):
            if scores[k] is not None:
                continue
            env.step({a: players[(k, a)].act(env, a) for a in env.agents})
            if not env.agents:
                w = env.outcome["winner"]
                scores[k] = 1.0 if w == "A" else 0.5 if w == "draw" else 0.0
    return sum(scores) / lanes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bot", default="hybrid")
    ap.add_argument("--opponent", default="rusher")
    ap.add_argument("--lanes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="seeds; each plays --lanes games")
    args = ap.parse_args()
    for name, value in (("--lanes", args.lanes), ("--rounds", args.rounds)):
        if value < 1:
            ap.error(f"{name} = {value}: out of range, allowed an integer >= 1")
    levels = load_heldout_levels([heldout_dir(ENV_ID)])
    out = {}
    for name, level in sorted(levels.items()):
        row = {mode: round(sum(lanes_score(level, args.bot, args.opponent, args.lanes, s, mode == "shared")
                               for s in range(args.rounds)) / args.rounds, 3) for mode in ("per_seat", "shared")}
        out[name] = row
        print(f"{name:12s} {args.bot} vs {args.opponent}: one per seat {row['per_seat']:.2f}, one shared {row['shared']:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
