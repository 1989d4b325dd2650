"""OpenSpiel games in the catalog: the PettingZoo API, chance, masks, returns, refusals. Pure core, no Ray."""
from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from pettingzoo.test import api_test  # noqa: E402

from spade_rllib.envs.openspiel_env import OpenSpielEnv, load_game  # noqa: E402
from spade_rllib.games import EnvIdError, find_game, game, resolve_env  # noqa: E402
from spade_rllib.games.adapter import make_game_factory  # noqa: E402


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_pettingzoo_api(name):
    api_test(OpenSpielEnv(name), num_cycles=200)


def test_catalog_ids_and_aliases():
    assert game("kuhn_poker").turns == "alternating"
    assert find_game("openspiel:kuhn_poker").id == "kuhn_poker"
    assert find_game("openspiel:leduc_poker").id == "leduc_poker"
    assert find_game("openspiel:liars_dice").openspiel_game == "liars_dice"
    assert resolve_env("openspiel:liars_dice").api == "aec"


@pytest.mark.parametrize("bad, words", [("openspiel:kuhn_pokr", "did you mean 'kuhn_poker'"),
                                        ("openspiel:goofspiel", "SIMULTANEOUS"),
                                        ("openspiel:chess", "information_state_tensor")])
def test_unsupported_games_refused_in_one_line(bad, words):
    with pytest.raises(EnvIdError) as e:
        resolve_env(bad)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_missing_pyspiel_refused_in_one_line(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyspiel(name, *a, **k):
        if name == "pyspiel":
            raise ImportError("No module named 'pyspiel'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyspiel)
    with pytest.raises(ValueError, match=r"env id 'leduc_poker' needs OpenSpiel, which is not installed: pip install"):
        game("leduc_poker").check()
    resolve_env.cache_clear()
    with pytest.raises(EnvIdError, match="needs OpenSpiel"):
        resolve_env("leduc_poker")
    resolve_env.cache_clear()


def _play(env: OpenSpielEnv, choose) -> tuple[list, dict]:
    """Play one game; returns (the observations seen, final rewards)."""
    seen, final = [], {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            final[agent] = reward
            env.step(None)
            continue
        seen.append((agent, obs))
        env.step(choose(agent, obs))
    return seen, final


def test_chance_sampled_inside_with_the_seeded_rng():
    env = OpenSpielEnv("kuhn_poker")
    cards = []
    for seed in range(200):
        env.reset(seed=seed)
        assert not env.state.is_chance_node() and env.agent_selection == "player_0"
        cards.append(tuple(env.state.history()[:2]))
    counts = {c: cards.count(c) for c in set(cards)}
    assert len(counts) == 6  # every deal of 2 of the 3 cards
    assert min(counts.values()) > 15  # ~ uniform (expected 33 each)
    env.reset(seed=7)
    first = env.state.history()
    env.reset(seed=7)
    assert env.state.history() == first  # seeded


def test_chance_outcomes_drawn_with_their_probabilities():
    env = OpenSpielEnv("kuhn_poker")
    env.reset(seed=3)
    outcomes = [(4, 0.1), (7, 0.6), (9, 0.3)]
    draws = [env._chance_outcome(outcomes) for _ in range(20000)]
    freq = {a: draws.count(a) / len(draws) for a, _ in outcomes}
    assert set(draws) == {4, 7, 9}
    for a, p in outcomes:  # 20k draws: a standard error of at most 0.0035
        assert abs(freq[a] - p) < 0.015, (a, freq[a], p)
    assert env._chance_outcome([(5, 1.0)]) == 5


def test_leduc_public_card_dealt_mid_game_and_masks_are_legal_actions():
    env = OpenSpielEnv("leduc_poker")
    rng = np.random.default_rng(0)
    public_seen = 0
    for seed in range(50):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            player = int(agent[-1])
            assert env.state.current_player() == player
            legal = env.state.legal_actions(player)
            assert np.flatnonzero(obs["action_mask"]).tolist() == legal
            assert np.array_equal(obs["observation"], np.asarray(env.state.information_state_tensor(player), np.float32))
            other = env.observe(f"player_{1 - player}")
            assert not other["action_mask"].any()  # only the player to move has legal actions
            # Leduc's tensor: player (2), private card (6), public card (6), betting: the public card is
            # dealt by a chance node between the rounds, inside the env.
            round_two = "[Round 2]" in env.state.information_state_string(player)
            assert obs["observation"][8:14].sum() == (1.0 if round_two else 0.0)
            public_seen += round_two
            env.step(int(rng.choice(legal)))
    assert public_seen > 20


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_games_run_to_terminal_with_openspiel_returns(name):
    env = OpenSpielEnv(name)
    rng = np.random.default_rng(1)
    for seed in range(100):
        env.reset(seed=seed)
        _, rewards = _play(env, lambda agent, obs: int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert env.state.is_terminal()
        returns = env.state.returns()
        assert rewards == {"player_0": returns[0], "player_1": returns[1]}
        assert rewards["player_0"] == -rewards["player_1"]  # zero-sum
        assert name != "kuhn_poker" or rewards["player_0"] != 0  # Kuhn has no tie (Leduc splits a pair)


def test_kuhn_known_lines():
    """Kuhn: both pass -> the higher card wins the antes (1); bet-call -> 2; bet-fold -> the bettor wins 1."""
    env = OpenSpielEnv("kuhn_poker")
    for seed in range(30):
        env.reset(seed=seed)
        c0, c1 = env.state.history()[:2]
        high = 1.0 if c0 > c1 else -1.0
        for line, want in (([0, 0], high), ([1, 1], 2 * high), ([1, 0], 1.0), ([0, 1, 0], -1.0)):
            env.reset(seed=seed)
            moves = iter(line)
            _, rewards = _play(env, lambda agent, obs: next(moves))
            assert rewards["player_0"] == want, (c0, c1, line)


@pytest.mark.parametrize("name, states", [("kuhn_poker", 12), ("leduc_poker", 936)])
def test_observation_tells_every_information_state_apart(name, states):
    from open_spiel.python.policy import TabularPolicy

    table = TabularPolicy(load_game(name))
    assert len(table.states) == states
    tensors = {tuple(s.information_state_tensor(s.current_player())) for s in table.states}
    assert len(tensors) == states


@pytest.mark.parametrize("env_id", ["kuhn_poker", "leduc_poker"])
def test_adapter_flat_obs_with_trailing_mask(env_id):
    g = make_game_factory(env_id)()
    spiel = load_game(game(env_id).openspiel_game)
    assert g.obs_size == spiel.information_state_tensor_size() + spiel.num_distinct_actions()
    assert g.mask_size == g.num_actions == spiel.num_distinct_actions()
    rng = np.random.default_rng(0)
    obs = g.reset(seed=3)
    total = {a: 0.0 for a in g.agents}
    while True:
        (agent, o), = obs.items()
        step = g.step({agent: g.random_action(o, rng)})
        for a, r in step.rewards.items():
            total[a] += r
        if step.done:
            break
        obs = step.obs
    assert total["player_0"] == -total["player_1"]
