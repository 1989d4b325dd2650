"""What a training run needs around the algorithm: its clocks, schedules and watches (pure, floors 0-1) and
what `train` and `tune` run and print around `tune.Tuner` (floor 7).

Pure, read by `rllib/` (floors 0-1): `phases` (the per-iteration phase clock), `signal_schedule` (training-only
signals over env steps), `draw_watch` (the all-draw collapse watch), `targets` (verdicts against
`evaluation.targets`).
Floor 7, above `rllib/`: `tuner_inputs` (what `tune.Tuner` takes: trainable, param space, stop criteria, run
config; shared by `train`, `tune`, sweeps and benches), `teacher_cost` (a teacher's cost per step, measured
before training), `console` (what `train` prints while it runs), `run_summary` (the end-of-run summary and
final evaluation).

May import: the pure modules only `core/`; the floor-7 ones anything of the package but `testing/`
(`rllib/`, `config/`, `players/`, `evaluation/`; `run_summary` reuses the `evaluate`, `play` and `report`
commands' functions). Import the submodules directly; this package import runs nothing.
"""
