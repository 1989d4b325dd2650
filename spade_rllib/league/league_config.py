"""``LeagueConfig``: the league's settings, typed and validated (the run config's ``league:`` section
embeds it: ``enabled`` plus these fields). Each field is a ``spade_rllib.core.validation.setting`` (help line
and constraints), checked by ``validate_fields``; errors are one line, worded as there."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from spade_rllib.core.ratings import ELO_DEFAULT_INITIAL, ELO_DEFAULT_K, OPENSKILL_MODELS
from spade_rllib.core.validation import ConfigError, out_of_range, setting, unknown_key, validate_fields, wrong_type

SAMPLING_MODES = ("uniform", "pfsp", "nash")
PFSP_WEIGHTINGS = ("hard", "variance", "linear", "linear_capped")
EVICTION_RULES = ("oldest", "lowest_rated")
RATING_SYSTEMS = ("elo", "openskill")


@dataclass(frozen=True)
class LeagueConfig:
    """Hyperparameters of the league. Every field is validated in ``__post_init__``."""

    # -- snapshot rule ---------------------------------------------------------------------------
    win_rate_threshold: float | None = setting(0.7, help="Snapshot when the learner's win rate over the last ``window`` games reaches this; None = off.", gt=0.0, max=1.0)
    window: int = setting(100, help="N: how many of the learner's most recent finished games the threshold looks at (draws = 0.5).", min=1)
    every_n_iterations: int | None = setting(None, help='Also snapshot when this many iterations passed since the last snapshot; None = off.', min=1)
    min_iterations_between: int = setting(1, help='Never snapshot a learner twice within this many iterations.', min=0)
    # -- opponent sampling ----------------------------------------------------------------------
    latest_ratio: float = setting(0.5, help="Share of main's games against its newest snapshot (ML-Agents' play_against_latest_model_ratio).", min=0.0, max=1.0)
    self_play_ratio: float = setting(0.0, help="Share of main's games against itself at its current weights (mirror; AlphaStar's self-play part); the pool (newest snapshot and PFSP) gets the rest. Mirror games move no rating.", min=0.0, lt=1.0)
    sampling: str = setting("pfsp", help="How the remaining games pick from the pool: 'uniform', 'pfsp', or 'nash' (PSRO's meta-solver: the Nash equilibrium of the empirical zero-sum payoff matrix among the pool's members, spade_rllib.league.nash).", choices=SAMPLING_MODES)
    pfsp_weighting: str = setting("hard", help="PFSP weight of main's win rate p: 'hard' (1-p)^2 (AlphaStar's main agents), 'variance' p(1-p), 'linear' 1-p, 'linear_capped' min(0.5, 1-p).", choices=PFSP_WEIGHTINGS)
    exploiter_pfsp_weighting: str = setting("variance", help="PFSP weight for league exploiters (same choices); AlphaStar: 'variance' for exploiters.", choices=PFSP_WEIGHTINGS)
    reference_floor: float = setting(0.0, help="Least share of a learner's games against the fixed references (random and ``bots``) together, split evenly among them, whatever PFSP and ``latest_ratio`` say; 0 = off.", min=0.0, max=1.0)
    pfsp_window: int = setting(200, help='How many recent games against each member estimate p.', min=1)
    pfsp_prior_games: float = setting(1.0, help="Pseudo-games at p = 0.5 added to every member's record (a new member starts at p = 0.5).", min=0.0)
    # -- pool -----------------------------------------------------------------------------------
    max_size: int = setting(20, help='Most frozen snapshots (weights) kept; random and bots do not count.', min=1)
    eviction: str = setting("oldest", help="Which snapshot leaves a full pool: 'oldest' or 'lowest_rated'.", choices=EVICTION_RULES)
    keep_first: bool = setting(True, help="Never evict main's first snapshot.")
    include_random: bool = setting(True, help='The uniform-random opponent is a pool member.')
    bots: tuple[str, ...] = setting((), help="Scripted bots (``spade_rllib.bots`` names of the env, e.g. 'tactical') that join the pool as fixed references, like random.")
    num_opponent_slots: int = setting(4, help='K: opponent weight slots each env runner holds; the plan maps snapshots onto them.', min=1)
    # -- AlphaStar roles --------------------------------------------------------------------------
    main_exploiters: int = setting(0, help='Main exploiters: train only against main; reset after each of their snapshots.', min=0)
    league_exploiters: int = setting(0, help='League exploiters: train against the whole pool with PFSP.', min=0)
    # -- ratings --------------------------------------------------------------------------------
    rating: str = setting("elo", help="Rating reported and used for eviction: 'elo' or 'openskill' (mu).", choices=RATING_SYSTEMS)
    elo_k: float = setting(ELO_DEFAULT_K, help='Elo K factor.', gt=0.0)
    elo_initial: float = setting(ELO_DEFAULT_INITIAL, help="Elo of main and random at the start (snapshots start at their learner's rating).")
    openskill_model: str = setting("plackett_luce", help="OpenSkill model when rating == 'openskill'.", choices=OPENSKILL_MODELS)

    def __post_init__(self):
        _check_bots(self.bots)
        validate_fields(self, "league")  # a YAML list becomes a tuple: the config stays hashable
        if self.win_rate_threshold is None and self.every_n_iterations is None:
            raise ConfigError("league.win_rate_threshold = None: out of range while league.every_n_iterations is "
                              "None too (both None); set at least one so that snapshots can happen")
        if self.keep_first and self.max_size < 2:
            raise out_of_range("league.max_size", self.max_size, ">= 2 with keep_first = true (it leaves no room "
                               "for a new snapshot), or keep_first = false")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "LeagueConfig":
        """Build from the YAML ``league:`` mapping; unknown keys get a 'did you mean'."""
        if not isinstance(values, Mapping):
            raise wrong_type("league", values, "a mapping")
        known = [f.name for f in dataclasses.fields(cls)]
        for key in values:
            if key not in known:
                raise unknown_key(f"league.{key}", known)
        return cls(**dict(values))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_bots(value):
    allowed = "a list of distinct bot names (lower_snake_case, not 'random': use include_random)"
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(set(value)) != len(value):
        raise out_of_range("league.bots", value, allowed)
    from spade_rllib.league.member_ids import MemberId

    for name in value:
        try:
            MemberId.bot(name)
        except (TypeError, ValueError):
            raise out_of_range("league.bots", value, allowed) from None

