"""Read a training run or an evaluation directory into one `RunData` record (no Ray, no torch).

A *training run* is a Tune trial directory: `result.json` (one JSON result per iteration, every key;
`progress.csv`'s header is fixed at the first row, so keys that appear later, e.g. new league
snapshots, only live in `result.json`), `config.yaml`, `runinfo.json`, `final_evaluation.json`
and `league.csv` when the run wrote them. An *evaluation* is an `evaluate --out` directory:
`eval_config.json`, `payoff.csv`, `ratings.csv`, `levels.csv`, `games.csv` and `replays/`.
An experiment directory stands for every trial directory under it; a trial directory brings the
evaluation directories inside it along (`final_games/` written by `train`, `evaluate --out <trial>/...`).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from spade_rllib.result_lookup import flatten

TRAIN, EVAL = "train", "eval"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.csv"
EVAL_CONFIG_FILE = "eval_config.json"
FINAL_EVAL_FILE = "final_evaluation.json"
SKIPPED_RESULT_KEYS = ("config",)
"""Top-level result keys not read (Tune repeats the whole config in every result)."""


class ReportInputError(ValueError):
    """A path given to the report is not a run or an evaluation directory."""


@dataclass
class RunData:
    """Everything the report shows about one run or one evaluation."""

    label: str
    """Short name in legends: the trial folder (or the evaluation folder)."""
    path: Path
    kind: str
    """TRAIN or EVAL."""
    series: dict[str, np.ndarray] = field(default_factory=dict)
    """Flat result key ("eval/random/win_rate") -> value per iteration (NaN where absent)."""
    last: dict[str, Any] = field(default_factory=dict)
    """The last result, nested as Tune reported it (config left out)."""
    config: Optional[dict] = None
    """The resolved training config (config.yaml), when found."""
    runinfo: Optional[dict] = None
    final: Optional[dict] = None
    """final_evaluation.json: {"final/<opp>/win_rate": ...} of the last checkpoint."""
    league: list[dict] = field(default_factory=list)
    """league.csv rows: member, rating, games, main_win_rate, main_plan_p."""
    eval_config: Optional[dict] = None
    """eval_config.json of an evaluation."""
    payoff: list[dict] = field(default_factory=list)
    ratings: list[dict] = field(default_factory=list)
    levels: list[dict] = field(default_factory=list)
    games: list[dict] = field(default_factory=list)
    reasons: list[dict] = field(default_factory=list)
    """reasons.csv rows (CaptureTheFlag): main's games per level and opponent by outcome reason."""
    replays: list[dict] = field(default_factory=list)
    """{"gif": Path, "index", "outcome", "opponent", "level_id", "main_seat"} per replay GIF."""
    training: Optional["RunData"] = None
    """For an evaluation: the training run of its first checkpoint, when its trial directory is found."""

    def column(self, key: str) -> Optional[np.ndarray]:
        return self.series.get(key)

    def x_steps(self) -> tuple[np.ndarray, str]:
        """The x axis of curves: env steps sampled (else iterations)."""
        for key in ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime"):
            if key in self.series and np.isfinite(self.series[key]).any():
                return self.series[key], "env steps"
        n = len(next(iter(self.series.values()), []))
        return self.series.get("training_iteration", np.arange(1, n + 1, dtype=float)), "iteration"


def _numeric_leaves(result: dict) -> dict[str, float]:
    """Numeric leaves of a nested result as {"a/b/c": float}; bools, strings and the repeated `config` are left out."""
    flat = flatten({k: v for k, v in result.items() if k not in SKIPPED_RESULT_KEYS})
    return {k: float(v) for k, v in flat.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _series(rows: list[dict[str, float]]) -> dict[str, np.ndarray]:
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row))
    return {k: np.array([row.get(k, math.nan) for row in rows], dtype=float) for k in keys}


def _read_results(trial: Path) -> tuple[dict[str, np.ndarray], dict]:
    path = trial / RESULT_FILE
    rows, last = [], {}
    if path.is_file():
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    result = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a killed driver
                result.pop("config", None)
                rows.append(_numeric_leaves(result))
                last = result
        return _series(rows), last
    progress = trial / PROGRESS_FILE
    if progress.is_file():
        import pandas as pd

        frame = pd.read_csv(progress)
        series = {c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in frame.columns}
        return {k: v for k, v in series.items() if np.isfinite(v).any()}, {}
    return {}, {}


