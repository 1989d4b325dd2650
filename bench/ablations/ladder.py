"""CaptureTheFlag bot ladder: a round-robin of the scripted bots on generated levels, seats swapped.

Usage: ``python bench/ablations/ladder.py [--levels 200] [--agents-per-team 1] [--seed 0] [--bots a,b,...]``.
Every pair (mirror pairs included) plays the same ``--levels`` generated levels, difficulty drawn
uniformly from [1, 10] per level, once with each bot as team A and once as team B. A bot's score
against another is ``win + draw / 2`` over those games. Prints the score matrix (row vs column), the
win/draw/loss per pair and two non-degeneracy checks; the last line is one JSON object with the
matrix (``score``), ``wins``/``draws``/``losses`` fractions, ``checks`` and the game length stats.
"""
from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np

from spade_rllib.games import default_bot_names, make_bot
from spade_rllib.envs import CaptureTheFlag, generate_ctf_level, knobs_for_difficulty

ENV_ID = "CaptureTheFlag-v0"
TAGGERS = ("defender", "raider", "hybrid")
ATTACKERS = ("rusher", "raider", "hybrid")


def play(env: CaptureTheFlag, level, bots: tuple, seed: int) -> dict:
    """One game: ``bots[0]`` plays team A, ``bots[1]`` team B; returns the env's outcome."""
    env.reset(seed=seed, options={"level": level})
    while env.agents:
        env.step({a: bots[env.team_of(a)][a].act(env, a) for a in env.agents})
    return env.outcome


def pair_games(a: str, b: str, levels: list, apt: int, seed: int, env_kwargs: dict) -> dict:
    """``a`` vs ``b`` on every level from both seats: wins/draws/losses from ``a``'s side."""
    env = CaptureTheFlag(agents_per_team=apt, **env_kwargs)
    res = {"win": 0, "draw": 0, "loss": 0, "length": [], "tags": 0, "pickups": 0}
    for i, level in enumerate(levels):
        for seat in (0, 1):
            names = (a, b) if seat == 0 else (b, a)
            bots = tuple({ag: make_bot(n, seed=seed + 7919 * i + 31 * k + j, env_id=ENV_ID)
                          for j, ag in enumerate(env.possible_agents)} for k, n in enumerate(names))
            out = play(env, level, bots, seed + i)
            mine = "AB"[seat]
            res["win" if out["winner"] == mine else ("draw" if out["winner"] == "draw" else "loss")] += 1
            res["length"].append(out["episode_length"])
            res["tags"] += sum(out["tags"].values())
            res["pickups"] += sum(out["flag_pickups"].values())
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", type=int, default=200, help="generated levels per pair (each played from both seats)")
    p.add_argument("--agents-per-team", type=int, default=1, choices=(1, 2))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bots", default=",".join(default_bot_names(ENV_ID)), help="comma-separated bot names (default: the ladder)")
    p.add_argument("--env", default="{}", help="JSON dict of CaptureTheFlag keyword arguments (rule knobs)")
    args = p.parse_args()
    env_kwargs = json.loads(args.env)
    names = [n.strip() for n in args.bots.split(",") if n.strip()]
    for n in names:
        make_bot(n, env_id=ENV_ID)  # unknown names fail here, with the valid list
    rng = np.random.default_rng(args.seed)
    levels = []
    for i in range(args.levels):
        d = float(rng.uniform(1.0, 10.0))
        knobs = knobs_for_difficulty(d, agents_per_team=args.agents_per_team)
        lv = generate_ctf_level(knobs, int(rng.integers(2**31 - 1)))
        lv.meta["difficulty"] = d
        levels.append(lv)
    t0 = time.perf_counter()
    score = {a: {} for a in names}
    frac = {k: {a: {} for a in names} for k in ("wins", "draws", "losses")}
    lengths, tags, pickups, games = [], 0, 0, 0
    for a, b in itertools.combinations_with_replacement(names, 2):
        r = pair_games(a, b, levels, args.agents_per_team, args.seed, env_kwargs)
        n = r["win"] + r["draw"] + r["loss"]
        games += n
        lengths += r["length"]
        tags += r["tags"]
        pickups += r["pickups"]
        for x, y, w, l in ((a, b, r["win"], r["loss"]), (b, a, r["loss"], r["win"])):
            score[x][y] = round((w + r["draw"] / 2) / n, 3)
            frac["wins"][x][y] = round(w / n, 3)
            frac["draws"][x][y] = round(r["draw"] / n, 3)
            frac["losses"][x][y] = round(l / n, 3)
    secs = time.perf_counter() - t0

    width = max(len(n) for n in names) + 2
    print(f"CaptureTheFlag ladder: {args.levels} generated levels per pair (difficulty U[1, 10]), both seats, "
          f"{args.agents_per_team}v{args.agents_per_team}; score = win + draw/2 of row vs column")
    print(" " * width + "".join(f"{n:>{width}}" for n in names) + f"{'mean':>{width}}")
    order = sorted(names, key=lambda x: -np.mean([score[x][y] for y in names if y != x] or [0]))
    for x in order:
        others = [score[x][y] for y in names if y != x]
        print(f"{x:<{width}}" + "".join(f"{score[x][y]:>{width}.3f}" for y in names)
              + f"{np.mean(others) if others else 0:>{width}.3f}")
    print("\nwin/draw/loss (row vs column):")
    for x, y in itertools.combinations(names, 2):
        print(f"  {x:>10} vs {y:<10} {frac['wins'][x][y]:.3f} / {frac['draws'][x][y]:.3f} / {frac['losses'][x][y]:.3f}")
    beaten = {x: max(((score[y][x], y) for y in names if y != x), default=(0.0, None)) for x in names}
    tag_pairs = [(x, y) for x, y in itertools.combinations(names, 2)
                 if (x in TAGGERS or y in TAGGERS) and (x in ATTACKERS or y in ATTACKERS)]
    drawish = {f"{x}-{y}": frac["draws"][x][y] for x, y in tag_pairs if frac["draws"][x][y] > 0.5}
    checks = {
        "best_score_against": {x: {"by": beaten[x][1], "score": beaten[x][0]} for x in names},
        "every_bot_beaten": all(s > 0.5 for s, _ in beaten.values()),
        "tagging_pairs_over_half_draws": drawish,
    }
    print("\nbest score against each bot:", ", ".join(f"{x}: {s:.3f} by {y}" for x, (s, y) in beaten.items()))
    print("tagging pairs (a tagger vs an attacker) drawing > 1/2:", drawish or "none")
    print(f"{games} games in {secs:.0f} s; length mean {np.mean(lengths):.1f}, median {np.median(lengths):.0f}; "
          f"tags/game {tags / games:.2f}, pickups/game {pickups / games:.2f}")
    print(json.dumps({"agents_per_team": args.agents_per_team, "levels": args.levels, "seed": args.seed,
                      "env": env_kwargs,
                      "ladder": order, "score": score, **frac, "checks": checks,
                      "length_mean": round(float(np.mean(lengths)), 1), "games": games}))


if __name__ == "__main__":
    main()
