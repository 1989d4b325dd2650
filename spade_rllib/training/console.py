"""What `train` prints while it runs and when it ends, sized for an 80-column terminal.

* On a terminal (stdout a TTY, not CI, TERM not 'dumb'): a live `rich` panel redrawn each
  iteration: elapsed / budget, env steps and steps/s, main's score and W/D/L per evaluation
  opponent, league size and Elo, curriculum level, held-out score.
* Otherwise (pipes, CI, `make demo > log`): one short line per iteration (at most `WIDTH` columns).
* Always: the full per-iteration line (`format_line`) appended to `iterations.log` in the trial dir.

`ready_commands` gives the evaluate / play / report commands the summary ends with, each broken
with shell continuations so no line is wider than `WIDTH`.
"""
from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from spade_rllib.artifacts.result_lookup import result_value
from spade_rllib.core.outcome import MAIN
from spade_rllib.training.phases import PhaseTotals

if TYPE_CHECKING:
    from spade_rllib.config.run_config import RunConfig

WIDTH = 80
LOG_FILE = "iterations.log"
"""The full per-iteration lines, in the trial directory."""
CI_VARS = ("CI", "GITHUB_ACTIONS", "BUILDKITE", "GITLAB_CI")


def interactive(stream=None) -> bool:
    """True for a human at a terminal: a TTY, not CI, TERM not 'dumb'."""
    stream = stream or sys.stdout
    if any(os.environ.get(v) for v in CI_VARS) or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_get = result_value


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _si(n: float) -> str:
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def _short_name(opp: str) -> str:
    """'bot:rusher' -> 'rusher'; long names cut to 8 characters."""
    name = opp.split(":", 1)[-1]
    return name[:8]


def eval_scores(result: dict) -> dict[str, tuple[float, float, float]]:
    """{opponent: (win, draw, loss)} of the latest periodic evaluation."""
    out = {}
    for opp, m in (result.get("eval") or {}).items():
        if isinstance(m, dict) and _num(m.get("win_rate")) is not None:
            out[opp] = (float(m["win_rate"]), float(m.get("draw_rate", 0.0)), float(m.get("loss_rate", 0.0)))
    return out


def iteration_rate(result: dict) -> Optional[float]:
    """This iteration's env steps / its wall time (`time_this_iter_s`), None when either is missing."""
    n, t = _num(_get(result, "env_runners/num_env_steps_sampled")), _num(result.get("time_this_iter_s"))
    return n / t if n is not None and t else None


def steps_per_s(result: dict) -> Optional[float]:
    """RLlib's env-step throughput, else this iteration's rate."""
    sps = _num(_get(result, "env_runners/num_env_steps_sampled_lifetime_throughput"))
    return iteration_rate(result) if sps is None else sps


def short_line(result: dict, budget_s: Optional[float] = None, width: int = WIDTH,
               budget_steps: Optional[int] = None) -> str:
    """One line of at most `width` columns: iteration, steps (of the env-step budget), speed, time, scores,
    league, level."""
    it = int(result.get("training_iteration", 0))
    steps = _num(_get(result, "env_runners/num_env_steps_sampled_lifetime")) or 0.0
    parts = [f"iter {it:4d}", f"{_si(steps)}/{_si(budget_steps)} steps" if budget_steps else f"{_si(steps)} steps"]
    sps = steps_per_s(result)
    if sps is not None:
        parts.append(f"{_si(sps)}/s")
    t = _num(result.get("time_total_s"))
    if t is not None:
        parts.append(f"{t:.0f}/{budget_s:.0f}s" if budget_s else f"{t:.0f}s")
    scores = eval_scores(result)
    if scores:
        parts.append("score " + " ".join(f"{_short_name(o)} {w + d / 2:.2f}" for o, (w, d, _) in scores.items()))
    elo = _num(_get(result, "league/main_rating"))
    if elo is not None:
        parts.append(f"elo {elo:.0f}")
    diff = _num(_get(result, "curriculum/difficulty"))
    if diff is not None:
        parts.append(f"level {diff:.1f}")
    ladder = _num(_get(result, "heldout/ladder/score"))
    if ladder is not None:
        parts.append(f"held-out {ladder:.2f}")
    line = ""
    for part in parts:  # in priority order; what does not fit is left out (the log file has it all)
        cand = part if not line else f"{line} | {part}"
        if len(cand) <= width:
            line = cand
        elif part.startswith("score "):  # keep as many opponents as fit, each with its score
            words = part.split(" ")  # "score", then (name, score) pairs: cut after a score, never after a name
            for k in range(len(words) - 2, 2, -2):
                cand = f"{line} | {' '.join(words[:k])}"
                if len(cand) <= width:
                    line = cand
                    break
    return line


