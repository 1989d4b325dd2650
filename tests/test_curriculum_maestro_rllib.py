"""MAESTRO under RLlib with the league (SpadePPO, local env runner, a few tiny iterations): each
co-player gets its own level buffer, the episodes against an opponent are played on that opponent's
levels, the (level, opponent) pairs get their positive value loss from the GAE connector, and the
league's plan receives the co-player regret."""
from __future__ import annotations

import pytest

from spade_rllib.config.run_config import parse_config

pytestmark = pytest.mark.ray


def maestro_league_config() -> dict:
    return {
        "experiment": {"name": "maestro", "seed": 5},
        "env": {"id": "MazeRace-v0"},
        "agent": {"train_batch_size": 512, "minibatch_size": 256, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 8, "num_env_runners": 0},
        "league": {"enabled": True, "every_n_iterations": 1, "win_rate_threshold": None, "bots": ["rusher"],
                   "self_play_ratio": 0.2, "latest_ratio": 0.2, "sampling": "pfsp", "pfsp_weighting": "hard"},
        "curriculum": {"enabled": True, "strategy": "maestro",
                       "maestro": {"capacity": 3, "coplayer_mix": 0.5},
                       "plr": {"score": "positive_value_loss", "replay_prob": 1.0, "min_fill": 0.3},
                       "uniform": {"size": [7, 9]}},
        "evaluation": {"interval": 0},
    }


def test_levels_follow_the_opponent_and_regret_reaches_the_league(ray_session):
    from spade_rllib.curriculum.maestro import value_key
    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(parse_config(maestro_league_config())).build_algo()
    try:
        curriculum = next(c for c in algo.components if c.name == "curriculum")
        league = next(c for c in algo.components if c.name == "league")
        seen: list = []  # (buffers before the update, that update's outcomes)
        update = curriculum.update

        def recording_update(outcomes, ctx=None):
            buffers = {k: {e.spec["level_id"] for e in b.entries} for k, b in curriculum.strategy.buffers.items()}
            seen.append((buffers, list(outcomes), dict(ctx.level_value_loss)))
            return update(outcomes, ctx)

        curriculum.update = recording_update
        result = {}
        for _ in range(5):
            result = algo.train()
        strategy = curriculum.strategy
        assert result["curriculum"]["coplayers"] >= 2
        assert {"bot:rusher", "random"} <= set(strategy.buffers)
        # the GAE connector summed main's positive advantages per (level, opponent) pair
        assert any("@" in k for _, _, sums in seen for k in sums)
        assert any(e.pvl is not None for b in strategy.buffers.values() for e in b.entries)
        # replay_prob 1: once an opponent's buffer can replay, every later episode against it is played
        # on one of its levels (episodes still in flight from an older broadcast aside)
        hits = total = 0
        for buffers, outcomes, _ in seen[2:]:
            for o in outcomes:
                if o.learner == "main" and o.opponent in buffers and len(buffers[o.opponent]) >= 1:
                    total += 1
                    hits += o.level_id in buffers[o.opponent]
        assert total > 20 and hits / total > 0.8, (hits, total)
        assert strategy.buffers["bot:rusher"].entries and strategy.buffers["random"].entries
        # the league got the co-player distribution, as league members
        priority, mix = league.league._coplayer
        assert mix == 0.5 and priority and all(not isinstance(k, str) for k in priority)
        assert set(map(str, priority)) >= {"rusher", "random"}
        assert set(result["curriculum"]["coplayer_p"]) >= {"bot:rusher", "random"}  # progress.csv / TensorBoard
        assert value_key("x", "random") == "x@random"
    finally:
        algo.stop()
