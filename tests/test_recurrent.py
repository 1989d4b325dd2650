"""Recurrent policies (`agent.model.memory: lstm`): module, env runner state, learner sequences, config errors.

The runner checks replay every recorded chunk through the module step by step from its recorded
start state: the behaviour logits the runner stored and the states it recorded at each sequence
start must come out again, which holds only if each seat's state advanced exactly on that agent's
own steps (Connect Four: across the opponent's moves) and reset where the runner says it does.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train import C4, tiny

LSTM = {"memory": "lstm", "lstm_cell_size": 16, "max_seq_len": 5}


def lstm_cfg(env_id: str, model: dict | None = None, **sections):
    raw = tiny(env_id, **sections)
    raw["agent"]["model"].update({**LSTM, **(model or {})})
    return parse_config(raw)


def make_runner(cfg, packed: bool = True):
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    config = build_algo_config(cfg)
    config.env_config["spade"]["packed"] = packed
    return SpadeEnvRunner(config=config, worker_index=0, num_workers=0)


def replay(module, pack) -> tuple[float, float, int]:
    """Max |logit difference| and max |state difference| of replaying every chunk of `pack` step
    by step from its first recorded state; and the number of sequence starts checked."""
    import torch

    from spade_rllib.rllib.packed import sequence_layout

    cell = module.cell_size
    seq = module.max_seq_len
    layout = sequence_layout(pack.lengths + 1, seq)
    first_seq = np.concatenate([[0], np.cumsum(-(-(pack.lengths + 1) // seq))[:-1]])
    row = step = 0
    dl = ds = 0.0
    checked = 0
    for c, n in enumerate(pack.lengths.tolist()):
        s0 = torch.from_numpy(pack.states[first_seq[c]][None])
        state = {"h": s0[:, :cell], "c": s0[:, cell:]}
        for k in range(n + 1):
            if k % seq == 0:
                rec = pack.states[first_seq[c] + k // seq]
                ds = max(ds, float(np.abs(torch.cat([state["h"], state["c"]], 1).numpy()[0] - rec).max()))
                checked += 1
            obs = torch.from_numpy(pack.obs[row + k][None])
            pa = torch.tensor([int(pack.prev_actions[row + k])])
            pr = torch.tensor([float(pack.prev_rewards[row + k])])
            with torch.no_grad():
                logits, state = module.step(obs, state, pa, pr)
            if k < n:
                dl = max(dl, float(np.abs(logits.numpy()[0] - pack.logits[step + k]).max()))
        row += n + 1
        step += n
    assert checked == layout.num_seqs
    return dl, ds, checked


def test_module_sequence_forward_equals_stepping():
    import gymnasium as gym
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from spade_rllib.rllib.module import SpadeModule

    mc = {"kind": "mlp", "hidden": [16], "activation": "tanh", "mask_size": 3, "use_lstm": True, "lstm_cell_size": 8,
          "max_seq_len": 4, "lstm_use_prev_action": True, "lstm_use_prev_reward": True}
    m = RLModuleSpec(module_class=SpadeModule, observation_space=gym.spaces.Box(-1, 1, (6,), np.float32),
                     action_space=gym.spaces.Discrete(3), model_config=mc).build()
    assert m.is_stateful() and set(m.get_initial_state()) == {"h", "c"}
    obs = torch.rand(2, 5, 6)
    obs[..., 3:] = 1.0
    obs[0, 2, 5] = 0.0  # one illegal action
    st = {k: torch.randn(2, 8) for k in ("h", "c")}
    pa, pr = torch.randint(0, 3, (2, 5)), torch.rand(2, 5)
    out = m.forward_train({"obs": obs, "state_in": st, "prev_actions": pa, "prev_rewards": pr})
    s, logits = st, []
    for t in range(5):
        lg, s = m.step(obs[:, t], s, pa[:, t], pr[:, t])
        logits.append(lg)
    assert torch.allclose(torch.stack(logits, 1), out["action_dist_inputs"], atol=1e-6)
    assert torch.allclose(s["h"], out["state_out"]["h"], atol=1e-6)
    assert out["action_dist_inputs"][0, 2, 2] < -1e30  # masked as in the feed-forward module
    with pytest.raises(TypeError, match="step"):
        m.fast_logits(obs[:, 0])


@pytest.mark.parametrize("env_id, model", [(C4, {}), ("MazeRace-v0", {"lstm_use_prev_action": True, "lstm_use_prev_reward": True}),
                                           ("CartPole-v1", {})], ids=["connect_four_turns", "mazerace_prev", "cartpole"])
def test_runner_records_states_the_module_reproduces(env_id, model):
    """Behaviour logits and sequence-start states recorded by the runner equal a step-by-step replay."""
    runner = make_runner(lstm_cfg(env_id, model, training={"num_envs_per_runner": 3}))
    try:
        import torch

        with torch.no_grad():  # weights far from init: a state that did not carry would show
            for p in runner.module["main"].parameters():
                p.normal_(0.0, 0.5)
        for _ in range(2):  # the second sample continues chunks cut by the first
            (pack,) = runner.sample(num_timesteps=120)
            assert pack.recurrent and pack.states.shape[1] == 2 * 16
            dl, ds, checked = replay(runner.module["main"], pack)
            assert checked > pack.num_chunks  # chunks longer than max_seq_len were cut into several sequences
            assert dl < 1e-5 and ds < 1e-5, (dl, ds)
        if env_id == C4:  # mirror: both seats are main, each with its own state once it has moved
            lanes = runner.lanes
            two = [i for i in range(lanes.n) if lanes.length[i] >= 2]
            assert two and all(len(lanes.state[i]) == 2 for i in two)
            assert all(not np.allclose(*lanes.state[i].values()) for i in two)
    finally:
        runner.stop()


def test_recurrent_batch_layout_values_and_gae():
    """The connector's (B, L) batch: one sequence per max_seq_len rows of a chunk, loss mask on step
    rows only, and the same GAE as the flat function on values from the sequence forward."""
    import torch

    from spade_rllib.rllib.packed import SpadeGAEConnector, gae

    runner = make_runner(lstm_cfg(C4, training={"num_envs_per_runner": 2}))
    try:
        (pack,) = runner.sample(num_timesteps=200)
        module = runner.module["main"]
        conn = SpadeGAEConnector(gamma=0.9, lambda_=0.8)
        shared: dict = {}
        batch = conn(rl_module=runner.module, batch={}, episodes=[pack], shared_data=shared)["main"]
        assert shared == {"_zero_padded_for_mid=main": True}
        b = pack.states.shape[0]
        assert batch["obs"].shape[:2] == (b, 5) and batch["state_in"]["h"].shape == (b, 16)
        assert int(batch["loss_mask"].sum()) == len(pack)
        assert int(batch["seq_lens"].sum()) == len(pack) + pack.num_chunks
        assert torch.equal(batch["actions"][batch["loss_mask"]], torch.from_numpy(pack.actions))
        # Values replayed row by row through the LSTM give the same advantages.
        cell = module.cell_size
        values, row, seq_i = [], 0, 0
        for n in pack.lengths.tolist():
            s = torch.from_numpy(pack.states[seq_i][None])
            state = {"h": s[:, :cell], "c": s[:, cell:]}
            for k in range(n + 1):
                with torch.no_grad():
                    _, emb, state = module._recurrent({"obs": torch.from_numpy(pack.obs[row + k][None]), "state_in": state})
                    values.append(float(module.vf_head(emb)[0, 0]))
            seq_i += -(-(n + 1) // 5)
            row += n + 1
        adv, _ = gae(np.asarray(values, np.float32), pack, 0.9, 0.8)
        adv = (adv - adv.mean()) / max(1e-4, float(adv.std()))
        np.testing.assert_allclose(batch["advantages"][batch["loss_mask"]].numpy(), adv, atol=1e-4)
    finally:
        runner.stop()


def test_slot_snapshot_is_recurrent_and_resets_on_swap():
    """A frozen league slot of a recurrent main keeps its own state per seat, which changes across
    its steps inside the runner, and restarts from zeros when the driver swaps the slot's weights."""
    from spade_rllib.rllib.plan import DriverUpdate, OpponentPlan

    runner = make_runner(lstm_cfg("MazeRace-v0", training={"num_envs_per_runner": 2}))
    try:
        weights = runner.main_weights()
        plan = OpponentPlan(entries=(("slot_0", 1.0),), seed=1)
        runner.apply_driver_update(DriverUpdate(opponent_plan=plan, slot_weights={"slot_0": {"member": "main_v1", "weights": weights}}))
        runner.sample(num_timesteps=2)
        lanes = runner.lanes

        def slot_states():
            return {(i, a): s.copy() for i in range(lanes.n) for a, s in lanes.state[i].items()
                    if lanes.controller[i].get(a) == "slot_0"}

        first = slot_states()
        assert first, "slot_0 seats hold no recurrent state"
        runner.sample(num_timesteps=2)
        second = slot_states()
        common = set(first) & set(second)
        assert common and any(not np.allclose(first[k], second[k]) for k in common), "a snapshot's state did not change across its steps"
        runner.apply_driver_update(DriverUpdate(slot_weights={"slot_0": {"member": "main_v2", "weights": weights}}))
        assert slot_states() == {}, "swapping the slot's weights must reset its seats' states"
    finally:
        runner.stop()


