"""The league's claim where it should hold: self-play arms with no scripted opponent in training, scored
against opponents no arm trained against, with a real best response and a cross-time payoff matrix.

Poker (`--game kuhn|leduc`): exact exploitability curves of main, main's average and the league's mixtures,
arms mirror / league_uniform / league_pfsp / league_nash / ppo_iig; see bench/ablations/league_claim_poker.py (the
options below are those of ctf and c4).

    python bench/ablations/league_claim.py --game ctf|c4 [--seeds 3] [--env-steps N] [--exploit-env-steps N]
        [--arms mirror,league,league_exploiters] [--opponents A,B] [--games G] [--snapshots K] [--payoff-games G]
        [--minutes CAP] [--exploit-minutes CAP] [--exploit-init fresh|main] [--set KEY=VALUE ...]
        [--out-dir bench_out/league_claim_<game>] [--max-map-size N] [--cpus 2] [--only-seeds K,K] [--max-units K]

Arms (everything else from the game's shipped recipe: model, batch, epochs, curriculum, env runners; the same
seeds and the same env-step budget, not wall clock; exploiters' env steps count in their arm's budget):
    mirror             pure mirror self-play: main plays itself in every game
    league             main's own frozen snapshots, no scripted player and no `random` in the pool:
                       40% self-play, 20% the newest snapshot, the rest PFSP `hard` over all snapshots
    league_exploiters  league + one main exploiter and one league exploiter (AlphaStar's roles)
    reference          optional: the shipped recipe as it is, scripted opponents in its training mix
                       (for it those bots are training opponents, not held-out ones)

Games: `ctf` starts from tune_configs/flagship.yaml (PLR over generated levels); `c4` from
tune_configs/connect_four.yaml. After each (arm, seed) run, main's final weights are measured by:
  * held-out opponents: CTF, every ladder bot and a still team (navigation) on the six held-out maps, never
    trained on, `--games` per map, seat and opponent, actions sampled. Connect Four, masked argmax after 0-2
    random opening plies, `--games` per seat against random, tactical, lookahead and the MCTS ladder
    (mcts10 / mcts100 / mcts1000: UCT with random rollouts at 10, 100, 1000 simulations).
  * exploitability with a real best response: a fresh learner (the mirror recipe, another seed; with
    `--exploit-init main`, a copy of the final main instead) trains `--exploit-env-steps` with every game
    against the frozen final main, both sampling their actions as in training. Its training score (win +
    draw/2) per iteration is the curve; the exploitability is the score it plateaus at, the mean of the
    curve's last quarter (hundreds of games per iteration). Also reported:
    `exploit_auc` (the curve's mean), `exploit_plateau` (the last quarter's mean minus the quarter before it:
    near 0 = the best response stopped improving) and `exploit_match`, its score in a final match against
    main: on the held-out maps, sampled (CTF), or by argmax from the evaluation openings (Connect Four,
    where an argmax main is a single deterministic line, which a best response refutes every time).
    Lower is better. `--exploit-env-steps 0` trains no best response (these measures are n/a): the run that
    scores only the held-out opponents, the league as a player and the payoff matrix.
  * the league as one player (`league:uniform`, fictitious play's mixture: main's snapshots and main, equal
    weights; `spade_rllib.league.mixture`), against the same held-out opponents: one member drawn per game
    (Connect Four: `2 x --games` draws per opponent, each draw plays one game) or, on the held-out maps,
    `--mixture-draws` members drawn with replacement, each scored like main (an unbiased estimate of the
    mixture's score with that many times main's games). For mirror the mixture is the uniform average of its
    `--snapshots` copies of main (averaging alone, the control). `mixture_heldout_mean` pairs each arm's mixture
    with mirror's average by seed; `mixture_vs_main` is each unit's mixture minus its own main. The members'
    weights and mixture weights are kept in `units/<arm>_seed<k>_mixture.pt` so they can be re-scored.
  * forgetting and cycling: `--snapshots` copies of main taken at evenly spaced env steps (the last one is
    the final main) play every pair, `--payoff-games` per seat (and map): the cross-time payoff matrix
    M[i][j] = score of snapshot i against snapshot j. `progress` = mean of M[i][j] over i > j (later vs
    earlier; > 0.5 = it keeps improving), `final_vs_past` = the final main's mean over all earlier ones,
    `regressions` = share of pairs i > j with M[i][j] < 0.5 (a later main losing to an earlier one).
    `<out-dir>/payoff.png` draws the matrices, averaged over seeds, one panel per arm, and
    `<out-dir>/exploitability.png` the best responses' curves (each unit's JSON holds its curve).
Per arm: mean and two-sided 95% Student-t interval over seeds; per arm other than mirror: the paired
difference to mirror, seed by seed, with its interval (`paired`).

Units (one (arm, seed) training run with all its measures and its resolved config) are cached in `<out-dir>/units/` as they finish;
a rerun with the same --out-dir reuses them; `--only-seeds` and `--max-units` cut the run into chunks; a
changed setting stops with one line (exit 2) before Ray starts (see `bench/ablation_common.py`).

The LAST line is one JSON object: {"bench": "league_claim", "game", "env_id", "config", "seeds", "env_steps",
"exploit_env_steps", "games", "opponents", "arms": {arm: {"heldout": {opponent: stat}, "heldout_mean",
"mixture_heldout": {opponent: stat}, "mixture_heldout_mean", "mixture_vs_main", "exploitability", "exploit_auc",
"exploit_plateau", "exploit_match", "payoff": {"progress", "final_vs_past",
"regressions", "matrix"}, "env_steps", "train_s"}}, "paired": {arm: {measure: stat}}, "complete",
"units_done", "units_missing"}; stat = {mean, low, high, n, iqm, iqm_low, iqm_high, values}.
"""
from __future__ import annotations