def panel(result: dict, budget_s: Optional[float], title: str, budget_steps: Optional[int] = None):
    """The live `rich` panel of one result."""
    from rich.panel import Panel
    from rich.table import Table

    it = int(result.get("training_iteration", 0))
    steps = _num(_get(result, "env_runners/num_env_steps_sampled_lifetime")) or 0.0
    t = _num(result.get("time_total_s")) or 0.0
    sps = steps_per_s(result)
    head = Table.grid(padding=(0, 2))
    head.add_row(f"iteration {it}", f"{steps:,.0f} / {budget_steps:,d} env steps" if budget_steps else f"{steps:,.0f} env steps",
                 f"{sps:,.0f} steps/s" if sps is not None else "",
                 f"{t:.0f} / {budget_s:.0f} s" if budget_s else f"{t:.0f} s")
    rows = [head]
    scores = eval_scores(result)
    if scores:
        table = Table(box=None, padding=(0, 1), header_style="bold")
        for col in ("eval opponent", "score", "win", "draw", "loss"):
            table.add_column(col, justify="left" if col == "eval opponent" else "right")
        for opp, (w, d, l_) in scores.items():
            table.add_row(opp[:24], f"{w + d / 2:.2f}", f"{w:.2f}", f"{d:.2f}", f"{l_:.2f}")
        rows.append(table)
    extra = []
    size, elo = _num(_get(result, "league/size")), _num(_get(result, "league/main_rating"))
    if size is not None:
        extra.append(f"league {size:.0f} members" + (f", main Elo {elo:.0f}" if elo is not None else ""))
    diff = _num(_get(result, "curriculum/difficulty"))
    if diff is not None:
        size_mean = _num(_get(result, "curriculum/size_mean"))
        extra.append(f"curriculum level {diff:.2f}" + (f" ({size_mean:.0f} cells wide)" if size_mean else ""))
    ladder = _num(_get(result, "heldout/ladder/score"))
    if ladder is not None:
        extra.append(f"held-out score {ladder:.2f} (iteration {_get(result, 'heldout/iteration', 0):g})")
    if extra:
        rows.append("  ".join(extra) if sum(map(len, extra)) < WIDTH - 10 else "\n".join(extra))
    from rich.console import Group

    return Panel(Group(*rows), title=title, title_align="left", width=min(WIDTH, 100))


class RunConsole:
    """Per-iteration output (panel or short lines) plus the full lines in the trial's log file.

    `on_result(result, trial_path)` once per result; `close()` before the summary is printed.
    Without a TTY a short line is printed at most every `line_every_s` seconds (the first and the
    last result always), so a 1,000-iteration demo prints a few dozen lines, not a thousand.
    `totals` sums each result's `spade/phase_s` and keeps its env steps/s (the summary's time line).
    """

    def __init__(self, budget_s: Optional[float], title: str, full_line: Callable[[dict], str],
                 live: Optional[bool] = None, out=None, line_every_s: float = 5.0, budget_steps: Optional[int] = None):
        self.line_every_s = float(line_every_s)
        self.budget_steps = budget_steps
        self.totals = PhaseTotals()
        self._last_print: Optional[float] = None
        self._pending: Optional[str] = None
        self.budget_s = budget_s
        self.title = title
        self.full_line = full_line
        self.out = out or sys.stdout
        self.live_mode = interactive(self.out) if live is None else live
        self._live = None
        self.log_path: Optional[Path] = None

    def on_result(self, result: dict, trial_path: Optional[str]) -> None:
        line = self.full_line(result)
        phases = _get(result, "spade/phase_s", None)
        self.totals.add(phases if isinstance(phases, dict) else {}, iteration_rate(result))
        if trial_path:
            self.log_path = Path(trial_path) / LOG_FILE
            try:
                with open(self.log_path, "a") as f:
                    f.write(line + "\n")
            except OSError:
                pass
        if self.live_mode:
            self._show(panel(result, self.budget_s, self.title, self.budget_steps))
            return
        now = time.monotonic()
        text = short_line(result, self.budget_s, budget_steps=self.budget_steps)
        if self._last_print is None or now - self._last_print >= self.line_every_s:
            print(text, file=self.out, flush=True)
            self._last_print, self._pending = now, None
        else:
            self._pending = text

    def _show(self, renderable) -> None:
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(renderable, console=Console(file=self.out), auto_refresh=False, transient=False)
            self._live.start()
        else:
            self._live.update(renderable)
        self._live.refresh()

    def close(self) -> None:
        if self._pending is not None:
            print(self._pending, file=self.out, flush=True)
            self._pending = None
        if self._live is not None:
            self._live.stop()
            self._live = None


