"""A diverged run stops with a clear error instead of writing a NaN checkpoint.

`SpadePPO.step` checks the learner's losses after every update (`non_finite_losses`), and
`SpadePPO.save_checkpoint` checks the trained modules' weights before anything is written
(`non_finite_weights`). Both are cheap: a few floats per iteration, one pass over the weights per
checkpoint. No Ray import.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

LOSS_KEYS = ("total_loss", "policy_loss", "vf_loss", "entropy", "mean_kl_loss")
"""Per-module learner results that must stay finite."""
ADVICE = "training diverged; lower agent.lr or set agent.grad_clip, then --resume from the last checkpoint"


class NonFiniteError(FloatingPointError):
    """NaN or infinity in a loss or a weight; the message is one line naming module, key and iteration."""


def _bad(value: Any) -> bool:
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def non_finite_losses(learner_results: Mapping[str, Any]) -> list[str]:
    """"<module>/<key> = <value>" for every non-finite loss in `result["learners"]` (modules only)."""
    found = []
    for module_id, stats in (learner_results or {}).items():
        if module_id.startswith("__") or not isinstance(stats, Mapping):
            continue
        for key in LOSS_KEYS:
            if key in stats and _bad(stats[key]):
                found.append(f"{module_id}/{key} = {float(stats[key])}")
    return found


def non_finite_weights(state: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Names of tensors/arrays (nested state dicts walked) holding NaN or infinity."""
    found = []
    for name, value in (state or {}).items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            found += non_finite_weights(value, key + ".")
            continue
        arr = value.detach().cpu().numpy() if hasattr(value, "detach") else value
        if isinstance(arr, np.ndarray) and arr.dtype.kind == "f" and not np.isfinite(arr).all():
            found.append(key)
    return found


def trained_now(learner_results: Mapping[str, Any], lifetime: dict) -> dict:
    """The modules of `result["learners"]` that were updated this iteration (their lifetime count of
    trained steps grew; `lifetime` remembers it between calls). A module that got no batch (an
    exploiter whose batch was dropped after a reset) still reports losses, as NaN: not a divergence."""
    out = {}
    for module_id, stats in (learner_results or {}).items():
        if module_id.startswith("__") or not isinstance(stats, Mapping):
            continue
        try:
            steps = float(stats.get("num_module_steps_trained_lifetime", math.nan))
        except (TypeError, ValueError):
            continue
        if math.isfinite(steps) and steps > lifetime.get(module_id, 0.0):
            out[module_id] = stats
            lifetime[module_id] = steps
    return out


def check_losses(learner_results: Mapping[str, Any], iteration: int) -> None:
    bad = non_finite_losses(learner_results)
    if bad:
        raise NonFiniteError(f"iteration {iteration}: learners/{bad[0]} ({len(bad)} non-finite losses); {ADVICE}")


def check_weights(weights_by_module: Mapping[str, Mapping[str, Any]], iteration: int) -> None:
    for module_id, state in weights_by_module.items():
        bad = non_finite_weights(state)
        if bad:
            raise NonFiniteError(f"iteration {iteration}: module {module_id!r} has NaN/inf weights ({bad[0]}, "
                                 f"{len(bad)} tensors); checkpoint not written; {ADVICE}")




class EnvFault(RuntimeError):
    """An env raised or produced NaN/inf inside an env runner; one line naming env, agent and step."""


def env_fault(env_id: str, lane: int, step: int, agent: Any, what: str) -> EnvFault:
    return EnvFault(f"env {env_id} (copy {lane}), agent {agent!r}, step {step}: {what}")


def first_non_finite_row(obs: np.ndarray) -> int:
    """Index of the first row of a 2-D float batch holding NaN/inf, -1 when all are finite."""
    ok = np.isfinite(obs).all(axis=tuple(range(1, obs.ndim))) if obs.ndim > 1 else np.isfinite(obs)
    return -1 if ok.all() else int(np.argmin(ok))


__all__ = ["EnvFault", "NonFiniteError", "check_losses", "check_weights", "env_fault", "first_non_finite_row",
           "non_finite_losses", "non_finite_weights", "trained_now"]
