"""One wording for every configuration error (run config, league and curriculum cores, sweeps).

Every problem is one line that names the key path, the value and what is allowed:

    agent.lr = 'fast': wrong type, expected a number
    league.window = 0: out of range, allowed an integer >= 1
    curriculum.plr.score = 'regret': not allowed; allowed: 'learnability', 'positive_value_loss'
    league.windw: unknown key (did you mean 'window'?) (allowed: enabled, win_rate_threshold, ...)

Ground floor: imports nothing from the package, so the pure cores raise the same `ConfigError`
(a `ValueError`) as the run config.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable


class ConfigError(ValueError):
    """A config problem, described in one line (key path, value, what is allowed)."""


def did_you_mean(word: Any, options: Iterable[Any]) -> str:
    """' (did you mean 'x'?)' for the closest option, or ''."""
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key(key: str, allowed: Iterable[str]) -> ConfigError:
    allowed = list(allowed)
    return ConfigError(f"{key}: unknown key{did_you_mean(key.rpartition('.')[2], allowed)} (allowed: {', '.join(allowed)})")


def wrong_type(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{key} = {value!r}: wrong type, expected {expected}")


def out_of_range(key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{key} = {value!r}: out of range, allowed {allowed}")


def not_allowed(key: str, value: Any, choices: Iterable[Any]) -> ConfigError:
    choices = list(choices)
    return ConfigError(f"{key} = {value!r}: not allowed{did_you_mean(value, choices)}; allowed: "
                       f"{', '.join(repr(c) for c in choices)}")


__all__ = ["ConfigError", "did_you_mean", "not_allowed", "out_of_range", "unknown_key", "wrong_type"]