import copy
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import (
    ROOT, STILL, TARGET, LazyRay, UnitCache, ablation_parser, deep_merge,
    fmt_interval, head_to_head, heldout_scores, make_runner, over_seeds, paired_by_seed, parse_ablation_args,
    plot_curves, portable, pyplot, train, train_against, unit_manifest, unit_progress, unit_runs,
)
from spade_rllib.artifacts.atomic_io import write_text

ARMS = ("mirror", "league", "league_exploiters", "reference")
DEFAULT_ARMS = ("mirror", "league", "league_exploiters")
BASELINE = "mirror"
EXPLOIT_INITS = ("fresh", "main")
"""Where a best response starts: a fresh network, or a copy of the main it exploits. In a symmetric game a
true best response scores >= 0.5 (it could play main's own policy); a copy starts there and only has to find
main's holes, where a fresh learner may first have to learn the game and fall short of 0.5."""
EVAL_OPENING_PLIES = 2
"""Connect Four evaluation games start after 0-2 uniformly random plies, so two argmax players meet in more
than the two games the empty board allows."""


@dataclass(frozen=True)
class ClaimGame:
    """One game of the claim: its recipe and what measures it."""

    env_id: str
    config: Path
    league: Mapping[str, Any]
    """League settings of the self-play arms on top of the recipe's own (`--set` can change them); the arms
    then keep main's own snapshots only: no random, no bots, no reference floor (`NO_REFERENCES`)."""
    opponents: tuple[str, ...]
    """Held-out opponents reported (bot names; `still` is the still team of level games)."""
    level_game: bool
    """Level games are scored on the held-out maps with sampled actions; board games by masked argmax."""
    env_steps: int
    exploit_env_steps: int
    games: int


NO_REFERENCES = {"include_random": False, "bots": [], "reference_floor": 0.0}
GAMES: dict[str, ClaimGame] = {
    "ctf": ClaimGame(
        env_id="CaptureTheFlag-v0", config=ROOT / "tune_configs" / "flagship.yaml",
        league={}, level_game=True,
        opponents=(STILL, "random", "rusher", "defender", "raider", "hybrid"),
        env_steps=6_000_000, exploit_env_steps=7_000_000, games=5),
    "c4": ClaimGame(
        env_id="connect_four_v3", config=ROOT / "tune_configs" / "connect_four.yaml",
        league={"win_rate_threshold": 0.6, "window": 300, "min_iterations_between": 3,
                "every_n_iterations": 10, "self_play_ratio": 0.4, "latest_ratio": 0.2, "sampling": "pfsp",
                "pfsp_weighting": "hard", "max_size": 20, "num_opponent_slots": 4},
        level_game=False,
        opponents=("random", "tactical", "lookahead", "mcts10", "mcts100", "mcts1000"),
        env_steps=1_500_000, exploit_env_steps=2_000_000, games=20),
}


