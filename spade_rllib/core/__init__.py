"""The records and rules every floor shares, pure Python/numpy (floors 0-1).

* `outcome`: `EpisodeOutcome`, the one typed record of a finished episode, and the ids every floor uses
  (`MAIN`, `MIRROR`, `RANDOM`, `BOT_PREFIX`, `SLOT_PREFIX`, `LIVE_PREFIX`, `TEAM_LETTERS`).
* `validation`: `ConfigError` and the typed-field helper every config section declares its fields with
  (`setting`, `check_value`, `validate_fields`), in one wording of errors.
* `keyed_random`: a uniform number that is a pure function of a tuple of integers (matchmaking draws).
* `ratings` (floor 1): the rating math of the league (online) and evaluation (offline).

May import: nothing of the package outside `core/` (`ratings` imports `core.validation`); no Ray, no torch.
Import the submodules directly; this package import runs nothing.
"""
