"""The match engine: one game between two seats on the PettingZoo env itself (no RLlib stack).

Seat 0 is the first side (level games: team A = `player_0`/`a_*`; connect_four `player_0`, who moves
first), seat 1 the other. A game is a pure function of (players, level, seed): the env is reset with
`seed`, bots are re-seeded from it and sampling players draw from a per-seat generator derived from
it. So any game can be replayed later, with rendering on, from its `GameSpec` alone.

Supported envs: every game of the catalog (`spade_rllib.games`), by its turn structure: simultaneous
(the level games `MazeRace-v0`, `CaptureTheFlag-v0`: PettingZoo parallel, teams share their seat's
player) or alternating (`connect_four_v3`: AEC, one move per turn, illegal moves refused). The env,
its board renderer and its action names come from the game's `GameSpec`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from spade_rllib.evaluation.players import Player
from spade_rllib.games import game

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
    """A fresh env of the game `env_id` playing `level` (level games) with `render_mode`."""
    spec = game(env_id)
    kwargs: dict[str, Any] = {"render_mode": render_mode}
    if level is not None and spec.is_level_game:
        kwargs["level"] = level
    return spec.make_env(**kwargs)


def num_actions(env_id: str) -> int:
    env = make_game_env(env_id)
    return int(env.action_space(env.possible_agents[0]).n)


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


def play_simultaneous(players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env_id: str, env=None,
                      record: str | None = None, actions: list[dict] | None = None) -> GameRecord:
    """Play (or, with `actions`, re-enact) one game of a simultaneous-move game (a PettingZoo
    ParallelEnv with `team_of`: the level games). `record`: None, "rgb_array" or "ansi"."""
    game_spec = game(env_id)
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
        _capture(record_out, env, record, game_spec.render_ascii, header=f"level {entry.level_id}, seed {spec.seed}: "
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
            moves = ", ".join(f"{a} ({names[base.team_of(a)]}) {game_spec.action_name(x)}" for a, x in chosen.items())
            _capture(record_out, env, record, game_spec.render_ascii, header=f"step {step}: {moves}")
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


def play_alternating(players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env_id: str, env=None,
                     record: str | None = None, actions: list | None = None) -> GameRecord:
    """Play (or re-enact) one game of an alternating-move game (a PettingZoo AEC env with an action
    mask: connect_four); seat 0 is the first agent, who moves first."""
    game_spec = game(env_id)
    env = make_game_env(env_id, render_mode="rgb_array" if record == "rgb_array" else None)
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
        _capture(out, env, record, game_spec.render_ascii, header=f"seed {spec.seed}: X = {spec.seat0}, O = {spec.seat1}",
                 caption=False)
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
            raise RuntimeError(f"{names[seat]} chose illegal {game_spec.action_name(action)} in game {spec.index}")
        out.actions.append((agent, action))
        env.step(action)
        moves += 1
        if record is not None:
            _capture(out, env, record, game_spec.render_ascii,
                     header=f"move {moves}: {names[seat]} plays {game_spec.action_name(action)}", caption=False)
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


def _capture(out: GameRecord, env, mode: str, render_ascii, header: str, caption: bool = True) -> None:
    if mode == "rgb_array":
        frame = env.render()
        if frame is not None:
            out.frames.append(np.asarray(frame, dtype=np.uint8))
            out.captions.append(frame_caption(env) if caption else "")
        return
    board = render_ascii(env) if render_ascii is not None else str(env.render())
    out.texts.append(f"{header}\n{board}")


def play_game(env_id: str, players: Sequence[Player], entry: LevelEntry, spec: GameSpec, *, env=None,
              record: str | None = None, actions: list | None = None) -> GameRecord:
    """Play by the game's turn structure. `env` may be reused between games (simultaneous, no recording)."""
    play = play_simultaneous if game(env_id).turns == "simultaneous" else play_alternating
    return play(players, entry, spec, env_id=env_id, env=env, record=record, actions=actions)