def arm_config(base: dict, game: ClaimGame, arm: str, seed: int, overrides: Sequence[str], out_dir: Path) -> dict:
    """The recipe of one arm and seed, no in-training evaluation (it would eat the budget)."""
    from spade_rllib.config.run_config import apply_overrides

    raw = deep_merge(copy.deepcopy(base), {
        "experiment": {"seed": int(seed), "name": f"{arm}_seed{seed}", "storage_path": str(out_dir / "runs")},
        "evaluation": {"interval": 0, "heldout_levels": [], "final_heldout_levels": []}})
    if not game.level_game:
        raw["evaluation"]["random_opening_plies"] = EVAL_OPENING_PLIES
    if arm != "reference":
        raw = deep_merge(raw, {"league": dict(game.league)})
    raw = apply_overrides(raw, list(overrides))  # --set wins over the game's settings, not over the arm's
    if arm == "reference":
        return raw
    raw["self_play"] = {**(raw.get("self_play") or {}), "mode": "mirror", "opponent_mix": {}}
    league = {**(raw.get("league") or {}), **NO_REFERENCES}
    if arm == BASELINE:
        raw["league"] = {**league, "enabled": False}
    else:
        raw["league"] = {**league, "enabled": True}
        if arm == "league_exploiters":
            raw["league"].update(main_exploiters=1, league_exploiters=1)
    return raw


def exploiter_config(base: dict, game: ClaimGame, seed: int, overrides: Sequence[str], out_dir: Path) -> dict:
    """The best response to seed `seed`'s main: the mirror recipe with a fresh network (another seed)."""
    raw = arm_config(base, game, BASELINE, 1000 + seed, overrides, out_dir)
    raw["experiment"]["name"] = f"exploiter_seed{seed}"
    return raw


def board_scores(run: dict, game: ClaimGame, opponents: Sequence[str], games: int) -> dict[str, float]:
    """Main's score (win + draw/2) per scripted opponent, masked argmax, `games` per seat."""
    runner = make_runner(run["algo_config"], run["weights"])
    try:
        scores = {}
        for name in opponents:
            records = runner.evaluate_main({"opponents": [f"bot:{name}"], "games": 2 * games, "greedy": True})
            scores[name] = float(np.mean([r.learner_score for r in records if r.learner_score is not None]))
        return scores
    finally:
        runner.stop()


def versus(run: dict, game: ClaimGame, weights_a: Mapping, weights_b: Mapping, games: int, max_size: int) -> float:
    """A's mean score against B: the held-out maps with sampled actions (level games), or argmax from the
    evaluation openings (board games)."""
    scores = head_to_head(run["algo_config"], weights_a, weights_b, game.env_id, games, greedy=not game.level_game,
                          max_size=max_size, heldout=game.level_game)
    return float(np.mean(scores)) if scores else math.nan


def payoff_matrix(run: dict, game: ClaimGame, snapshots: Sequence[Mapping], games: int, max_size: int) -> list[list[float]]:
    """M[i][j] = score of snapshot i against snapshot j (M[i][i] = 0.5; M[j][i] = 1 - M[i][j])."""
    k = len(snapshots)
    m = np.full((k, k), 0.5)
    for i in range(k):
        for j in range(i):
            m[i, j] = versus(run, game, snapshots[i], snapshots[j], games, max_size)
            m[j, i] = 1.0 - m[i, j]
    return [[round(float(x), 4) for x in row] for row in m]


def payoff_summary(matrix: Sequence[Sequence[float]]) -> dict[str, float]:
    """progress (mean later-vs-earlier score), final_vs_past (the last row's mean over earlier columns) and
    regressions (share of later-vs-earlier scores below 0.5)."""
    m = np.asarray(matrix, dtype=float)
    later = m[np.tril_indices(len(m), -1)]
    return {"progress": float(later.mean()), "final_vs_past": float(m[-1, :-1].mean()),
            "regressions": float((later < 0.5).mean())}