def _read_json(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None


def _read_yaml(path: Path) -> Optional[dict]:
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def _read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def is_trial_dir(path: Path) -> bool:
    return (path / RESULT_FILE).is_file() or (path / PROGRESS_FILE).is_file()


def is_eval_dir(path: Path) -> bool:
    return (path / EVAL_CONFIG_FILE).is_file() or (path / "ratings.csv").is_file()


def find_runs(path: str | Path) -> list[Path]:
    """The run or evaluation directories `path` stands for (itself, or the trial dirs under an experiment)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ReportInputError(f"{path}: not found")
    if not p.is_dir():
        raise ReportInputError(f"{path}: not a directory; give a trial, experiment or evaluation directory")
    if is_trial_dir(p):  # with the evaluations kept inside it (final_games/, evaluate --out <trial>/...)
        return [p, *sorted(c for c in p.iterdir() if c.is_dir() and is_eval_dir(c))]
    if is_eval_dir(p):
        return [p]
    found = sorted(c for c in p.iterdir() if c.is_dir() and (is_trial_dir(c) or is_eval_dir(c)))
    if not found:
        raise ReportInputError(f"{path}: no run here (a trial directory has {RESULT_FILE} or {PROGRESS_FILE}; "
                               f"an evaluation directory has {EVAL_CONFIG_FILE})")
    return found


def _trial_of(checkpoint: str) -> Optional[Path]:
    p = Path(checkpoint)
    for cand in (p, *p.parents):
        if is_trial_dir(cand):
            return cand
    return None


def _replays(out: Path, games: list[dict], main_id: str) -> list[dict]:
    by_index = {str(g.get("index")): g for g in games}
    replays = []
    for gif in sorted((out / "replays").glob("game*.gif")):
        stem = gif.stem  # game00012_loss
        index, _, outcome = stem[len("game"):].partition("_")
        game = by_index.get(str(int(index))) if index.isdigit() else None
        entry = {"gif": gif, "index": int(index) if index.isdigit() else -1, "outcome": outcome,
                 "opponent": "", "level_id": "", "main_seat": None, "length": None}
        if game:
            seat = 0 if game.get("seat0") == main_id else 1 if game.get("seat1") == main_id else None
            entry.update(opponent=game.get("seat1") if seat == 0 else game.get("seat0"), level_id=game.get("level_id", ""),
                         main_seat=seat, length=game.get("length"),
                         why=game.get("why_seat0" if seat == 0 else "why_seat1") or "" if seat is not None else "")
        replays.append(entry)
    return replays


def load_run(path: str | Path, label: Optional[str] = None) -> RunData:
    """One run or evaluation directory as a `RunData` (see the module docstring)."""
    p = Path(path).expanduser().resolve()
    if is_eval_dir(p):
        run = RunData(label=label or p.name, path=p, kind=EVAL)
        run.eval_config = _read_json(p / EVAL_CONFIG_FILE) or {}
        run.payoff, run.ratings = _read_csv(p / "payoff.csv"), _read_csv(p / "ratings.csv")
        run.levels, run.games = _read_csv(p / "levels.csv"), _read_csv(p / "games.csv")
        run.reasons = _read_csv(p / "reasons.csv")
        run.replays = _replays(p, run.games, str(run.eval_config.get("main_id", "main")))
        checkpoints = run.eval_config.get("checkpoints") or []
        trial = _trial_of(checkpoints[0]) if checkpoints else None
        if trial is not None and trial != p:
            run.training = load_run(trial)
        return run
    if not is_trial_dir(p):
        raise ReportInputError(f"{path}: not a trial or evaluation directory")
    run = RunData(label=label or p.name, path=p, kind=TRAIN)
    run.series, run.last = _read_results(p)
    run.config = _read_yaml(p / "config.yaml")
    run.runinfo = _read_json(p / "runinfo.json")
    run.final = _read_json(p / FINAL_EVAL_FILE)
    run.league = _read_csv(p / "league.csv")
    return run


def unique_labels(runs: list[RunData]) -> None:
    """Make labels unique in place (legends key on them)."""
    seen: dict[str, int] = {}
    for run in runs:
        base = run.label[:28]
        k = seen.get(base, 0)
        seen[base] = k + 1
        run.label = base if k == 0 else f"{base}-{k + 1}"
