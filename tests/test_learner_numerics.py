"""`SpadePPOLearner` (spade_rllib/rllib/lean_learner.py) computes what RLlib's stock `PPOTorchLearner` computes.

Both learners are built from the same `build_algo_config` (stock: `learner_class=PPOTorchLearner`), get the same
weights and the same batch, sampled by the product's runner from a masked game (CaptureTheFlag, its action mask in
the observation), for the MLP and the LSTM. One minibatch: the same loss terms and, after the step, the same
(clipped) gradients and weights. Several minibatches over two shuffled epochs (numpy's global RNG seeded alike):
the same weights after the update, so the lean minibatch order is RLlib's. No Ray: learners and runner are local.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_recurrent import make_runner
from test_train import tiny

from spade_rllib.config.run_config import parse_config

MODELS = {
    "mlp": {"hidden": [32, 32], "vf_share_layers": True},
    "lstm": {"hidden": [32], "vf_share_layers": True, "memory": "lstm", "lstm_cell_size": 16, "max_seq_len": 8},
}


def _cfg(model: str, lean: bool):
    raw = tiny("CaptureTheFlag-v0", training={"num_envs_per_runner": 8, "lean_learner": lean},
               env={"difficulty": 1.0}, evaluation={"interval": 0})
    raw["agent"].update({"train_batch_size": 256, "minibatch_size": 128, "epochs": 2, "lr": 3e-3, "grad_clip": 0.5})
    raw["agent"]["model"] = dict(MODELS[model])
    return parse_config(raw)


def _learners(model: str):
    import torch

    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.lean_learner import SpadePPOLearner

    torch.manual_seed(0)
    lean = build_algo_config(_cfg(model, True)).build_learner()
    stock = build_algo_config(_cfg(model, False)).build_learner()
    assert type(lean) is SpadePPOLearner and type(stock) is PPOTorchLearner
    stock.module.set_state(lean.module.get_state())
    return lean, stock


def _batch(model: str) -> list:
    runner = make_runner(_cfg(model, True))
    try:
        packs = runner.sample(num_timesteps=256)
    finally:
        runner.stop()
    rng = np.random.default_rng(0)
    for pack in packs:  # behaviour log-probs off the current policy: ratios cross PPO's clip range both ways
        pack.logp = (pack.logp + rng.normal(0.0, 0.5, pack.logp.shape)).astype(np.float32)
    return packs


def _update(learner, episodes, *, epochs: int, minibatch_size: int):
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    np.random.seed(123)
    return learner.update(episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 0}, num_epochs=epochs,
                          minibatch_size=minibatch_size, shuffle_batch_per_epoch=True)


def _value(stat):
    v = stat.peek() if hasattr(stat, "peek") else stat
    return float(v.item() if hasattr(v, "item") else v)


def _params(learner) -> dict:
    return {n: p.detach().clone() for n, p in learner.module["main"].named_parameters()}


def _grads(learner) -> dict:
    return {n: p.grad.detach().clone() for n, p in learner.module["main"].named_parameters() if p.grad is not None}


def _close(a: dict, b: dict, what: str, atol: float = 2e-6, rtol: float = 1e-4) -> None:
    import torch

    assert a.keys() == b.keys(), what
    for k in a:
        assert torch.allclose(a[k], b[k], atol=atol, rtol=rtol), f"{what} {k}: max diff {(a[k] - b[k]).abs().max():.3g}"


@pytest.mark.parametrize("model", list(MODELS))
def test_one_minibatch_same_loss_and_gradients(model):
    lean, stock = _learners(model)
    episodes = _batch(model)
    rows = sum(len(e) for e in episodes)
    res = {name: _update(learner, episodes, epochs=1, minibatch_size=rows + 1)  # one minibatch of every row
           for name, learner in (("lean", lean), ("stock", stock))}
    for key in ("total_loss", "policy_loss", "vf_loss", "vf_loss_unclipped", "entropy", "vf_explained_var",
                "gradients_default_optimizer_global_norm", "num_module_steps_trained"):
        a, b = _value(res["lean"]["main"][key]), _value(res["stock"]["main"][key])
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6), f"{model} {key}: lean {a} stock {b}"
    assert _value(res["lean"]["main"]["total_loss"]) != 0.0
    _close(_grads(lean), _grads(stock), f"{model} gradient")
    _close(_params(lean), _params(stock), f"{model} weights after the step")


@pytest.mark.parametrize("model", list(MODELS))
def test_shuffled_epochs_same_weights(model):
    lean, stock = _learners(model)
    episodes = _batch(model)
    before = _params(lean)
    res = {name: _update(learner, episodes, epochs=2, minibatch_size=128) for name, learner in (("lean", lean), ("stock", stock))}
    after = _params(lean)
    assert any(not bool((after[k] == before[k]).all()) for k in after), "the update changed no weight"
    _close(after, _params(stock), f"{model} weights after 2 shuffled epochs", atol=1e-5, rtol=1e-4)
    for key in ("num_module_steps_trained", "policy_loss", "vf_loss", "entropy"):
        a, b = _value(res["lean"]["main"][key]), _value(res["stock"]["main"][key])
        assert a == pytest.approx(b, rel=1e-4, abs=1e-5), f"{model} {key}: lean {a} stock {b}"


def test_lstm_encoder_skips_padding_rows_only():
    """With `seq_lens` the LSTM module runs its encoder on the rows inside each sequence only: the logits and
    values of those rows, and the gradients of a loss masked to them, are those of the fully padded pass."""
    import torch

    from ray.rllib.core.columns import Columns

    from spade_rllib.rllib.packed import SpadeGAEConnector

    lean, _ = _learners("lstm")
    module = lean.module["main"]
    batch = SpadeGAEConnector(gamma=0.99, lambda_=0.95)(rl_module=lean.module, batch={}, episodes=_batch("lstm"),
                                                         shared_data={})["main"]
    valid = torch.arange(batch[Columns.OBS].shape[1]).unsqueeze(0) < batch[Columns.SEQ_LENS].unsqueeze(1)
    assert not bool(valid.all()), "the batch has no padding: nothing is tested"
    outs = {}
    for name, mb in (("rows", batch), ("padded", {k: v for k, v in batch.items() if k != Columns.SEQ_LENS})):
        module.zero_grad()
        out = module.forward_train(mb)
        values = module.compute_values(mb, embeddings=out[Columns.EMBEDDINGS])
        logits = out[Columns.ACTION_DIST_INPUTS]
        loss = (logits.logsumexp(-1)[valid]).sum() + (values[valid] ** 2).sum()
        loss.backward()
        outs[name] = (logits[valid].detach(), values[valid].detach(),
                      {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None})
    (la, va, ga), (lb, vb, gb) = outs["rows"], outs["padded"]
    assert torch.allclose(la, lb, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)
    _close(ga, gb, "gradient", atol=1e-5)


@pytest.mark.parametrize("argv, says", [
    (["--seconds", "nan"], "--seconds = nan"),
    (["--models", "lsmt"], "did you mean 'lstm'"),
    (["--train-ab", "inf"], "--train-ab = inf"),
    (["--threads", "-1"], "--threads = -1"),
])
def test_learner_ceiling_refuses_bad_args_before_work(argv, says, capsys):
    from bench.speed.learner_ceiling import parse_args

    with pytest.raises(SystemExit) as e:
        parse_args(argv)
    assert e.value.code == 2 and says in capsys.readouterr().err
