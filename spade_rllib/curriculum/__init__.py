"""Adaptive curriculum: strategies (threshold, plr, accel, uniform, fixed, maestro), ACCEL level edits, level specs, the PettingZoo
wrapper, the runner-side level source for the RLlib glue (`source`; the driver component is
`spade_rllib.rllib.curriculum_component`) and the held-out level loader. Pure Python/numpy; no Ray import. See docs/curriculum.md.

May import: `core/`, `envs/`, `bots/`, `games/` (floor 4, the pure core); no Ray, no torch, no `config/`.
"""
from spade_rllib.curriculum.curriculum_config import (
    AccelConfig,
    CurriculumConfig,
    FixedConfig,
    PLRConfig,
    ThresholdConfig,
    UniformConfig,
)
from spade_rllib.curriculum.heldout_maps import (
    heldout_map_files,
    heldout_metrics,
    heldout_reset_options,
    load_heldout_levels,
    load_heldout_specs,
)
from spade_rllib.curriculum.plr import (
    learnability,
    positive_value_loss,
    rank_weights,
    replay_probabilities,
    score_learnability,
    staleness_weights,
)
from spade_rllib.curriculum.level_spec import LevelSpec, build_level, outcome_completed
from spade_rllib.curriculum.strategies import (
    SAMPLING_STATE_FORMAT,
    AccelStrategy,
    CurriculumStrategy,
    FixedStrategy,
    PLRStrategy,
    ThresholdStrategy,
    UniformStrategy,
    default_knobs_fn,
    edit_level,
    initial_sampling_state,
    main_score,
    make_strategy,
    sample_level,
)
from spade_rllib.curriculum.maestro import MaestroStrategy, value_key
from spade_rllib.curriculum.source import CurriculumLevelSource
from spade_rllib.curriculum.wrapper import AdaptiveCurriculum

__all__ = [
    "AccelConfig", "AccelStrategy", "MaestroStrategy", "value_key", "edit_level", "main_score", "score_learnability",
    "AdaptiveCurriculum", "CurriculumConfig", "CurriculumLevelSource", "CurriculumStrategy", "FixedConfig", "FixedStrategy",
"LevelSpec", "PLRConfig", "PLRStrategy", "SAMPLING_STATE_FORMAT", "ThresholdConfig",
    "ThresholdStrategy", "UniformConfig", "UniformStrategy", "build_level", "default_knobs_fn",
    "heldout_map_files", "heldout_metrics", "heldout_reset_options", "initial_sampling_state", "learnability", "load_heldout_levels", "load_heldout_specs", "make_strategy",
    "outcome_completed", "positive_value_loss", "rank_weights", "replay_probabilities", "sample_level",
    "staleness_weights",
]
