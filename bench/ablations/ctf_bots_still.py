"""Every CaptureTheFlag bot against a team that never moves: on the shipped held-out maps, or on generated ones.

Usage: ``python bench/ablations/ctf_bots_still.py [--games 10] [--bots rusher,raider,hybrid,defender] [--levels DIR ...]``
(held-out maps), or ``... --generated 64 [--sizes 15,17,19,21] [--families maze,rooms,halls] [--agents-per-team 1]
[--braid 0,1] [--seed 0]`` (generated maps: that many per size and family, each played once from each seat).
The bot plays one seat, the other team plays noop every step. Held-out maps: seats alternate between games (game g:
env and bot seeded g); prints one line per map, the last line is one JSON object {map: {bot: score}}. Generated
maps: knobs drawn per map from one rng seeded ``--seed`` (braid U[--braid] for mazes, wall density U[0, 0.3]
otherwise, flag_distance None: the bases as far apart as the layout allows, the longest races); prints one line per
size class, the last line is one JSON object {"games", "bots": {bot: {"score", "wins", "games", "by_size",
"by_family", "non_wins": [the games it did not win]}}}. A racing bot scores 1.00 everywhere (the defender, which
never attacks, 0.50; the sentry is the defender on maps of 15 cells a side and more).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from spade_rllib.curriculum.heldout_maps import load_heldout_levels
from spade_rllib.envs import FAMILIES, CaptureTheFlag, Knobs, generate_ctf_level
from spade_rllib.envs.generators import MAX_SIZE, MIN_SIZE
from spade_rllib.games import make_bot
from spade_rllib.games.catalog import heldout_dir
from spade_rllib.core.validation import did_you_mean

ENV_ID = "CaptureTheFlag-v0"


def play_vs_still(level, bot: str, seat: int, seed: int) -> str:
    """One game of `bot` (every agent of team `seat`, bot seeds seed, seed+1, ...) against a still team: the winner."""
    env = CaptureTheFlag(level=level)
    env.reset(seed=seed)
    mine = [a for a in env.possible_agents if env.team_of(a) == seat]
    players = {a: make_bot(bot, seed=seed + j, env_id=ENV_ID) for j, a in enumerate(mine)}
    while env.agents:
        env.step({a: players[a].act(env, a) if a in players else 0 for a in env.agents})
    return env.outcome["winner"]


def score_vs_still(level, bot: str, games: int) -> float:
    """`bot`'s mean score (win + draw/2) against a still team over `games` games, seats alternating."""
    total = 0.0
    for g in range(games):
        seat = g % 2
        winner = play_vs_still(level, bot, seat, g)
        total += 1.0 if winner == "AB"[seat] else 0.5 if winner == "draw" else 0.0
    return total / games


def generated_levels(per: int, sizes: list[int], families: list[str], agents_per_team: int, seed: int,
                     braid: tuple[float, float] = (0.0, 1.0)) -> list:
    """`per` generated levels for every (size, family): knobs and level seed drawn from one rng seeded `seed`
    (braid U[`braid`], wall density U[0, 0.3], flag_distance None)."""
    rng = np.random.default_rng(seed)
    levels = []
    for size in sizes:
        for family in families:
            for _ in range(per):
                b, density = round(float(rng.uniform(*braid)), 3), round(float(rng.uniform(0.0, 0.3)), 3)
                knobs = Knobs(family=family, size=size, braid=b, wall_density=density,
                              agents_per_team=agents_per_team)
                levels.append(generate_ctf_level(knobs, int(rng.integers(2**31 - 1))))
    return levels


def parse_generated(args) -> tuple[list[int], list[str], tuple[float, float]]:
    """--sizes, --families and --braid, checked: a one-line error naming the value and what is allowed."""
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"--sizes: want odd ints in [{MIN_SIZE}, {MAX_SIZE}] separated by commas, got {args.sizes!r}") from None
    for size in sizes:
        if not MIN_SIZE <= size <= MAX_SIZE or size % 2 == 0:
            raise SystemExit(f"--sizes: {size} is not an odd int in [{MIN_SIZE}, {MAX_SIZE}]")
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    for f in families:
        if f not in FAMILIES:
            raise SystemExit(f"--families: unknown family {f!r}{did_you_mean(f, FAMILIES)}; one of {', '.join(FAMILIES)}")
    try:
        braid = tuple(float(x) for x in args.braid.split(","))
    except ValueError:
        braid = ()
    if len(braid) != 2 or not 0.0 <= braid[0] <= braid[1] <= 1.0:  # NaN fails the comparison too
        raise SystemExit(f"--braid: want LO,HI with 0 <= LO <= HI <= 1, got {args.braid!r}")
    if not sizes or not families:
        raise SystemExit("--sizes and --families want at least one value each")
    return sizes, families, braid


