"""RLlib glue: env adapters (`games`), the RLModule (`module`), the vectorized env runner (`runner`),
the driver-component hook API (`components`, `plan`) and `SpadePPO` / `build_algo_config`
(`algorithm`). Import submodules directly; this package import stays Ray-free."""
