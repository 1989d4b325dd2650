"""Checkpoints and run output: what a run writes, where, and how it is read back (floors 0 and 5, no Ray).

* `checkpoint_layout`: where a `SpadePPO` checkpoint keeps what, and the readers of it (`resolve_checkpoint`,
  `league_member_states`, `checkpoint_env_id`, `component_state`).
* `checkpoint_guard`: a checkpoint directory is whole and stays inside itself, checked before anything
  unpickles it.
* `output_paths`: storage paths, experiment names and the outputs of `evaluate` / `export`, checked before Ray.
* `provenance`: the run's `runinfo.json` (versions, seeds, git commit, command line).
* `atomic_io` (floor 0): every artifact written to a temporary file and renamed, never half.
* `result_lookup` (floor 0): reading a Tune/RLlib result dict by metric path.

May import: `core/`, `games/` (floors 0-3); `atomic_io` and `result_lookup` nothing of the package.
Import the submodules directly; this package import runs nothing.
"""
