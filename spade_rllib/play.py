"""Play against a trained policy in the terminal: `python -m spade_rllib.play --checkpoint PATH`.

Level games (1v1): you are team A unless `--human-seat 1`. MazeRace: `A`/`B` on the board (`a`/`b`
when stunned), `F` the flag. CaptureTheFlag: `1`/`2` are the players of team A/B (`3`/`4` while
carrying a flag), `a`/`b` the bases; the status line says who carries what. Keys, each followed by Enter: `w` up, `a` left, `s` down, `d` right, `t` tag, a space for noop,
`q` to quit. connect_four: type a column number 0-6 (X moves first; you are X with seat 0).
Anything else is refused with a hint and asked again. Input and output are injectable
(`play_game(..., read=..., write=...)`) so the loop is testable without a terminal.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from spade_rllib.checkpoint_layout import checkpoint_env_id, resolve_checkpoint
from spade_rllib.cli import add_debug_flag, cli_entry
from spade_rllib.games import canonical_env_id, game, game_ids, make_bot
from spade_rllib.policy import (
    DEFAULT_MODULE_ID,
    Policy,
    PolicyLoadError,
    infer_env_id,
    known_env_id,
    load_policy,
)

MAZE_KEYS = {"w": 1, "s": 2, "a": 3, "d": 4, "t": 5, " ": 0}
"""Key -> level-game action (0 noop, 1 up, 2 down, 3 left, 4 right, 5 tag)."""
MAZE_HINT = "keys: w up, a left, s down, d right, t tag, space noop, q quit"
C4_HINT = "type a column number 0-6 that is not full, or q to quit"
QUIT = "q"
MAX_BAD_INPUTS = 100
"""Give up after this many refused inputs in a row (a broken pipe, not a person)."""

Reader = Callable[[str], str]
Writer = Callable[[str], None]


class Quit(Exception):
    """The human typed q or closed the input."""


@dataclass
class PlayResult:
    winner: str
    """"human", "policy" or "draw" ("quit" when the human left)."""
    steps: int


def parse_maze_key(raw: str) -> int | None:
    """A line typed by the human -> level-game action, None if invalid. Raises `Quit` on q."""
    key = raw.rstrip("\r\n")
    if key.strip().lower() == QUIT:
        raise Quit
    if key and not key.strip():
        return MAZE_KEYS[" "]
    key = key.strip().lower()
    return MAZE_KEYS.get(key) if len(key) == 1 else None


def parse_column(raw: str, mask: np.ndarray) -> int | None:
    """A line typed by the human -> a legal connect_four column, None if invalid. Raises `Quit` on q."""
    key = raw.strip().lower()
    if key == QUIT:
        raise Quit
    if not key.isdigit():
        return None
    column = int(key)
    if column >= len(mask) or not mask[column]:
        return None
    return column


def _ask(read: Reader, write: Writer, prompt: str, parse: Callable[[str], int | None], hint: str,
         refuse: Callable[[str], str]) -> int:
    for _ in range(MAX_BAD_INPUTS):
        try:
            raw = read(prompt)
        except EOFError as e:
            raise Quit from e
        value = parse(raw)
        if value is not None:
            return value
        write(refuse(raw) + f" ({hint})")
    raise Quit


def play_simultaneous(policy: Policy, read: Reader, write: Writer, *, env_id: str, level=None,
                      difficulty: float = 3.0, seed: int = 0, human_seat: int = 0) -> PlayResult:
    """One game of a simultaneous-move game (the level games); in 2v2 the human's teammate is the
    game's `rusher` bot (its first bot when it has no rusher)."""
    spec = game(env_id)
    kwargs = {"render_mode": "ansi", "seed": seed}
    kwargs.update({"level": level} if level is not None else {"difficulty": difficulty})
    try:
        env = spec.make_env(**kwargs)
    except ValueError as e:  # e.g. a MazeRace map for CaptureTheFlag
        raise PolicyLoadError(f"{env_id}: {e}") from e
    obs, infos = env.reset(seed=seed)
    base = env.unwrapped
    human_agent = next(a for a in env.agents if base.team_of(a) == human_seat)
    mate = "rusher" if "rusher" in spec.bots else next(iter(spec.bots), None)
    teammates = {a: make_bot(mate, seed=seed + i, env_id=env_id) for i, a in enumerate(env.agents)
                 if base.team_of(a) == human_seat and a != human_agent}
    write(f"You are {human_agent} ({'A' if human_seat == 0 else 'B'}); the policy plays the other team. {MAZE_HINT}")
    steps = 0
    states: dict = {}  # a recurrent policy's state per agent it moves (this game only)
    while env.agents:
        write(env.render().rstrip("\n"))
        try:
            action = _ask(read, write, "your move> ", parse_maze_key, MAZE_HINT,
                          lambda raw: f"invalid key {raw.strip()!r}")
        except Quit:
            write("quit")
            return PlayResult("quit", steps)
        actions = {}
        for agent in env.agents:
            if agent == human_agent:
                actions[agent] = action
            elif agent in teammates:
                actions[agent] = teammates[agent].act(env, agent)
            else:
                actions[agent], states[agent] = policy.step(obs[agent], states.get(agent) or policy.initial_state())
        obs, _, _, _, infos = env.step(actions)
        steps += 1
    write(env.render().rstrip("\n"))
    winner = next((i.get("winner") for i in infos.values() if isinstance(i, dict) and "winner" in i), "draw")
    human_team = "AB"[human_seat]
    result = "draw" if winner == "draw" else ("human" if winner == human_team else "policy")
    write({"human": "You win!", "policy": "The policy wins.", "draw": "Draw."}[result])
    return PlayResult(result, steps)


