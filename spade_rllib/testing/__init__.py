"""Helpers for tests and benches, never used by training: `assert_exactly_equal` (what "identical
state" means for checkpoints: types, key order, NaN, arrays) and `save_tiny_checkpoint` / `save_tiny_role_checkpoint`
(a run's checkpoint layout holding random tiny modules, written without Ray or training).

May import: anything of the package (floor 7); nothing in the package imports it."""
from spade_rllib.testing.state_equality import assert_exactly_equal
from spade_rllib.testing.tiny_checkpoints import build_module, env_spaces, save_tiny_checkpoint, save_tiny_role_checkpoint, write_progress_csv

__all__ = ["assert_exactly_equal", "build_module", "env_spaces", "save_tiny_checkpoint", "save_tiny_role_checkpoint",
           "write_progress_csv"]
