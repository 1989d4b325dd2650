"""A self-contained HTML report of runs and evaluations: `python -m spade_rllib.report RUN_DIR [RUN_DIR ...]`.

    python -m spade_rllib.report results/quickstart/<trial> [eval_out ...] [--out report.html]

Each RUN_DIR is a Tune trial directory, an experiment directory (every trial in it) or an
`evaluate --out` directory; several overlay in one report. Training runs whose configs differ only in
their seed are also read together: each final score's mean over the seeds with its 95% t-interval, in
the report's "Across seeds" table and printed (held-out, size-class and final lines); each distinct trial counts once
(a directory given twice is read once, a resumed continuation stands for its original, a seed run twice counts once;
each with a note). A damaged file or result line is left out and named, file and line, in one `error:` line each:
the report of everything else is still written, and the command exits 2. The file embeds its images and opens in
a browser from disk. Default output: `report.html` inside the only RUN_DIR, else in the current
directory. `train` and `evaluate` write one at the end of every run.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Optional, Sequence

from spade_rllib.cli import add_debug_flag, cli_entry
from spade_rllib.reporting import ReportInputError, find_runs, load_run, write_report
from spade_rllib.reporting.html import REPORT_FILE
from spade_rllib.reporting.run_reader import run_problems
from spade_rllib.reporting.seeds import seed_groups


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spade_rllib.report", description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR", help="trial, experiment or evaluation directory (several overlay)")
    ap.add_argument("--out", help=f"output file (default: RUN_DIR/{REPORT_FILE} for one directory, else ./{REPORT_FILE})")
    add_debug_flag(ap)
    return ap.parse_args(argv)


def report(paths: Sequence[str | Path], out: Optional[str | Path] = None, command: str = "",
           echo_seeds: bool = False, problems: Optional[list] = None) -> Path:
    """Load every run under `paths` and write the report; returns its path. With `echo_seeds`, runs that differ
    only in their seed are also printed as one mean and interval per final score. The damaged files and lines
    left out are appended to `problems` (one line each). Raises ReportInputError."""
    found = [Path(d).resolve() for p in paths for d in find_runs(p)]
    dirs = list(dict.fromkeys(found))
    for d in dirs:
        if found.count(d) > 1:
            print(f"note: {d} is given {found.count(d)} times; read once", file=sys.stderr)
    runs = [load_run(d) for d in dirs]
    if problems is not None:
        problems += run_problems(runs)
    if out is None:
        out = Path(paths[0]) / REPORT_FILE if len(paths) == 1 else Path(REPORT_FILE)
    path = write_report(runs, out, command=command)
    if echo_seeds:
        for group in seed_groups(runs):
            print("\n".join(group.summary_lines()))
    return path


def write_quietly(paths: Sequence[str | Path], out: Optional[str | Path] = None, command: str = "") -> Optional[Path]:
    """`report` for the end of train/evaluate: a failure prints one line instead of ending the run."""
    try:
        return report(paths, out, command=command)
    except Exception as e:
        print(f"report skipped: {e.__class__.__name__}: {e}", file=sys.stderr)
        return None


@cli_entry(user_errors=(ReportInputError,))
def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    problems: list[str] = []
    try:
        path = report(args.runs, args.out, command="python -m spade_rllib.report " + " ".join(map(shlex.quote, args.runs)),
                      echo_seeds=True, problems=problems)
    except ReportInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    for line in problems:  # the report of everything else is written; each damaged file or line named
        print(f"error: {line}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
