"""Play against a trained policy in the terminal: `python -m spade_rllib.play --checkpoint PATH`.

Level games (1v1): you are team A unless `--human-seat 1`. MazeRace: `A`/`B` on the board (`a`/`b`
when stunned), `F` the flag. CaptureTheFlag: `1`/`2` are the players of team A/B (`3`/`4` while
carrying a flag), `a`/`b` the bases; the status line says who carries what. Keys, each followed by Enter: `w` up, `a` left, `s` down, `d` right, `t` tag, a space for noop,
`q` to quit. connect_four: type a column number 0-6 (X moves first; you are X with seat 0).
Any other two-team env that renders ``ansi`` (its env id from the run's `config.yaml`): type an action
number; an env without a text render is refused in one line. Every game runs through the game-loop
adapter (`spade_rllib.games.adapter`). Anything else is refused with a hint and asked again. Input and output are injectable
(`play_game(..., read=..., write=...)`) so the loop is testable without a terminal.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from spade_rllib.artifacts.checkpoint_layout import checkpoint_env_id, checkpoint_env_setup, resolve_checkpoint
from spade_rllib.cli import add_debug_flag, cli_entry
from spade_rllib.evaluation.match_engine import make_game_env, render_modes
from spade_rllib.games import canonical_env_id, find_game, game_ids, make_bot
from spade_rllib.games.adapter import AECGame, wrap_env
from spade_rllib.players.policy import (
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


def parse_action(raw: str, legal: np.ndarray) -> int | None:
    """A line typed by the human -> a legal action index (`legal`: a 0/1 vector over the actions), None
    if invalid. Raises `Quit` on q."""
    return parse_column(raw, legal)


def _board(env_id: str, game) -> str:
    spec = find_game(env_id)
    if spec is not None and spec.render_ascii is not None:
        return spec.render_ascii(game.raw_env)
    return str(game.raw_env.render()).rstrip("\n")


def _returns_winner(returns: list[float], human_seat: int) -> str:
    mine, theirs = returns[human_seat], returns[1 - human_seat]
    return "human" if mine > theirs else "policy" if mine < theirs else "draw"


def _say_result(write: Writer, result: str) -> None:
    write({"human": "You win!", "policy": "The policy wins.", "draw": "Draw."}[result])


def play_simultaneous(policy: Policy, read: Reader, write: Writer, *, env_id: str, level=None,
                      difficulty: float = 3.0, seed: int = 0, human_seat: int = 0,
                      setup: dict | None = None) -> PlayResult:
    """One game of a simultaneous-move game (a level game, or a two-team PettingZoo ParallelEnv that
    renders ``ansi``), through the game-loop adapter. Level games: in 2v2 the human's teammate is the
    game's `rusher` bot (its first bot when it has no rusher); other envs: the policy plays the human's
    teammates, and the human types an action number."""
    spec = find_game(env_id)
    if spec is not None:
        kwargs = {"render_mode": "ansi", "seed": seed}
        kwargs.update({"level": level} if level is not None else {"difficulty": difficulty})
        try:
            game = wrap_env(spec.make_env(**kwargs), is_level_game=True)
        except ValueError as e:  # e.g. a MazeRace map for CaptureTheFlag
            raise PolicyLoadError(f"{env_id}: {e}") from e
    else:
        game = make_game_env(env_id, render_mode="ansi", setup=setup)
    seat_of = {agent: i for i, team in enumerate(game.teams) for agent in team}
    obs = game.reset(seed=seed)
    human_agent = next(a for a in obs if seat_of[a] == human_seat)
    teammates = {}
    if spec is not None:
        mate = "rusher" if "rusher" in spec.bots else next(iter(spec.bots), None)
        teammates = {a: make_bot(mate, seed=seed + i, env_id=env_id) for i, a in enumerate(obs)
                     if seat_of[a] == human_seat and a != human_agent}
        hint, intro = MAZE_HINT, f"You are {human_agent} ({'A' if human_seat == 0 else 'B'}); the policy plays the other team."
    else:
        hint = f"type an action number 0-{game.num_actions - 1}, or q to quit"
        intro = f"You are {human_agent} (seat {human_seat}); the policy plays every other agent."
    write(f"{intro} {hint}")
    steps = 0
    returns = [0.0, 0.0]
    states: dict = {}  # a recurrent policy's state per agent it moves (this game only)
    all_legal = np.ones(game.num_actions)
    while True:
        write(_board(env_id, game) if spec is None else game.raw_env.render().rstrip("\n"))
        if human_agent in obs:
            parse = parse_maze_key if spec is not None else (lambda raw: parse_action(raw, all_legal))
            refuse = (lambda raw: f"invalid key {raw.strip()!r}") if spec is not None else (lambda raw: f"invalid action {raw.strip()!r}")
            try:
                action = _ask(read, write, "your move> ", parse, hint, refuse)
            except Quit:
                write("quit")
                return PlayResult("quit", steps)
        actions = {}
        for agent, o in obs.items():
            if agent == human_agent:
                actions[agent] = action
            elif agent in teammates:
                actions[agent] = teammates[agent].act(game.raw_env, agent)
            else:
                actions[agent], states[agent] = policy.step(o, states.get(agent) or policy.initial_state())
        result = game.step(actions)
        for agent, r in result.rewards.items():
            if agent in seat_of:
                returns[seat_of[agent]] += float(r)
        steps += 1
        if result.done:
            break
        obs = result.obs
    write(_board(env_id, game) if spec is None else game.raw_env.render().rstrip("\n"))
    if spec is not None:
        winner = result.info.get("winner", "draw") if isinstance(result.info, dict) else "draw"
        human_team = "AB"[human_seat]
        outcome = "draw" if winner == "draw" else ("human" if winner == human_team else "policy")
    else:
        outcome = _returns_winner(returns, human_seat)
    _say_result(write, outcome)
    return PlayResult(outcome, steps)


def play_alternating(policy: Policy, read: Reader, write: Writer, *, env_id: str, seed: int = 0,
                     human_seat: int = 0, setup: dict | None = None) -> PlayResult:
    """One game of a turn-based game (connect_four, or a two-team PettingZoo AEC env that renders
    ``ansi``), through the game-loop adapter: the human types an action index."""
    spec = find_game(env_id)
    game = make_game_env(env_id, render_mode=None if spec is not None else "ansi", setup=setup)
    seat_of = {agent: i for i, team in enumerate(game.teams) for agent in team}
    obs = game.reset(seed=seed)
    human_agent = game.teams[human_seat][0]
    policy.reset()  # a recurrent policy starts the game from zeros (one agent: act() keeps its state)
    if spec is not None:
        hint = C4_HINT
        write(f"You are {'X' if human_seat == 0 else 'O'} ({human_agent}); X moves first. {hint}")
    else:
        hint = f"type a legal action number 0-{game.num_actions - 1}, or q to quit"
        write(f"You are {human_agent} (seat {human_seat}); {game.teams[0][0]} moves first. {hint}")
    name = spec.action_name if spec is not None else (lambda a: f"action {a}")
    returns = [0.0, 0.0]
    moves = 0
    while True:
        (agent, o), = obs.items()
        mask = o[-game.mask_size:] if game.mask_size else np.ones(game.num_actions)
        if agent == human_agent:
            write(_board(env_id, game))
            try:
                action = _ask(read, write, "column> " if spec is not None else "action> ",
                              lambda raw: parse_column(raw, mask), hint,
                              (lambda raw: f"invalid column {raw.strip()!r}") if spec is not None
                              else (lambda raw: f"invalid action {raw.strip()!r}"))
            except Quit:
                write("quit")
                return PlayResult("quit", moves)
        else:
            action = policy.act(o, action_mask=mask if game.mask_size else None)
            write(f"policy plays {name(action)}")
        result = game.step({agent: action})
        for a, r in result.rewards.items():
            if a in seat_of:
                returns[seat_of[a]] += float(r)
        moves += 1
        if result.done:
            break
        obs = result.obs
    write(_board(env_id, game))
    outcome = _returns_winner(returns, human_seat)
    _say_result(write, outcome)
    return PlayResult(outcome, moves)


def play_game(policy: Policy, env_id: str, read: Reader = input, write: Writer = print, **kwargs) -> PlayResult:
    """One human-vs-policy game on `env_id` with injectable `read(prompt) -> line` and `write(text)`.
    A game of the catalog, or any two-team env that renders ``ansi`` (else `PolicyLoadError`, one line)."""
    spec = find_game(env_id)
    if spec is None:
        check_playable(env_id, kwargs.get("setup"))
        turn_based = isinstance(make_game_env(env_id, setup=kwargs.get("setup")), AECGame)
    else:
        turn_based = spec.turns != "simultaneous"
    if not turn_based:
        return play_simultaneous(policy, read, write, env_id=env_id, **kwargs)
    kwargs.pop("level", None)
    kwargs.pop("difficulty", None)
    return play_alternating(policy, read, write, env_id=env_id, **kwargs)


def check_playable(env_id: str, setup: dict | None = None) -> None:
    """`play` shows the board as text: an env outside the catalog must render ``ansi`` and have two teams."""
    if find_game(env_id) is not None:
        return
    from spade_rllib.evaluation.match_engine import MatchError, check_two_teams

    modes = render_modes(env_id, setup)
    if "ansi" not in modes:
        raise PolicyLoadError(f"play shows the board as text, and {env_id} does not render 'ansi' (its render modes: "
                              f"{', '.join(modes) or 'none'}); evaluate it instead: python -m spade_rllib.evaluate "
                              "--checkpoint PATH (GIF replays where it renders 'rgb_array')")
    try:
        check_two_teams(env_id, setup=setup)
    except MatchError as e:
        raise PolicyLoadError(str(e)) from e


@cli_entry(user_errors=(PolicyLoadError,))
def main(argv: Sequence[str] | None = None, read: Reader = input, write: Writer = print) -> int:
    p = argparse.ArgumentParser(prog="python -m spade_rllib.play", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--module", default=DEFAULT_MODULE_ID, help="module id, league member (main_v3), or the league as one player: league:uniform | league:plan | "
                   "league:nash (its members weighted uniformly, by main's matchmaking plan, or by the Nash "
                   "equilibrium of their payoff matrix; poker: the exact averaged strategy, other games: a member "
                   "drawn per game), or league:average (one network distilled from the uniform mixture) (default: main)")
    p.add_argument("--env", default=None, help="env id override (default: the env.id in the run's config.yaml)")
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
        recorded = known_env_id(checkpoint_env_id(info))
        env_id = canonical_env_id(args.env) or recorded
        setup = checkpoint_env_setup(info) if env_id is not None and env_id == recorded else {}
        if env_id is not None:
            check_playable(env_id, setup)  # before the checkpoint loads
        policy = load_policy(info.path, args.module, env_id=env_id)
        env_id = env_id or infer_env_id(policy)
        if env_id is None:
            raise PolicyLoadError(f"cannot tell which env {info.path} was trained on: its run records none and its "
                                  f"spaces fit no game of {', '.join(game_ids())}; pass --env")
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
        play_game(policy, env_id, read, write, level=level, difficulty=args.difficulty, seed=args.seed, setup=setup,
                  human_seat=args.human_seat)
    except PolicyLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
