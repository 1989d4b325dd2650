"""Every CaptureTheFlag bot against a team that never moves, on every shipped held-out map.

Usage: ``python bench/ablations/ctf_bots_still.py [--games 10] [--bots rusher,raider,hybrid,defender] [--levels DIR ...]``.
The bot plays one seat, the other team plays noop every step; seats alternate between games (game g:
env and bot seeded g). A racing bot that never freezes scores 1.00 on every map (the defender, which
never attacks, 0.50). Prints one line per map; the last line is one JSON object {map: {bot: score}}.
"""
from __future__ import annotations

import argparse
import json
import time

from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import CaptureTheFlag
from spade_rllib.games import make_bot
from spade_rllib.games.catalog import heldout_dir

ENV_ID = "CaptureTheFlag-v0"


def score_vs_still(level, bot: str, games: int) -> float:
    """`bot`'s mean score (win + draw/2) against a still team over `games` games, seats alternating."""
    total = 0.0
    for g in range(games):
        seat = g % 2
        env = CaptureTheFlag(level=level)
        env.reset(seed=g)
        player = make_bot(bot, seed=g, env_id=ENV_ID)
        while env.agents:
            env.step({a: player.act(env, a) if env.team_of(a) == seat else 0 for a in env.agents})
        winner = env.outcome["winner"]
        total += 1.0 if winner == "AB"[seat] else 0.5 if winner == "draw" else 0.0
    return total / games


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=10)
    ap.add_argument("--bots", default="rusher,raider,hybrid,defender")
    ap.add_argument("--levels", nargs="*", default=None, help="map files or directories (default: the shipped set)")
    args = ap.parse_args()
    levels = load_heldout_levels(args.levels or [heldout_dir(ENV_ID)])
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    started = time.perf_counter()
    out = {}
    for name, level in levels.items():
        out[name] = {b: round(score_vs_still(level, b, args.games), 3) for b in bots}
        print(f"{name:12s} {level.height}x{level.width}: " + "  ".join(f"{b} {s:.2f}" for b, s in out[name].items()),
              flush=True)
    print(f"{len(levels) * len(bots) * args.games} games in {time.perf_counter() - started:.1f} s")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
