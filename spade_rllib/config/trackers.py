"""Experiment trackers through Tune's own logger callbacks: `experiment.loggers: [mlflow, wandb]`.

* `mlflow`: `ray.air.integrations.mlflow.MLflowLoggerCallback`, one MLflow run per trial in the
  experiment named like the Tune experiment; the store is `experiment.mlflow_tracking_uri`, else
  `$MLFLOW_TRACKING_URI`, else a local `sqlite:///<storage_path>/mlflow.db` (read it with
  `mlflow ui --backend-store-uri sqlite:///results/mlflow.db`).
* `wandb`: `ray.air.integrations.wandb.WandbLoggerCallback`, project `experiment.wandb_project`
  (else `$WANDB_PROJECT`, else the experiment name), files under `<storage_path>/<name>/wandb`;
  W&B's own variables apply (`WANDB_MODE=offline` needs no account; `wandb sync` uploads later).

Both packages come with the `trackers` extra (`pip install -e '.[trackers]'`); a logger whose
package is missing is refused before Ray starts.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Sequence

from spade_rllib.core.validation import ConfigError

PACKAGES = {"mlflow": "mlflow", "wandb": "wandb"}
EXTRA = "pip install -e '.[trackers]'"
MLFLOW_DB = "mlflow.db"


def check_trackers(loggers: Sequence[str]) -> None:
    """Refuse a logger whose package is not installed (one line, with the install command)."""
    for i, name in enumerate(loggers):
        package = PACKAGES.get(name)
        if package and importlib.util.find_spec(package) is None:
            raise ConfigError(f"experiment.loggers[{i}] = {name!r}: the {package!r} package is not installed; {EXTRA}")


def mlflow_uri(cfg: Any) -> str:
    """Where MLflow logs go for this config (see the module docstring)."""
    exp = cfg.experiment
    if exp.mlflow_tracking_uri:
        return exp.mlflow_tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = Path(os.path.expanduser(exp.storage_path)).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{root / MLFLOW_DB}"


def tracker_callbacks(cfg: Any) -> list:
    """Tune callbacks for `cfg.experiment.loggers`, in that order."""
    out = []
    for name in cfg.experiment.loggers:
        if name == "mlflow":
            from ray.air.integrations.mlflow import MLflowLoggerCallback

            out.append(MLflowLoggerCallback(tracking_uri=mlflow_uri(cfg), experiment_name=cfg.experiment.name,
                                            tags={"env": cfg.env.id, "seed": str(cfg.experiment.seed)},
                                            save_artifact=False))
        elif name == "wandb":
            from ray.air.integrations.wandb import WandbLoggerCallback

            run_dir = Path(os.path.expanduser(cfg.experiment.storage_path)).resolve() / cfg.experiment.name
            run_dir.mkdir(parents=True, exist_ok=True)
            project = cfg.experiment.wandb_project or os.environ.get("WANDB_PROJECT") or cfg.experiment.name
            extra = {"mode": os.environ["WANDB_MODE"]} if os.environ.get("WANDB_MODE") else {}
            out.append(WandbLoggerCallback(project=project, dir=str(run_dir), log_config=False, **extra))
    return out
