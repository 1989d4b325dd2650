"""The trained modules of a run (`learner_module_ids`) and each one's `SpadeModule` model config
(`model_config_for`: its architecture from `agent.model`, its mask size and map layout from the env). Used
by the algorithm's module specs, the checks before Ray and driver components that build a copy of main's
module (the exploitability component). `check_modules_fit_memory(cfg, info)`: before Ray, the run's modules
against this machine's memory (`resources.check_model_memory` over these model configs)."""
from __future__ import annotations

from typing import Optional

from spade_rllib.config.run_config import MEMORY_LSTM, RunConfig
from spade_rllib.core.outcome import MAIN
from spade_rllib.rllib.components import EnvInfo


def learner_module_ids(cfg: RunConfig, info: Optional[EnvInfo] = None) -> list[str]:
    """Trained module ids: one `main_<role>` per role in a role game (`info.roles`); else "main", then
    the league's main exploiters, then its league exploiters."""
    if info is not None and info.roles:
        return list(info.role_modules())
    if not cfg.league.enabled:
        return [MAIN]
    from spade_rllib.league.member_ids import learner_ids

    return [str(m) for m in learner_ids(cfg.league.main_exploiters, cfg.league.league_exploiters)]


def model_config_for(cfg: RunConfig, info: EnvInfo, module_id: str = MAIN) -> dict:
    m = cfg.agent.model
    out = {"kind": m.encoder, "hidden": list(m.hidden), "activation": m.activation, "vf_share_layers": m.vf_share_layers,
           "mask_size": info.module_shape(module_id)[1]}
    if m.encoder == "cnn":
        out["window_shape"] = list(info.window_shape)
        out["cnn_channels"] = list(m.cnn_channels)
    if m.map_channels and info.map_shape:  # the memory map gets convolutions of its own
        out.update(map_shape=list(info.map_shape), map_channels=list(m.map_channels))
    if m.planner != "none" and info.map_shape:  # a learned planner reads the cell memory
        out.update(map_shape=list(info.map_shape), planner=m.planner, planner_iterations=m.planner_iterations,
                   planner_channels=m.planner_channels)
    if m.train_bf16:
        out["train_bf16"] = True
    if info.action_space is not None and not hasattr(info.action_space, "n"):  # Box: a Gaussian head
        out["log_std_init"] = float(m.log_std_init)
    if m.memory == MEMORY_LSTM:
        out.update(use_lstm=True, lstm_cell_size=m.lstm_cell_size, max_seq_len=m.max_seq_len,
                   lstm_use_prev_action=m.lstm_use_prev_action, lstm_use_prev_reward=m.lstm_use_prev_reward)
    return out


def check_modules_fit_memory(cfg: RunConfig, info: EnvInfo, memory: Optional[int] = None) -> None:
    """`resources.check_model_memory` for the trained modules this run builds (one-line `ConfigError`)."""
    from spade_rllib.config.resources import check_model_memory

    check_model_memory(cfg, model_config_for(cfg, info), info.obs_size, info.num_actions, len(learner_module_ids(cfg, info)),
                       memory=memory)


__all__ = ["check_modules_fit_memory", "learner_module_ids", "model_config_for"]