def rel(path: Path | str) -> str:
    """`path` relative to the working directory when it lies under it (shorter commands)."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def wrap_command(words: Sequence[str], width: int = WIDTH, indent: str = "    ") -> list[str]:
    """A shell command as lines of at most `width` columns, joined by ` \\` continuations."""
    lines, cur = [], ""
    for w in words:
        cand = w if not cur else f"{cur} {w}"
        if len(cand) + 2 > width and cur:
            lines.append(cur + " \\")
            cur = indent + w if len(indent + w) + 2 <= width else w  # a very long path: no indent
        else:
            cur = cand
    lines.append(cur)
    return lines


def ready_commands(trial: Path, checkpoint: str, difficulty: Optional[float], report: Optional[Path],
                   level_game: bool = True, playable: bool = True) -> list[str]:
    """The summary's last lines: evaluate (training-like levels, held-out maps), play, report."""
    t, ck = rel(trial), rel(checkpoint)
    out = []
    if level_game and difficulty is not None:
        out += ["# evaluate on levels like the training ones (sampled actions, as in training):",
                *wrap_command(["python", "-m", "spade_rllib.evaluate", "--checkpoint", t,
                               "--levels", f"generated:8@{difficulty:g}", "--stochastic", "--out", f"{t}/eval_train"])]
    if level_game:
        out += ["# evaluate on the held-out maps (argmax actions):",
                *wrap_command(["python", "-m", "spade_rllib.evaluate", "--checkpoint", t, "--levels", "heldout",
                               "--out", f"{t}/eval_heldout"])]
    else:
        out += ["# evaluate against the game's bots (argmax actions; --stochastic samples):",
                *wrap_command(["python", "-m", "spade_rllib.evaluate", "--checkpoint", t, "--out", f"{t}/eval"])]
    if playable:
        out += ["# play against it in the terminal:",
                *wrap_command(["python", "-m", "spade_rllib.play", "--checkpoint", ck])]
    out += ["# the report again (evaluations written inside the trial dir join it):",
            *wrap_command(["python", "-m", "spade_rllib.report", t])]
    if report is not None:
        out.append(f"# open {rel(report)} in a browser")
    return out


def dashboard_line(url: str) -> str:
    """The dashboard URL and how to open it: Ray 2.60's local clusters ask for a token."""
    url = url if url.startswith("http") else f"http://{url}"
    return f"Ray dashboard: {url} (token: ray get-auth-token)"


NOISE = (
    "Token authentication is enabled",        # dashboard_line says how to get the token
    "You are running PPO on the new API stack",  # RLlib's notice on every AlgorithmConfig build
    "DeprecationWarning:",                     # RLlib's own deprecated calls, nothing a user can change
)
"""Starts of Ray log messages kept off the console (they are 150-250 columns of no news)."""


class _NoiseFilter:
    def filter(self, record) -> bool:  # logging.Filter protocol
        msg = record.getMessage()
        return not any(n in msg for n in NOISE)


def quiet_ray_noise() -> None:
    """Drop `NOISE` from the handlers of Ray's loggers (call after `import ray` and after `ray.init`)."""
    import logging

    flt = _NoiseFilter()
    for name in ("ray", "ray.rllib", "ray.tune", "ray.data"):
        logger = logging.getLogger(name)
        logger.addFilter(flt)  # records logged on this logger itself
        for handler in logger.handlers:
            if not any(isinstance(f, _NoiseFilter) for f in handler.filters):
                handler.addFilter(flt)  # records of child loggers propagating up


def wrap_text(text: str, width: int = WIDTH) -> list[str]:
    """`text` broken at spaces into lines of at most `width` columns, the rest indented."""
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent="  ", break_on_hyphens=False) or [""]


