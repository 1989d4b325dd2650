"""A checkpoint written by stock RLlib PPO (new API stack, module `main`, DefaultPPOTorchRLModule)
loads, exports and evaluates like the project's own: the loaders rely only on RLlib's layout."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def stock_checkpoint(ray_session, tmp_path_factory):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    from spade_rllib.envs import MazeRace

    register_env("maze_stock_test", lambda c: ParallelPettingZooEnv(MazeRace(difficulty=1)))
    config = (PPOConfig().environment("maze_stock_test").env_runners(num_env_runners=0)
              .multi_agent(policies={"main"}, policy_mapping_fn=lambda agent, episode, **kw: "main")
              .rl_module(model_config={"fcnet_hiddens": [16]})
              .training(train_batch_size_per_learner=64, minibatch_size=64, num_epochs=1))
    algo = config.build_algo()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path_factory.mktemp("stock") / "checkpoint_000000"))
    finally:
        algo.stop()
    return path


def test_stock_checkpoint_loads_exports_and_evaluates(stock_checkpoint, tmp_path):
    from spade_rllib.evaluate import EvalConfig, evaluate
    from spade_rllib.export import example_inputs, export_onnx, onnx_logits, torch_logits
    from spade_rllib.players.policy import PolicyLoadError, load_policy

    # The run recorded a private env name ("maze_stock_test"): the module's spaces decide.
    policy = load_policy(stock_checkpoint, env_id="MazeRace-v0")
    assert policy.input_style == "flat" and 0 <= policy.act(np.zeros(policy.feature_size)) < 6
    with pytest.raises(PolicyLoadError, match="is not for connect_four_v3"):
        load_policy(stock_checkpoint, env_id="connect_four_v3")
    onnx_path = export_onnx(policy, tmp_path / "stock.onnx")
    inputs = example_inputs(policy, batch=3)
    assert np.max(np.abs(onnx_logits(onnx_path, *inputs) - torch_logits(policy, *inputs))) <= 1e-5
    outcome = evaluate(EvalConfig(checkpoints=[stock_checkpoint], levels="generated:2@2", games_per_pair=2,
                                  replays=1, out=str(tmp_path / "eval"), workers=0, bootstrap=20, progress=False,
                                  bots=["random", "rusher"]))
    assert outcome["players"] == ["main", "random", "rusher"] and len(outcome["results"]) == 6
