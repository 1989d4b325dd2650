"""Scripted reference players, one ladder per game; they act from the full env state.

``make_bot(name, seed=None, env_id="MazeRace-v0").act(env, agent) -> int``; deterministic given
``seed``. ``bot_names(env_id)`` lists a game's bots. Each game's bots live in a module of their own
(``race_bots``: MazeRace-v0; ``ctf_bots``: CaptureTheFlag-v0; ``c4_bots``: connect_four_v3). ``env_id``
may carry its module (``pettingzoo.classic:connect_four_v3``, as in a run config).
"""
from __future__ import annotations

import difflib

from . import c4_bots, ctf_bots, race_bots

__all__ = ["make_bot", "bot_names", "BOT_NAMES", "BOTS_BY_ENV", "BOT_PREFIX"]

BOT_PREFIX = "bot:"
"""Opponent ids ``bot:<name>`` name a scripted bot in configs, plans and evaluation."""

# env id -> {bot name: class}
BOTS_BY_ENV: dict[str, dict[str, type]] = {
    "MazeRace-v0": race_bots.BOTS,
    "CaptureTheFlag-v0": ctf_bots.BOTS,
    "connect_four_v3": c4_bots.BOTS,
}
BOT_NAMES = tuple(race_bots.BOTS)
"""MazeRace-v0's bots (kept for callers that predate other games)."""


def _game(env_id: str) -> str:
    """'pettingzoo.classic:connect_four_v3' (a run config's env.id) -> 'connect_four_v3'."""
    return str(env_id).rpartition(":")[2]


def bot_names(env_id: str = "MazeRace-v0") -> tuple[str, ...]:
    """The scripted bots of one game (empty for a game without bots)."""
    return tuple(BOTS_BY_ENV.get(_game(env_id), {}))


def make_bot(name: str, seed: int | None = None, env_id: str = "MazeRace-v0"):
    """A scripted player by name; unknown names raise ValueError listing the valid ones."""
    bots = BOTS_BY_ENV.get(_game(env_id), {})
    if name not in bots:
        close = difflib.get_close_matches(str(name), list(bots), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown bot {name!r} for {env_id}.{hint} Valid names: {list(bots)}")
    return bots[name](seed)
