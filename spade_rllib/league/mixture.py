"""The league as a player: which members its mixture holds, with which weights. Pure core, no Ray.

Three weightings (`MIXTURE_MODES`), each a distribution over league members:

- ``uniform``: main's frozen snapshots and main itself, equal weights (fictitious play's average of the
  best responses it produced; random and bots are references, not learned strategies, and stay out).
- ``plan``: main's current matchmaking distribution (`League.opponent_distribution(MAIN)`: PFSP /
  uniform / nash, ``latest_ratio``, the mirror share as main itself); bots are dropped, random stays
  (it is a strategy: uniform over legal actions).
- ``nash``: the Nash equilibrium of the meta-game among the pool (`League.nash_distribution`, PSRO's
  meta-strategy); main itself when the pool is empty.

How a mixture *plays* is the caller's business: on an OpenSpiel game the exact reach-weighted average
(`spade_rllib.games.exploitability.average_table`), elsewhere one member drawn per game.
"""
from __future__ import annotations

from spade_rllib.league.member_ids import MAIN, RANDOM, MemberId, Role
from spade_rllib.league.league import League

MIXTURE_MODES = ("uniform", "plan", "nash")
"""How the league's members are weighted when the league plays as one player."""


def check_mode(mode: str) -> str:
    """`mode` if it is one of `MIXTURE_MODES`; ValueError (one line, did-you-mean) otherwise."""
    if mode not in MIXTURE_MODES:
        import difflib

        close = difflib.get_close_matches(str(mode), MIXTURE_MODES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"league mixture {mode!r} is not valid{hint}; allowed: {', '.join(MIXTURE_MODES)}")
    return mode


def mixture_weights(league: League, mode: str, include_main: bool = True) -> dict[MemberId, float]:
    """The league's mixture as {member: weight} (weights sum to 1; members are main, snapshots or random).
    `include_main` False (uniform): leave main out, e.g. when its newest snapshot holds main's current weights."""
    check_mode(mode)
    if mode == "uniform":
        members = [m for m in league.snapshots() if m.learner == MAIN] + ([MAIN] if include_main else [])
        raw = {m: 1.0 for m in members}
    elif mode == "plan":
        raw = {m: p for m, p in league.opponent_distribution(MAIN).items()
               if m.role is not Role.BOT and (m == MAIN or m == RANDOM or m.has_weights)}
    else:
        pool = [m for m in league.pool() if m.role is not Role.BOT]
        raw = league.nash_distribution(pool) if pool else {}
    raw = {m: float(w) for m, w in raw.items() if w > 0}
    if not raw:
        return {MAIN: 1.0}
    total = sum(raw.values())
    return {m: w / total for m, w in raw.items()}


__all__ = ["MIXTURE_MODES", "check_mode", "mixture_weights"]
