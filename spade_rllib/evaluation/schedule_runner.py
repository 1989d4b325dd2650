"""Running a schedule: in this process (`workers=0`) or as parallel Ray tasks, with a progress bar.

Games are grouped into chunks; one Ray task plays one chunk, building its players once (policies are
cached per worker process). Results are sorted by game index, so the output is the same whatever
the number of workers. Torch is limited to one thread per worker: small MLPs gain nothing from more
and the CPUs are shared.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from spade_rllib.evaluation.match_engine import GameResult, GameSpec, LevelEntry, make_game_env, num_actions, play_game
from spade_rllib.evaluation.players import PlayerSpec, build_player

CHUNKS_PER_WORKER = 4
"""Chunks per worker: enough to balance load and move the bar, few enough to amortise start-up."""


def play_chunk(env_id: str, player_specs: dict[str, PlayerSpec], levels: Sequence[LevelEntry],
               games: Sequence[GameSpec], setup: dict | None = None) -> list[GameResult]:
    """Play `games` in this process and return their results (in the given order); `setup`: how the
    run built its env (`match_engine.make_game_env`)."""
    import torch

    torch.set_num_threads(1)
    n_actions = num_actions(env_id, setup)
    players = {}
    results = []
    envs: dict[int, object] = {}
    for spec in games:
        seats = []
        for pid in (spec.seat0, spec.seat1):
            if pid not in players:
                players[pid] = build_player(player_specs[pid], env_id, n_actions)
            seats.append(players[pid])
        entry = levels[spec.level_index]
        env = envs.get(spec.level_index)
        if env is None:
            env = envs[spec.level_index] = make_game_env(env_id, entry.level, setup=setup)
        results.append(play_game(env_id, seats, entry, spec, env=env, setup=setup).result)
    return results


def _chunks(games: Sequence[GameSpec], n_chunks: int) -> list[list[GameSpec]]:
    size = max(1, math.ceil(len(games) / max(1, n_chunks)))
    return [list(games[i:i + size]) for i in range(0, len(games), size)]


def run_schedule(env_id: str, player_specs: dict[str, PlayerSpec], levels: Sequence[LevelEntry],
                 games: Sequence[GameSpec], workers: int = 0, progress: bool = True,
                 on_progress: Callable[[int, int], None] | None = None, setup: dict | None = None) -> list[GameResult]:
    """Play every game; `workers=0` plays here, `workers>0` uses that many Ray tasks at a time."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), disable=not progress, transient=False)
    results: list[GameResult] = []
    with bar:
        task = bar.add_task("games", total=len(games))
        if workers <= 0:
            for chunk in _chunks(games, max(1, len(games) // 8)):
                results.extend(play_chunk(env_id, player_specs, levels, chunk, setup))
                bar.update(task, advance=len(chunk))
                if on_progress:
                    on_progress(len(results), len(games))
        else:
            import ray

            if not ray.is_initialized():
                from spade_rllib.rllib.local_ray import init_local_ray  # services on 127.0.0.1 only

                init_local_ray(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            remote = ray.remote(num_cpus=1)(play_chunk)
            specs_ref = ray.put(player_specs)
            levels_ref = ray.put(list(levels))
            pending = {}
            for chunk in _chunks(games, workers * CHUNKS_PER_WORKER):
                ref = remote.remote(env_id, specs_ref, levels_ref, chunk, setup)
                pending[ref] = len(chunk)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    results.extend(ray.get(ref))
                    bar.update(task, advance=pending.pop(ref))
                    if on_progress:
                        on_progress(len(results), len(games))
    return sorted(results, key=lambda r: r.index)
