"""Read a training run or an evaluation directory into one `RunData` record (no Ray, no torch).

A *training run* is a Tune trial directory: `result.json` (one JSON result per iteration, every key;
`progress.csv`'s header is fixed at the first row, so keys that appear later, e.g. new league
snapshots, only live in `result.json`), `config.yaml`, `runinfo.json`, `final_evaluation.json`
and `league.csv` when the run wrote them. An *evaluation* is an `evaluate --out` directory:
`eval_config.json`, `payoff.csv`, `ratings.csv`, `levels.csv`, `games.csv` and `replays/`.
An experiment directory stands for every trial directory under it; a trial directory brings the
evaluation directories inside it along (`final_games/` written by `train`, `evaluate --out <trial>/...`).

A damaged file is left out, never trusted: a `result.json` line that is not a JSON object (a last line cut short
by a killed driver aside), a JSON or YAML file that does not parse to a mapping, a CSV row with the wrong number
of fields or a non-number in a number column. Each is one line in `RunData.problems` naming the file and the
line (`report` prints them and exits 2); everything else of the run is read as usual.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from spade_rllib.artifacts.result_lookup import flatten

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
    problems: list[str] = field(default_factory=list)
    """One line per damaged file or line that was left out: ``<file>:<line>: what``."""

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


NUMBER_COLUMNS = {
    "payoff.csv": ("games", "wins", "draws", "losses", "score"),
    "ratings.csv": ("elo", "elo_low", "elo_high", "games", "wins", "draws", "losses", "score"),
    "levels.csv": ("games", "wins", "draws", "losses", "score"),
    "games.csv": ("index",),
    "league.csv": ("rating", "games"),
}
"""Columns of the CSV files read that must hold a number (or nothing) in every row."""


def _one_line(e: Exception) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"


def _read_results(trial: Path, problems: list[str]) -> tuple[dict[str, np.ndarray], dict]:
    path = trial / RESULT_FILE
    rows, last = [], {}
    if path.is_file():
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{path}: cannot be read ({_one_line(e)})")
            return {}, {}
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                result = json.loads(line)
            except json.JSONDecodeError as e:
                if number == len(lines):  # the last line, without its newline: cut short by a killed driver
                    continue
                problems.append(f"{path}:{number}: not a JSON result ({e.msg}); the line is left out")
                continue
            if not isinstance(result, dict):
                problems.append(f"{path}:{number}: holds a {type(result).__name__}, not a result object; the line is left out")
                continue
            result.pop("config", None)
            rows.append(_numeric_leaves(result))
            last = result
        return _series(rows), last
    progress = trial / PROGRESS_FILE
    if progress.is_file():
        import pandas as pd

        try:
            frame = pd.read_csv(progress)
        except Exception as e:  # pandas' ParserError, EmptyDataError, UnicodeDecodeError
            problems.append(f"{progress}: damaged CSV ({_one_line(e)}); left out")
            return {}, {}
        series = {c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in frame.columns}
        return {k: v for k, v in series.items() if np.isfinite(v).any()}, {}
    return {}, {}


def _read_json(path: Path, problems: list[str]) -> Optional[dict]:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{path}: cannot be read ({_one_line(e)}); left out")
        return None
    except json.JSONDecodeError as e:
        problems.append(f"{path}:{e.lineno}: damaged JSON ({e.msg}); left out")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}:1: holds a {type(data).__name__}, not a JSON object; left out")
        return None
    return data


def _read_yaml(path: Path, problems: list[str]) -> Optional[dict]:
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{path}: cannot be read ({_one_line(e)}); left out")
        return None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problems.append(f"{path}{line}: damaged YAML ({getattr(e, 'problem', None) or type(e).__name__}); left out")
        return None
    if data is None:
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}:1: holds a {type(data).__name__}, not a config mapping; left out")
        return None
    return data


def _is_number(text: Any) -> bool:
    if text is None or text == "":
        return True
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _read_csv(path: Path, problems: list[str]) -> list[dict]:
    """The rows of a CSV file; a row with the wrong number of fields or a non-number in a `NUMBER_COLUMNS` column
    is left out with a problem naming its line."""
    if not path.is_file():
        return []
    numbers = NUMBER_COLUMNS.get(path.name, ())
    rows = []
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for row in reader:
                line = reader.line_num
                if None in row or any(v is None for v in row.values()):
                    fields = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
                    problems.append(f"{path}:{line}: {fields} fields where the header has {len(reader.fieldnames or [])}; "
                                    "the row is left out")
                    continue
                bad = next((c for c in numbers if c in row and not _is_number(row[c])), None)
                if bad is not None:
                    problems.append(f"{path}:{line}: {bad} = {row[bad][:40]!r} is not a number; the row is left out")
                    continue
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        problems.append(f"{path}: damaged CSV ({_one_line(e)}); the rest of the file is left out")
    return rows


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
        problems = run.problems
        run.eval_config = _read_json(p / EVAL_CONFIG_FILE, problems) or {}
        checkpoints = run.eval_config.get("checkpoints") or []
        if not isinstance(checkpoints, list) or not all(isinstance(c, str) for c in checkpoints):
            problems.append(f"{p / EVAL_CONFIG_FILE}: checkpoints = {str(checkpoints)[:60]}, not a list of paths; left out")
            checkpoints = run.eval_config["checkpoints"] = []
        if not isinstance(run.eval_config.get("main_id", "main"), str):
            problems.append(f"{p / EVAL_CONFIG_FILE}: main_id = {run.eval_config['main_id']!r}, not a player id; read as 'main'")
            run.eval_config["main_id"] = "main"
        run.payoff, run.ratings = _read_csv(p / "payoff.csv", problems), _read_csv(p / "ratings.csv", problems)
        run.levels, run.games = _read_csv(p / "levels.csv", problems), _read_csv(p / "games.csv", problems)
        run.reasons = _read_csv(p / "reasons.csv", problems)
        run.replays = _replays(p, run.games, str(run.eval_config.get("main_id", "main")))
        trial = _trial_of(checkpoints[0]) if checkpoints else None
        if trial is not None and trial != p:
            run.training = load_run(trial)
        return run
    if not is_trial_dir(p):
        raise ReportInputError(f"{path}: not a trial or evaluation directory")
    run = RunData(label=label or p.name, path=p, kind=TRAIN)
    problems = run.problems
    run.series, run.last = _read_results(p, problems)
    run.config = _read_yaml(p / "config.yaml", problems)
    run.runinfo = _read_json(p / "runinfo.json", problems)
    run.final = _read_json(p / FINAL_EVAL_FILE, problems)
    run.league = _read_csv(p / "league.csv", problems)
    return run


def run_problems(runs: list[RunData]) -> list[str]:
    """Every run's problems (an evaluation's training run's too), each once, in order."""
    out: dict[str, None] = {}
    for run in runs:
        for r in (run, run.training):
            if r is not None:
                out.update(dict.fromkeys(r.problems))
    return list(out)


def unique_labels(runs: list[RunData]) -> None:
    """Make labels unique in place (legends key on them)."""
    seen: dict[str, int] = {}
    for run in runs:
        base = run.label[:28]
        k = seen.get(base, 0)
        seen[base] = k + 1
        run.label = base if k == 0 else f"{base}-{k + 1}"
