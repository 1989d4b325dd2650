"""Scripted bots: names, determinism, and the reference results the league relies on."""
from __future__ import annotations

from collections import Counter

import pytest

from spade_rllib.games import MAZERACE_ID, bot_names
from spade_rllib.games import make_bot as _make_bot
from spade_rllib.envs import Level, MazeRace
from spade_rllib.envs.maze_race import TAG

BOT_NAMES = bot_names(MAZERACE_ID)


def make_bot(name, seed=None):
    return _make_bot(name, seed, env_id=MAZERACE_ID)


def play(env: MazeRace, bots, seed: int) -> str:
    """One game; ``bots[team]`` plays every agent of that team. Returns the winner."""
    env.reset(seed=seed)
    info = {}
    while env.agents:
        _, _, _, _, info = env.step({a: bots[env.team_of(a)].act(env, a) for a in env.agents})
    return info[env.possible_agents[0]]["winner"]


def head_to_head(first: str, second: str, games: int, **env_kw) -> Counter:
    """``first`` vs ``second``, alternating sides; counts first / second / draw."""
    env = MazeRace(seed=0, **env_kw)
    c: Counter = Counter()
    for g in range(games):
        swap = g % 2
        bots = [make_bot(first, seed=g), make_bot(second, seed=10_000 + g)]
        if swap:
            bots.reverse()
        w = play(env, bots, seed=g)
        c["draw" if w == "draw" else (first if (w == "A") != bool(swap) else second)] += 1
    return c


def test_make_bot_names_and_errors():
    assert set(BOT_NAMES) == {"random", "rusher", "rusher_tagger"}
    with pytest.raises(ValueError, match="did you mean 'rusher'") as ei:
        make_bot("rushr")
    assert "rusher_tagger" in str(ei.value)


@pytest.mark.parametrize("name", BOT_NAMES)
def test_bots_deterministic_given_seed(name):
    env = MazeRace(difficulty=6, seed=0)
    runs = []
    for _ in range(2):
        bots = [make_bot(name, seed=1), make_bot(name, seed=2)]
        env.reset(seed=5)
        acts = []
        while env.agents:
            a = {x: bots[env.team_of(x)].act(env, x) for x in env.agents}
            acts.append(a)
            env.step(a)
        runs.append(acts)
    assert runs[0] == runs[1]
    assert all(isinstance(v, int) and 0 <= v < 6 for step in runs[0] for v in step.values())


def test_rusher_takes_a_shortest_path():
    env = MazeRace(difficulty=9, family="maze", seed=0)
    for seed in range(5):
        env.reset(seed=seed)
        d0 = env.level.team_distances()[0][0]
        bots = [make_bot("rusher", seed=seed), make_bot("random", seed=seed)]
        while env.agents:
            _, _, _, _, info = env.step({a: bots[env.team_of(a)].act(env, a) for a in env.agents})
        if info["player_0"]["winner"] == "A":
            assert info["player_0"]["episode_length"] == d0


@pytest.mark.parametrize("agents_per_team", [1, 2])
def test_rusher_beats_random_on_mid_difficulty(agents_per_team):
    for difficulty in (4, 5, 6):
        c = head_to_head("rusher", "random", games=60, difficulty=difficulty, agents_per_team=agents_per_team)
        assert c["rusher"] >= 0.95 * 60, (difficulty, c)


@pytest.mark.parametrize("kw", [dict(difficulty=5, family="maze"), dict(difficulty=7),
                                dict(difficulty=5, agents_per_team=2)])
def test_rusher_tagger_wins_more_than_it_loses_to_rusher(kw):
    c = head_to_head("rusher_tagger", "rusher", games=200, **kw)
    assert c["rusher_tagger"] > c["rusher"], c


def test_rusher_tagger_tags_a_closer_adjacent_opponent_only():
    env = MazeRace(level=Level.from_ascii("#######\n#.AB..#\n#.....#\n#..F..#\n#######"))
    env.reset(seed=0)
    bot = make_bot("rusher_tagger", seed=0)
    assert bot.act(env, "player_0") == TAG  # B is closer to the flag
    assert bot.act(env, "player_1") != TAG  # A is farther: just run
    env.step({"player_0": TAG})
    assert bot.act(env, "player_0") != TAG  # cooldown
