"""What the fixed planner alone scores: a scripted player that reads nothing but the plan features of its own
CaptureTheFlag observation (`env.kwargs.plan`, 15 values on its memory of the cells it has seen), against the racing
bots on every shipped held-out map. A reference line for main, which reads the same features with the rest of its
observation: where main scores below it, the information was there and the policy did not use it.

    python bench/ablations/plan_follower.py [--games 16] [--bots rusher,raider,hybrid] [--levels DIR] [--maps A,B]
    python bench/ablations/plan_follower.py --checkpoint <trial or checkpoint> [--stochastic] [...]

The follower takes the move that shortens the plan's distance most (ties broken by a seeded draw): to the enemy
base, then home while it carries the enemy flag; it never tags and never waits. Seats alternate between games
(game g: env, bot and follower seeded g). Score = win + draw / 2. Prints one line per map and one per size class
(by the larger side: up to 11, 13-15, 17-21); the last line is one JSON object
{"games", "by_map": {map: {bot: score}}, "by_size": {class: {bot: score}}, "outcomes": {bot: {win, draw, loss}}}.
The follower is plain Python (no Ray, no torch); under a second per game.

With `--checkpoint`, a run's main (trained with `env.kwargs.plan`) plays the same games (same seeds and seats, its
run's own env kwargs; argmax, or sampled with `--stochastic`) and the JSON gains "main": the same figures plus, per
map, its habits in those games: tags with no opponent within two cells, noops, and the share of its moves (while
not carrying) that are among the plan's best, per game. Main is loaded with torch, without Ray.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from bench.ablations.compute_curve import CLASS_LABELS  # noqa: E402
from spade_rllib.core.validation import did_you_mean  # noqa: E402
from spade_rllib.curriculum.heldout_maps import load_heldout_levels  # noqa: E402
from spade_rllib.envs import CaptureTheFlag  # noqa: E402
from spade_rllib.envs.cell_memory import MOVES, PLAN_SIZE, PLAN_TARGETS  # noqa: E402
from spade_rllib.envs.ctf import VECTOR_SIZE  # noqa: E402
from spade_rllib.games import make_bot  # noqa: E402
from spade_rllib.games.catalog import heldout_dir  # noqa: E402
from spade_rllib.rllib.final_heldout_eval import size_class  # noqa: E402  (the summary's size classes)

ENV_ID = "CaptureTheFlag-v0"
RACERS = ("rusher", "raider", "hybrid")
PER_TARGET = len(MOVES) + 1  # per plan target: the change of distance for each move, then the distance


def plan_slice(view_radius: int) -> slice:
    """Where the plan's features sit in a CaptureTheFlag observation (after the window and the vector)."""
    (w, _, c), _ = CaptureTheFlag.obs_layout(view_radius)
    start = w * w * c + VECTOR_SIZE
    return slice(start, start + PLAN_SIZE)


class PlanFollower:
    """Reads only `obs[plan_slice]`: the move (1-4) whose change of distance to its target is least (the enemy base,
    or the own base while `carrying`, which the player knows: it picked the flag up). Ties: a seeded draw."""

    def __init__(self, seed: int, view_radius: int):
        self.rng = np.random.default_rng(seed)
        self.plan = plan_slice(view_radius)

    def act(self, obs: np.ndarray, carrying: bool) -> int:
        t = PLAN_TARGETS.index("own_base" if carrying else "enemy_base") * PER_TARGET
        change = obs[self.plan][t:t + len(MOVES)]
        best = np.flatnonzero(change == change.min())
        return 1 + int(best[0] if len(best) == 1 else self.rng.choice(best))


class Main:
    """A run's main as a player of these games: its policy (argmax, or sampled with a seeded rng) on the run's own
    env kwargs, counting its habits (`habits`: per game, idle tags, noops, moves on the plan's best / moves)."""

    def __init__(self, checkpoint: str, stochastic: bool):
        from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_setup, resolve_checkpoint
        from spade_rllib.games.catalog import recorded_game_kwargs
        from spade_rllib.players.policy import load_policy

        self.policy = load_policy(checkpoint, env_id=ENV_ID)
        self.kwargs = recorded_game_kwargs(checkpoint_env_setup(resolve_checkpoint(checkpoint)))
        if not self.kwargs.get("plan"):
            from spade_rllib.players.policy import PolicyLoadError

            raise PolicyLoadError(f"{checkpoint}: its run did not train with env.kwargs.plan (its env kwargs: "
                                  f"{self.kwargs}); the comparison needs main to read the same plan")
        self.stochastic = stochastic

    def start(self, seed: int, view_radius: int) -> None:
        self.policy.reset()
        self.rng = np.random.default_rng(seed)
        self.plan = plan_slice(view_radius)
        self.habits = {"idle_tags": 0, "noops": 0, "on_plan": 0, "moves": 0}

    def act(self, env, me: str, obs: np.ndarray, carrying: bool) -> int:
        a = int(self.policy.act(obs, deterministic=not self.stochastic, rng=self.rng))
        if a == 0:
            self.habits["noops"] += 1
        elif a == 5:
            (r, c) = env.positions[me]
            near = any(abs(r - pr) + abs(c - pc) <= 2 for o, (pr, pc) in env.positions.items()
                       if env.team_of(o) != env.team_of(me))
            self.habits["idle_tags"] += not near
        elif not carrying:
            change = obs[self.plan][:len(MOVES)]
            self.habits["moves"] += 1
            self.habits["on_plan"] += bool(change[a - 1] == change.min())
        return a


