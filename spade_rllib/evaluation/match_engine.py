"""The match engine: one game between two seats, through the game-loop adapter (`spade_rllib.games.adapter`).

Seat 0 is team 0 of the `Game` (level games: team A = `player_0`/`a_*`; a turn-based PettingZoo game
`possible_agents[0]`, who moves first), seat 1 team 1; every agent of a team is driven by its seat's
player. In a role game (``setup["roles"]``: {agent: role}, two roles) seat k is the k-th role instead:
its player drives every agent of that role, and a seat's return is its agents' mean. A game is a pure function of (players, level, seed): the env is reset with `seed`, bots are
re-seeded from it and sampling players draw from a per-seat generator derived from it. So any game
can be replayed later, with rendering on.

Every env the adapter builds plays here, by one loop (`play_game`) over `Game.reset` / `Game.step`:
the catalog's games (level games `MazeRace-v0`, `CaptureTheFlag-v0`: the winner and reason come from
the final info; `connect_four_v3`) and any two-team env an id names (`spade_rllib.games.env_ids`): the
seat with the higher episode return wins. Illegal moves (outside the action mask) are refused. A
game of the catalog takes its board renderer and action names from its `GameSpec`; another env is
shown by its own `render()` (``ansi`` transcripts, ``rgb_array`` frames) where it has that mode.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from spade_rllib.evaluation.ctf_reasons import CtfWatch, is_ctf
from spade_rllib.evaluation.players import Player
from spade_rllib.games import find_game
from spade_rllib.games.catalog import recorded_game_kwargs
from spade_rllib.games.adapter import AECGame, Game, make_game_factory, wrap_env
from spade_rllib.games.roles import role_names

DRAW = -1
"""`GameResult.winner_seat` of a draw."""
SAFETY_STEP_LIMIT = 100_000
"""A game that runs this long is an env bug, not a result."""


@dataclass(frozen=True)
class LevelEntry:
    """One level of the evaluation: an id for the tables, the level (None: the env's only board)."""

    level_id: str
    level: Any = None
    source: str = ""
    """"heldout", "dir", "generated" or "builtin"."""
    difficulty: float | None = None
    size: str = ""
    """"HxW" of level-game levels."""


@dataclass(frozen=True)
class GameSpec:
    """One scheduled game: who sits where, on which level, with which seed."""

    index: int
    seat0: str
    seat1: str
    level_index: int
    seed: int


@dataclass(frozen=True)
class GameResult:
    index: int
    seat0: str
    seat1: str
    level_id: str
    seed: int
    winner_seat: int
    """0, 1, or DRAW (-1)."""
    reason: str
    length: int
    """Env steps (level games) or moves (connect_four)."""
    why_seat0: str = ""
    why_seat1: str = ""
    """CaptureTheFlag: why each seat did not win ("win" for the winner; `ctf_reasons.REASONS`); "" elsewhere."""

    def why(self, player: str) -> str:
        """`player`'s outcome reason (see `why_seat0`)."""
        return self.why_seat0 if player == self.seat0 else self.why_seat1

    def score(self, player: str) -> float:
        """1 win, 0.5 draw, 0 loss for `player` (who must be in the game)."""
        if self.winner_seat == DRAW:
            return 0.5
        seat = 0 if player == self.seat0 else 1
        return 1.0 if seat == self.winner_seat else 0.0

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GameRecord:
    """A game's result plus what a replay needs (filled when `record=True`)."""

    result: GameResult
    actions: list[Any] = field(default_factory=list)
    """Level games: one {agent: action} per step. connect_four: (agent, action) per move."""
    frames: list[np.ndarray] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    """One line per frame: step, captures and the flag carrier where the game has them."""
    texts: list[str] = field(default_factory=list)


def frame_caption(env) -> str:
    """'step 12  A 0 - B 1  carrier: A' from a level game's state (what a GIF frame cannot say)."""
    base = env.unwrapped
    parts = [f"step {getattr(base, 'step_count', '?')}"]
    captures = getattr(base, "captures", None)
    if isinstance(captures, (list, tuple)) and len(captures) == 2:
        parts.append(f"captures A {captures[0]} - B {captures[1]}")
    carrying = getattr(base, "carrying", None)
    if callable(carrying) and hasattr(base, "positions"):
        carriers = sorted("AB"[base.team_of(a)] for a in base.positions if carrying(a))
        parts.append("carrier: " + (", ".join(carriers) if carriers else "none"))
    return "  ".join(parts)


def seat_rngs(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    children = np.random.SeedSequence(int(seed)).spawn(2)
    return np.random.default_rng(children[0]), np.random.default_rng(children[1])


class MatchError(ValueError):
    """An env the match engine cannot play (not two teams); one-line message."""


def make_game_env(env_id: str, level: Any = None, render_mode: str | None = None, setup: dict | None = None) -> Game:
    """A fresh `Game` of `env_id` playing `level` (level games), its env built with `render_mode` when
    the env has that mode (None otherwise: `Game.raw_env.render_mode` says which it got). `setup`: how
    the run built an env of another package (`checkpoint_env_setup`: env kwargs, teams, mode, api)."""
    spec = find_game(env_id)
    if spec is not None:
        # level games render both modes; connect_four's text board is the catalog's renderer
        mode = render_mode if spec.is_level_game or render_mode == "rgb_array" else None
        kwargs: dict[str, Any] = {**recorded_game_kwargs(setup), "render_mode": mode}  # the run's rules and obs
        if level is not None and spec.is_level_game:
            kwargs["level"] = level
        return wrap_env(spec.make_env(**kwargs), is_level_game=spec.is_level_game)
    setup = dict(setup or {})
    setup.pop("roles", None)  # who plays which agent, not how the env is built
    kwargs = dict(setup.pop("kwargs", None) or {})
    if render_mode is not None and render_mode in render_modes(env_id, {"kwargs": kwargs, **setup}):
        kwargs["render_mode"] = render_mode
    return make_game_factory(env_id, kwargs, **setup)()


def render_modes(env_id: str, setup: dict | None = None) -> tuple[str, ...]:
    """The render modes an env declares (its `metadata["render_modes"]`)."""
    spec = find_game(env_id)
    if spec is not None:
        return ("ansi", "rgb_array")
    env = make_game_env(env_id, setup=setup).raw_env
    modes = (getattr(env, "metadata", None) or {}).get("render_modes") or ()
    close = getattr(env, "close", None)
    if callable(close):
        close()
    return tuple(str(m) for m in modes)


def num_actions(env_id: str, setup: dict | None = None) -> int:
    return int(make_game_env(env_id, setup=setup).num_actions)


def check_two_teams(env_id: str, game: Game | None = None, setup: dict | None = None) -> Game:
    """The `Game` of `env_id` when it has exactly two teams (the two seats), or (``setup["roles"]``) two
    roles; `MatchError` otherwise."""
    game = game if game is not None else make_game_env(env_id, setup=setup)
    roles = (setup or {}).get("roles")
    if roles:
        names = role_names(roles)
        if len(names) != 2:
            raise MatchError(f"env {env_id!r} has roles {', '.join(names)}; evaluation plays games of two roles (two seats)")
        return game
    if len(game.teams) != 2:
        raise MatchError(f"env {env_id!r} has {len(game.teams)} teams ({', '.join('+'.join(t) for t in game.teams)}); "
                         "evaluation plays games of two teams (two seats)")
    return game


# --------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------
def _outcome(game: Game, result, returns: list[float], spec) -> tuple[int, str]:
    """(winner seat or DRAW, reason): the final info's `winner` (level games), else the higher return."""
    info = result.info if isinstance(result.info, dict) else {}
    if "winner" in info:
        return {"A": 0, "B": 1}.get(info["winner"], DRAW), str(info.get("reason", ""))
    if game.is_level_game:  # no winner in the info: the sign of team A's last reward
        total = sum(r for a, r in result.rewards.items() if a in game.teams[0])
        return (0 if total > 0 else 1 if total < 0 else DRAW), "reward"
    decided, drawn = spec.result_reasons if spec is not None else ("higher return", "equal return")
    if returns[0] > returns[1]:
        return 0, decided
    if returns[1] > returns[0]:
        return 1, decided
    return DRAW, drawn


def seat_sides(game: Game, roles: dict | None = None) -> tuple[tuple[str, ...], ...]:
    """The agents of each seat: the game's two teams, or in a role game (`roles`: {agent: role}) the
    agents of each role, in `role_names` order (seat k plays the k-th role)."""
    if roles:
        return tuple(tuple(a for a in game.agents if roles[a] == r) for r in role_names(roles))
    return tuple(game.teams)


def play_game(env_id: str, players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env: Game | None = None,
              record: str | None = None, actions: list | None = None, setup: dict | None = None) -> GameRecord:
    """Play (or, with `actions`, re-enact) one game. `env`: a `Game` of `env_id` to reuse between games
    (not when recording). `record`: None, "rgb_array" (frames) or "ansi" (a text board per step).
    `setup`: see `make_game_env`; with ``setup["roles"]`` ({agent: role}) seat k's player plays every
    agent of the k-th role, and a seat's return is the mean of its agents' (as training scores roles)."""
    game_spec = find_game(env_id)
    if env is None or record is not None:
        env = make_game_env(env_id, entry.level, render_mode=record, setup=setup)
    game = check_two_teams(env_id, env, setup=setup)
    roles = (setup or {}).get("roles") or None
    sides = seat_sides(game, roles)
    seat_of = {agent: seat for seat, team in enumerate(sides) for agent in team}
    turn_based = isinstance(game, AECGame)
    options = {"level": entry.level} if entry.level is not None and game.is_level_game else None
    obs = game.reset(seed=int(spec.seed), options=options)
    rngs = seat_rngs(spec.seed)
    for seat, player in enumerate(players):
        player.new_game(int(spec.seed) * 2 + seat)
    out = GameRecord(result=None)  # type: ignore[arg-type]
    names = {0: spec.seat0, 1: spec.seat1}
    action_name = game_spec.action_name if game_spec is not None else str
    render_ascii = game_spec.render_ascii if game_spec is not None else None
    caption = game.is_level_game
    if record is not None:
        if turn_based:
            first = "X" if game_spec is not None and game_spec.render_ascii is not None else "+".join(sides[0])
            second = "O" if first == "X" else "+".join(sides[1])
            header = f"seed {spec.seed}: {first} = {spec.seat0}, {second} = {spec.seat1}"
        else:
            where = f"level {entry.level_id}, " if game.is_level_game else ""
            first, second = role_names(roles) if roles else ("A", "B")
            header = f"{where}seed {spec.seed}: {first} = {spec.seat0}, {second} = {spec.seat1}"
        _capture(out, game.raw_env, record, render_ascii, header=header, caption=caption)
    watch = CtfWatch(game.raw_env) if is_ctf(game.raw_env) and not roles else None
    returns = [0.0, 0.0]
    step = 0
    while True:
        if actions is not None:
            chosen = {a: x for a, x in (actions[step].items() if isinstance(actions[step], dict) else [actions[step]])}
        else:
            chosen = {}
            for agent, o in obs.items():
                seat = seat_of[agent]
                mask = o[-game.mask_size:] if game.mask_size else None
                action = players[seat].act(game.raw_env, agent, o, mask, rngs[seat])
                chosen[agent] = action if game.continuous else int(action)  # Box: a float vector
        for agent, action in chosen.items():
            if game.mask_size and obs[agent][game.obs_size - game.mask_size + int(action)] <= 0.5:
                raise RuntimeError(f"{names[seat_of[agent]]} chose illegal {action_name(action)} in game {spec.index}")
        mover = next(iter(chosen.items())) if turn_based else None  # (agent, action): one mover per turn
        out.actions.append(mover if turn_based else chosen)
        result = game.step(chosen)
        if watch is not None:
            watch.step()
        for agent, r in result.rewards.items():
            if agent in seat_of:
                returns[seat_of[agent]] += float(r)
        step += 1
        if record is not None:
            if turn_based:
                text = f"move {step}: {names[seat_of[mover[0]]]} plays {action_name(mover[1])}"
            else:
                text = f"step {step}: " + ", ".join(f"{a} ({names[seat_of[a]]}) {action_name(x)}" for a, x in chosen.items())
            _capture(out, game.raw_env, record, render_ascii, header=text, caption=caption)
        if result.done:
            break
        obs = result.obs
        if step > SAFETY_STEP_LIMIT:
            raise RuntimeError(f"game {spec.index} did not end after {SAFETY_STEP_LIMIT} steps")
    if roles:  # a role's return is its agents' mean, as training scores a role game's episode
        returns = [total / len(side) for total, side in zip(returns, sides)]
    winner, reason = _outcome(game, result, returns, game_spec)
    length = int(result.info.get("episode_length", step)) if isinstance(result.info, dict) else step
    why = watch.why(None if winner == DRAW else winner) if watch is not None else ("", "")
    out.result = GameResult(spec.index, spec.seat0, spec.seat1, entry.level_id, int(spec.seed), winner, reason, length,
                            *why)
    if record is not None:
        if turn_based:
            _capture_text(out, f"result: {_winner_text(out.result)} after {length} moves")
        else:
            _capture_text(out, f"result: {_winner_text(out.result)} ({reason}) after {length} steps")
    return out


def _winner_text(result: GameResult) -> str:
    if result.winner_seat == DRAW:
        return "draw"
    return f"{result.seat0 if result.winner_seat == 0 else result.seat1} wins"


def _capture_text(out: GameRecord, text: str) -> None:
    out.texts.append(text)


def _capture(out: GameRecord, env, mode: str, render_ascii, header: str, caption: bool = True) -> None:
    if mode == "rgb_array":
        frame = env.render() if getattr(env, "render_mode", mode) == mode else None
        if frame is not None:
            out.frames.append(np.asarray(frame, dtype=np.uint8))
            out.captions.append(frame_caption(env) if caption else "")
        return
    if render_ascii is not None:
        board = render_ascii(env)
    elif getattr(env, "render_mode", None) == "ansi":
        board = str(env.render()).rstrip("\n")
    else:
        board = ""
    out.texts.append(f"{header}\n{board}" if board else header)