def test_stock_episode_path_hands_rllib_the_recorded_states():
    """Non-packed runner output: RLlib's AddStatesFromEpisodesToBatch reads the state each chunk
    starts from (a chunk cut mid-episode too) out of STATE_OUT and its lookback entry."""
    from ray.rllib.connectors.common.add_states_from_episodes_to_batch import AddStatesFromEpisodesToBatch

    cfg = lstm_cfg("CartPole-v1", training={"num_envs_per_runner": 2})
    packed_runner = make_runner(cfg)
    runner = make_runner(cfg, packed=False)
    try:
        runner.sample(num_timesteps=30)
        episodes = runner.sample(num_timesteps=30)  # chunks continuing from the first sample
        conn = AddStatesFromEpisodesToBatch(as_learner_connector=True, max_seq_len=5)
        starts_from_zero = []
        for e in episodes:
            out = conn(rl_module=runner.module, batch={}, episodes=[e], shared_data={})
            (items,) = out["state_in"].values()
            h = np.asarray(items[0]["h"])
            assert h.shape == (-(-len(e) // 5), 16)
            start = e.get_extra_model_outputs("state_out", indices=-1, neg_index_as_lookback=True)
            np.testing.assert_array_equal(h[0], start["h"])
            starts_from_zero.append(not np.abs(h[0]).any())
        assert not all(starts_from_zero), "every continuation chunk started from zeros"
    finally:
        runner.stop()
        packed_runner.stop()


@pytest.mark.parametrize("model, agent, match", [
    ({"lstm_cell_size": 0}, {}, r"agent\.model\.lstm_cell_size = 0: out of range"),
    ({"max_seq_len": -3}, {}, r"agent\.model\.max_seq_len = -3: out of range"),
    ({"max_seq_len": 300}, {"train_batch_size": 256}, r"agent\.model\.max_seq_len = 300: .*train_batch_size \(256\)"),
    ({"memoryy": "lstm"}, {}, r"did you mean 'memory'"),
])
def test_bad_lstm_settings_get_one_line(model, agent, match):
    raw = tiny("CartPole-v1")
    raw["agent"]["model"].update({"memory": "lstm", **model})
    raw["agent"].update(agent)
    with pytest.raises(ConfigError, match=match) as e:
        parse_config(raw)
    assert "\n" not in str(e.value)
