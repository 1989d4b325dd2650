"""A recurrent main through the whole training stack (Ray): CTF league (snapshots, PFSP, bots) with
the threshold curriculum trains, checkpoints and restores exactly, its snapshots sit in the runner
as recurrent slot modules; Connect Four with memory: lstm trains and evaluates; bf16 learner runs."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_train import C4, tiny  # noqa: E402

pytestmark = pytest.mark.ray

SMALL = ["agent.train_batch_size=512", "agent.minibatch_size=256", "agent.epochs=1", "agent.model.lstm_cell_size=16",
         "agent.model.max_seq_len=8", "agent.model.hidden=[16]", "training.num_env_runners=0",
         "training.num_envs_per_runner=8", "training.sample_ahead=false", "evaluation.interval=0",
         "evaluation.heldout_levels=[]", "league.every_n_iterations=1", "league.min_iterations_between=1",
         "league.num_opponent_slots=2", "curriculum.threshold.min_episodes=5", "curriculum.threshold.window=10"]


def test_ctf_league_curriculum_lstm_trains_checkpoints_and_restores(ray_session, tmp_path):
    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = load_config(str(ROOT / "tune_configs" / "league_lstm.yaml"), SMALL)
    assert cfg.agent.model.memory == "lstm" and cfg.league.enabled and cfg.curriculum.enabled and cfg.league.bots
    algo = build_algo_config(cfg).build_algo()
    try:
        for _ in range(3):
            result = algo.train()
        assert result["league"]["size"] >= 2  # snapshots taken
        runner = algo.env_runner
        slots = [m for m in runner.slot_modules.values()]
        assert slots and all(m.use_lstm for m in slots), "league snapshots must be recurrent slot modules"
        seats = [(i, a) for i in range(runner.lanes.n) for a, c in runner.lanes.controller[i].items()
                 if c.startswith("slot_") and a in runner.lanes.state[i]]
        assert seats, "no slot seat carries a recurrent state"
        ckpt = algo.save_to_path(str(tmp_path / "ckpt"))
        main = algo.module_weights("main")
        league_state = algo.get_state(components=["spade_components"])["spade_components"]
    finally:
        algo.stop()
    restored = build_algo_config(cfg, restore_from=ckpt).build_algo()
    try:
        again = restored.module_weights("main")
        assert set(again) == set(main) and all(np.array_equal(again[k], main[k]) for k in main)
        assert any(k.startswith("lstm.") for k in main)
        from spade_rllib.testing.state_equality import assert_exactly_equal

        assert_exactly_equal(restored.get_state(components=["spade_components"])["spade_components"]["league"],
                             league_state["league"])
        restored.train()  # and it trains on
    finally:
        restored.stop()


def test_connect_four_lstm_trains_and_evaluates(ray_session):
    from spade_rllib.config.run_config import parse_config
    from spade_rllib.rllib.algo_config import build_algo_config

    raw = tiny(C4, evaluation={"interval": 1, "games": 4, "opponents": ["random"]})
    raw["agent"]["model"].update({"memory": "lstm", "lstm_cell_size": 16, "max_seq_len": 8, "train_bf16": True})
    algo = build_algo_config(parse_config(raw)).build_algo()
    try:
        before = {k: v.copy() for k, v in algo.module_weights("main").items()}
        for _ in range(2):
            result = algo.train()
        after = algo.module_weights("main")
        assert any(not np.array_equal(before[k], after[k]) for k in before), "the LSTM did not train"
        assert all(v.dtype == np.float32 for v in after.values())
        assert result["eval"]["random"]["games"] == 4
        assert np.isfinite(result["learners"]["main"]["total_loss"])
    finally:
        algo.stop()
