"""Random opening plies for turn-based games (`env.random_opening_plies`, issue 14)."""
from __future__ import annotations

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.games.adapter import AECGame, make_game_factory

C4 = "pettingzoo.classic:connect_four_v3"


def _pieces(game: AECGame) -> int:
    return int(np.count_nonzero(game.raw_env.unwrapped.board))


def test_openings_play_zero_to_n_legal_moves_and_are_seeded():
    game = make_game_factory(C4, opening_plies=4)()
    assert isinstance(game, AECGame)
    counts = []
    for episode in range(300):
        obs = game.reset(seed=episode)
        (agent, o), = obs.items()
        n = _pieces(game)
        counts.append(n)
        # the agent to move is the one whose turn it is after n moves, and its mask is the board's
        assert agent == ("player_0" if n % 2 == 0 else "player_1")
        np.testing.assert_array_equal(o[-7:], (np.asarray(game.raw_env.unwrapped.board).reshape(6, 7)[0] == 0).astype(np.float32))
        assert game.raw_env.agents, "the opening must not end the game"
    assert set(counts) == {0, 1, 2, 3, 4}
    # same seed, same opening; unseeded resets continue the game's own stream
    boards = []
    for _ in range(2):
        game.reset(seed=123)
        boards.append(list(game.raw_env.unwrapped.board))
    assert boards[0] == boards[1]


def test_no_opening_by_default_and_play_continues_normally():
    game = make_game_factory(C4)()
    for seed in range(20):
        game.reset(seed=seed)
        assert _pieces(game) == 0
    game = make_game_factory(C4, opening_plies=6)()
    rng = np.random.default_rng(0)
    for seed in range(30):
        obs = game.reset(seed=seed)
        done = False
        while not done:
            (agent, o), = obs.items()
            legal = game.legal_actions(o)
            res = game.step({agent: int(rng.choice(legal))})
            obs, done = res.obs, res.done
        assert res.rewards and set(res.rewards.values()) <= {-1.0, 0.0, 1.0}


def test_openings_refused_for_simultaneous_and_level_games(monkeypatch):
    import sys
    import types

    from spade_rllib.games import make_env

    for env_id in ("MazeRace-v0", "CartPole-v1"):
        with pytest.raises(ValueError, match="turn-based"):
            make_game_factory(env_id, opening_plies=2)
    # a PettingZoo ParallelEnv (all agents move at once) has no "opening": refused when built
    fake = types.ModuleType("fake_parallel_pz")
    fake.race = types.SimpleNamespace(parallel_env=lambda: make_env("MazeRace-v0", difficulty=1.0))
    monkeypatch.setitem(sys.modules, "fake_parallel_pz", fake)
    make_game_factory("fake_parallel_pz:race")()  # fine without openings
    with pytest.raises(ValueError, match="turn-based.*ParallelEnv"):
        make_game_factory("fake_parallel_pz:race", opening_plies=2)()


def _raw(env_id: str, key: str, plies) -> dict:
    raw = {"env": {"id": env_id}}
    raw.setdefault(key, {})["random_opening_plies"] = plies
    return raw


@pytest.mark.parametrize("key", ["env", "evaluation"])
def test_config_refuses_openings_outside_turn_based_games(key):
    with pytest.raises(ConfigError, match=rf"{key}.random_opening_plies = 2: only allowed with a turn-based"):
        parse_config(_raw("CaptureTheFlag-v0", key, 2))
    with pytest.raises(ConfigError, match=rf"{key}.random_opening_plies = -1: out of range"):
        parse_config(_raw(C4, key, -1))
    assert getattr(parse_config(_raw(C4, key, 3)), key).random_opening_plies == 3


def test_runner_trains_from_openings_and_evaluates_from_the_empty_board(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    raw = {"experiment": {"seed": 1}, "env": {"id": C4, "random_opening_plies": 4},
           "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
           "self_play": {"mode": "vs_random"}, "training": {"num_envs_per_runner": 8, "num_env_runners": 0}}
    runner = SpadeEnvRunner(config=build_algo_config(parse_config(raw)), worker_index=0, num_workers=0)
    try:
        runner.sample(num_timesteps=400)
        first_boards = []
        for i, game in enumerate(runner.games):
            game.reset(seed=1000 + i)
            first_boards.append(_pieces(game))
        assert max(first_boards) > 0, "training games should start after random opening moves"
        records = runner.evaluate_main({"opponents": ["random"], "games": 4, "greedy": True})
        assert len(records) == 4
        for game in runner._eval_lanes.games:
            game.reset(seed=7)
            assert _pieces(game) == 0, "evaluation starts from the empty board by default"
    finally:
        runner.stop()