def run_generated(args, bots: list[str]) -> dict:
    sizes, families, braid = parse_generated(args)
    levels = generated_levels(args.generated, sizes, families, args.agents_per_team, args.seed, braid)
    out = {b: {"score": 0.0, "wins": 0, "games": 0, "by_size": {}, "by_family": {}, "non_wins": []} for b in bots}
    for b in bots:
        rec = out[b]
        tally: dict = {}
        for i, level in enumerate(levels):
            size, family = level.height, level.meta["family"]
            for seat in (0, 1):
                winner = play_vs_still(level, b, seat, 2 * i + seat)
                won = winner == "AB"[seat]
                points = 1.0 if won else 0.5 if winner == "draw" else 0.0
                for key in (("by_size", str(size)), ("by_family", family), ("all", "")):
                    tally.setdefault(key, []).append(points)
                rec["wins"] += won
                rec["games"] += 1
                if not won:
                    rec["non_wins"].append({"size": size, "family": family, "level_seed": level.meta["seed"],
                                            "knobs": level.meta["knobs"], "seat": "AB"[seat], "game_seed": 2 * i + seat,
                                            "winner": winner})
        rec["score"] = round(float(np.mean(tally[("all", "")])), 4)
        for (kind, name), pts in tally.items():
            if kind != "all":
                rec[kind][name] = round(float(np.mean(pts)), 4)
    for size in sizes:
        print(f"{size}x{size} ({args.generated} maps x {len(families)} families, both seats): "
              + "  ".join(f"{b} {out[b]['by_size'][str(size)]:.3f}" for b in bots), flush=True)
    return {"games": len(levels) * 2 * len(bots), "maps": len(levels), "sizes": sizes, "families": families,
            "braid": list(braid), "agents_per_team": args.agents_per_team, "seed": args.seed, "bots": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=10, help="games per held-out map")
    ap.add_argument("--bots", default="rusher,raider,hybrid,defender")
    ap.add_argument("--levels", nargs="*", default=None, help="map files or directories (default: the shipped set)")
    ap.add_argument("--generated", type=int, default=0, help="generated maps per size and family (0: the held-out maps)")
    ap.add_argument("--sizes", default="15,17,19,21", help="generated map sizes (odd, 5..25)")
    ap.add_argument("--families", default="maze,rooms,halls", help=f"generator families ({', '.join(FAMILIES)})")
    ap.add_argument("--braid", default="0,1", help="LO,HI: the mazes' braid is drawn U[LO, HI] (lower: fewer loops)")
    ap.add_argument("--agents-per-team", type=int, default=1, choices=(1, 2))
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated maps' knobs and level seeds")
    args = ap.parse_args()
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    for b in bots:
        make_bot(b, env_id=ENV_ID)  # an unknown name fails here, with the valid list
    if args.generated < 0:
        raise SystemExit(f"--generated: want a count >= 0 (0: the held-out maps), got {args.generated}")
    started = time.perf_counter()
    if args.generated > 0:
        out = run_generated(args, bots)
        print(f"{out['games']} games in {time.perf_counter() - started:.1f} s; wins: "
              + ", ".join(f"{b} {r['wins']}/{r['games']}" for b, r in out["bots"].items()))
        print(json.dumps(out))
        return
    levels = load_heldout_levels(args.levels or [heldout_dir(ENV_ID)])
    out = {}
    for name, level in levels.items():
        out[name] = {b: round(score_vs_still(level, b, args.games), 3) for b in bots}
        print(f"{name:12s} {level.height}x{level.width}: " + "  ".join(f"{b} {s:.2f}" for b, s in out[name].items()),
              flush=True)
    print(f"{len(levels) * len(bots) * args.games} games in {time.perf_counter() - started:.1f} s")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
