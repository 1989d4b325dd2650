"""RLlib glue: the RLModule (`module`), the vectorized env runner
(`runner`), the driver-component hook API (`components`, `plan`), the league's and the curriculum's
driver components (`league_component`, `curriculum_component`, listed in `component_registry`),
held-out evaluation during training (`periodic_heldout_eval`) and after it (`final_heldout_eval`), and `SpadePPO` / `build_algo_config` (`algorithm`). Import
submodules directly; this package import stays Ray-free."""
