"""The game catalog: one `GameSpec` per game says everything the package needs to know about it.

A game is registered once (`register(spec)`); every other module asks the catalog (`game(env_id)`,
`level_game_ids()`, `make_env`, `make_bot`, `heldout_dir`, ...) instead of keeping a table keyed by
env id. Adding a game = its env module plus one `GameSpec` here (or `register` from the caller's
own code, as a test does with a toy game).

Shipped: the level games ``CaptureTheFlag-v0`` and ``MazeRace-v0`` (PettingZoo ``ParallelEnv``s on
ASCII / generated levels, simultaneous moves, scripted bots, held-out maps) and ``connect_four_v3``
(PettingZoo classic AEC, alternating moves, scripted bots; run configs name it
``pettingzoo.classic:connect_four_v3``), and the OpenSpiel games ``kuhn_poker``, ``leduc_poker`` and
``openspiel:<name>`` (any two-player zero-sum turn-based OpenSpiel game; `spade_rllib.envs.openspiel_env`,
AEC, alternating moves; they need the optional ``open_spiel`` package, `GameSpec.check` refuses in one line).

Pure core: numpy, gymnasium, pettingzoo and the package's `envs/` and `bots/`; no Ray, no torch.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Optional

import numpy as np

from spade_rllib.bots import c4_bots, ctf_bots, race_bots
from spade_rllib.envs import CaptureTheFlag, Level, MazeRace
from spade_rllib.envs.ctf import TRAINING_SIGNALS as CTF_TRAINING_SIGNALS
from spade_rllib.envs.level_game import ACTION_NAMES, LevelGame
from spade_rllib.envs.openspiel_env import OPENSPIEL_PREFIX, OpenSpielEnv, load_game, require_pyspiel
from spade_rllib.core.outcome import BOT_PREFIX, MIRROR
from spade_rllib.core.validation import did_you_mean

__all__ = ["GameSpec", "Turns", "register", "unregister", "game", "find_game", "game_ids", "level_game_ids",
           "make_env", "make_bot", "bot_names", "default_bot_names", "heldout_dir", "heldout_opponents",
           "level_game_for", "level_game_spec", "maze_ascii", "connect_four_ascii", "CTF_ID", "MAZERACE_ID",
           "CONNECT_FOUR_ID", "KUHN_ID", "LEDUC_ID", "openspiel_spec"]

Turns = Literal["simultaneous", "alternating"]
LEVELS_DIR = Path(__file__).resolve().parent.parent / "levels"


@dataclass(frozen=True)
class GameSpec:
    """What a game is. `id` is its canonical name (what checkpoints, policies and evaluation use)."""

    id: str
    make_env: Callable[..., Any]
    """`(**kwargs) -> env`: a PettingZoo ParallelEnv (simultaneous) or AEC env (alternating)."""
    turns: Turns
    aliases: tuple[str, ...] = ()
    """Other spellings that mean this game (e.g. the import path of a PettingZoo game)."""
    level_generator: Optional[Callable[[Any, int], Level]] = None
    """`(knobs, seed) -> Level` of a level game (one that takes ``reset(options={"level": ...})``); None otherwise."""
    bots: Mapping[str, type] = field(default_factory=dict)
    """Scripted players: name -> class, `cls(seed).act(env, agent) -> int`."""
    default_bots: tuple[str, ...] = ()
    """Bots played when none are named (evaluation's default pool); empty = every bot. Slow bots stay out
    of it and are played when named (`bot:<name>`, `evaluate --bots`)."""
    heldout_dir: Optional[Path] = None
    """The shipped held-out maps (level games)."""
    heldout_opponents: tuple[str, ...] = ()
    """Bot names the held-out evaluation plays (main also plays itself); empty = `default_bots`."""
    render_ascii: Optional[Callable[[Any], str]] = None
    """`env -> str`: the board as text, for replays and `play`."""
    action_names: tuple[str, ...] = ()
    """Name of each action index, for replays."""
    level_class: Optional[type] = None
    """The `LevelGame` subclass of a level game (its `obs_layout`, `CTF_LEVELS`)."""
    result_reasons: tuple[str, str] = ("higher return", "equal return")
    """The reason of a decided and of a drawn game, for a game whose env gives none (evaluation tables)."""
    check: Optional[Callable[[], None]] = None
    """`() -> None`, raising ValueError (one line) when the game cannot be played here (a missing optional
    dependency); `ids.resolve_env` calls it, so configs are refused before Ray starts."""
    openspiel_game: Optional[str] = None
    """The OpenSpiel game name of an OpenSpiel game (exact exploitability, `spade_rllib.games.openspiel_eval`)."""

    def __post_init__(self) -> None:
        unknown = [name for name in self.default_bots if name not in self.bots]
        if unknown:
            raise ValueError(f"game {self.id!r}: default_bots {unknown} are not among its bots {list(self.bots)}")

    @property
    def is_level_game(self) -> bool:
        return self.level_generator is not None

    def action_name(self, action: int) -> str:
        a = int(action)
        return self.action_names[a] if 0 <= a < len(self.action_names) else str(a)


_CATALOG: dict[str, GameSpec] = {}


def register(spec: GameSpec) -> GameSpec:
    """Add a game; refuses an id or alias that is already taken."""
    for name in (spec.id, *spec.aliases):
        if name in _CATALOG or any(name in s.aliases for s in _CATALOG.values()):
            raise ValueError(f"game id {name!r} is already registered")
    _CATALOG[spec.id] = spec
    return spec


def unregister(env_id: str) -> None:
    """Remove a game (for tests that register a toy game)."""
    _CATALOG.pop(env_id, None)


def find_game(env_id: Any) -> Optional[GameSpec]:
    """The game `env_id` names (its id or an alias, exactly), or None."""
    if env_id is None:
        return None
    text = str(env_id)
    if text in _CATALOG:
        return _CATALOG[text]
    for spec in _CATALOG.values():
        if text in spec.aliases:
            return spec
    if text.startswith(OPENSPIEL_PREFIX) and len(text) > len(OPENSPIEL_PREFIX):
        return openspiel_spec(text[len(OPENSPIEL_PREFIX):])  # any OpenSpiel game by name (checked when resolved)
    return None


def game(env_id: Any) -> GameSpec:
    """The game `env_id` names; a one-line ValueError with a did-you-mean otherwise."""
    spec = find_game(env_id)
    if spec is None:
        names = [n for s in _CATALOG.values() for n in (s.id, *s.aliases)]
        raise ValueError(f"unknown env id {env_id!r}{did_you_mean(env_id, names)}; registered ids: {sorted(_CATALOG)}")
    return spec


def game_ids() -> tuple[str, ...]:
    return tuple(_CATALOG)


def level_game_ids() -> tuple[str, ...]:
    """The level games (levels, curricula, held-out maps)."""
    return tuple(i for i, s in _CATALOG.items() if s.is_level_game)


def make_env(env_id: str, **kwargs: Any) -> Any:
    """A fresh env of the game `env_id`."""
    return game(env_id).make_env(**kwargs)


LEVEL_CHOICE_KWARGS = frozenset({"level", "difficulty", "knobs", "family", "seed", "render_mode", "agents_per_team"})
"""A level game's constructor arguments that pick the level or the rendering: an evaluation sets them itself."""


TRAINING_ONLY_KWARGS = frozenset(CTF_TRAINING_SIGNALS)
"""Constructor arguments that only shape training (auxiliary rewards): every env an evaluation builds goes
without them, so no score or return reported from evaluation carries them."""


def evaluation_kwargs(kwargs: Mapping[str, Any] | None) -> dict:
    """`kwargs` without `TRAINING_ONLY_KWARGS`."""
    return {k: v for k, v in dict(kwargs or {}).items() if k not in TRAINING_ONLY_KWARGS}


def recorded_game_kwargs(setup: Any) -> dict:
    """A catalog game's constructor arguments recorded with a run (`setup["kwargs"]`: its env.kwargs) that
    evaluation and play keep: its rules and observation (view radius, trail, memory map, step limit, ...),
    not the level choice (`LEVEL_CHOICE_KWARGS`) nor training-only signals (`TRAINING_ONLY_KWARGS`)."""
    kwargs = (setup or {}).get("kwargs") if isinstance(setup, dict) else None
    return {k: v for k, v in evaluation_kwargs(kwargs).items() if k not in LEVEL_CHOICE_KWARGS}


def bot_names(env_id: str) -> tuple[str, ...]:
    """The scripted bots of one game (empty for a game without bots or an unknown id)."""
    spec = find_game(env_id)
    return tuple(spec.bots) if spec is not None else ()


def default_bot_names(env_id: str) -> tuple[str, ...]:
    """The bots played when none are named: the game's `default_bots`, else every bot (empty for a game
    without bots or an unknown id)."""
    spec = find_game(env_id)
    return (spec.default_bots or tuple(spec.bots)) if spec is not None else ()


def make_bot(name: str, seed: int | None = None, *, env_id: str):
    """A scripted player of the game `env_id` by name; unknown names raise ValueError listing the valid ones."""
    bots = game(env_id).bots
    if name not in bots:
        raise ValueError(f"unknown bot {name!r} for {env_id}{did_you_mean(name, bots)}; valid names: {list(bots)}")
    return bots[name](seed)


def heldout_dir(env_id: str) -> Path:
    """The shipped held-out map directory of a level game (ValueError for a game without one)."""
    spec = find_game(env_id)
    if spec is None or spec.heldout_dir is None:
        have = sorted(s.id for s in _CATALOG.values() if s.heldout_dir is not None)
        raise ValueError(f"no shipped held-out maps for env id {env_id!r}; games with a set: {have}")
    return spec.heldout_dir


def heldout_opponents(env_id: str) -> dict[str, str]:
    """Metric name -> opponent id of the held-out evaluation: the game's held-out bots, then "self" (mirror)."""
    spec = game(env_id)
    names = spec.heldout_opponents or spec.default_bots or tuple(spec.bots)
    return {**{name: f"{BOT_PREFIX}{name}" for name in names}, "self": MIRROR}


def level_game_for(level: Level) -> Optional[str]:
    """The level game whose maps look like `level` ('a'/'b' bases or an 'F' flag)."""
    for spec in _CATALOG.values():
        cls = spec.level_class
        if cls is not None and bool(getattr(cls, "CTF_LEVELS", False)) == bool(level.is_ctf):
            return spec.id
    return None


# ---------------------------------------------------------------------------------------------- renderers
def maze_ascii(env: Any) -> str:
    """A level game's board: its ansi render when it has one, else from its public state."""
    text = env.render() if getattr(env, "render_mode", None) == "ansi" else None
    if isinstance(text, str):
        return text.rstrip("\n")
    base = env.unwrapped
    grid = [list(row) for row in base.level.to_ascii().replace("A", ".").replace("B", ".").split("\n")]
    waiting = getattr(base, "stun", None) or getattr(base, "frozen", None) or {}  # MazeRace stun / CTF respawn wait
    for agent, (r, c) in base.positions.items():
        mark = "A" if base.team_of(agent) == 0 else "B"
        grid[r][c] = mark.lower() if waiting.get(agent, 0) else mark
    return "\n".join("".join(row) for row in grid)


def connect_four_ascii(env: Any) -> str:
    """The connect_four board: X = player_0 (seat 0), O = player_1, column numbers 0..6 below."""
    board = np.asarray(env.unwrapped.board).reshape(6, 7)
    glyph = {0: ".", 1: "X", 2: "O"}
    rows = [" ".join(glyph[int(v)] for v in row) for row in board]
    return "\n".join(rows + [" ".join(str(c) for c in range(7))])


# ---------------------------------------------------------------------------------------------- the games
def level_game_spec(cls: type, *, bots: Mapping[str, type] = {}, default_bots: tuple[str, ...] = (),
                    heldout: Optional[Path] = None, heldout_opponents: tuple[str, ...] = (),
                    aliases: tuple[str, ...] = ()) -> GameSpec:
    """The `GameSpec` of a `LevelGame` subclass (its id, generator and actions come from the class)."""
    assert issubclass(cls, LevelGame), cls
    return GameSpec(id=cls.metadata["name"], make_env=cls, turns="simultaneous", aliases=aliases,
                    level_generator=cls.generator, bots=dict(bots), default_bots=default_bots, heldout_dir=heldout,
                    heldout_opponents=heldout_opponents, render_ascii=maze_ascii, action_names=ACTION_NAMES,
                    level_class=cls)


def _connect_four(**kwargs: Any) -> Any:
    from pettingzoo.classic import connect_four_v3

    return connect_four_v3.env(**kwargs)


MAZERACE_ID = register(level_game_spec(MazeRace, bots=race_bots.BOTS, heldout=LEVELS_DIR / "heldout",
                                       heldout_opponents=("rusher", "rusher_tagger"))).id
CTF_ID = register(level_game_spec(CaptureTheFlag, bots=ctf_bots.BOTS, default_bots=ctf_bots.LADDER,
                                  heldout=LEVELS_DIR / "heldout_ctf")).id
CONNECT_FOUR_ID = register(GameSpec(
    id="connect_four_v3", make_env=_connect_four, turns="alternating",
    aliases=("pettingzoo.classic:connect_four_v3", "pettingzoo.classic.connect_four_v3:env"),
    bots=c4_bots.BOTS, default_bots=c4_bots.DEFAULT_BOTS, render_ascii=connect_four_ascii,
    action_names=tuple(f"column {c}" for c in range(7)), result_reasons=("four", "full"))).id


def openspiel_ascii(env: Any) -> str:
    """An OpenSpiel game's state as OpenSpiel prints it."""
    return str(env.unwrapped.state)


def openspiel_spec(name: str, *, game_id: Optional[str] = None, action_names: tuple[str, ...] = ()) -> GameSpec:
    """The `GameSpec` of the OpenSpiel game `name` (id ``openspiel:<name>`` unless `game_id`); building or
    resolving it refuses a missing pyspiel, an unknown name or an unsupported game in one line."""
    game_id = game_id or f"{OPENSPIEL_PREFIX}{name}"

    def check() -> None:
        require_pyspiel(f"env id {game_id!r}")
        load_game(name)

    return GameSpec(id=game_id, make_env=functools.partial(OpenSpielEnv, name), turns="alternating",
                    aliases=(f"{OPENSPIEL_PREFIX}{name}",) if game_id != f"{OPENSPIEL_PREFIX}{name}" else (),
                    render_ascii=openspiel_ascii, action_names=action_names,
                    result_reasons=("more chips", "equal chips"), check=check, openspiel_game=name)


KUHN_ID = register(openspiel_spec("kuhn_poker", game_id="kuhn_poker", action_names=("pass", "bet"))).id
LEDUC_ID = register(openspiel_spec("leduc_poker", game_id="leduc_poker", action_names=("fold", "call", "raise"))).id
