"""The final summary's held-out line: main on the shipped held-out maps (up to a size) against a still
team, `random` and bots, with verdicts from the config's targets.

Config (`evaluation`): `final_heldout_levels` (files or directories of ASCII maps; empty = off),
`final_heldout_max_size` (maps with more rows or columns are left out; 0 = all),
`final_heldout_opponents` (`still`: the other team never moves, so main's score is pure navigation:
1 for a capture, 0.5 for a timeout; `random`; `bot:<name>`), `final_heldout_games` (games per map,
opponent and seat) and `final_heldout_targets` (opponent -> least score, win + draw/2; the
verdicts come from `spade_rllib.training.targets`, as the final evaluation's).

`final_heldout_navigation_target` (a least score, or null) also plays the still team on every map, whatever
the size limit, under `final_heldout_all/still/...`: navigation on the large maps too, with one more line.

`final_heldout_size_opponents` (e.g. the racing bots) play main on every map, whatever the size limit,
`final_heldout_size_games` games per map, opponent and seat, under `final_heldout_size/<class>/<opponent>/...`
and `final_heldout_map/<map>/<opponent>/score`: the summary prints one line per size class (`SIZE_CLASSES`,
by the map's larger side) with main's score per opponent and its worst map there.

`final_heldout_evaluation(algo_config, weights, ...)` plays in this process with a `SpadeEnvRunner`
built from the run's algorithm config, so main sees exactly the observations it trained on; the
flat metrics are `final_heldout/<opponent>/{win_rate, draw_rate, loss_rate, games}`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from spade_rllib.core.outcome import MAIN, TEAM_LETTERS

STILL = "still"
"""Opponent id of a team that never moves (every agent plays action 0, noop, in both level games)."""
NOOP = 0
PREFIX = "final_heldout"
ALL_PREFIX = "final_heldout_all"
"""Metrics prefix of the still team on every held-out map (`final_heldout_navigation_target`)."""
SIZE_PREFIX = "final_heldout_size"
"""Metrics prefix of the size classes: `final_heldout_size/<class>/<opponent>/{win_rate, ..., games}`."""
MAP_PREFIX = "final_heldout_map"
"""Metrics prefix of one map: `final_heldout_map/<map>/<opponent>/score`."""
SIZE_CLASSES = (("small", 0, 11, "up to 11x11"), ("medium", 12, 15, "13x13 to 15x15"), ("large", 16, 10_000, "17x17 to 21x21"))
"""(key, least, most, label) of the map's larger side (the shipped maps have odd sides; 12 counts as medium,
16 and more than 21 as large)."""


def size_class(height: int, width: int) -> str:
    """The `SIZE_CLASSES` key of a map of `height` x `width` (by its larger side)."""
    side = max(int(height), int(width))
    return next(key for key, lo, hi, _ in SIZE_CLASSES if lo <= side <= hi)


def size_class_metrics(records: Sequence[Any], sizes: Mapping[str, tuple[int, int]]) -> dict:
    """From outcome records of held-out games (`heldout_level` set) and {map: (height, width)}:
    `final_heldout_size/<class>/<opponent>/...` (win_rates), `final_heldout_size/<class>/levels` and
    `final_heldout_map/<map>/<opponent>/{score, games}`."""
    from spade_rllib.rllib.metrics import win_rates

    out: dict[str, Any] = {}
    for key, *_ in SIZE_CLASSES:
        names = [m for m, (h, w) in sizes.items() if size_class(h, w) == key]
        mine = [r for r in records if r.heldout_level in names]
        if names:
            out[f"{SIZE_PREFIX}/{key}/levels"] = names
            out.update(win_rates(mine, f"{SIZE_PREFIX}/{key}"))
    for name in sizes:
        for k, v in win_rates([r for r in records if r.heldout_level == name], f"{MAP_PREFIX}/{name}").items():
            if k.endswith(("/score", "/games")):
                out[k] = v
    return out


def size_lines(final: Mapping[str, Any], opponents: Sequence[str]) -> list[str]:
    """One line per size class with maps: main's score per opponent over its maps, and the worst map."""
    lines = []
    for key, _, _, label in SIZE_CLASSES:
        names = final.get(f"{SIZE_PREFIX}/{key}/levels") or []
        if not names:
            continue
        parts = []
        for opp in opponents:
            score = final.get(f"{SIZE_PREFIX}/{key}/{opp}/score")
            if not isinstance(score, (int, float)) or math.isnan(score):
                continue
            per_map = {m: final.get(f"{MAP_PREFIX}/{m}/{opp}/score") for m in names}
            per_map = {m: v for m, v in per_map.items() if isinstance(v, (int, float))}
            worst = min(per_map, key=lambda m: (per_map[m], m)) if len(per_map) > 1 else None
            parts.append(f"{opp.removeprefix('bot:')} {score:.2f}"
                         + (f" (worst {worst} {per_map[worst]:.2f})" if worst else ""))
        games = final.get(f"{SIZE_PREFIX}/{key}/{opponents[0]}/games") if opponents else None
        lines.append(f"held-out maps {label} ({', '.join(names)}; {games} games per opponent): main's score "
                     + (", ".join(parts) or "n/a"))
    return lines


