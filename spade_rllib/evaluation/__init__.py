"""League evaluation: players, the match engine (`match_engine`), schedules, the schedule runner, reports (`eval_report`) and replays.

Entry point: `python -m spade_rllib.evaluate` (see `docs/evaluation.md`).

May import: anything below floor 7 (`players/` for the loaded policies, `rllib/` for parallel games in Ray tasks).
"""