def curve_stats(curve: Sequence[float]) -> dict[str, float]:
    """The best response's training curve: `final`, its last quarter's mean (the score it plateaus at: the
    exploitability); `auc`, its area (the mean score over the run); `plateau`, the last quarter's mean minus
    the quarter before it (near 0 = it stopped improving)."""
    ys = np.asarray([y for y in curve if not math.isnan(y)], dtype=float)
    if ys.size == 0:
        return {"final": math.nan, "auc": math.nan, "plateau": math.nan}
    q = max(1, ys.size // 4)
    before = ys[-2 * q:-q] if ys.size >= 2 * q else ys[:q]
    return {"final": float(ys[-q:].mean()), "auc": float(ys.mean()), "plateau": float(ys[-q:].mean() - before.mean())}


def best_response(target: Mapping, base: dict, game: ClaimGame, seed: int, args, overrides: Sequence[str]) -> dict:
    """Train a learner (fresh, or from `target`'s weights: `--exploit-init`) against the frozen `target`: its
    training curve (score per iteration, and the env steps at each) and its final match score against `target` (`curve_stats` reads the curve)."""
    keys = [f"train/{TARGET}/win_rate", f"train/{TARGET}/draw_rate", f"train/{TARGET}/games"]
    br = train_against(target, exploiter_config(base, game, seed, overrides, args.out_dir), seed, args.exploit_minutes,
                       args.exploit_env_steps, f"best response seed {seed}", keep=keys,
                       start_from_target=args.exploit_init == "main")
    h = br["history"]
    curve = [w + 0.5 * (0.0 if math.isnan(d) else d) for w, d in zip(h[keys[0]], h[keys[1]])]
    score = versus(br, game, br["weights"], target, args.games, args.max_map_size)
    return {"score": score, "curve": [round(c, 4) for c in curve], "curve_env_steps": h["env_steps"],
            "games_last_iteration": h[keys[2]][-1] if h[keys[2]] else 0, "env_steps": br["env_steps"],
            "train_s": br["train_s"]}


NO_BEST_RESPONSE = {"score": math.nan, "curve": [], "curve_env_steps": [], "games_last_iteration": 0, "env_steps": 0,
                    "train_s": 0.0}
"""A unit's `exploit` record with `--exploit-env-steps 0` (no best response trained: its measures are n/a)."""


def snapshot_marks(env_steps: int, k: int) -> list[int]:
    """The env steps at which main is copied for the payoff matrix: k - 1 evenly spaced marks before the end
    (the final main is the k-th)."""
    return [int(env_steps * (i + 1) / k) for i in range(k - 1)]


LEAGUE_KEYS = ("league/snapshot_event", "league/win_rate_vs_latest")


def league_trace(history: Mapping[str, Sequence[float]]) -> dict:
    """What the league did in a run: snapshots taken, and main's win rate against its newest snapshot (last
    value and its mean over the run); empty without a league."""
    snaps = [x for x in history.get(LEAGUE_KEYS[0], []) if not math.isnan(x)]
    rates = [x for x in history.get(LEAGUE_KEYS[1], []) if not math.isnan(x)]
    if not snaps:
        return {}
    return {"snapshots": int(sum(snaps)), "win_rate_vs_latest": rates[-1] if rates else None,
            "mean_win_rate_vs_latest": float(np.mean(rates)) if rates else None}


def copy_tree(tree: Any) -> Any:
    return {k: copy_tree(v) for k, v in tree.items()} if isinstance(tree, Mapping) else np.array(tree, copy=True)


MIXTURE_MODE = "uniform"
"""The league's mixture the bench scores: fictitious play's (`league:uniform`)."""


def league_mixture(algo) -> tuple[dict[str, float], dict[str, dict]]:
    """({member: weight}, {member: numpy weights}) of the league's `MIXTURE_MODE` mixture at the end of a run;
    ({}, {}) without a league."""
    from spade_rllib.league.member_ids import MAIN
    from spade_rllib.league.mixture import mixture_weights

    leagues = [c for c in getattr(algo, "components", []) if c.name == "league"]
    if not leagues:
        return {}, {}
    league = leagues[0].league
    weights = mixture_weights(league, MIXTURE_MODE)
    members = {str(m): copy_tree(algo.main_weights() if m == MAIN else league.weights(m)) for m in weights}
    return {str(m): float(w) for m, w in weights.items()}, members


def draw_counts(weights: Mapping[str, float], n: int, rng: np.random.Generator) -> dict[str, int]:
    """How many of `n` draws (with replacement, by `weights`) land on each member; members never drawn left out."""
    names = list(weights)
    p = np.asarray([weights[m] for m in names], np.float64)
    counts = rng.multinomial(n, p / p.sum())
    return {m: int(c) for m, c in zip(names, counts) if c > 0}


def mixture_scores(run: dict, game: ClaimGame, weights: Mapping[str, float], members: Mapping[str, Mapping], args,
                   seed: int) -> dict[str, float]:
    """The mixture's held-out score per opponent (see the module docstring: one member drawn per game on a board
    game; `--mixture-draws` members on the held-out maps)."""
    rng = np.random.default_rng(10_000 + seed)
    if not game.level_game:
        counts = {name: draw_counts(weights, 2 * args.games, rng) for name in args.opponents}
        scores: dict[str, list[float]] = {o: [] for o in args.opponents}
        for member in weights:  # one runner per member drawn, for every opponent it plays
            played = {name: c[member] for name, c in counts.items() if member in c}
            if not played:
                continue
            runner = make_runner(run["algo_config"], members[member])
            try:
                for name, count in played.items():
                    records = runner.evaluate_main({"opponents": [f"bot:{name}"], "games": count, "greedy": True})
                    scores[name] += [float(r.learner_score) for r in records if r.learner_score is not None]
            finally:
                runner.stop()
        return {o: float(np.mean(v)) for o, v in scores.items()}
    per_draw = []
    for member, count in draw_counts(weights, args.mixture_draws, rng).items():
        held = heldout_scores({**run, "weights": members[member]}, game.env_id, args.games, seed, args.max_map_size,
                              args.opponents)
        per_draw += [held] * count
    return {o: float(np.mean([d[o] for d in per_draw])) for o in args.opponents}


def save_mixture(path: Path, weights: Mapping[str, float], members: Mapping[str, Mapping]) -> None:
    """The mixture a unit scored: {"weights": {member: w}, "members": {member: state dict}} (torch.save)."""
    import torch

    from spade_rllib.artifacts.atomic_io import atomic_path

    with atomic_path(path) as tmp:
        torch.save({"weights": dict(weights), "members": {m: {k: torch.from_numpy(np.asarray(v)) for k, v in w.items()}
                                                          for m, w in members.items()}}, tmp)


def run_unit_for(base: dict, game: ClaimGame, args, overrides: Sequence[str]):
    def run_unit(arm: str, seed: int) -> tuple[dict, dict]:
        marks, snaps = snapshot_marks(args.env_steps, args.snapshots), []

        def copy_main(algo, steps: int) -> None:
            while len(snaps) < len(marks) and steps >= marks[len(snaps)]:
                snaps.append(copy_tree(algo.main_weights()))  # the learner's arrays change in place

        raw = arm_config(base, game, arm, seed, overrides, args.out_dir)
        run = train(raw, args.minutes, args.env_steps, f"{arm} seed {seed}", on_iteration=copy_main, keep=LEAGUE_KEYS,
                    on_done=league_mixture)
        if game.level_game:
            run["heldout"] = heldout_scores(run, game.env_id, args.games, seed, args.max_map_size, args.opponents)
        else:
            run["heldout"] = board_scores(run, game, args.opponents, args.games)
        mix_weights, members = run["done"]
        if not mix_weights:  # no league (mirror, reference): the uniform average of main's copies over the run
            members = {f"copy{i}": w for i, w in enumerate([*snaps, run["weights"]])}
            mix_weights = {m: 1.0 / len(members) for m in members}
        save_mixture(args.out_dir / "units" / f"{arm}_seed{seed}_mixture.pt", mix_weights, members)
        mixture = {"mode": MIXTURE_MODE if run["done"][0] else "copies", "members": mix_weights,
                   "heldout": mixture_scores(run, game, mix_weights, members, args, seed)}
        br = best_response(run["weights"], base, game, seed, args, overrides) if args.exploit_env_steps else NO_BEST_RESPONSE
        matrix = payoff_matrix(run, game, [*snaps, run["weights"]], args.payoff_games, args.max_map_size)
        record = {"heldout": run["heldout"], "mixture": mixture, "exploit": br, "payoff": matrix, "snapshot_env_steps": marks,
                  "env_steps": run["env_steps"], "iterations": run["iterations"], "train_s": run["train_s"],
                  "league": league_trace(run["history"]), "config": portable(raw, args.out_dir)}
        return record, run["weights"]

    return run_unit


def measures(record: Mapping, opponents: Sequence[str]) -> dict[str, float]:
    """The per-unit numbers the summary and the paired differences are made of."""
    held = {f"heldout/{o}": float(record["heldout"][o]) for o in opponents}
    pay = payoff_summary(record["payoff"])
    curve = curve_stats(record["exploit"]["curve"])
    mix = {f"mixture_heldout/{o}": float(record["mixture"]["heldout"][o]) for o in opponents} \
        if "mixture" in record else {f"mixture_heldout/{o}": math.nan for o in opponents}
    mix_mean = float(np.mean(list(mix.values())))
    main_mean = float(np.mean([record["heldout"][o] for o in opponents]))
    return {**held, **mix, "mixture_heldout_mean": mix_mean, "mixture_vs_main": mix_mean - main_mean,
            "heldout_mean": main_mean,
            "exploitability": curve["final"], "exploit_auc": curve["auc"], "exploit_plateau": curve["plateau"],
            "exploit_match": float(record["exploit"]["score"]), **{f"payoff/{k}": v for k, v in pay.items()}}


def summarize(runs: Mapping[str, Sequence[dict]], opponents: Sequence[str]) -> tuple[dict, dict]:
    """(per-arm statistics, paired differences to mirror by seed)."""
    arms: dict[str, dict] = {}
    per_seed: dict[str, dict[int, dict]] = {}
    for arm, rs in runs.items():
        ms = [measures(r, opponents) for r in rs]
        per_seed[arm] = {int(r["seed"]): m for r, m in zip(rs, ms)}
        stat = lambda key: over_seeds([m[key] for m in ms])  # noqa: E731
        mean_matrix = np.mean([r["payoff"] for r in rs], axis=0).round(4).tolist() if rs else []
        arms[arm] = {
            "heldout": {o: stat(f"heldout/{o}") for o in opponents}, "heldout_mean": stat("heldout_mean"),
            "mixture_heldout": {o: stat(f"mixture_heldout/{o}") for o in opponents},
            "mixture_heldout_mean": stat("mixture_heldout_mean"), "mixture_vs_main": stat("mixture_vs_main"),
            "exploitability": stat("exploitability"), "exploit_auc": stat("exploit_auc"),
            "exploit_plateau": stat("exploit_plateau"), "exploit_match": stat("exploit_match"),
            "payoff": {k: stat(f"payoff/{k}") for k in ("progress", "final_vs_past", "regressions")}
            | {"matrix": mean_matrix},
            "env_steps": [r["env_steps"] for r in rs], "train_s": [round(r["train_s"], 1) for r in rs],
            "exploit_env_steps": [r["exploit"]["env_steps"] for r in rs],
        }
    paired = paired_by_seed(per_seed, BASELINE)
    return arms, paired


def plot_payoff(arms: Mapping[str, dict], path: Path, title: str) -> Optional[Path]:
    """One heatmap per arm of its seed-averaged cross-time payoff matrix (rows: the later main)."""
    plt = pyplot(path)
    if plt is None:
        return None
    shown = {a: s["payoff"]["matrix"] for a, s in arms.items() if s["payoff"]["matrix"]}
    if not shown:
        return None
    fig, axes = plt.subplots(1, len(shown), figsize=(3.6 * len(shown), 3.4), squeeze=False)
    for ax, (arm, m) in zip(axes[0], shown.items()):
        im = ax.imshow(np.asarray(m), vmin=0.0, vmax=1.0, cmap="RdBu_r", origin="upper")
        ax.set_title(arm, fontsize=10)
        ax.set_xlabel("opponent snapshot")
        ax.set_ylabel("snapshot")
        k = len(m)
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="row's score")
    fig.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


