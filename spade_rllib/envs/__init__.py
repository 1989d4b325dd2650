"""The level games' environments: levels, generators, the `LevelGame` base and MazeRace / CaptureTheFlag.

See ``spade_rllib/envs/maze_race.py`` / ``ctf.py`` (the envs' manuals), ``docs/env.md``, ``docs/ctf.md``.
Build an env by id with ``spade_rllib.games.make_env`` (the catalog knows every game). The OpenSpiel games'
env (``openspiel_env.OpenSpielEnv``) is imported by the catalog itself, not here.

May import: `core/` (floor 1); no Ray, no torch.
"""
from .ctf import CaptureTheFlag
from .generators import (FAMILIES, Knobs, ctf_default_max_steps, default_max_steps, flag_distance_tolerance,
                         generate_ctf_level, generate_level, knobs_for_difficulty, max_flag_distance)
from .level import Level, LevelError
from .level_game import LevelGame
from .maze_race import MazeRace

__all__ = [
    "MazeRace", "CaptureTheFlag", "generate_ctf_level", "ctf_default_max_steps", "Level", "LevelError", "Knobs", "FAMILIES", "generate_level", "knobs_for_difficulty",
    "flag_distance_tolerance", "default_max_steps", "max_flag_distance", "LevelGame",
]