def heldout_levels_up_to(paths: Sequence[str], max_size: int, agents_per_team: int) -> list[dict]:
    """The reset options of the held-out maps with at most `max_size` rows and columns (0: every map)."""
    from spade_rllib.curriculum.heldout_maps import heldout_reset_options

    levels = heldout_reset_options(list(paths), agents_per_team=agents_per_team)
    return [o for o in levels if not max_size or max(o["level"].height, o["level"].width) <= max_size]


def still_team_results(runner: Any, levels: list[dict], games: int, greedy: bool, rng: np.random.Generator) -> list[str]:
    """Main's results ('win', 'draw', 'loss') against a team that never moves, `games` per map and seat;
    a recurrent main starts each game from zero state, one state per agent."""
    import torch

    from spade_rllib.rllib.action_sampling import sample_actions

    game = runner.games[0]
    module = runner.module[MAIN]
    results = []
    for options in levels:
        for _ in range(games):
            for seat in range(len(game.teams)):
                obs = game.reset(seed=int(rng.integers(2**31)), options={"level": options["level"]})
                mine = set(game.teams[seat])
                states: dict = {}
                while True:
                    acts = {a: NOOP for a in obs}
                    ours = [a for a in obs if a in mine]
                    if ours:
                        x = torch.from_numpy(np.stack([obs[a] for a in ours]).astype(np.float32))
                        with torch.no_grad():
                            if getattr(module, "use_lstm", False):
                                zeros = torch.zeros(module.cell_size)
                                h = torch.stack([states.get(a, (zeros, zeros))[0] for a in ours])
                                c = torch.stack([states.get(a, (zeros, zeros))[1] for a in ours])
                                logits, new = module.step(x, {"h": h, "c": c})
                                states.update({a: (new["h"][j], new["c"][j]) for j, a in enumerate(ours)})
                            else:
                                logits = module.logits(x)
                        actions, _ = sample_actions(logits.numpy(), rng, greedy)
                        for a, act in zip(ours, actions.tolist()):
                            acts[a] = int(act)
                    res = game.step(acts)
                    if res.done:
                        break
                    obs = res.obs
                winner = (res.info or {}).get("winner")
                results.append("win" if winner == TEAM_LETTERS[seat] else "loss" if winner in TEAM_LETTERS[:2] else "draw")
    return results


def _still_rates(results: Sequence[str], prefix: str) -> dict:
    n = max(1, len(results))
    out: dict[str, Any] = {f"{prefix}/{STILL}/{k}_rate": results.count(k) / n for k in ("win", "draw", "loss")}
    out[f"{prefix}/{STILL}/games"] = len(results)
    return out


def _still_per_map(results: Sequence[str], names: Sequence[str]) -> dict:
    """`final_heldout_map/<map>/still/{score, games}` from `still_team_results` over `names` (map by map, in order)."""
    per = len(results) // max(1, len(names))
    out: dict[str, Any] = {}
    for i, name in enumerate(names):
        games = results[i * per:(i + 1) * per]
        out[f"{MAP_PREFIX}/{name}/{STILL}/score"] = (games.count("win") + 0.5 * games.count("draw")) / max(1, len(games))
        out[f"{MAP_PREFIX}/{name}/{STILL}/games"] = len(games)
    return out