EXPLOIT_FLOOR = {"exploit_env_steps": (0, "0: no best response")}
"""`--exploit-env-steps 0` means no best response (its measures n/a): the shared check's floor for it."""


def parse_args(argv=None):
    """(args, arms, overrides, game, base config); one argparse error for a bad command line."""
    ap = ablation_parser(__doc__, kind="arms", names=ARMS, default_names=DEFAULT_ARMS, seeds=3, minutes=90.0,
                         games=None, exploit_minutes=60.0, env_id=False, greedy=False, out_dir="league_claim",
                         bench="league_claim", out_help="units/, manifest.json, payoff.png, exploitability.png",
                         games_help="games per seat against each held-out opponent (per map in CTF) and in the "
                                    "best response's final match (default per game: ctf 5, c4 20)",
                         env_steps_help="env steps per arm and seed (default per game: ctf 6M, c4 1.5M)")
    ap.add_argument("--game", required=True, choices=sorted(GAMES) + list(POKER),
                    help="ctf (CaptureTheFlag 1v1) or c4 (Connect Four); kuhn / leduc: see bench/ablations/league_claim_poker.py")
    ap.add_argument("--exploit-env-steps", type=int, default=None,
                    help="env steps of each best response (default per game: ctf 7M, c4 2M; 0: none, its measures n/a)")
    ap.add_argument("--address", default=None,
                    help="run on this Ray cluster (`auto` inside `ray job submit`) instead of a local Ray of --cpus")
    ap.add_argument("--opponents", default=None, metavar="A,B,...",
                    help="held-out opponents to score (a subset of the game's; default: all of them)")
    ap.add_argument("--snapshots", type=int, default=6, help="copies of main for the cross-time payoff matrix (>= 2)")
    ap.add_argument("--exploit-init", choices=EXPLOIT_INITS, default="fresh",
                    help="the best response starts from a fresh network (default) or from a copy of the final main")
    ap.add_argument("--mixture-draws", type=int, default=4,
                    help="level games: league members drawn (with replacement) to score the league as one player on "
                         "the held-out maps, each like main (board games draw a member per game)")
    ap.add_argument("--payoff-games", type=int, default=None,
                    help="games per seat (and map) for each pair of the payoff matrix (default: --games, at most 10)")
    args, arms, overrides = parse_ablation_args(ap, argv, "arms", ARMS, floors=EXPLOIT_FLOOR)
    game = GAMES[args.game]
    args.games = game.games if args.games is None else args.games
    if args.opponents is None:
        args.opponents = list(game.opponents)
    else:
        args.opponents = [o.strip() for o in args.opponents.split(",") if o.strip()]
        bad = [o for o in args.opponents if o not in game.opponents]
        if bad or not args.opponents:
            from spade_rllib.core.validation import did_you_mean

            hint = did_you_mean(bad[0], game.opponents) if bad else ""
            ap.error(f"--opponents {','.join(bad) or 'empty'}{hint}: --game {args.game} has {','.join(game.opponents)}")
    args.env_steps = game.env_steps if args.env_steps is None else args.env_steps
    args.exploit_env_steps = game.exploit_env_steps if args.exploit_env_steps is None else args.exploit_env_steps
    args.payoff_games = min(10, args.games) if args.payoff_games is None else args.payoff_games
    if args.env_steps < 1 or args.exploit_env_steps < 0:
        ap.error(f"--env-steps {args.env_steps} (>= 1) / --exploit-env-steps {args.exploit_env_steps} (>= 0; 0: no best response)")
    if args.mixture_draws < 1:
        ap.error(f"--mixture-draws {args.mixture_draws}: expected >= 1")
    if args.snapshots < 2 or args.payoff_games < 1:
        ap.error(f"--snapshots {args.snapshots} (>= 2) / --payoff-games {args.payoff_games} (>= 1)")
    if args.max_map_size and not game.level_game:
        ap.error(f"--max-map-size {args.max_map_size}: only level games have maps (--game ctf)")
    if args.out_dir == Path("bench_out") / "league_claim":
        args.out_dir = Path("bench_out") / f"league_claim_{args.game}"
    args.out_dir = args.out_dir.resolve()
    from spade_rllib.config.run_config import read_yaml

    base = read_yaml(game.config.read_text())
    return args, arms, overrides, game, base


