"""MazeRace environment package: levels, generators, the ParallelEnv and its registry.

See ``spade_rllib/envs/maze_race.py`` (the env's manual) and ``docs/env.md``.
"""
from .generators import (FAMILIES, Knobs, default_max_steps, flag_distance_tolerance, generate_level,
                         knobs_for_difficulty, max_flag_distance)
from .level import Level, LevelError
from .maze_race import MazeRace
from .registry import ENV_IDS, make_env

__all__ = [
    "MazeRace", "Level", "LevelError", "Knobs", "FAMILIES", "generate_level", "knobs_for_difficulty",
    "flag_distance_tolerance", "default_max_steps", "max_flag_distance", "make_env", "ENV_IDS",
]
