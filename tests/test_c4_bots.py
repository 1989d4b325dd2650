"""Connect Four scripted bots: tactics on hand-made boards, the strength ladder, determinism."""
from __future__ import annotations

import random

import pytest

pytest.importorskip("pettingzoo.classic")
from pettingzoo.classic import connect_four_v3

from spade_rllib.games import bot_names, default_bot_names, make_bot
from spade_rllib.bots.c4_bots import (COLUMN, LookaheadBot, MCTSBot, _playable, from_board, is_win,
                                      legal_columns, rollout, winning_cells)

ENV_ID = "pettingzoo.classic:connect_four_v3"
SEEDS = range(20)


def position(moves: list[int]):
    """A fresh env after playing ``moves`` (columns, player_0 first)."""
    env = connect_four_v3.env()
    env.reset(seed=0)
    for col in moves:
        env.step(col)
    return env


def play(bots: dict, seed: int) -> tuple[float, list[int]]:
    """One game (``bots[agent]``); returns player_0's score (1 / 0.5 / 0) and the columns played."""
    env = connect_four_v3.env()
    env.reset(seed=seed)
    moves = []
    while True:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        legal = [c for c in range(7) if env.unwrapped.board[c] == 0]
        col = bots[agent].act(env, agent)
        assert isinstance(col, int) and col in legal, (col, legal)
        moves.append(col)
        env.step(col)
    return (env.rewards["player_0"] + 1) / 2, moves


def match_score(first: str, second: str, games: int) -> float:
    """``first``'s mean score against ``second`` (win 1, draw 0.5), seats swapped every game."""
    total = 0.0
    for g in range(games):
        a, b = make_bot(first, seed=g, env_id=ENV_ID), make_bot(second, seed=10_000 + g, env_id=ENV_ID)
        if g % 2 == 0:
            total += play({"player_0": a, "player_1": b}, seed=g)[0]
        else:
            total += 1.0 - play({"player_0": b, "player_1": a}, seed=g)[0]
    return total / games


def test_names_and_env_ids():
    assert bot_names("connect_four_v3") == ("random", "mcts10", "tactical", "mcts100", "lookahead", "mcts1000")
    assert bot_names(ENV_ID) == bot_names("connect_four_v3")
    assert default_bot_names(ENV_ID) == ("random", "mcts10", "tactical", "mcts100", "lookahead")  # no mcts1000
    with pytest.raises(ValueError, match="did you mean 'tactical'"):
        make_bot("tactcal", env_id=ENV_ID)
    with pytest.raises(ValueError, match="depth"):
        LookaheadBot(0, depth=0)


def test_bitboard_threats_match_the_board():
    # player_0 on the bottom row in columns 1..3: threats at 0 and 4 (bottom row), no four yet.
    env = position([1, 6, 2, 6, 3])
    mine, mask = from_board(env.unwrapped.board, 1)
    theirs = mine ^ mask
    assert not is_win(mine) and not is_win(theirs)
    cells = winning_cells(mine, mask)
    assert [c for c in range(7) if cells & (1 << (c * 7))] == [0, 4]
    assert winning_cells(theirs, mask) == 0  # two stones in column 6: no threat yet


@pytest.mark.parametrize("name", ["tactical", "lookahead", "mcts100", "mcts1000"])
def test_takes_an_immediate_win_over_blocking(name):
    # player_0: bottom row 1..3 (wins at 0 or 4); player_1: three stacked in column 6 (wins at 6).
    env = position([1, 6, 2, 6, 3, 6])
    for seed in SEEDS:
        assert make_bot(name, seed, env_id=ENV_ID).act(env, "player_0") in (0, 4)


@pytest.mark.parametrize("name", ["tactical", "lookahead", "mcts100", "mcts1000"])
def test_blocks_an_immediate_loss(name):
    # player_0: bottom row 0..2, threatens column 3; player_1 (to move) has no win of its own.
    env = position([0, 6, 1, 6, 2])
    for seed in SEEDS:
        assert make_bot(name, seed, env_id=ENV_ID).act(env, "player_1") == 3


def test_lookahead_finds_a_two_move_forced_win():
    # player_0 on the bottom row at 2, 3; player_1 at 0 and 6. Only column 4 makes two open threats
    # (1 and 5) at once: a win on player_0's second move whatever player_1 does. Tactical sees no win.
    env = position([2, 0, 3, 6])
    mine, mask = from_board(env.unwrapped.board, 1)
    scores = LookaheadBot(0).scores(mine, mask)
    assert max(scores, key=scores.get) == 4 and sorted(scores.values())[-2] < scores[4]
    for seed in SEEDS:
        assert make_bot("lookahead", seed, env_id=ENV_ID).act(env, "player_0") == 4
    assert len({make_bot("tactical", seed, env_id=ENV_ID).act(env, "player_0") for seed in SEEDS}) > 1


def test_ladder_random_tactical_lookahead():
    # Measured over 100 / 40 games: tactical ~0.98 against random, lookahead ~0.97 against tactical.
    assert match_score("tactical", "random", 60) >= 0.85
    assert match_score("lookahead", "tactical", 30) >= 0.85
    assert match_score("lookahead", "random", 10) >= 0.95