def team_line(final: dict, games: int, greedy: bool, prefix: str = "final") -> str:
    """A cooperative game's final evaluation in one line: the team's mean return with its 95%
    interval, and the success rate where the env reports one (no win rate, no target)."""
    key = f"{prefix}/team"
    mean, ci = _num(final.get(f"{key}/return_mean")), _num(final.get(f"{key}/return_ci95"))
    text = f"final evaluation ({games} episodes, {'argmax' if greedy else 'sampled'} actions): team return "
    text += "n/a" if mean is None else f"{mean:.3f}" + ("" if ci is None or ci != ci else f" +- {ci:.3f}")
    success = _num(final.get(f"{key}/success_rate"))
    if success is not None:
        text += f", success rate {success:.2f}"
    length = _num(final.get(f"{key}/mean_length"))
    return text + ("" if length is None else f", mean length {length:.0f}")


def final_table(opponents: Sequence[str], final: dict, verdicts: Sequence, mirror: str = "mirror",
                prefix: str = "final") -> list[str]:
    """The final evaluation as a fixed-width table: score, W/D/L and the target's verdict per opponent."""
    by_opp = {v.opponent: v for v in verdicts}
    lines = [f"  {'opponent':<16} {'score':>5}  {'win':>4} {'draw':>4} {'loss':>4}  verdict"]
    for opp in opponents:
        w, d, l_ = (final.get(f"{prefix}/{opp}/{k}", math.nan) for k in ("win_rate", "draw_rate", "loss_rate"))
        if not all(isinstance(x, (int, float)) for x in (w, d, l_)):
            continue
        if opp == mirror:  # main against itself: the interesting number is how many games end undecided
            lines.append(f"  {opp:<16} {'-':>5}  {w:4.2f} {d:4.2f} {l_:4.2f}  (main vs itself: {d:.0%} draws)")
            continue
        v = by_opp.get(opp)
        verdict = "-" if v is None else (f"{'PASS' if v.met else 'BELOW TARGET'} ({v.metric} >= {v.target:g})")
        lines.append(f"  {opp[:16]:<16} {w + d / 2:5.3f}  {w:4.2f} {d:4.2f} {l_:4.2f}  {verdict}")
    return lines


# ---------------------------------------------------------------------------------------------
# The per-iteration line and the Tune callback that shows it
# ---------------------------------------------------------------------------------------------


def heldout_scores(result: dict) -> dict[str, float]:
    """{opponent: main's mean held-out score} from `heldout/<opponent>/score` (levels' keys skipped)."""
    held = result.get("heldout") or {}
    out = {}
    for opp, m in held.items():
        if opp != "self" and isinstance(m, dict) and isinstance(m.get("score"), (int, float)) and not math.isnan(m["score"]):
            out[opp] = float(m["score"])
    return out


_SNAPSHOT_ID = re.compile(r".+_v\d+")