POKER = ("kuhn", "leduc")


def _poker_game(argv) -> Optional[str]:
    """The poker game named by `--game` (handled by bench/ablations/league_claim_poker.py), else None."""
    words = list(sys.argv[1:] if argv is None else argv)
    for i, w in enumerate(words):
        value = w.split("=", 1)[1] if w.startswith("--game=") else (words[i + 1] if w == "--game" and i + 1 < len(words) else None)
        if value in POKER:
            return value
    return None


def main(argv=None) -> int:
    if _poker_game(argv) is not None:
        from bench.ablations import league_claim_poker

        return league_claim_poker.main(argv)
    args, arms, overrides, game, base = parse_args(argv)
    from bench.common import check_bench_args  # the command line, before Ray: one line, exit 2

    check_bench_args(args, base=base, overrides=overrides, env_id=game.env_id if game.level_game else None,
                     floors=EXPLOIT_FLOOR)
    manifest = unit_manifest(args, game.env_id, game.config.read_text())
    manifest.update({"game": args.game, "opponents": args.opponents, "snapshots": args.snapshots,
                     "payoff_games": args.payoff_games})  # the mixture's measures leave main's unchanged: not in it
    if args.exploit_init != "fresh":  # out-dirs of fresh best responses predate the option
        manifest["exploit_init"] = args.exploit_init
    cache = UnitCache(args.out_dir, manifest, keep_weights=False)  # every measure is taken inside the unit
    cache.check()  # before Ray: a mismatch writes nothing
    with LazyRay(args.cpus, args.address) as ray:
        runs = unit_runs(args, arms, run_unit_for(base, game, args, overrides), cache, ray)
    progress = unit_progress(args, arms, runs, argv)
    summary, paired = summarize(runs, args.opponents)

    title = (f"{args.game}: cross-time payoff, {args.snapshots} snapshots over {args.env_steps:,d} env steps, "
             f"mean of {max(len(r) for r in runs.values())} seeds")
    plot_payoff(summary, args.out_dir / "payoff.png", title)
    plot_curves({a: [r["exploit"]["curve"] for r in rs] for a, rs in runs.items()}, "best response's training score",
                args.out_dir / "exploitability.png", f"{args.game}: best responses against each final main")

    fmt = fmt_interval
    print(f"league claim on {game.env_id} ({game.config.name}): {args.seeds} seeds x {args.env_steps:,d} env steps per arm"
          f"{'' if progress['complete'] else ' (INCOMPLETE: seeds present only)'}; best responses "
          f"{args.exploit_env_steps:,d} env steps; mean [95% t-interval over seeds]")
    print(" | ".join(["arm", *(f"vs {o}" for o in args.opponents), "exploitability", "progress", "regressions"]))
    for arm, s in summary.items():
        print(" | ".join([arm, *(fmt(s["heldout"][o]) for o in args.opponents), fmt(s["exploitability"]),
                          fmt(s["payoff"]["progress"]), fmt(s["payoff"]["regressions"])]))
    print("the league as one player (mirror: the average of its copies of main), same opponents:")
    for arm, s in summary.items():
        print(" | ".join([f"{arm} mixture", *(fmt(s["mixture_heldout"][o]) for o in args.opponents),
                          f"mean {fmt(s['mixture_heldout_mean'])}", f"mixture - main {fmt(s['mixture_vs_main'])}"]))
    for arm, d in paired.items():
        print(f"{arm} - {BASELINE}, paired by seed: held-out mean {fmt(d['heldout_mean'])}, mixture held-out mean "
              f"{fmt(d['mixture_heldout_mean'])} (vs mirror's average), exploitability {fmt(d['exploitability'])}, "
              f"progress {fmt(d['payoff/progress'])}")
    out = {"bench": "league_claim", "game": args.game, "env_id": game.env_id, "config": game.config.name,
           "seeds": args.seeds, "env_steps": args.env_steps, "exploit_env_steps": args.exploit_env_steps,
           "games": args.games, "payoff_games": args.payoff_games, "snapshots": args.snapshots,
           "opponents": args.opponents, "arms": summary, "paired": paired, **progress}
    write_text(args.out_dir / "summary.json", json.dumps(out, indent=1))
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
