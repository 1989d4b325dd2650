"""Recurrent policies outside Ray: `load_policy` state contract, evaluation players, ONNX export
checked against torch over a whole 200-step episode, and the feed-forward fixtures unchanged."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

CTF = "CaptureTheFlag-v0"
LSTM = {"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4}


@pytest.fixture(scope="module")
def recurrent_ckpt(tmp_path_factory):
    return save_tiny_checkpoint(tmp_path_factory.mktemp("rec") / "trial", CTF, snapshots=2, model=LSTM)


def ctf_episode_obs(steps: int = 200, seed: int = 3) -> list[np.ndarray]:
    """Agent 0's observations over one whole CTF episode that runs to its `steps`-step time limit
    (random moves; the first seed from `seed` on whose episode nobody wins early)."""
    from spade_rllib.games import make_env

    env = make_env(CTF, difficulty=3.0, max_steps=steps)
    agent = env.possible_agents[0]
    for s in range(seed, seed + 50):
        obs, _ = env.reset(seed=s)
        rng = np.random.default_rng(s)
        out = []
        while env.agents:
            out.append(np.asarray(obs[agent], np.float32))
            obs, *_ = env.step({a: int(rng.integers(env.action_space(a).n)) for a in env.agents})
        if len(out) == steps:
            return out
    raise AssertionError(f"no {steps}-step CTF episode in 50 seeds")


def test_load_policy_is_stateful_act_and_step_agree(recurrent_ckpt):
    from spade_rllib.players.policy import load_policy

    policy = load_policy(recurrent_ckpt)
    snap = load_policy(recurrent_ckpt, "main_v1")
    assert policy.recurrent and snap.recurrent  # league snapshots of a recurrent main are recurrent
    obs = ctf_episode_obs(30)
    policy.reset()
    state = policy.initial_state()
    acted, stepped = [], []
    for o in obs:
        acted.append(policy.act(o))
        a, state = policy.step(o, state)
        stepped.append(a)
    assert acted == stepped
    assert not np.allclose(state["h"], 0.0)
    assert not np.allclose(policy.state["h"], policy.initial_state()["h"])
    policy.reset()
    assert np.allclose(policy.state["h"], 0.0)
    # The state matters: the same last obs from zeros and from the episode's state give other logits.
    fresh = policy.logits_batch([obs[-1]], states=[policy.initial_state()])
    carried = policy.logits_batch([obs[-1]], states=[dict(state)])
    assert not np.allclose(fresh, carried)


def test_evaluation_player_keeps_one_state_per_agent_and_game(recurrent_ckpt):
    from spade_rllib.evaluation.players import PlayerSpec, build_player

    player = build_player(PlayerSpec("main", "module", "main", checkpoint=str(recurrent_ckpt)), CTF, 6)
    obs = ctf_episode_obs(5)
    rng = np.random.default_rng(0)
    player.new_game(0)
    for o in obs:
        player.act(None, "a0", o, None, rng)
    player.act(None, "a1", obs[0], None, rng)
    assert set(player._states) == {"a0", "a1"}
    assert not np.allclose(player._states["a0"]["h"], player._states["a1"]["h"])
    player.new_game(1)
    assert player._states == {}


def test_onnx_of_recurrent_module_matches_torch_over_a_200_step_episode(recurrent_ckpt, tmp_path):
    from spade_rllib.export import check_recurrent_episode, export_onnx, main
    from spade_rllib.players.policy import load_policy

    policy = load_policy(recurrent_ckpt)
    out = export_onnx(policy, tmp_path / "rec.onnx")
    obs = ctf_episode_obs(200)
    assert len(obs) == 200
    diff = check_recurrent_episode(policy, out, observations=[o[None] for o in obs])
    assert diff < 1e-5, diff
    import onnxruntime as ort

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "state_h", "state_c"]
    assert [o.name for o in session.get_outputs()] == ["logits", "state_h_out", "state_c_out"]
    # The CLI checks a 200-step episode as well.
    rc = main(["--checkpoint", str(recurrent_ckpt), "--out", str(tmp_path / "cli.onnx")])
    assert rc == 0


def test_onnx_with_previous_action_and_reward_inputs(tmp_path):
    from spade_rllib.export import check_recurrent_episode, export_onnx
    from spade_rllib.players.policy import load_policy

    ckpt = save_tiny_checkpoint(tmp_path / "trial", "MazeRace-v0",
                                model={**LSTM, "lstm_use_prev_action": True, "lstm_use_prev_reward": True})
    policy = load_policy(ckpt)
    out = export_onnx(policy, tmp_path / "prev.onnx")
    assert check_recurrent_episode(policy, out) < 1e-5
    with pytest.raises(ValueError, match="reward="):
        policy.act(np.zeros(policy.feature_size, np.float32))


def test_every_feed_forward_fixture_still_loads_as_before(tmp_path):
    from spade_rllib.players.policy import load_policy

    fixtures = Path(__file__).resolve().parent / "fixtures"
    paths = [p for p in fixtures.iterdir() if p.is_dir() and p.name.startswith("checkpoint")]  # not user_envs/
    assert paths, "no checkpoint fixture found"
    paths.append(save_tiny_checkpoint(tmp_path / "mr", "MazeRace-v0", snapshots=1))
    paths.append(save_tiny_checkpoint(tmp_path / "c4", "connect_four_v3"))
    for path in paths:
        policy = load_policy(path)
        assert not policy.recurrent and policy.initial_state() == {}
        obs = np.ones(policy.input_size, np.float32)  # masked games: every action legal
        before = policy.act(obs)
        policy.reset()  # a no-op for feed-forward policies
        assert policy.step(obs, {}) == (before, {})


def test_export_uses_the_exporter_torch_recommends(tmp_path):
    """torch.onnx.export(dynamo=True): no deprecation warning from torch.onnx, for an MLP and an LSTM module."""
    import warnings

    from spade_rllib.export import export_onnx
    from spade_rllib.players.policy import load_policy

    for name, model in (("mlp", None), ("lstm", LSTM)):
        ckpt = save_tiny_checkpoint(tmp_path / name, "MazeRace-v0", **({"model": model} if model else {}))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            export_onnx(load_policy(ckpt), tmp_path / f"{name}.onnx")
        deprecated = [str(w.message)[:200] for w in caught if issubclass(w.category, DeprecationWarning)
                      and "onnx" in str(w.message).lower()]
        assert not deprecated, deprecated
