"""Why a CaptureTheFlag game ended as it did, per team: the outcome reasons of the evaluation.

`CtfWatch(env)` follows one game from the env's public state (flag carriers, positions, halves, respawn
waits, captures, stalemates), read after every step, and `why(winner)` names, for each team, why it
did not win (`WIN` for the winner). The labels (`REASONS`):

* a loss: where the loser's players were when the winner took its flag for the deciding capture (the
  last pickup of it): ``flag_taken_away`` (none stood free in its own half), ``flag_taken_respawning``
  (none free there, at least one waiting to respawn after a tag), ``flag_taken_in_half`` (one stood free
  in its half, farther than `GUARD_STEPS` from its base), ``flag_taken_past_guard`` (one stood free
  within `GUARD_STEPS` path steps of its base: a guard that did not stop the thief);
* a draw (timeout): ``stalemate`` (both flags were carried at once until the stalemate rule sent
  them home, at least once), else ``tagged_carrying`` (the team carried the enemy flag and was tagged
  with it), else ``never_took_flag`` (it never picked up the enemy flag), else ``carried_no_score``.

Pure Python on the env's state; the match engine calls it (`match_engine.play_game`).
"""
from __future__ import annotations

from typing import Any, Optional

WIN = "win"
FLAG_TAKEN_AWAY = "flag_taken_away"
FLAG_TAKEN_RESPAWNING = "flag_taken_respawning"
FLAG_TAKEN_IN_HALF = "flag_taken_in_half"
FLAG_TAKEN_PAST_GUARD = "flag_taken_past_guard"
GUARD_STEPS = 3
"""A player this many path steps from its own base or nearer guards it."""
STALEMATE = "stalemate"
TAGGED_CARRYING = "tagged_carrying"
NEVER_TOOK_FLAG = "never_took_flag"
CARRIED_NO_SCORE = "carried_no_score"
REASONS = {
    FLAG_TAKEN_AWAY: "lost: its flag was taken while none of its players stood in its own half",
    FLAG_TAKEN_RESPAWNING: "lost: its flag was taken while none of its players stood free in its half, one waiting to respawn",
    FLAG_TAKEN_IN_HALF: "lost: its flag was taken while a player of its team stood in its own half, away from its base",
    FLAG_TAKEN_PAST_GUARD: f"lost: its flag was taken past a player of its team within {GUARD_STEPS} steps of its base",
    STALEMATE: "draw: both flags were carried at once and sent home by the stalemate rule",
    TAGGED_CARRYING: "draw: it carried the enemy flag and was tagged with it",
    NEVER_TOOK_FLAG: "draw: it never picked up the enemy flag",
    CARRIED_NO_SCORE: "draw: it carried the enemy flag but did not score",
}
"""Label -> what it means, for the reports (losses first, then draws)."""
_DEFENCE = {"away": FLAG_TAKEN_AWAY, "respawning": FLAG_TAKEN_RESPAWNING, "in_half": FLAG_TAKEN_IN_HALF,
            "guarded": FLAG_TAKEN_PAST_GUARD}


def is_ctf(env: Any) -> bool:
    """True for a CaptureTheFlag env (the game these reasons describe)."""
    from spade_rllib.envs.ctf import CaptureTheFlag

    return isinstance(getattr(env, "unwrapped", env), CaptureTheFlag)


class CtfWatch:
    """Follows one CaptureTheFlag game; call `step()` after every env step, `why(winner)` at the end."""

    def __init__(self, env: Any):
        self.env = getattr(env, "unwrapped", env)
        self.carrier = list(self.env.carrier)
        self.captures = list(self.env.captures)
        self.stalemates = int(self.env.stalemates)
        self.flag_taken: list[Optional[str]] = [None, None]
        """Per team: where its players were when its flag was last picked up (a `_DEFENCE` key)."""
        self.pickups = [0, 0]
        """Per team: enemy flags it picked up."""
        self.tagged_carrying = [0, 0]
        """Per team: times one of its players was tagged carrying the enemy flag."""

    def _defence(self, team: int) -> str:
        e = self.env
        half = e.level.half_rows()
        home = e.level.distance_to_base(team)
        players = [a for a in e.possible_agents if e.team_of(a) == team]
        free = [e.positions[a] for a in players if not e.frozen[a]]
        if any(0 <= home[p] <= GUARD_STEPS for p in free):
            return "guarded"
        if any(half[p[0]][p[1]] == team for p in free):
            return "in_half"
        return "respawning" if len(free) < len(players) else "away"

    def step(self) -> None:
        """Reads the state after one env step: pickups of each flag and carriers tagged with it."""
        e = self.env
        scored = [e.captures[t] > self.captures[t] for t in (0, 1)]
        stalemate = e.stalemates > self.stalemates
        for flag in (0, 1):  # team `flag`'s flag, carried by the other team
            before, now = self.carrier[flag], e.carrier[flag]
            if before is not None and before != now and not scored[1 - flag] and not stalemate:
                self.tagged_carrying[1 - flag] += 1  # dropped without a capture or a stalemate: tagged
            if now is not None and now != before:
                self.pickups[1 - flag] += 1
                self.flag_taken[flag] = self._defence(flag)
        self.carrier, self.captures, self.stalemates = list(e.carrier), list(e.captures), int(e.stalemates)

    def why(self, winner: Optional[int]) -> tuple[str, str]:
        """Per team, why it did not win (`WIN` for the winner); `winner` is 0, 1 or None (a draw)."""
        return tuple(self._why(t, winner) for t in (0, 1))  # type: ignore[return-value]

    def _why(self, team: int, winner: Optional[int]) -> str:
        if winner == team:
            return WIN
        if winner is not None:
            return _DEFENCE.get(self.flag_taken[team] or "", FLAG_TAKEN_IN_HALF)
        if self.stalemates:
            return STALEMATE
        if self.tagged_carrying[team]:
            return TAGGED_CARRYING
        return CARRIED_NO_SCORE if self.pickups[team] else NEVER_TOOK_FLAG
