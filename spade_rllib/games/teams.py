"""Teams of a multi-agent env: who plays with whom, from the config, the env, or the mode.

`resolve_teams(agents, teams=None, mode="auto", env=None) -> Teams`:

* ``mode: cooperative``: every agent in one team (the learner plays them all; no winner).
* ``mode: free_for_all``: every agent its own team.
* ``mode: auto`` (default): the config's ``env.teams`` when given, else the env's ``team_of(agent)``
  (PettingZoo env or its ``unwrapped``), else every agent its own team.

``env.teams`` is a mapping ``{team name: [agent, ...]}`` or a dotted path ``"pkg.mod:fn"`` /
``"pkg.mod.fn"`` to a function ``agent -> team`` (any hashable; teams are ordered by first agent).
Every agent of the env must be in exactly one team; a `TeamError` (one line, with a did-you-mean)
says which is not. Team i is labelled ``team_letter(i)`` (A, B, ..., Z, AA, AB, ...) wherever a
winner is reported; `Teams.names` keeps the config's names for the console.

Pure Python: no Ray, no torch.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from spade_rllib.core.outcome import team_index, team_letter
from spade_rllib.core.validation import did_you_mean

MODES = ("auto", "free_for_all", "cooperative")


class TeamError(ValueError):
    """A team assignment that does not cover the env's agents exactly once."""


@dataclass(frozen=True)
class Teams:
    """Resolved teams: `members[i]` the agents of team i, `names[i]` its name (config key or letter)."""

    members: tuple[tuple[str, ...], ...]
    names: tuple[str, ...]
    cooperative: bool = False
    """One team of several agents (mode cooperative, or a config / env that puts every agent together)."""


def _import_function(path: str, key: str) -> Callable[[str], Any]:
    module, sep, attr = path.partition(":")
    if not sep:
        module, _, attr = path.rpartition(".")
    if not module or not attr:
        raise TeamError(f"{key} = {path!r}: expected a mapping {{team: [agents]}} or a function path 'pkg.mod:fn'")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise TeamError(f"{key} = {path!r}: cannot import it ({e.__class__.__name__}: {e})") from e
    if not callable(fn):
        raise TeamError(f"{key} = {path!r}: not callable; expected a function agent -> team")
    return fn


def _hint(name: str, agents: Sequence[str]) -> str:
    return did_you_mean(name, agents)


def _group(agents: Sequence[str], team_of: Callable[[str], Any], key: str) -> tuple[list, list]:
    by_team: dict[Any, list[str]] = {}
    for a in agents:
        try:
            t = team_of(a)
        except Exception as e:  # the user's or env's function: say which agent it failed on
            raise TeamError(f"{key}: team_of({a!r}) raised {e.__class__.__name__}: {' '.join(str(e).split())}") from e
        by_team.setdefault(t, []).append(a)
    keys = list(by_team)
    if all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        keys.sort()  # integer teams (the env's team_of): index order
    return [tuple(by_team[k]) for k in keys], keys


def _from_mapping(agents: Sequence[str], teams: Mapping[Any, Any], key: str) -> tuple[list, list]:
    seen: dict[str, str] = {}
    members, names = [], []
    for name, group in teams.items():
        if isinstance(group, str) or not isinstance(group, (list, tuple)):
            raise TeamError(f"{key}.{name} = {group!r}: expected a list of agent ids")
        if not group:
            raise TeamError(f"{key}.{name} is empty; every team needs at least one agent")
        for a in group:
            a = str(a)
            if a not in agents:
                raise TeamError(f"{key}.{name}: unknown agent {a!r}{_hint(a, agents)}; the env's agents: {list(agents)}")
            if a in seen:
                raise TeamError(f"{key}: agent {a!r} is in two teams ({seen[a]!r} and {str(name)!r}); allowed: one team per agent")
            seen[a] = str(name)
        members.append(tuple(str(a) for a in group))
        names.append(str(name))
    missing = [a for a in agents if a not in seen]
    if missing:
        raise TeamError(f"{key}: agent(s) {missing} are in no team; every agent of the env needs one "
                        f"(or use env.mode: free_for_all / cooperative)")
    return members, names


def resolve_teams(agents: Sequence[str], teams: Any = None, mode: str = "auto", env: Any = None,
                  key: str = "env.teams") -> Teams:
    """The teams of an env with these agents (see the module docstring); `TeamError` when bad."""
    agents = [str(a) for a in agents]
    if mode not in MODES:
        raise TeamError(f"env.mode = {mode!r} is not valid{did_you_mean(mode, MODES)}; allowed: {', '.join(MODES)}")
    if mode == "cooperative":
        return Teams((tuple(agents),), ("team",), cooperative=len(agents) > 1)
    if mode == "free_for_all" or (teams is None and env is None):
        return Teams(tuple((a,) for a in agents), tuple(team_letter(t) for t in range(len(agents))))
    if isinstance(teams, Mapping):
        members, names = _from_mapping(agents, teams, key)
    elif isinstance(teams, str) and teams:
        members, keys = _group(agents, _import_function(teams, key), key)
        names = [str(k) for k in keys]
    elif teams is not None:
        raise TeamError(f"{key} = {teams!r}: expected a mapping {{team: [agents]}} or a function path 'pkg.mod:fn'")
    else:
        team_of = getattr(env, "team_of", None) or getattr(getattr(env, "unwrapped", None), "team_of", None)
        if team_of is None:
            return Teams(tuple((a,) for a in agents), tuple(team_letter(t) for t in range(len(agents))))
        members, keys = _group(agents, team_of, "the env's team_of")
        names = [team_letter(t) for t in range(len(members))]
    return Teams(tuple(members), tuple(names), cooperative=len(members) == 1 and len(agents) > 1)


__all__ = ["MODES", "TeamError", "Teams", "resolve_teams", "team_index", "team_letter"]
