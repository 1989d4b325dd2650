"""Scripted reference players, one ladder per game, in a module per game; they act from the full env state.

``race_bots`` (MazeRace-v0), ``ctf_bots`` (CaptureTheFlag-v0), ``c4_bots`` (connect_four_v3): each
holds ``BOTS`` (name -> class). ``cls(seed).act(env, agent) -> int``, deterministic given ``seed``.
Which bots a game has is its `GameSpec.bots` (``spade_rllib.games.make_bot(name, seed, env_id=...)``,
``bot_names(env_id)``); which are played when none are named, its `GameSpec.default_bots`
(``default_bot_names(env_id)``).

May import: `envs/`, `core/` (floor 2); no Ray, no torch.
"""
from . import c4_bots, ctf_bots, race_bots

__all__ = ["c4_bots", "ctf_bots", "race_bots"]
