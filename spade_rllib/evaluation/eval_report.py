"""Tables, ratings, plots and the markdown report of an evaluation.

Tables (CSV, one header row):
- `games.csv`:   one row per game (index, seat0, seat1, level_id, seed, winner_seat (-1 draw), reason, length).
- `payoff.csv`:  one row per ordered pair (player, opponent): games, wins, draws, losses, score
                 (draws count half), games as seat 0 and as seat 1. Row (a, b) mirrors row (b, a).
- `ratings.csv`: per player, best first: Bradley-Terry maximum-likelihood Elo (mean 1000) with a
                 95% percentile-bootstrap interval, OpenSkill mu/sigma (games in schedule order),
                 and the player's totals.
- `levels.csv`:  per level, main's results against the whole pool.
- `reasons.csv`: CaptureTheFlag only: per level and opponent, main's games by outcome reason (why it
                 lost or drew: `ctf_reasons.REASONS`; "win" for its wins); the report has it per level.

Plots (PNG, matplotlib Agg): payoff heatmap, ratings with error bars and, from the run's own
`progress.csv` when its columns exist, learning curves (return, win rate, env steps/s), curriculum
difficulty, league size and main's rating over training.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from spade_rllib.artifacts.atomic_io import atomic_open, atomic_path, write_text

from spade_rllib.core import ratings as rating_math
from spade_rllib.evaluation.ctf_reasons import REASONS, WIN
from spade_rllib.evaluation.match_engine import DRAW, GameResult, LevelEntry

PAYOFF_COLUMNS = ["player", "opponent", "games", "wins", "draws", "losses", "score", "games_seat0", "games_seat1"]
RATINGS_COLUMNS = ["rank", "player", "kind", "elo", "elo_low", "elo_high", "openskill_mu", "openskill_sigma",
                   "games", "wins", "draws", "losses", "score"]
LEVELS_COLUMNS = ["level_id", "source", "size", "difficulty", "player", "games", "wins", "draws", "losses",
                  "score", "mean_length"]
GAMES_COLUMNS = ["index", "seat0", "seat1", "level_id", "seed", "winner_seat", "reason", "length", "why_seat0",
                 "why_seat1"]
REASON_COLUMNS = ["level_id", "size", "player", "opponent", "games", "score", "win", *REASONS]


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Payoff:
    """wins[i, j]: games i won against j (either seat); likewise draws, losses; seat0[i, j]: i in seat 0."""

    players: tuple[str, ...]
    wins: np.ndarray
    draws: np.ndarray
    losses: np.ndarray
    seat0: np.ndarray

    @property
    def games(self) -> np.ndarray:
        return self.wins + self.draws + self.losses

    def score(self) -> np.ndarray:
        """Score rate of row against column (draws half); NaN where they did not play."""
        games = self.games.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(games > 0, (self.wins + 0.5 * self.draws) / games, np.nan)


def payoff_from_results(players: Sequence[str], results: Iterable[GameResult]) -> Payoff:
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    wins, draws, losses, seat0 = (np.zeros((n, n), dtype=np.int64) for _ in range(4))
    for r in results:
        a, b = index[r.seat0], index[r.seat1]
        seat0[a, b] += 1
        if r.winner_seat == DRAW:
            draws[a, b] += 1
            draws[b, a] += 1
        elif r.winner_seat == 0:
            wins[a, b] += 1
            losses[b, a] += 1
        else:
            wins[b, a] += 1
            losses[a, b] += 1
    return Payoff(tuple(players), wins, draws, losses, seat0)


def payoff_rows(payoff: Payoff) -> list[dict]:
    rows = []
    games = payoff.games
    score = payoff.score()
    for i, player in enumerate(payoff.players):
        for j, opponent in enumerate(payoff.players):
            if i == j or games[i, j] == 0:
                continue
            rows.append({"player": player, "opponent": opponent, "games": int(games[i, j]),
                         "wins": int(payoff.wins[i, j]), "draws": int(payoff.draws[i, j]),
                         "losses": int(payoff.losses[i, j]), "score": round(float(score[i, j]), 4),
                         "games_seat0": int(payoff.seat0[i, j]), "games_seat1": int(payoff.seat0[j, i])})
    return rows


@dataclass(frozen=True)
class Ratings:
    players: tuple[str, ...]
    elo: np.ndarray
    low: np.ndarray
    high: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    confidence: float

    def order(self) -> list[int]:
        """Player indices, best Elo first (ties by name, for stable output)."""
        return sorted(range(len(self.players)), key=lambda i: (-self.elo[i], self.players[i]))


def fit_ratings(players: Sequence[str], results: Sequence[GameResult], n_bootstrap: int = 200,
                seed: int = 0) -> Ratings:
    """BT-ML Elo with bootstrap intervals and OpenSkill, both from `spade_rllib.core.ratings`."""
    index = {p: i for i, p in enumerate(players)}
    a = np.array([index[r.seat0] for r in results], dtype=np.int64)
    b = np.array([index[r.seat1] for r in results], dtype=np.int64)
    score = np.array([0.5 if r.winner_seat == DRAW else 1.0 if r.winner_seat == 0 else 0.0 for r in results])
    fit = rating_math.bootstrap_bradley_terry_elo(len(players), a, b, score, n_bootstrap=n_bootstrap, seed=seed)
    mu, sigma = rating_math.OpenSkillRater().rate_games(len(players), a, b, score)
    return Ratings(tuple(players), fit.rating, fit.lower, fit.upper, mu, sigma, fit.confidence)


def ratings_rows(ratings: Ratings, payoff: Payoff, kinds: dict[str, str]) -> list[dict]:
    rows = []
    for rank, i in enumerate(ratings.order(), start=1):
        wins, draws, losses = (int(m[i].sum()) for m in (payoff.wins, payoff.draws, payoff.losses))
        games = wins + draws + losses
        rows.append({"rank": rank, "player": ratings.players[i], "kind": kinds.get(ratings.players[i], ""),
                     "elo": round(float(ratings.elo[i]), 1), "elo_low": round(float(ratings.low[i]), 1),
                     "elo_high": round(float(ratings.high[i]), 1),
                     "openskill_mu": round(float(ratings.mu[i]), 3),
                     "openskill_sigma": round(float(ratings.sigma[i]), 3), "games": games, "wins": wins,
                     "draws": draws, "losses": losses,
                     "score": round((wins + 0.5 * draws) / games, 4) if games else float("nan")})
    return rows


def level_rows(player: str, levels: Sequence[LevelEntry], results: Sequence[GameResult]) -> list[dict]:
    """Per-level results of `player` against everyone it met."""
    rows = []
    for entry in levels:
        mine = [r for r in results if r.level_id == entry.level_id and player in (r.seat0, r.seat1)]
        if not mine:
            continue
        scores = [r.score(player) for r in mine]
        rows.append({"level_id": entry.level_id, "source": entry.source, "size": entry.size,
                     "difficulty": "" if entry.difficulty is None else entry.difficulty, "player": player,
                     "games": len(mine), "wins": scores.count(1.0), "draws": scores.count(0.5),
                     "losses": scores.count(0.0), "score": round(float(np.mean(scores)), 4),
                     "mean_length": round(float(np.mean([r.length for r in mine])), 2)})
    return rows


def reason_rows(player: str, levels: Sequence[LevelEntry], results: Sequence[GameResult]) -> list[dict]:
    """Per level and opponent (then "all"), `player`'s games counted by outcome reason (`REASON_COLUMNS`);
    [] when no game has reasons (a game other than CaptureTheFlag)."""
    rows = []
    for entry in levels:
        mine = [r for r in results if r.level_id == entry.level_id and player in (r.seat0, r.seat1) and r.why(player)]
        opponents = sorted({r.seat1 if r.seat0 == player else r.seat0 for r in mine})
        for opponent in opponents + (["all"] if len(opponents) > 1 else []):
            games = [r for r in mine if opponent == "all" or opponent in (r.seat0, r.seat1)]
            whys = [r.why(player) for r in games]
            rows.append({"level_id": entry.level_id, "size": entry.size, "player": player, "opponent": opponent,
                         "games": len(games), "score": round(float(np.mean([r.score(player) for r in games])), 4),
                         WIN: whys.count(WIN), **{k: whys.count(k) for k in REASONS}})
    return rows


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[dict]) -> Path:
    with atomic_open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _savefig(fig, path: Path) -> None:
    with atomic_path(path) as tmp:  # the temporary name keeps the suffix, so the format stays PNG
        fig.savefig(tmp, dpi=100)


def plot_payoff(payoff: Payoff, path: Path) -> Path:
    plt = _plt()
    score = payoff.score()
    n = len(payoff.players)
    size = max(4.0, 0.6 * n + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(np.ma.masked_invalid(score), cmap="RdYlGn", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n), payoff.players, rotation=45, ha="right")
    ax.set_yticks(range(n), payoff.players)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    ax.set_title("score of row vs column (win 1, draw 0.5)")
    if n <= 16:
        for i in range(n):
            for j in range(n):
                if not math.isnan(score[i, j]):
                    ax.text(j, i, f"{score[i, j]:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)
    return path


def plot_ratings(ratings: Ratings, path: Path) -> Path:
    plt = _plt()
    order = ratings.order()[::-1]  # best at the top
    names = [ratings.players[i] for i in order]
    elo = ratings.elo[order]
    err = np.vstack([elo - ratings.low[order], ratings.high[order] - elo]).clip(min=0)
    fig, ax = plt.subplots(figsize=(7, max(3.0, 0.4 * len(names) + 1.5)))
    ax.errorbar(elo, range(len(names)), xerr=err, fmt="o", capsize=4)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel(f"Bradley-Terry Elo ({ratings.confidence:.0%} bootstrap interval)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)
    return path


# progress.csv columns: the first present wins; matched on the whole name or as a "/"-suffix.
RETURN_KEYS = ("env_runners/episode_return_mean", "episode_return_mean", "env_runners/agent_episode_returns_mean/main",
               "episode_reward_mean")
WIN_RATE_SUFFIXES = ("win_rate",)
"""Every column ending in these (e.g. "train/random/win_rate", "eval/bot:rusher/win_rate",
"league/main_win_rate") is one line of the win-rate panel."""
SPS_KEYS = ("env_steps_per_s", "env_steps_per_sec", "sps")
"""Explicit throughput columns; otherwise env steps/s is d(env steps)/d(time_total_s) per row."""
MAX_WIN_RATE_LINES = 8
STEPS_KEYS = ("num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime", "timesteps_total")
DIFFICULTY_KEYS = ("curriculum/difficulty",)
LEAGUE_SIZE_KEYS = ("league/size",)
MAIN_RATING_KEYS = ("league/main_rating",)


def load_progress(path: Path) -> dict[str, np.ndarray]:
    """Numeric columns of a Tune `progress.csv` (non-numeric cells become NaN), read with pandas."""
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return {}
    out = {}
    for key in frame.columns:
        array = pd.to_numeric(frame[key], errors="coerce").to_numpy(dtype=float)
        if np.isfinite(array).any():
            out[key] = array
    return out


def find_column(columns: dict[str, np.ndarray], keys: Sequence[str]) -> str | None:
    """The first of `keys` present as a column name or as the end of one (after a '/')."""
    for key in keys:
        if key in columns:
            return key
    for key in keys:
        for column in sorted(columns):
            if column.endswith("/" + key):
                return column
    return None


def _x_axis(columns: dict[str, np.ndarray]) -> tuple[np.ndarray, str]:
    steps = find_column(columns, STEPS_KEYS)
    if steps is not None:
        return columns[steps], "env steps"
    it = columns.get("training_iteration")
    if it is not None:
        return it, "iteration"
    n = len(next(iter(columns.values())))
    return np.arange(1, n + 1, dtype=float), "row"


def win_rate_columns(columns: dict[str, np.ndarray]) -> list[str]:
    found = [c for c in columns if any(c == k or c.endswith("/" + k) for k in WIN_RATE_SUFFIXES)]
    return sorted(found)[:MAX_WIN_RATE_LINES]


def _steps_per_s(columns: dict[str, np.ndarray]) -> tuple[np.ndarray | None, str | None]:
    sps = find_column(columns, SPS_KEYS)
    if sps is not None:
        return columns[sps], sps
    steps = find_column(columns, STEPS_KEYS)
    time = columns.get("time_total_s")
    if steps is None or time is None:
        return None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.diff(columns[steps], prepend=0.0) / np.diff(time, prepend=0.0)
    return rate, "env steps / s (from env steps and time)"


def _line_panel(ax, x, series, xlabel, title, ylabel) -> None:
    """One panel; `series` is an array or {label: array} for several lines."""
    many = isinstance(series, dict)
    for label, y in (series.items() if many else [(None, series)]):
        ok = np.isfinite(y)
        ax.plot(x[ok], y[ok], marker="." if ok.sum() < 50 else None, label=label)
    if many:
        ax.legend(fontsize=7)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel if len(ylabel) <= 40 else "..." + ylabel[-37:], fontsize=8)
    ax.grid(alpha=0.3)


def plot_progress(progress_csv: Path, out_dir: Path) -> dict[str, Path]:
    """Learning, curriculum and league plots from `progress.csv`; only for columns that exist."""
    columns = load_progress(progress_csv)
    if not columns:
        return {}
    plt = _plt()
    x, xlabel = _x_axis(columns)
    written: dict[str, Path] = {}
    panels = []
    ret = find_column(columns, RETURN_KEYS)
    if ret:
        panels.append((columns[ret], "mean episode return", ret))
    wins = win_rate_columns(columns)
    if wins:
        panels.append(({c: columns[c] for c in wins}, "main's win rate", "win rate"))
    sps, sps_name = _steps_per_s(columns)
    if sps is not None:
        panels.append((sps, "env steps / s", sps_name))
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
        for ax, (y, title, name) in zip(axes[0], panels):
            _line_panel(ax, x, y, xlabel, title, name)
        fig.tight_layout()
        written["learning_curves"] = out_dir / "learning_curves.png"
        _savefig(fig, written["learning_curves"])
        plt.close(fig)
    diff = find_column(columns, DIFFICULTY_KEYS)
    if diff:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        _line_panel(ax, x, columns[diff], xlabel, "curriculum difficulty", diff)
        fig.tight_layout()
        written["curriculum"] = out_dir / "curriculum.png"
        _savefig(fig, written["curriculum"])
        plt.close(fig)
    size, rating = find_column(columns, LEAGUE_SIZE_KEYS), find_column(columns, MAIN_RATING_KEYS)
    if size or rating:
        league_panels = [(columns[k], t, k) for k, t in ((size, "league size"), (rating, "main's rating")) if k]
        fig, axes = plt.subplots(1, len(league_panels), figsize=(5 * len(league_panels), 3.6), squeeze=False)
        for ax, (y, title, name) in zip(axes[0], league_panels):
            _line_panel(ax, x, y, xlabel, title, name)
        fig.tight_layout()
        written["league"] = out_dir / "league.png"
        _savefig(fig, written["league"])
        plt.close(fig)
    return written


# --------------------------------------------------------------------------------------------
# Console and markdown
# --------------------------------------------------------------------------------------------
def console_table(rows: Sequence[dict], top: int = 10) -> str:
    """The top of the ratings table as fixed-width text."""
    header = f"{'#':>3}  {'player':<28} {'elo':>7}  {'95% interval':>15}  {'mu':>6} {'sigma':>5}  {'W-D-L':>11}"
    lines = [header, "-" * len(header)]
    for row in rows[:top]:
        interval = f"[{row['elo_low']:.0f}, {row['elo_high']:.0f}]"
        wdl = f"{row['wins']}-{row['draws']}-{row['losses']}"
        lines.append(f"{row['rank']:>3}  {row['player'][:28]:<28} {row['elo']:>7.1f}  {interval:>15}  "
                     f"{row['openskill_mu']:>6.2f} {row['openskill_sigma']:>5.2f}  {wdl:>11}")
    if len(rows) > top:
        lines.append(f"... {len(rows) - top} more in ratings.csv")
    return "\n".join(lines)


def reasons_console(rows: Sequence[dict]) -> str:
    """`reason_rows` as text: per level and opponent, main's score and its non-wins by reason (zeros left out)."""
    lines = ["why main did not win (games by reason; reasons.csv):"]
    for row in rows:
        parts = [f"{k} {row[k]}" for k in REASONS if row[k]]
        lines.append(f"  {row['level_id']:<14} {row['size']:>6}  vs {row['opponent']:<18} score {row['score']:.2f}  "
                     f"wins {row[WIN]}/{row['games']}" + (f"  {', '.join(parts)}" if parts else ""))
    return "\n".join(lines)


