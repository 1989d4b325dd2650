"""A third game added only here (a `LevelGame` subclass and one `GameSpec`) trains one iteration,
evaluates and plays through the same code paths as the shipped games: nothing else needs to know it."""
from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from spade_rllib.envs import Level, generate_level
from spade_rllib.envs.level_game import DOWN, LEFT, NOOP, RIGHT, UP, CellTemplates, LevelGame
from spade_rllib.games import game, level_game_spec, make_env, register, unregister

TOY_ID = "Dash-v0"
MOVES = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}


class _Walls(CellTemplates):
    def fill(self, cell, out):
        out[:self.k] = self.window(cell).ravel()


class Dash(LevelGame, name=TOY_ID, channels=1, vector_size=3, ctf_levels=False, generator=generate_level,
           default_max_steps=lambda size: 3 * size):
    """Reach the flag first (MazeRace maps): moves only, agents never block each other, tag does nothing.
    Observation: a wall window, then the offset to the flag and the own team."""

    COLOURS = {"#": (40, 40, 48), ".": (235, 235, 228), "F": (240, 190, 20), "A": (40, 90, 220), "B": (210, 50, 50)}

    def _start_episode(self, level: Level) -> None:
        self._tpl = _Walls(level, self.view_radius, self.NUM_CHANNELS, self.VECTOR_SIZE)

    def _observe(self, agent):
        r, c = self.positions[agent]
        o = self._tpl[(r, c)].copy()
        fr, fc = self.level.flag
        o[self._k:] = (np.clip((fr - r) / 24, -1, 1), np.clip((fc - c) / 24, -1, 1), self._team[agent])
        return o

    def step(self, actions):
        acts = self._validated(actions)
        self.step_count += 1
        arrived = set()
        for a, act in acts.items():
            if act in MOVES:
                r, c = self.positions[a]
                dr, dc = MOVES[act]
                if not self._walls[r + dr][c + dc]:
                    self.positions[a] = (r + dr, c + dc)
            if self.positions[a] == self.level.flag:
                arrived.add(self._team[a])
        done = bool(arrived)
        winner = "AB"[arrived.pop()] if len(arrived) == 1 else "draw"
        return self._step_result(done, not done and self.step_count >= self.max_steps, winner,
                                 "flag" if done else "timeout")

    def _char_grid(self):
        grid = [["#" if w else "." for w in row] for row in self._walls]
        grid[self.level.flag[0]][self.level.flag[1]] = "F"
        for a, (r, c) in self.positions.items():
            grid[r][c] = "AB"[self._team[a]]
        return grid


class GreedyBot:
    """Steps along the row, then the column, towards the flag."""

    def __init__(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, env, agent):
        (r, c), (fr, fc) = env.unwrapped.positions[agent], env.unwrapped.level.flag
        if fr != r:
            return DOWN if fr > r else UP
        if fc != c:
            return RIGHT if fc > c else LEFT
        return NOOP


@pytest.fixture(scope="module")
def toy_game():
    spec = register(level_game_spec(Dash, bots={"greedy": GreedyBot}))
    yield spec
    unregister(TOY_ID)


def test_the_catalog_knows_the_toy_game_and_its_env_keeps_the_parallel_api(toy_game):
    from spade_rllib.games import bot_names, canonical_env_id, env_kind, level_game_ids

    assert game(TOY_ID) is toy_game and TOY_ID in level_game_ids() and env_kind(TOY_ID) == "level"
    assert canonical_env_id(f"spade/{TOY_ID}") == TOY_ID and bot_names(TOY_ID) == ("greedy",)
    parallel_api_test(make_env(TOY_ID, difficulty=2, seed=0), num_cycles=50)


@pytest.mark.ray
def test_toy_game_trains_evaluates_and_plays(toy_game, ray_session, tmp_path):
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.evaluation.match_engine import GameSpec, LevelEntry, play_game
    from spade_rllib.evaluation.players import PlayerSpec, build_player
    from spade_rllib.play import play_game as play_human
    from spade_rllib.players.policy import load_policy
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config({
        "env": {"id": TOY_ID, "difficulty": 1.0, "level_pool": 4},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "self_play": {"opponent_mix": {"bot:greedy": 0.5}},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 4, "stop": {"iterations": 1}},
        "evaluation": {"interval": 0, "opponents": ["random", "bot:greedy"]},
    })
    algo = build_algo_config(cfg).build_algo()
    try:
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] >= 256
        ckpt = tmp_path / "checkpoint_000000"
        algo.save_to_path(str(ckpt))
    finally:
        algo.stop()
    policy = load_policy(str(ckpt), "main", env_id=TOY_ID)
    # evaluation: the match engine plays the trained module against the toy game's bot, both seats
    main = build_player(PlayerSpec("main", "module", "main", checkpoint=str(ckpt)), TOY_ID, 6)
    bot = build_player(PlayerSpec("greedy", "bot", "greedy"), TOY_ID, 6)
    level = game(TOY_ID).level_generator(_knobs(), 3)
    for seat, players in enumerate(([main, bot], [bot, main])):
        rec = play_game(TOY_ID, players, LevelEntry("toy", level, "generated"), GameSpec(seat, "a", "b", 0, seat),
                        record="ansi")
        assert rec.result.winner_seat in (0, 1, -1) and rec.texts and "step 1:" in rec.texts[1]
    # play: a human (scripted keys) against the trained policy
    keys = iter(["d"] * 200)
    out: list[str] = []
    played = play_human(policy, TOY_ID, lambda prompt: next(keys), out.append, difficulty=1.0, seed=0)
    assert played.winner in ("human", "policy", "draw") and any("F" in line for line in out)
    # the evaluate CLI: league table of main against the game's bots and random, on generated levels
    from spade_rllib.evaluate import main as evaluate_main

    out_dir = tmp_path / "eval"
    assert evaluate_main(["--checkpoint", str(ckpt), "--env", TOY_ID, "--local", "--games-per-pair", "2",
                          "--replays", "1", "--levels", "generated:1@1", "--out", str(out_dir), "--no-progress"]) == 0
    games = (out_dir / "games.csv").read_text().splitlines()
    assert len(games) > 1


def _knobs():
    from spade_rllib.envs import knobs_for_difficulty

    return knobs_for_difficulty(1.0)
