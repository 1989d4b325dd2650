"""spade_rllib."""
