"""RLlib glue: the RLModule (`module`), the vectorized env runner
(`runner`), the driver-component hook API (`components`, `plan`), the league's and the curriculum's
driver components (`league_component`, `curriculum_component`, listed in `component_registry`),
held-out evaluation during training (`periodic_heldout_eval`) and after it (`final_heldout_eval`), and `SpadePPO` / `build_algo_config` (`algorithm`). Import
submodules directly; this package import stays Ray-free.

May import: floors 0-5 (`core/`, `envs/`, `games/`, `curriculum/`, `league/`, `config/`, `artifacts/`,
`players/`) and the pure `training.phases`, `signal_schedule`, `draw_watch`, `targets`; never `training/`'s
floor-7 modules or the commands.
"""