def final_heldout_evaluation(algo_config: Any, weights: Mapping[str, Any], paths: Sequence[str], max_size: int,
                             opponents: Sequence[str], games: int, greedy: bool = False, seed: int = 0,
                             navigation_all: bool = False, size_opponents: Sequence[str] = (),
                             size_games: int = 10) -> dict:
    """`final_heldout/<opponent>/{win_rate, draw_rate, loss_rate, games}` and `final_heldout/levels` (the
    map names) for main's `weights` on the held-out maps up to `max_size`; with `navigation_all`, also
    `final_heldout_all/still/...` and `final_heldout_all/levels`: the still team on every map; with
    `size_opponents`, `size_class_metrics` of those opponents on every map (`size_games` per map and seat)."""
    from spade_rllib.rllib.metrics import win_rates
    from spade_rllib.rllib.runner import SpadeEnvRunner

    config = algo_config.copy(copy_frozen=False)
    config.env_runners(num_envs_per_env_runner=max(1, min(16, int(config.num_envs_per_env_runner))))
    runner = SpadeEnvRunner(config=config, worker_index=0, num_workers=0)
    try:
        runner.module[MAIN].set_state(dict(weights))
        per_team = len(runner.games[0].teams[0])
        levels = heldout_levels_up_to(paths, max_size, per_team)
        out: dict[str, Any] = {f"{PREFIX}/levels": [o["heldout_level"] for o in levels]}
        rng = np.random.default_rng(seed)
        still: Optional[list[str]] = None
        records: list = []
        if levels:
            bots = [o for o in opponents if o != STILL]
            if bots:  # seats alternate between games: 2 * games = `games` from each seat
                records = runner.evaluate_main({"opponents": bots, "games": 2 * games, "greedy": greedy, "levels": levels})
                out.update(win_rates(records, PREFIX))
            if STILL in opponents:
                still = still_team_results(runner, levels, games, greedy, rng)
                out.update(_still_rates(still, PREFIX))
        if size_opponents:
            every = heldout_levels_up_to(paths, 0, per_team)
            # the held-out line's own games serve where they are the same (every map, as many games)
            same = [o for o in size_opponents if levels and o in opponents and len(levels) == len(every) and games == size_games]
            rest = [o for o in size_opponents if o not in same]
            played = runner.evaluate_main({"opponents": rest, "games": 2 * size_games, "greedy": greedy,
                                           "levels": every}) if rest and every else []
            kept = [r for r in records if r.opponent in same]
            sizes = {o["heldout_level"]: (o["level"].height, o["level"].width) for o in every}
            out.update(size_class_metrics(kept + played, sizes))
        if navigation_all:
            every = heldout_levels_up_to(paths, 0, per_team)
            out[f"{ALL_PREFIX}/levels"] = [o["heldout_level"] for o in every]
            if still is None or len(every) != len(levels):  # no size limit left a map out: the same games
                still = still_team_results(runner, every, games, greedy, rng) if every else None
            if still is not None:
                out.update(_still_rates(still, ALL_PREFIX))
                out.update(_still_per_map(still, [o["heldout_level"] for o in every]))
        return out
    finally:
        runner.stop()


def navigation_line(final: Mapping[str, Any], target: float) -> Optional[str]:
    """The line of `final_heldout_navigation_target`: main alone vs a still team on every held-out map."""
    from spade_rllib.training.targets import score_text, target_verdicts

    verdicts = target_verdicts({"evaluation": {"targets": {STILL: target}}}, final, prefix=ALL_PREFIX)
    if not verdicts:
        return None
    (v,) = verdicts
    names = final.get(f"{ALL_PREFIX}/levels") or []
    per_map = {n: final.get(f"{MAP_PREFIX}/{n}/{STILL}/score") for n in names}
    per_map = {n: x for n, x in per_map.items() if x is not None}
    worst = f", worst {min(per_map, key=per_map.get)} {min(per_map.values()):.2f}" if per_map else ""
    return (f"every held-out map ({', '.join(names)}): main's navigation (the other team never moves) "
            f"{score_text(v.value, v.target)}{worst} {'PASS' if v.met else 'BELOW TARGET'} (>= {v.target:g})")


def heldout_line(final: Mapping[str, Any], opponents: Sequence[str], targets: Mapping[str, float],
                 max_size: int = 0) -> str:
    """One summary line: main's score per opponent on the held-out maps, each with its verdict."""
    from spade_rllib.training.targets import score_text, target_verdicts

    verdicts = {v.opponent: v for v in target_verdicts({"evaluation": {"targets": dict(targets)}}, final, prefix=PREFIX)}
    names = final.get(f"{PREFIX}/levels") or []
    parts = []
    for opp in opponents:
        w, d = final.get(f"{PREFIX}/{opp}/win_rate"), final.get(f"{PREFIX}/{opp}/draw_rate", 0.0)
        if not isinstance(w, (int, float)) or math.isnan(w):
            continue
        v = verdicts.get(opp)
        verdict = "" if v is None else f" {'PASS' if v.met else 'BELOW TARGET'} (>= {v.target:g})"
        parts.append(f"{opp} {score_text(w + d / 2, None if v is None else v.target)}{verdict}")
    size = f" up to {max_size}x{max_size}" if max_size else ""
    return (f"held-out maps{size} ({', '.join(names) or 'none'}): main's score " + (", ".join(parts) or "n/a"))


def run_final_heldout(cfg: Any, checkpoint: str) -> Optional[dict]:
    """The configured held-out evaluation of a run's checkpoint (None when `evaluation.final_heldout_levels`
    is empty)."""
    ev = cfg.evaluation
    if not ev.final_heldout_levels:
        return None
    from ray.rllib.core.rl_module.rl_module import RLModule

    from spade_rllib.artifacts.checkpoint_layout import module_dir
    from spade_rllib.rllib.algo_config import build_algo_config

    weights = RLModule.from_checkpoint(str(module_dir(checkpoint, MAIN))).get_state()
    return final_heldout_evaluation(build_algo_config(cfg), weights, ev.final_heldout_levels, ev.final_heldout_max_size,
                                    ev.final_heldout_opponents, ev.final_heldout_games, ev.greedy,
                                    seed=int(cfg.experiment.seed), navigation_all=ev.final_heldout_navigation_target is not None,
                                    size_opponents=ev.final_heldout_size_opponents, size_games=ev.final_heldout_size_games)
