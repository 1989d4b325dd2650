"""League self-play core: pure Python/numpy, no Ray. See docs/league.md.

Public API::

    from spade_rllib.league import League, LeagueConfig, MemberId, Role, MAIN, RANDOM, MatchPlan, Matchup

May import: `core/` (the outcome, ratings, keyed draws, typed fields), `artifacts.atomic_io` (the league
table's writes) (floor 4, the pure core); no Ray, no torch, no `config/`. The league as a player from a
checkpoint (torch) is `players/league_player.py`, its export `players/league_export.py`.
"""
from spade_rllib.league.league_config import EVICTION_RULES, PFSP_WEIGHTINGS, RATING_SYSTEMS, SAMPLING_MODES, LeagueConfig
from spade_rllib.league.member_ids import MAIN, RANDOM, MemberId, Role
from spade_rllib.league.league import TABLE_COLUMNS, League, LeagueState, Member, format_table, read_table
from spade_rllib.league.match_plan import MatchPlan, Matchup, PlanEntry
from spade_rllib.league.sampling import allocate_slots, mix_latest, pfsp_weights, win_rate_estimate

__all__ = [
    "EVICTION_RULES", "PFSP_WEIGHTINGS", "RATING_SYSTEMS", "SAMPLING_MODES", "LeagueConfig",
    "MAIN", "RANDOM", "MemberId", "Role",
    "TABLE_COLUMNS", "League", "LeagueState", "Member", "format_table", "read_table",
    "MatchPlan", "Matchup", "PlanEntry",
    "allocate_slots", "mix_latest", "pfsp_weights", "win_rate_estimate",
]