def format_line(result: dict) -> str:
    """One compact line for an iteration result."""
    it = int(result.get("training_iteration", 0))
    steps = result_value(result, "env_runners/num_env_steps_sampled_lifetime", 0)
    sps = result_value(result, "env_runners/num_env_steps_sampled_lifetime_throughput", math.nan)
    if not isinstance(sps, (int, float)) or math.isnan(sps):
        sps = result_value(result, "env_runners/num_env_steps_sampled", 0) / max(1e-9, float(result.get("time_this_iter_s", 1e-9)))
    ret = result_value(result, "env_runners/episode_return_mean")
    parts = [f"iter {it:4d}", f"steps {int(steps):>9,d}", f"{sps:7,.0f} sps", f"ret {ret:+.3f}" if isinstance(ret, float) else f"ret {ret}"]
    # League snapshots (main_v<N>, main_exploiter_0_v<N>, ...) share one aggregate, so the line
    # stays compact as the league grows.
    wdl: dict[str, list[float]] = {}
    for opp, m in sorted((result.get("train") or {}).items()):
        if isinstance(m, dict) and m.get("games"):
            row = wdl.setdefault("league" if _SNAPSHOT_ID.fullmatch(opp) else opp, [0.0, 0.0, 0.0, 0.0])
            for i, k in enumerate(("win_rate", "draw_rate", "loss_rate")):
                row[i] += m[k] * m["games"]
            row[3] += m["games"]
    # Entropy and game counts per opponent make a collapse (entropy -> 0, one opponent crowding out
    # the others, e.g. PFSP starving the random reference) visible on the line itself.
    entropy = result_value(result, f"learners/{MAIN}/entropy")
    if isinstance(entropy, (int, float)) and not math.isnan(entropy):
        parts.append(f"entropy {entropy:.2f}")
    for opp, (w, d, l, n) in wdl.items():
        parts.append(f"vs {opp} ({n:g}) W/D/L {w / n:.2f}/{d / n:.2f}/{l / n:.2f}")
    ev = result.get("eval") or {}
    evs = [f"{opp} {m['win_rate']:.2f}" for opp, m in sorted(ev.items()) if isinstance(m, dict) and not math.isnan(m.get("win_rate", math.nan))]
    if evs:
        parts.append("eval win " + ", ".join(evs))
    league_size = result_value(result, "league/size")
    if not (isinstance(league_size, float) and math.isnan(league_size)):
        text = f"league {league_size:g}"
        rating, snap = result_value(result, "league/main_rating"), result_value(result, "league/snapshot_event", 0.0)
        if isinstance(rating, (int, float)) and not math.isnan(rating):
            text += f" elo {rating:.0f}"
        wr = result_value(result, "league/main_win_rate")
        if isinstance(wr, (int, float)) and not math.isnan(wr):
            text += f" wr {wr:.2f}"
        if isinstance(snap, (int, float)) and snap > 0:
            text += " +snapshot"
        parts.append(text)
        learners = result_value(result, "league/learner", {})  # exploiters: their own win rate, snapshots
        for name, m in sorted(learners.items() if isinstance(learners, dict) else ()):
            if isinstance(m, dict):
                wr = m.get("win_rate", math.nan)
                wr_text = "-" if not isinstance(wr, (int, float)) or math.isnan(wr) else f"{wr:.2f}"
                parts.append(f"{name} wr {wr_text} v{int(m.get('snapshots', 0))}")
    diff = result_value(result, "curriculum/difficulty")
    if not (isinstance(diff, float) and math.isnan(diff)):
        parts.append(f"difficulty {diff:.2f}")
    buf = result_value(result, "curriculum/buffer_size")  # plr
    if isinstance(buf, (int, float)) and not math.isnan(buf):
        parts.append(f"plr buffer {buf:g} replay {result_value(result, 'curriculum/replay_share'):.2f}")
    held = result_value(result, "heldout/rusher_tagger/win_rate")
    if isinstance(held, (int, float)) and not math.isnan(held):
        score = result_value(result, "heldout/rusher_tagger/score")
        parts.append(f"heldout vs rusher_tagger win {held:.2f} score {score:.2f} (it {result_value(result, 'heldout/iteration'):g})")
    else:  # CTF: main's held-out score against each ladder bot
        scores = heldout_scores(result)
        if scores:
            parts.append("heldout score " + " ".join(f"{o} {s:.2f}" for o, s in scores.items())
                         + f" (it {result_value(result, 'heldout/iteration'):g})")
    phases = result_value(result, "spade/phase_s", {})
    if isinstance(phases, dict) and phases:  # where this iteration's wall time went (spade_rllib.training.phases)
        from spade_rllib.training.phases import phase_ms_text

        text = phase_ms_text(phases)
        if text:
            parts.append(text)
    return " | ".join(parts)


def console_callback(cfg: Optional["RunConfig"] = None, live: Optional[bool] = None):
    """A Tune callback showing each result (`spade_rllib.training.console`: a live panel on a terminal, short
    lines otherwise; the full `format_line` in the trial's iterations.log) instead of Tune's table."""
    from ray.tune import Callback

    from spade_rllib.training.console import RunConsole

    budget = cfg.training.stop.time_s if cfg is not None else None
    title = f"{cfg.env.id} / {cfg.experiment.name}" if cfg is not None else "training"

    class SpadeConsole(Callback):
        def __init__(self):
            self.last_result: Optional[dict] = None
            self.trial_path: Optional[str] = None
            self.view = RunConsole(budget, title, format_line, live=live,
                                   budget_steps=cfg.training.stop.env_steps if cfg is not None else None)

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self.last_result = result
            self.trial_path = trial.path
            self.view.on_result(result, trial.path)

        def on_trial_error(self, iteration, trials, trial, **info):
            self.view.close()
            self.trial_path = trial.path
            error_file = Path(trial.path) / "error.txt"
            print(f"trial {trial.trial_id} failed" + (f"; see {error_file}" if error_file.is_file() else ""), flush=True)

        def on_experiment_end(self, trials, **info):
            self.view.close()

    return SpadeConsole()
