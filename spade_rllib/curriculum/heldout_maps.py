"""Held-out evaluation levels: hand-written ASCII maps that training never samples.

`load_heldout_levels(paths)` reads `*.txt` maps (`#` wall, `.` floor, `A`/`B` spawns, and `F` the flag of
MazeRace or `a`/`b` the bases of CaptureTheFlag) from files and/or directories; the level's name is
the file stem. Each level game ships a set, named by its `GameSpec.heldout_dir`
(`spade_rllib.games.heldout_dir(env_id)`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from spade_rllib.curriculum.level_spec import LevelSpec, normalize_ascii
from spade_rllib.games.catalog import heldout_dir, level_game_for
from spade_rllib.core.outcome import EpisodeOutcome

MAP_SUFFIX = ".txt"


def heldout_map_files(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Path]:
    """The map files named by `paths` (files, or directories scanned for *.txt, sorted), in order."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found = sorted(path.glob(f"*{MAP_SUFFIX}"))
            if not found:
                raise FileNotFoundError(f"held-out level directory {str(path)!r} holds no *{MAP_SUFFIX} maps")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(
                f"held-out level path {str(path)!r} does not exist (evaluation.heldout_levels takes files or "
                f"directories of *{MAP_SUFFIX} ASCII maps; each level game ships a set in spade_rllib/levels/)")
    return files


def load_heldout_specs(paths) -> dict[str, LevelSpec]:
    """name -> grid LevelSpec (compact, picklable: what to ship to an evaluation task)."""
    specs: dict[str, LevelSpec] = {}
    origin: dict[str, Path] = {}
    for file in heldout_map_files(paths):
        name = file.stem
        if name in specs:
            raise ValueError(f"two held-out maps are named {name!r}: {origin[name]} and {file}; rename one")
        try:
            specs[name] = LevelSpec.grid(normalize_ascii(file.read_text()), name=name)
        except ValueError as e:
            raise ValueError(f"held-out map {file}: {e}") from e
        origin[name] = file
    return specs


def load_heldout_levels(paths, max_unfairness: int | None = 0, env_id: str | None = None) -> dict:
    """name -> `Level` (MazeRace or CTF map), parsed and checked (fairness spread <= max_unfairness; None = no check).
    With `env_id`, a map of another game is a `LevelError` too."""
    from spade_rllib.envs import Level, LevelError

    levels = {}
    for name, spec in load_heldout_specs(paths).items():
        try:
            levels[name] = Level.from_ascii(spec.ascii, max_unfairness=max_unfairness)
        except LevelError as e:
            raise type(e)(f"held-out map {name!r}: {e}") from e
        game = level_game_for(levels[name])  # 'a'/'b' bases or an 'F' flag
        if env_id is not None and game != env_id:
            try:
                shipped = heldout_dir(env_id)
            except ValueError:
                shipped = "none"
            raise LevelError(f"held-out map {name!r} is a {game} map; this run plays {env_id} "
                             f"(its shipped maps: {shipped})")
    return levels


def heldout_reset_options(paths, agents_per_team: int = 1) -> list[dict]:
    """One reset-option dict per held-out map with `agents_per_team` agents per team, sorted by name:
    {"level": Level, "heldout_level": name}. The level game reads `level`; the env runner copies the other
    key into the episode's `EpisodeOutcome.heldout_level` (`SpadeEnvRunner.evaluate_main(spec={"levels": ...})`)."""
    levels = load_heldout_levels(paths)
    return [{"level": level, "heldout_level": name} for name, level in sorted(levels.items())
            if level.agents_per_team == agents_per_team]


def heldout_metrics(records: Iterable[EpisodeOutcome], prefix: str = "heldout") -> dict[str, float]:
    """`heldout/<level>/<opponent>/{win_rate,draw_rate,score,mean_length,games}` from the outcomes that
    carry `heldout_level`, scored from the learner's side (`learner_result`). Others are skipped."""
    table: dict[tuple[str, str], list] = {}
    for outcome in map(EpisodeOutcome.of, records):
        if outcome.heldout_level is None:
            continue
        row = table.setdefault((str(outcome.heldout_level), str(outcome.opponent)), [0, 0, 0, 0])  # wins, draws, games, length
        row[0] += outcome.learner_result == "win"
        row[1] += outcome.learner_result == "draw"
        row[2] += 1
        row[3] += outcome.length
    out: dict[str, float] = {}
    for (level, opponent), (wins, draws, games, length) in sorted(table.items()):
        key = f"{prefix}/{level}/{opponent}"
        out[f"{key}/win_rate"] = wins / games
        out[f"{key}/draw_rate"] = draws / games
        out[f"{key}/score"] = (wins + 0.5 * draws) / games  # draws as half a win, as in the league
        out[f"{key}/mean_length"] = length / games
        out[f"{key}/games"] = float(games)
    return out
