"""Ray Tune sweeps: sweep YAML (`spec`), the trainable (`trainable`), live progress, the end report and seed statistics.

Entry point: `python -m spade_rllib.tune --sweep NAME` (see `spade_rllib.tune` and docs/tune.md).
`spec` and `stats` import no Ray.
"""
