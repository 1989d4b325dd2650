"""``LeagueConfig``: the league's settings, typed and validated (the run config's ``league:`` section
embeds it: ``enabled`` plus these fields). Errors are one line, worded as in ``spade_rllib.validation``."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from spade_rllib.ratings import ELO_DEFAULT_INITIAL, ELO_DEFAULT_K, OPENSKILL_MODELS
from spade_rllib.validation import ConfigError, not_allowed, out_of_range, unknown_key, wrong_type

SAMPLING_MODES = ("uniform", "pfsp")
PFSP_WEIGHTINGS = ("hard", "variance", "linear", "linear_capped")
EVICTION_RULES = ("oldest", "lowest_rated")
RATING_SYSTEMS = ("elo", "openskill")


@dataclass(frozen=True)
class LeagueConfig:
    """Hyperparameters of the league. Every field is validated in ``__post_init__``."""

    # -- snapshot rule ---------------------------------------------------------------------------
    win_rate_threshold: float | None = 0.7
    """Snapshot when the learner's win rate over the last ``window`` games reaches this; None = off."""
    window: int = 100
    """N: how many of the learner's most recent finished games the threshold looks at (draws = 0.5)."""
    every_n_iterations: int | None = None
    """Also snapshot when this many iterations passed since the last snapshot; None = off."""
    min_iterations_between: int = 1
    """Never snapshot a learner twice within this many iterations."""
    # -- opponent sampling ----------------------------------------------------------------------
    latest_ratio: float = 0.5
    """Share of main's games against its newest snapshot (ML-Agents' play_against_latest_model_ratio)."""
    self_play_ratio: float = 0.0
    """Share of main's games against itself at its current weights (mirror; AlphaStar's self-play part);
    the pool (newest snapshot and PFSP) gets the rest. Mirror games move no rating."""
    sampling: str = "pfsp"
    """How the remaining games pick from the pool: 'uniform' or 'pfsp'."""
    pfsp_weighting: str = "hard"
    """PFSP weight of main's win rate p: 'hard' (1-p)^2 (AlphaStar's main agents), 'variance' p(1-p),
    'linear' 1-p, 'linear_capped' min(0.5, 1-p)."""
    exploiter_pfsp_weighting: str = "variance"
    """PFSP weight for league exploiters (same choices); AlphaStar: 'variance' for exploiters."""
    reference_floor: float = 0.0
    """Least share of a learner's games against the fixed references (random and ``bots``) together,
    split evenly among them, whatever PFSP and ``latest_ratio`` say; 0 = off."""
    pfsp_window: int = 200
    """How many recent games against each member estimate p."""
    pfsp_prior_games: float = 1.0
    """Pseudo-games at p = 0.5 added to every member's record (a new member starts at p = 0.5)."""
    # -- pool -----------------------------------------------------------------------------------
    max_size: int = 20
    """Most frozen snapshots (weights) kept; random and bots do not count."""
    eviction: str = "oldest"
    """Which snapshot leaves a full pool: 'oldest' or 'lowest_rated'."""
    keep_first: bool = True
    """Never evict main's first snapshot."""
    include_random: bool = True
    """The uniform-random opponent is a pool member."""
    bots: tuple[str, ...] = ()
    """Scripted bots (``spade_rllib.bots`` names of the env, e.g. 'tactical') that join the pool as
    fixed references, like random."""
    num_opponent_slots: int = 4
    """K: opponent weight slots each env runner holds; the plan maps snapshots onto them."""
    # -- AlphaStar roles --------------------------------------------------------------------------
    main_exploiters: int = 0
    """Main exploiters: train only against main; reset after each of their snapshots."""
    league_exploiters: int = 0
    """League exploiters: train against the whole pool with PFSP."""
    # -- ratings --------------------------------------------------------------------------------
    rating: str = "elo"
    """Rating reported and used for eviction: 'elo' or 'openskill' (mu)."""
    elo_k: float = ELO_DEFAULT_K
    """Elo K factor."""
    elo_initial: float = ELO_DEFAULT_INITIAL
    """Elo of main and random at the start (snapshots start at their learner's rating)."""
    openskill_model: str = "plackett_luce"
    """OpenSkill model when rating == 'openskill'."""

    def __post_init__(self):
        _check_optional_range("win_rate_threshold", self.win_rate_threshold, 0.0, 1.0, "0 < value <= 1",
                              low_open=True)
        _check_int("window", self.window, 1)
        _check_optional_int("every_n_iterations", self.every_n_iterations, 1)
        _check_int("min_iterations_between", self.min_iterations_between, 0)
        if self.win_rate_threshold is None and self.every_n_iterations is None:
            raise ConfigError("league.win_rate_threshold = None: out of range while league.every_n_iterations is "
                              "None too (both None); set at least one so that snapshots can happen")
        _check_range("latest_ratio", self.latest_ratio, 0.0, 1.0, "0 <= value <= 1")
        _check_range("self_play_ratio", self.self_play_ratio, 0.0, 1.0, "0 <= value < 1")
        if self.self_play_ratio >= 1.0:
            _fail("self_play_ratio", self.self_play_ratio, "0 <= value < 1 (1 leaves no games for the pool)")
        _check_choice("sampling", self.sampling, SAMPLING_MODES)
        _check_choice("pfsp_weighting", self.pfsp_weighting, PFSP_WEIGHTINGS)
        _check_choice("exploiter_pfsp_weighting", self.exploiter_pfsp_weighting, PFSP_WEIGHTINGS)
        _check_range("reference_floor", self.reference_floor, 0.0, 1.0, "0 <= value <= 1")
        _check_int("pfsp_window", self.pfsp_window, 1)
        _check_range("pfsp_prior_games", self.pfsp_prior_games, 0.0, float("inf"), "value >= 0")
        _check_int("max_size", self.max_size, 1)
        _check_choice("eviction", self.eviction, EVICTION_RULES)
        _check_bool("keep_first", self.keep_first)
        _check_bool("include_random", self.include_random)
        _check_bots(self.bots)
        object.__setattr__(self, "bots", tuple(self.bots))  # YAML gives a list; keep the config hashable
        _check_int("num_opponent_slots", self.num_opponent_slots, 1)
        _check_int("main_exploiters", self.main_exploiters, 0)
        _check_int("league_exploiters", self.league_exploiters, 0)
        _check_choice("rating", self.rating, RATING_SYSTEMS)
        _check_range("elo_k", self.elo_k, 0.0, float("inf"), "value > 0", low_open=True)
        _check_range("elo_initial", self.elo_initial, -float("inf"), float("inf"), "a finite number")
        _check_choice("openskill_model", self.openskill_model, OPENSKILL_MODELS)
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


