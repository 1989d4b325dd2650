"""The self-contained HTML report of training runs and evaluations (`python -m spade_rllib.report`).

- `run_reader`: what a run or an evaluation directory holds, read into one `RunData` record
  (results per iteration from `result.json`, the resolved config, the final evaluation, the league
  table; for an evaluation its payoff, ratings, games and replays).
- `figures`: matplotlib figures as PNG bytes and the HTML heatmaps, pure functions of `RunData`.
- `html`: one HTML file with every image embedded (base64), a short self-check script and no
  network access; `write_report` writes it atomically (temporary file, then rename).

May import: anything below floor 7, and `evaluation/`, `sweeps/` (floor 7; nothing of `training/` but `targets`).
"""
from spade_rllib.reporting.html import build_html, write_report
from spade_rllib.reporting.run_reader import RunData, ReportInputError, find_runs, load_run

__all__ = ["RunData", "ReportInputError", "build_html", "find_runs", "load_run", "write_report"]
