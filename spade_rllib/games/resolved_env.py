"""`ResolvedEnv`: an env id read once (`spade_rllib.games.env_ids`), the record every layer takes.

`run_config.parse_config` builds it once per run config (`RunConfig.resolved_env`; `run_config.resolved_env_of(cfg)`
reads it) and the checks before Ray, the game-loop adapter (`make_game_factory`, `game_factory_for`,
`roles.env_roles`) and the trainer's glue (`describe_env`, `env_kwargs_for`, `build_algo_config`, the env
runner) read its kind, catalog spec and resolver entry instead of parsing and resolving the id again.
Those functions still take a plain id string too (`as_resolved`).

A record is immutable; it holds what the id names in this process (imported classes and factories), so it
pickles as its id and resolves again where it is unpickled.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Union

from spade_rllib.games.catalog import GameSpec, find_game
from spade_rllib.games.env_ids import LEVEL_KIND, EnvEntry, EnvForm, EnvIdError, EnvKind, parse_env_id, resolve_env


@dataclass(frozen=True)
class ResolvedEnv:
    """What an env id names: its family, its catalog game, how to build it."""

    id: str
    """The id as the config spells it (messages name this)."""
    kind: EnvKind
    """"level" | "pettingzoo" | "gymnasium" (`ids.env_kind`)."""
    form: Optional[EnvForm] = None
    """How the id is spelled (`ids.EnvRef.form`); None when it does not parse (the error comes on use)."""
    spec: Optional[GameSpec] = None
    """The catalog's game (None for an env of another package)."""
    entry: Optional[EnvEntry] = None
    """The resolver's answer (`ids.resolve_env`): how to build the raw env; None until resolved."""
    imported: bool = False
    """Whether `kind` was read with imports (a "pkg.mod:Name" factory imported to tell Gymnasium from PettingZoo)."""

    @property
    def is_level_game(self) -> bool:
        return self.kind == LEVEL_KIND

    def resolved_entry(self) -> EnvEntry:
        """`entry`, resolved now when the record has none (`EnvIdError` for an id that names nothing)."""
        return self.entry if self.entry is not None else resolve_env(self.id)

    def with_entry(self) -> "ResolvedEnv":
        """This record with `entry` filled in (`EnvIdError` for an id that names nothing)."""
        if self.entry is not None:
            return self
        entry = resolve_env(self.id)
        return dataclasses.replace(self, entry=entry, kind=entry.kind, imported=True)

    def __reduce__(self):  # the entry holds this process's imports: rebuild from the id
        return (read_env_id, (self.id, self.imported, False))

    def __copy__(self) -> "ResolvedEnv":
        return self

    def __deepcopy__(self, memo: Any) -> "ResolvedEnv":
        return self


def read_env_id(env_id: str, imports: bool = True, strict: bool = True) -> ResolvedEnv:
    """Parse `env_id` once and say its family, as `ids.env_kind(env_id, resolve=imports)` does: a catalog or
    registry id without importing its env, a "pkg.mod:name" path imported when `imports` (to tell a Gymnasium
    env from a PettingZoo one; a path that does not import keeps kind "pettingzoo", its error comes from
    `with_entry`). `strict`: an id that does not parse is an `EnvIdError`; else it reads as kind "gymnasium"."""
    try:
        ref = parse_env_id(env_id)
    except EnvIdError:
        if strict:
            raise
        return ResolvedEnv(str(env_id), "gymnasium", imported=imports)
    form = ref.form
    if form == "catalog":
        spec = find_game(ref.text)
        return ResolvedEnv(env_id, LEVEL_KIND if spec.is_level_game else "pettingzoo", form, spec, imported=True)
    if form == "registry":
        return ResolvedEnv(env_id, "pettingzoo", form, imported=True)
    if form in ("module", "factory"):
        if imports:
            try:
                entry = resolve_env(env_id)
            except EnvIdError:
                return ResolvedEnv(env_id, "pettingzoo", form, imported=True)
            return ResolvedEnv(env_id, entry.kind, form, entry=entry, imported=True)
        return ResolvedEnv(env_id, "pettingzoo", form)
    return ResolvedEnv(env_id, "gymnasium", form, imported=True)


def resolve_env_record(env_id: str) -> ResolvedEnv:
    """`read_env_id` with the entry resolved: `EnvIdError` (one line) when the id names nothing."""
    return read_env_id(env_id).with_entry()


def as_resolved(env: Union[str, ResolvedEnv]) -> ResolvedEnv:
    """The record itself, or an id read now (`read_env_id(strict=False)`: a bad id fails where it is built)."""
    return env if isinstance(env, ResolvedEnv) else read_env_id(env, strict=False)


__all__ = ["ResolvedEnv", "as_resolved", "read_env_id", "resolve_env_record"]
