"""Ray Tune sweeps: sweep YAML (`sweep_spec`), the trainable (`trainable`), live progress, the end report (`sweep_report`) and seed statistics.

Entry point: `python -m spade_rllib.tune --sweep NAME` (see `spade_rllib.tune` and docs/tune.md).
`sweep_spec` and `stats` import no Ray.

May import: anything below floor 7, and `training.tuner_inputs` (floor 7).
"""