def play_alternating(policy: Policy, read: Reader, write: Writer, *, env_id: str, seed: int = 0,
                     human_seat: int = 0) -> PlayResult:
    """One game of an alternating-move game with an action mask (connect_four): the human types an action index."""
    spec = game(env_id)
    env = spec.make_env()
    env.reset(seed=seed)
    human_agent = env.possible_agents[human_seat]
    policy.reset()  # a recurrent policy starts the game from zeros (one agent: act() keeps its state)
    write(f"You are {'X' if human_seat == 0 else 'O'} ({human_agent}); X moves first. {C4_HINT}")
    rewards: dict[str, float] = {}
    moves = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            rewards[agent] = float(reward)
            env.step(None)
            continue
        mask = np.asarray(obs["action_mask"])
        if agent == human_agent:
            write(spec.render_ascii(env))
            try:
                action = _ask(read, write, "column> ", lambda raw: parse_column(raw, mask), C4_HINT,
                              lambda raw: f"invalid column {raw.strip()!r}")
            except Quit:
                write("quit")
                return PlayResult("quit", moves)
        else:
            action = policy.act(obs, action_mask=mask)
            write(f"policy plays {spec.action_name(action)}")
        env.step(action)
        moves += 1
    write(spec.render_ascii(env))
    r = rewards.get(human_agent, 0.0)
    result = "human" if r > 0 else "policy" if r < 0 else "draw"
    write({"human": "You win!", "policy": "The policy wins.", "draw": "Draw."}[result])
    return PlayResult(result, moves)


def play_game(policy: Policy, env_id: str, read: Reader = input, write: Writer = print, **kwargs) -> PlayResult:
    """One human-vs-policy game on `env_id` with injectable `read(prompt) -> line` and `write(text)`."""
    if env_id not in game_ids():
        raise PolicyLoadError(f"play supports the games {', '.join(game_ids())}, not {env_id}")
    if game(env_id).turns == "simultaneous":
        return play_simultaneous(policy, read, write, env_id=env_id, **kwargs)
    kwargs.pop("level", None)
    kwargs.pop("difficulty", None)
    return play_alternating(policy, read, write, env_id=env_id, **kwargs)


@cli_entry(user_errors=(PolicyLoadError,))
def main(argv: Sequence[str] | None = None, read: Reader = input, write: Writer = print) -> int:
    p = argparse.ArgumentParser(prog="python -m spade_rllib.play", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--module", default=DEFAULT_MODULE_ID, help="module id or league member (default: main)")
    p.add_argument("--env", default=None, help=f"env id override ({', '.join(game_ids())})")
    p.add_argument("--level", default=None, help="level games: an ASCII map file of that game")
    p.add_argument("--difficulty", type=float, default=3.0, help="level games: generated level difficulty 1-10")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--human-seat", type=int, choices=(0, 1), default=0)
    add_debug_flag(p)
    args = p.parse_args(argv)
    if not 1.0 <= args.difficulty <= 10.0:  # refused before the checkpoint loads
        print(f"error: --difficulty = {args.difficulty:g}: out of range, allowed 1..10", file=sys.stderr)
        return 2
    try:
        info = resolve_checkpoint(args.checkpoint)
        env_id = canonical_env_id(args.env) or known_env_id(checkpoint_env_id(info))
        policy = load_policy(info.path, args.module, env_id=env_id)
        env_id = env_id or infer_env_id(policy)
        if env_id is None:
            raise PolicyLoadError(f"cannot tell which env {info.path} was trained on; pass --env")
        level = None
        if args.level:
            from spade_rllib.envs import Level

            path = Path(args.level)
            if not path.is_file():
                raise PolicyLoadError(f"--level {path}: no such file")
            try:
                level = Level.from_ascii(path.read_text())
            except ValueError as e:
                raise PolicyLoadError(f"--level {path}: {e}") from e
        play_game(policy, env_id, read, write, level=level, difficulty=args.difficulty, seed=args.seed,
                  human_seat=args.human_seat)
    except PolicyLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