def play(level, bot: str, seat: int, seed: int, main: Main | None = None) -> str:
    """One game of the follower (or `main`) as team `seat` against `bot`: "win" | "draw" | "loss" from its side."""
    env = CaptureTheFlag(level=level, **(main.kwargs if main is not None else {"plan": True}))
    obs, _ = env.reset(seed=seed)
    me, other = env.possible_agents[seat], env.possible_agents[1 - seat]
    opponent = make_bot(bot, seed=seed, env_id=ENV_ID)
    follower = PlanFollower(seed, env.view_radius) if main is None else None
    if main is not None:
        main.start(seed, env.view_radius)
    carrying = False
    while env.agents:
        mine = follower.act(obs[me], carrying) if main is None else main.act(env, me, obs[me], carrying)
        obs, *_ = env.step({me: mine, other: opponent.act(env, other)})
        carrying = env.carrier[1 - seat] == me  # the player saw itself pick up the flag (and lose it when tagged)
    winner = env.outcome["winner"]
    return "draw" if winner == "draw" else ("win" if winner == "AB"[seat] else "loss")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=16, help="games per map and bot (seats alternate)")
    ap.add_argument("--bots", default=",".join(RACERS))
    ap.add_argument("--levels", default=None, help="a folder of maps (default: the shipped held-out maps)")
    ap.add_argument("--maps", default=None, help="comma-separated map names among --levels (default: all)")
    ap.add_argument("--checkpoint", default=None, help="also play this run's main in the same games")
    ap.add_argument("--stochastic", action="store_true", help="main samples its actions (default: argmax)")
    args = ap.parse_args(argv)
    if args.games < 1:
        ap.error(f"--games must be >= 1, got {args.games}")
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    for b in bots:
        if b not in RACERS:
            ap.error(f"--bots: unknown racing bot {b!r}{did_you_mean(b, RACERS)}; allowed: {', '.join(RACERS)}")
    levels = load_heldout_levels([args.levels or str(heldout_dir(ENV_ID))])
    if args.maps:
        names = [m.strip() for m in args.maps.split(",") if m.strip()]
        for m in names:
            if m not in levels:
                ap.error(f"--maps: no map {m!r} in the levels{did_you_mean(m, levels)}")
        levels = {m: levels[m] for m in names}

    main_player = None
    if args.checkpoint:
        from spade_rllib.players.policy import PolicyLoadError

        try:
            main_player = Main(args.checkpoint, args.stochastic)
        except PolicyLoadError as e:
            ap.error(f"--checkpoint: {e}")
    t0 = time.perf_counter()
    out = {"games": args.games, **score_games(levels, bots, args.games, None)}
    if main_player is not None:
        out["main"] = {"checkpoint": args.checkpoint, "stochastic": args.stochastic,
                       **score_games(levels, bots, args.games, main_player)}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))
    return out


def score_games(levels: dict, bots: list[str], games: int, main: Main | None) -> dict:
    """Every map against every bot, `games` each (seats alternate): scores per map and size class, outcomes, and
    (for `main`) its habits per map, each a mean per game."""
    value = {"win": 1.0, "draw": 0.5, "loss": 0.0}
    by_map: dict[str, dict[str, float]] = {}
    habits: dict[str, dict[str, float]] = {}
    classes: dict[str, dict[str, list[float]]] = {}
    outcomes = {b: {"win": 0, "draw": 0, "loss": 0} for b in bots}
    print("main" if main is not None else "plan follower", flush=True)
    for name, level in sorted(levels.items(), key=lambda kv: (max(kv[1].height, kv[1].width), kv[0])):
        by_map[name] = {}
        counts = {"idle_tags": 0, "noops": 0, "on_plan": 0, "moves": 0}
        for bot in bots:
            results = []
            for g in range(games):
                results.append(play(level, bot, g % 2, g, main))
                if main is not None:
                    for k in counts:
                        counts[k] += main.habits[k]
            for r in results:
                outcomes[bot][r] += 1
            score = float(np.mean([value[r] for r in results]))
            by_map[name][bot] = round(score, 3)
            classes.setdefault(CLASS_LABELS[size_class(level.height, level.width)], {}).setdefault(bot, []).append(score)
        line = f"{name:12s} {level.height}x{level.width}  " + "  ".join(f"{b} {by_map[name][b]:.2f}" for b in bots)
        if main is not None:
            n = games * len(bots)
            habits[name] = {"idle_tags": round(counts["idle_tags"] / n, 2), "noops": round(counts["noops"] / n, 2),
                            "on_plan": round(counts["on_plan"] / max(counts["moves"], 1), 3)}
            line += "  | per game: idle tags {idle_tags}, noops {noops}; moves on the plan {on_plan}".format(
                **habits[name])
        print(line, flush=True)
    by_size = {c: {b: round(float(np.mean(v)), 3) for b, v in per_bot.items()} for c, per_bot in classes.items()}
    for c, per_bot in by_size.items():
        print(f"{c:12s}  " + "  ".join(f"{b} {s:.2f}" for b, s in per_bot.items()))
    return {"by_map": by_map, "by_size": by_size, "outcomes": outcomes, **({"habits": habits} if main else {})}


if __name__ == "__main__":
    main()
