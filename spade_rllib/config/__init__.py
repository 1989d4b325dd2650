"""The run config and its checks before Ray starts (floor 5): every bad value is one line, nothing runs.

* `run_config`: the typed run configuration (`RunConfig`, `load_config`, `parse_config`, `--set` overrides,
  `describe` for `--help-config`), embedding the league's and the curriculum's own configs.
* `yaml_reader` (floor 0): the one YAML reader for configs, sweep files and `--set` values.
* `preflight`: `check_config` (called by `parse_config`) and `check_launch` (called by `train` and `tune`),
  which run the checks of `env_checks` (the env id, kwargs, teams and roles, a foreign env that builds and
  steps), `map_checks` (maps and held-out maps), `metric_names` (a stop metric a run reports) and of:
* `resources` (CPUs, GPUs and the model's memory against this machine), `model_compat` (a checkpoint's
  model config against the config's), `trackers` (MLflow / W&B callbacks named by `experiment.loggers`).

May import: `core/`, `envs/`, `games/`, `curriculum/`, `league/`, `artifacts/` (floors 0-5); never `rllib/`;
Ray only inside `trackers` (Tune's logger callbacks, imported when built), torch only inside `resources`. Import the submodules directly; this package import runs nothing.
"""
