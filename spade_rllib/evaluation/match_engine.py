"""The match engine: one game between two seats on the PettingZoo env itself (no RLlib stack).

Seat 0 is the first side (level games: team A = `player_0`/`a_*`; connect_four `player_0`, who moves
first), seat 1 the other. A game is a pure function of (players, level, seed): the env is reset with
`seed`, bots are re-seeded from it and sampling players draw from a per-seat generator derived from
it. So any game can be replayed later, with rendering on, from its `GameSpec` alone.

Supported envs: the level games `MazeRace-v0` and `CaptureTheFlag-v0` (parallel; simultaneous moves;
teams share their seat's player) and
`connect_four_v3` (AEC; turns; illegal moves masked).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from spade_rllib.env_ids import MAZERACE_ID, is_level_game, spade_env_ids
from spade_rllib.evaluation.players import Player

CONNECT_FOUR_ENV_ID = "connect_four_v3"
SUPPORTED_ENVS = (*spade_env_ids(), CONNECT_FOUR_ENV_ID)
DRAW = -1
"""`GameResult.winner_seat` of a draw."""
LEVEL_GAME_ACTION_NAMES = ("noop", "up", "down", "left", "right", "tag")
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


def make_game_env(env_id: str, level: Any = None, render_mode: str | None = None):
    """A fresh env for `env_id` playing `level` (level games) with `render_mode`."""
    if is_level_game(env_id):
        from spade_rllib.envs import make_env

        kwargs: dict[str, Any] = {"render_mode": render_mode}
        if level is not None:
            kwargs["level"] = level
        return make_env(env_id, **kwargs)
    if env_id == CONNECT_FOUR_ENV_ID:
        from pettingzoo.classic import connect_four_v3

        return connect_four_v3.env(render_mode=render_mode)
    raise ValueError(f"env id = {env_id!r} is not playable by evaluation; allowed: {', '.join(SUPPORTED_ENVS)}")


def num_actions(env_id: str) -> int:
    env = make_game_env(env_id)
    return int(env.action_space(env.possible_agents[0]).n)


# --------------------------------------------------------------------------------------------
# ASCII boards
# --------------------------------------------------------------------------------------------
def connect_four_ascii(env) -> str:
    """The connect_four board: X = player_0 (seat 0), O = player_1, column numbers 0..6 below."""
    board = np.asarray(env.unwrapped.board).reshape(6, 7)
    glyph = {0: ".", 1: "X", 2: "O"}
    rows = [" ".join(glyph[int(v)] for v in row) for row in board]
    return "\n".join(rows + [" ".join(str(c) for c in range(7))])


def maze_ascii(env) -> str:
    text = env.render() if getattr(env, "render_mode", None) == "ansi" else None
    if isinstance(text, str):
        return text.rstrip("\n")
    return _maze_ascii_fallback(env)


def _maze_ascii_fallback(env) -> str:
    """Board from the env's public state (level, positions) when no ansi render is at hand."""
    base = env.unwrapped
    grid = [list(row) for row in base.level.to_ascii().replace("A", ".").replace("B", ".").split("\n")]
    waiting = getattr(base, "stun", None) or getattr(base, "frozen", None) or {}  # MazeRace stun / CTF respawn wait
    for agent, (r, c) in base.positions.items():
        mark = "A" if base.team_of(agent) == 0 else "B"
        grid[r][c] = mark.lower() if waiting.get(agent, 0) else mark
    return "\n".join("".join(row) for row in grid)


# --------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------
def _maze_outcome(infos: dict, rewards: dict, env) -> tuple[int, str]:
    for info in infos.values():
        if isinstance(info, dict) and "winner" in info:
            winner = info["winner"]
            seat = {"A": 0, "B": 1}.get(winner, DRAW)
            return seat, str(info.get("reason", ""))
    # Fallback: the sign of team A's reward.
    team_a = [r for a, r in rewards.items() if env.unwrapped.team_of(a) == 0]
    total = sum(team_a)
    return (0 if total > 0 else 1 if total < 0 else DRAW), "reward"


