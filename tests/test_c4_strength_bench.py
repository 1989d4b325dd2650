"""bench/ablations/c4_strength.py without training: openings, paired games, and the peer's view of the board."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo.classic")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "ablations" / "c4_strength.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("c4_strength", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openings_are_legal_and_seeded(bench):
    a = [bench.random_opening(np.random.default_rng(3), 6) for _ in range(2)]
    assert a[0] == a[1] and all(0 <= c < 7 for c in a[0])
    assert bench.random_opening(np.random.default_rng(4), 6) != a[0]


def test_paired_games_rank_the_references(bench):
    rng = np.random.default_rng(0)
    tactical, random = bench.BotPlayer("tactical", 1), bench.BotPlayer("random", 2)
    assert bench.match(tactical, random, 40, 2, rng) >= 0.85
    # a player against itself with shared openings and swapped seats scores exactly 0.5 when deterministic
    lookahead = bench.BotPlayer("lookahead", 5)
    lookahead.bot.rng = None  # must not be used: ties are broken by the RNG, so pin one below
    lookahead.bot._pick = lambda columns: min(columns)
    assert bench.match(lookahead, lookahead, 10, 2, rng) == pytest.approx(0.5)


def test_peer_sees_the_same_position(bench):
    pyspiel = pytest.importorskip("pyspiel")
    from pettingzoo.classic import connect_four_v3

    moves = [3, 3, 2, 4, 6, 0, 3]
    env = connect_four_v3.env()
    env.reset()
    for col in moves:
        env.step(col)
    state = pyspiel.load_game("connect_four").new_initial_state()
    for col in moves:
        state.apply_action(col)
    planes = np.asarray(state.observation_tensor(), np.float32).reshape(3, 6, 7)  # x, o, empty; row 0 bottom
    board = np.array(env.unwrapped.board).reshape(6, 7)[::-1]  # PettingZoo: row 0 on top
    np.testing.assert_array_equal(planes[0], board == 1)  # OpenSpiel's x = player_0, the first mover
    np.testing.assert_array_equal(planes[1], board == 2)
    assert state.current_player() == 1 and env.agent_selection == "player_1"