@pytest.mark.parametrize("name", ["random", "tactical", "lookahead", "mcts10", "mcts100"])
def test_deterministic_given_seed(name):
    games = [play({"player_0": make_bot(name, 3, env_id=ENV_ID), "player_1": make_bot(name, 4, env_id=ENV_ID)}, seed=0)
             for _ in range(2)]
    assert games[0] == games[1]
    other = play({"player_0": make_bot(name, 5, env_id=ENV_ID), "player_1": make_bot(name, 6, env_id=ENV_ID)}, seed=0)
    assert other[1] != games[0][1]  # the seed matters: random tie-breaks differ


def test_mcts_rollout_matches_a_plain_random_game():
    # The unrolled rollout against a straightforward one (legal_columns, is_win) on the same random draws.
    def plain(mine, mask, rand):
        sign = 1
        while legal_columns(mask):
            columns = legal_columns(mask)
            move = _playable(mask) & COLUMN[columns[int(rand() * len(columns))]]
            mine, mask = mine | move, mask | move
            if is_win(mine):
                return sign
            mine, sign = mine ^ mask, -sign
        return 0

    starts = [(0, 0), from_board(position([3, 3, 2, 4, 4, 2, 5, 1, 1, 6]).unwrapped.board, 1)]
    for seed in range(300):
        for mine, mask in starts:
            assert rollout(mine, mask, random.Random(seed).random) == plain(mine, mask, random.Random(seed).random)


def test_mcts_always_plays_a_legal_column():
    # Random positions of 0..40 plies nobody has won yet, some with only one or two open columns.
    rng = random.Random(0)
    checked = 0
    while checked < 30:
        env = position([])
        plies = rng.randrange(41)
        for _ in range(plies):
            agent = env.agent_selection
            if env.terminations[agent]:
                break
            env.step(rng.choice([c for c in range(7) if env.unwrapped.board[c] == 0]))
        agent = env.agent_selection
        if env.terminations[agent]:
            continue
        legal = [c for c in range(7) if env.unwrapped.board[c] == 0]
        for bot in (MCTSBot(checked, simulations=1), make_bot("mcts10", checked, env_id=ENV_ID),
                    make_bot("mcts100", checked, env_id=ENV_ID)):
            col = bot.act(env, agent)
            assert isinstance(col, int) and col in legal, (col, legal)
        checked += 1
    with pytest.raises(ValueError, match="simulations"):
        MCTSBot(0, simulations=0)
    with pytest.raises(ValueError, match="uct_c"):
        MCTSBot(0, uct_c=-1.0)


def test_mcts_ladder():
    # Fixed seeds (match_score), so these scores are exact: mcts1000 1.0 against random (10 games),
    # mcts100 1.0 against mcts10 and mcts1000 0.9 against mcts100 (20 each). Where the rungs sit among
    # the other bots (20 games each): mcts10 0.65 against random (40 games) and 0.1 against tactical,
    # mcts100 0.85 against tactical and 0.125 against lookahead. Over 100 games: 1.0, 0.99, 0.94,
    # 0.68, 0.17, 0.90, 0.14 (mcts1000 scores 0.57 against lookahead, too close to assert here).
    assert match_score("mcts1000", "random", 10) >= 0.9
    assert match_score("mcts100", "mcts10", 20) >= 0.85
    assert match_score("mcts1000", "mcts100", 20) >= 0.7
    assert match_score("mcts10", "random", 40) >= 0.55
    assert match_score("tactical", "mcts10", 20) >= 0.7
    assert match_score("mcts100", "tactical", 20) >= 0.7
    assert match_score("lookahead", "mcts100", 20) >= 0.65


def test_mcts_bots_by_name_and_the_default_evaluation_pool():
    from spade_rllib.evaluation.players import bots_for_env, default_bots_for_env

    bot = make_bot("mcts100", 0, env_id=ENV_ID)
    assert isinstance(bot, MCTSBot) and bot.simulations == 100
    assert make_bot("mcts1000", 0, env_id=ENV_ID).simulations == 1000
    assert bot.act(position([]), "player_0") in range(7)
    assert "mcts1000" in bots_for_env(ENV_ID) and "mcts1000" not in default_bots_for_env(ENV_ID)
    assert default_bots_for_env(ENV_ID) == default_bot_names(ENV_ID)


def test_run_config_accepts_connect_four_bots():
    from spade_rllib.config.run_config import ConfigError, parse_config

    cfg = parse_config({"env": {"id": ENV_ID}, "self_play": {"opponent_mix": {"bot:tactical": 0.2}},
                        "evaluation": {"opponents": ["random", "bot:tactical", "bot:lookahead"]}})
    assert cfg.evaluation.opponents[2] == "bot:lookahead"
    cfg = parse_config({"env": {"id": ENV_ID}, "self_play": {"opponent_mix": {"bot:mcts1000": 0.2}},
                        "evaluation": {"opponents": ["bot:mcts1000"]}})  # named explicitly: slow bots too
    assert cfg.evaluation.opponents == ["bot:mcts1000"]
    with pytest.raises(ConfigError, match="unknown opponent.*'bot:lookahead'"):
        parse_config({"env": {"id": ENV_ID}, "evaluation": {"opponents": ["bot:rusher"]}})
    with pytest.raises(ConfigError, match="unknown opponent.*'bot:rusher'"):
        parse_config({"env": {"id": "MazeRace-v0"}, "evaluation": {"opponents": ["bot:tactical"]}})  # other bots
    with pytest.raises(ConfigError, match="did you mean 'bot:rusher'"):
        parse_config({"env": {"id": "MazeRace-v0"}, "self_play": {"opponent_mix": {"bot:rushr": 0.1}}})