def _md_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def write_report(out_dir: Path, *, title: str, summary: dict, ratings: Sequence[dict], levels: Sequence[dict],
                 plots: dict[str, Path], replays: Sequence[dict], role_ratings: dict | None = None,
                 reasons: Sequence[dict] = ()) -> Path:
    """report.md; `role_ratings` ({role: rating rows}, a role game): one ratings table per role; `reasons`
    (`reason_rows`): main's games per level and opponent by outcome reason."""
    lines = [f"# {title}", ""]
    for key, value in summary.items():
        lines.append(f"- **{key}**: {value}")
    columns = ["rank", "player", "elo", "elo_low", "elo_high", "openskill_mu", "openskill_sigma", "games", "score"]
    if role_ratings:
        lines.append("")
        for role, rows in role_ratings.items():
            lines += [f"## Ratings: role {role}", "", _md_table(rows, columns), "",
                      f"Tables: [ratings_{role}.csv](ratings_{role}.csv), [payoff_{role}.csv](payoff_{role}.csv).", ""]
        lines += ["Full tables: [ratings.csv](ratings.csv), [payoff.csv](payoff.csv), [levels.csv](levels.csv), "
                  "[games.csv](games.csv).", ""]
    else:
        lines += ["", "## Ratings", "", _md_table(ratings, columns),
                  "", "Full tables: [ratings.csv](ratings.csv), [payoff.csv](payoff.csv), [levels.csv](levels.csv), "
                  "[games.csv](games.csv).", ""]
    captions = {"payoff_heatmap": "Payoff heatmap", "ratings": "Ratings with 95% bootstrap intervals",
                "learning_curves": "Learning curves (from the run's progress.csv)",
                "curriculum": "Curriculum difficulty over training", "league": "League size and main's rating"}
    for key, path in plots.items():
        lines += [f"## {captions.get(key, key)}", "", f"![{key}]({Path(path).name})", ""]
    if levels:
        lines += ["## Main per level", "", _md_table(levels, LEVELS_COLUMNS), ""]
    if reasons:
        lines += ["## Why main did not win, per level", "", "Games of main by outcome reason "
                  "([reasons.csv](reasons.csv)):", ""]
        lines += [f"- `{k}`: {text}" for k, text in REASONS.items()]
        lines += ["", _md_table(reasons, REASON_COLUMNS), ""]
    if replays:
        lines += ["## Replays of main's games", ""]
        for replay in replays:
            gif = f"[gif]({replay['gif']}) · " if replay.get("gif") else ""
            why = f", {replay['why']}" if replay.get("why") and replay.get("why") != "win" else ""
            lines.append(f"- game {replay['index']} ({replay['outcome']}{why} vs {replay['opponent']} on "
                         f"{replay['level_id']}): {gif}[transcript]({replay['transcript']})")
        lines.append("")
    return write_text(out_dir / "report.md", "\n".join(lines))
