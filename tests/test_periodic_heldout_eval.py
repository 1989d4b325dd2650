"""Held-out evaluation glue (`spade_rllib.rllib.periodic_heldout_eval`): config keys, the in-process evaluation's
metric keys, and SpadePPO's Ray-task evaluation landing in the iteration results."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.games import MAZERACE_ID, heldout_dir, heldout_opponents
from spade_rllib.rllib.periodic_heldout_eval import LEVEL_KEYS, MEAN_KEYS, placeholder_metrics
from spade_rllib.artifacts.result_lookup import flatten

HELDOUT_DIR = heldout_dir(MAZERACE_ID)

HELDOUT_OPPONENTS = heldout_opponents(MAZERACE_ID)
SMALL_MAPS = [str(HELDOUT_DIR / "open_room.txt"), str(HELDOUT_DIR / "pillars.txt")]
LEVELS = ["open_room", "pillars"]


def tiny(**sections) -> dict:
    raw = {
        "experiment": {"name": "t", "seed": 5},
        "env": {"id": "MazeRace-v0", "difficulty": 1.0},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 4, "num_env_runners": 0},
        "evaluation": {"interval": 1, "games": 2, "opponents": ["random"], "heldout_levels": SMALL_MAPS, "heldout_games": 2},
    }
    for k, v in sections.items():
        raw.setdefault(k, {}).update(v)
    return raw


def expected_keys(levels=LEVELS) -> set:
    keys = {f"heldout/{lv}/{opp}/{k}" for lv in levels for opp in HELDOUT_OPPONENTS for k in LEVEL_KEYS}
    keys |= {f"heldout/{opp}/{k}" for opp in HELDOUT_OPPONENTS for k in MEAN_KEYS}
    return keys


def test_config_keys(tmp_path, monkeypatch):
    cfg = parse_config({"env": {"id": MAZERACE_ID}, "evaluation": {"heldout_levels": ["spade_rllib/levels/heldout"], "heldout_games": 3}})
    assert cfg.evaluation.heldout_games == 3
    (path,) = cfg.evaluation.heldout_levels
    assert os.path.isabs(path) and Path(path) == HELDOUT_DIR  # absolute: Tune runs trials in the trial dir
    monkeypatch.chdir(tmp_path)
    assert parse_config(cfg.to_dict()).evaluation.heldout_levels == [path]
    with pytest.raises(ConfigError, match=r"evaluation.heldout_games = 0: out of range"):
        parse_config({"env": {"id": MAZERACE_ID}, "evaluation": {"heldout_games": 0}})
    with pytest.raises(ConfigError, match=r"evaluation.heldout_levels\[0\] = 'nope.txt': file not found"):
        parse_config({"env": {"id": MAZERACE_ID}, "evaluation": {"heldout_levels": ["nope.txt"]}})
    with pytest.raises(ConfigError, match="evaluation.heldout_levels: only allowed with env.id 'MazeRace-v0'"):
        parse_config({"env": {"id": "CartPole-v1"}, "evaluation": {"heldout_levels": [str(HELDOUT_DIR)]}})


def test_play_heldout_in_process_keys_and_values():
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.periodic_heldout_eval import play_heldout
    from spade_rllib.rllib.runner import MAIN, SpadeEnvRunner

    cfg = parse_config(tiny())
    algo_config = build_algo_config(cfg)
    runner = SpadeEnvRunner(config=algo_config, worker_index=0, num_workers=0)
    weights = runner.module[MAIN].get_state()
    runner.stop()
    m = play_heldout(algo_config, weights, cfg.evaluation.heldout_levels, games=2)
    assert expected_keys() <= set(m)
    for lv in LEVELS:
        for opp in HELDOUT_OPPONENTS:
            assert m[f"heldout/{lv}/{opp}/games"] == 2.0
            w, d = m[f"heldout/{lv}/{opp}/win_rate"], m[f"heldout/{lv}/{opp}/draw_rate"]
            assert 0.0 <= w <= 1.0 and 0.0 <= d <= 1.0 and w + d <= 1.0
            assert m[f"heldout/{lv}/{opp}/score"] == pytest.approx(w + d / 2)
            assert m[f"heldout/{lv}/{opp}/mean_length"] > 0
    for opp in HELDOUT_OPPONENTS:
        mean = sum(m[f"heldout/{lv}/{opp}/win_rate"] for lv in LEVELS) / len(LEVELS)
        assert m[f"heldout/{opp}/win_rate"] == pytest.approx(mean)


@pytest.mark.ray
def test_spade_ppo_heldout_metrics_in_results(ray_session):
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny())
    algo = build_algo_config(cfg).build_algo()
    try:
        first = algo.train()  # launches the evaluation of iteration 1 (a Ray task); NaN until it returns
        flat = flatten(first)
        assert expected_keys() <= set(flat)
        assert algo.heldout.pending is not None and algo.heldout.pending_iteration == 1
        assert algo.heldout.poll(timeout=180), "held-out task did not finish"
        second = flatten(algo.train())
        assert second["heldout/iteration"] == 1.0 and second["heldout/eval_s"] > 0
        for lv in LEVELS:
            for opp in HELDOUT_OPPONENTS:
                assert second[f"heldout/{lv}/{opp}/games"] == 2.0
                assert not math.isnan(second[f"heldout/{lv}/{opp}/win_rate"])
        assert not math.isnan(second["heldout/rusher_tagger/win_rate"])
    finally:
        algo.stop()
    assert algo.heldout.pending is None  # stop() cancels a running evaluation


def test_placeholders_cover_every_key():
    m = placeholder_metrics(LEVELS, list(HELDOUT_OPPONENTS))
    assert expected_keys() <= set(m) and all(math.isnan(v) for v in m.values())


