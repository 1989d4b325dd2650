"""League evaluation: players, the match engine, schedules, runners, reports and replays.

Entry point: `python -m spade_rllib.evaluate` (see `docs/evaluation.md`).
"""