def play_level_game(players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env=None,
                    record: str | None = None, actions: list[dict] | None = None,
                    env_id: str = MAZERACE_ID) -> GameRecord:
    """Play (or, with `actions`, re-enact) one game of a level game (MazeRace, CTF).
    `record`: None, "rgb_array" or "ansi"."""
    if env is None or record is not None:
        env = make_game_env(env_id, entry.level, render_mode=record)
    obs, infos = env.reset(seed=int(spec.seed), options={"level": entry.level} if entry.level is not None else None)
    rngs = seat_rngs(spec.seed)
    for seat, player in enumerate(players):
        player.new_game(int(spec.seed) * 2 + seat)
    base = env.unwrapped
    record_out = GameRecord(result=None)  # type: ignore[arg-type]
    rewards: dict = {}
    step = 0
    names = {0: spec.seat0, 1: spec.seat1}
    if record is not None:
        _capture(record_out, env, record, header=f"level {entry.level_id}, seed {spec.seed}: "
                 f"A = {spec.seat0}, B = {spec.seat1}")
    while env.agents:
        if actions is not None:
            chosen = dict(actions[step])
        else:
            chosen = {}
            for agent in env.agents:
                seat = base.team_of(agent)
                mask = infos.get(agent, {}).get("action_mask") if isinstance(infos.get(agent), dict) else None
                chosen[agent] = players[seat].act(env, agent, obs[agent], mask, rngs[seat])
        record_out.actions.append(chosen)
        obs, rewards, terms, truncs, infos = env.step(chosen)
        step += 1
        if record is not None:
            moves = ", ".join(
                f"{a} ({names[base.team_of(a)]}) {LEVEL_GAME_ACTION_NAMES[int(x)] if int(x) < 6 else x}"
                for a, x in chosen.items())
            _capture(record_out, env, record, header=f"step {step}: {moves}")
        if step > SAFETY_STEP_LIMIT:
            raise RuntimeError(f"game {spec.index} did not end after {SAFETY_STEP_LIMIT} steps")
    winner, reason = _maze_outcome(infos, rewards, env)
    length = step
    for info in infos.values():
        if isinstance(info, dict) and "episode_length" in info:
            length = int(info["episode_length"])
            break
    record_out.result = GameResult(spec.index, spec.seat0, spec.seat1, entry.level_id, int(spec.seed),
                                   winner, reason, length)
    if record is not None:
        _capture_text(record_out, f"result: {_winner_text(record_out.result)} ({reason}) after {length} steps")
    return record_out


def play_connect_four(players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env=None,
                      record: str | None = None, actions: list | None = None) -> GameRecord:
    """Play (or re-enact) one connect_four game; seat 0 is `player_0`, who moves first."""
    env = make_game_env(CONNECT_FOUR_ENV_ID, render_mode="rgb_array" if record == "rgb_array" else None)
    env.reset(seed=int(spec.seed))
    rngs = seat_rngs(spec.seed)
    for seat, player in enumerate(players):
        player.new_game(int(spec.seed) * 2 + seat)
    seat_of = {agent: i for i, agent in enumerate(env.possible_agents)}
    names = {0: spec.seat0, 1: spec.seat1}
    out = GameRecord(result=None)  # type: ignore[arg-type]
    final_rewards: dict[str, float] = {}
    moves = 0
    if record is not None:
        _capture(out, env, record, header=f"seed {spec.seed}: X = {spec.seat0}, O = {spec.seat1}", c4=True)
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            final_rewards[agent] = float(reward)
            env.step(None)
            continue
        seat = seat_of[agent]
        if actions is not None:
            action = int(actions[moves][1])
        else:
            action = players[seat].act(env, agent, obs, obs["action_mask"], rngs[seat])
        if not obs["action_mask"][action]:
            raise RuntimeError(f"{names[seat]} chose illegal column {action} in game {spec.index}")
        out.actions.append((agent, action))
        env.step(action)
        moves += 1
        if record is not None:
            _capture(out, env, record, header=f"move {moves}: {names[seat]} plays column {action}", c4=True)
    r0 = final_rewards.get(env.possible_agents[0], 0.0)
    winner = 0 if r0 > 0 else 1 if r0 < 0 else DRAW
    out.result = GameResult(spec.index, spec.seat0, spec.seat1, entry.level_id, int(spec.seed), winner,
                            "four" if winner != DRAW else "full", moves)
    if record is not None:
        _capture_text(out, f"result: {_winner_text(out.result)} after {moves} moves")
    return out


def _winner_text(result: GameResult) -> str:
    if result.winner_seat == DRAW:
        return "draw"
    return f"{result.seat0 if result.winner_seat == 0 else result.seat1} wins"


def _capture_text(out: GameRecord, text: str) -> None:
    out.texts.append(text)


def _capture(out: GameRecord, env, mode: str, header: str, c4: bool = False) -> None:
    if mode == "rgb_array":
        frame = env.render()
        if frame is not None:
            out.frames.append(np.asarray(frame, dtype=np.uint8))
            out.captions.append("" if c4 else frame_caption(env))
        return
    board = connect_four_ascii(env) if c4 else maze_ascii(env)
    out.texts.append(f"{header}\n{board}")


def play_game(env_id: str, players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env=None,
              record: str | None = None, actions: list | None = None) -> GameRecord:
    """Dispatch to the env's engine. `env` may be reused between games (level games, no recording)."""
    if is_level_game(env_id):
        return play_level_game(players, entry, spec, env=env, record=record, actions=actions, env_id=env_id)
    if env_id == CONNECT_FOUR_ENV_ID:
        return play_connect_four(players, entry, spec, env=env, record=record, actions=actions)
    raise ValueError(f"env id = {env_id!r} is not playable by evaluation; allowed: {', '.join(SUPPORTED_ENVS)}")
