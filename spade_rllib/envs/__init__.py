"""MazeRace and CaptureTheFlag environment package: levels, generators, the ParallelEnv and its registry.

See ``spade_rllib/envs/maze_race.py`` / ``ctf.py`` (the envs' manuals), ``docs/env.md``, ``docs/ctf.md``.
"""
from .ctf import CaptureTheFlag
from .generators import (FAMILIES, Knobs, ctf_default_max_steps, default_max_steps, flag_distance_tolerance,
                         generate_ctf_level, generate_level, knobs_for_difficulty, max_flag_distance)
from .level import Level, LevelError
from .maze_race import MazeRace
from .registry import ENV_IDS, env_class, level_generator, make_env

__all__ = [
    "MazeRace", "CaptureTheFlag", "generate_ctf_level", "ctf_default_max_steps", "Level", "LevelError", "Knobs", "FAMILIES", "generate_level", "knobs_for_difficulty",
    "flag_distance_tolerance", "default_max_steps", "max_flag_distance", "make_env", "ENV_IDS", "env_class", "level_generator",
]