def _fail(name: str, value: Any, allowed: str):
    raise out_of_range(f"league.{name}", value, allowed)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_range(name, value, low, high, allowed, low_open=False):
    if not _is_number(value) or math.isnan(value) or math.isinf(value):
        _fail(name, value, allowed)
    below = value <= low if low_open else value < low
    if below or value > high:
        _fail(name, value, allowed)


def _check_optional_range(name, value, low, high, allowed, low_open=False):
    if value is not None:
        _check_range(name, value, low, high, allowed + " (or None to disable)", low_open)


def _check_int(name, value, minimum):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        _fail(name, value, f"an integer >= {minimum}")


def _check_optional_int(name, value, minimum):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
        _fail(name, value, f"an integer >= {minimum}, or None to disable")


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise wrong_type(f"league.{name}", value, "true/false")


def _check_bots(value):
    allowed = "a list of distinct bot names (lower_snake_case, not 'random': use include_random)"
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(set(value)) != len(value):
        _fail("bots", value, allowed)
    from spade_rllib.league.ids import MemberId  # noqa: PLC0415

    for name in value:
        try:
            MemberId.bot(name)
        except (TypeError, ValueError):
            _fail("bots", value, allowed)


def _check_choice(name, value, choices):
    if value not in choices:
        raise not_allowed(f"league.{name}", value, choices)
