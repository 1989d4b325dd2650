"""The model config a checkpoint was trained with against the config's, as a resume compares them (pure).

`effective_model_config` fills in `SpadeModule`'s defaults (`MODEL_DEFAULTS`) and drops the keys a module
ignores, so two model configs that build the same module compare equal whichever keys each recorded;
`model_differences` lists the keys that differ (`agent.model` keys first, switches' implied keys left out);
`model_config_key` / `model_config_value` name a difference as the config spells it. Used by
`rllib.resume_fit.check_resume`.
"""
from __future__ import annotations

from typing import Any


def comparable_value(value: Any) -> Any:
    """`value` with every tuple a list, nested (a saved model config compares equal to the config's)."""
    if isinstance(value, (list, tuple)):
        return [comparable_value(v) for v in value]
    if isinstance(value, dict):
        return {k: comparable_value(v) for k, v in value.items()}
    return value


MODEL_DEFAULTS = {"kind": "mlp", "use_lstm": False, "map_channels": None, "hidden": [128, 128], "activation": "tanh",
                  "vf_share_layers": False, "cnn_channels": [16, 32], "lstm_cell_size": 256, "max_seq_len": 20,
                  "lstm_use_prev_action": False, "lstm_use_prev_reward": False, "log_std_init": 0.0, "mask_size": 0,
                  "window_shape": None, "map_shape": None, "planner": "none", "planner_iterations": 40,
                  "planner_channels": 16}
"""What `SpadeModule.setup` assumes for a key a `model_config` leaves out (keys recorded only when on)."""
FREE_ON_RESUME = ("train_bf16",)
"""Keys a resume may change: they change how the learner computes, not which tensors the module holds."""
DERIVED_KEYS = ("mask_size", "window_shape", "map_shape")
"""Keys that come from the env (its kwargs or map), not from `agent.model`."""
MODULE_KEY_SOURCES = {"kind": "encoder", "use_lstm": "memory"}
"""Module model_config keys (RLlib's DefaultModelConfig naming, as checkpoints store them) whose `agent.model`
key is spelled otherwise: `kind` holds the encoder, `use_lstm: True` is `memory: lstm`."""


def effective_model_config(model_config: dict) -> dict:
    """`model_config` with `SpadeModule`'s defaults filled in and the keys it ignores dropped (the CNN's
    keys of an MLP, the memory map's without `map_channels`, the LSTM's without `use_lstm`), so two
    configs that build the same module compare equal whichever keys each recorded."""
    out = {**MODEL_DEFAULTS, **comparable_value(dict(model_config))}
    for key in FREE_ON_RESUME:
        out.pop(key, None)
    if out["kind"] != "cnn":
        out.pop("window_shape"), out.pop("cnn_channels")
    if out["planner"] == "none":
        out.pop("planner_iterations"), out.pop("planner_channels")
    if not (out["map_shape"] and (out["map_channels"] or out["planner"] != "none")):
        out["map_shape"] = out["map_channels"] = None
    if not out["use_lstm"]:
        for key in ("lstm_cell_size", "max_seq_len", "lstm_use_prev_action", "lstm_use_prev_reward"):
            out.pop(key)
    else:
        out["vf_share_layers"] = None  # the recurrent module always shares its encoder and LSTM
    return out


IMPLIED = {"kind": ("cnn_channels", "window_shape"), "map_channels": ("map_shape",),
           "planner": ("map_shape", "planner_iterations", "planner_channels"),
           "use_lstm": ("vf_share_layers", "lstm_cell_size", "max_seq_len", "lstm_use_prev_action", "lstm_use_prev_reward")}
"""Keys that differ only because the switch before them differs (left out of the message)."""


def model_differences(saved: dict, want: dict) -> list[str]:
    """Keys whose effective values differ (`effective_model_config`), `agent.model` keys first."""
    a, b = effective_model_config(saved), effective_model_config(want)
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    implied = {k for switch in keys for k in IMPLIED.get(switch, ())}
    keys = [k for k in keys if k not in implied]
    return sorted(keys, key=lambda k: (k in DERIVED_KEYS, list(MODEL_DEFAULTS).index(k) if k in MODEL_DEFAULTS else 99))


def model_config_key(key: str) -> str:
    """The config key a model-config key comes from (`agent.model.<key>`, or the env's for a derived key)."""
    return key if key in DERIVED_KEYS else f"agent.model.{MODULE_KEY_SOURCES.get(key, key)}"


def model_config_value(key: str, value: Any) -> Any:
    """A module model-config value as `agent.model` spells it (`use_lstm: True` is `memory: "lstm"`)."""
    if key == "use_lstm":
        return "lstm" if value else "none"
    return value


__all__ = ["DERIVED_KEYS", "FREE_ON_RESUME", "IMPLIED", "MODEL_DEFAULTS", "MODULE_KEY_SOURCES", "comparable_value",
           "effective_model_config", "model_config_key", "model_config_value", "model_differences"]
