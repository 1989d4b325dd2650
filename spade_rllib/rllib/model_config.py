"""`model_config_for`: the `SpadeModule` model config of one trained module of a run (its architecture from
`agent.model`, its mask size and map layout from the env). Used by the algorithm's module specs and by driver
components that build a copy of main's module (the exploitability component)."""
from __future__ import annotations

from spade_rllib.config import MEMORY_LSTM, RunConfig
from spade_rllib.outcome import MAIN
from spade_rllib.rllib.components import EnvInfo


MODULE_KEY_SOURCES = {"kind": "encoder", "use_lstm": "memory"}
"""Module model_config keys (RLlib's DefaultModelConfig naming, as checkpoints store them) whose `agent.model`
key is spelled otherwise: `kind` holds the encoder, `use_lstm: True` is `memory: lstm`."""


def config_key(module_key: str) -> str:
    """The `agent.model` key a module model_config key comes from."""
    return MODULE_KEY_SOURCES.get(module_key, module_key)


def model_config_for(cfg: RunConfig, info: EnvInfo, module_id: str = MAIN) -> dict:
    m = cfg.agent.model
    out = {"kind": m.encoder, "hidden": list(m.hidden), "activation": m.activation, "vf_share_layers": m.vf_share_layers,
           "mask_size": info.module_shape(module_id)[1]}
    if m.encoder == "cnn":
        out["window_shape"] = list(info.window_shape)
        out["cnn_channels"] = list(m.cnn_channels)
    if m.map_channels and info.map_shape:  # the memory map gets convolutions of its own
        out.update(map_shape=list(info.map_shape), map_channels=list(m.map_channels))
    if m.train_bf16:
        out["train_bf16"] = True
    if info.action_space is not None and not hasattr(info.action_space, "n"):  # Box: a Gaussian head
        out["log_std_init"] = float(m.log_std_init)
    if m.memory == MEMORY_LSTM:
        out.update(use_lstm=True, lstm_cell_size=m.lstm_cell_size, max_seq_len=m.max_seq_len,
                   lstm_use_prev_action=m.lstm_use_prev_action, lstm_use_prev_reward=m.lstm_use_prev_reward)
    return out


__all__ = ["MODULE_KEY_SOURCES", "config_key", "model_config_for"]
