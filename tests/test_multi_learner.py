"""Several learners (`resources.num_learners > 1`, RLlib's learner group, DDP over gloo on CPU) and GPU
placement without a GPU.

No Ray: episode slices keep their module, every learner gets every module's share and the same
minibatch count, bad combinations are refused in one line before Ray starts.
Ray: one update with 2 learners equals one with 1 learner on the same batch (connect four);
the driver's broadcast reaches remote runners as one ObjectRef;
the flagship CTF recipe (league with an exploiter, PLR) trains, checkpoints and resumes with 2
learners through `python -m spade_rllib.train`; Tune runs four 0.25-GPU trials at once on a Ray
that declares one logical GPU.
"""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config import preflight, resources
from spade_rllib.config.run_config import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
C4 = "pettingzoo.classic:connect_four_v3"
QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")
FLAGSHIP = str(ROOT / "tune_configs" / "flagship.yaml")


def _episode(module_id: str, n: int, agent: str = "a0"):
    import gymnasium as gym

    from spade_rllib.rllib.runner import SpadeSingleAgentEpisode

    return SpadeSingleAgentEpisode(
        observations=[np.full(2, i, np.float32) for i in range(n + 1)], actions=[0] * n, rewards=[0.0] * n,
        extra_model_outputs={"action_logp": [0.0] * n, "action_dist_inputs": [np.zeros(3, np.float32)] * n},
        observation_space=gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), action_space=gym.spaces.Discrete(3),
        agent_id=agent, module_id=module_id, multi_agent_episode_id=f"{module_id}-{n}", len_lookback_buffer=0,
    ).to_numpy()


# ------------------------------------------------------------------------------------------------
# No Ray
# ------------------------------------------------------------------------------------------------
def test_episode_slices_keep_module_agent_and_get_their_own_id():
    ep = _episode("main_exploiter_0", 10)
    first, rest = ep[:4], ep.slice(slice(4, None), len_lookback_buffer=1)
    for piece, n in ((first, 4), (rest, 6)):
        assert (piece.module_id, piece.agent_id, len(piece)) == ("main_exploiter_0", "a0", n)
    assert len({ep.multi_agent_episode_id, first.multi_agent_episode_id, rest.multi_agent_episode_id}) == 3
    assert rest[:2].module_id == "main_exploiter_0"  # a piece slices the same way


def test_every_learner_gets_every_module_and_the_same_minibatch_count():
    from ray.rllib.core.learner.training_data import TrainingData

    from spade_rllib.rllib.sharding import ModuleShardedTrainingData, minibatches_per_learner

    # RLlib's length-only split (longest first, cutting only where a shard overflows) puts the
    # exploiter's one short chunk on one learner, whose DDP all-reduce for it would wait for the other.
    episodes = [_episode("main", n) for n in (50, 50, 50, 48)] + [_episode("main_exploiter_0", 2)]
    stock = [{e.module_id for e in part.episodes} for part, _ in TrainingData(episodes=copy.deepcopy(episodes)).shard(
        2, len_lookback_buffer=1, minibatch_size=64, num_epochs=2)]
    assert stock == [{"main"}, {"main", "main_exploiter_0"}]

    shards = ModuleShardedTrainingData(episodes=copy.deepcopy(episodes)).shard(2, len_lookback_buffer=1,
                                                                               minibatch_size=64, num_epochs=2)
    assert len(shards) == 2
    for part, kw in shards:
        steps = {}
        for e in part.episodes:
            steps[e.module_id] = steps.get(e.module_id, 0) + len(e)
        assert steps == {"main": 99, "main_exploiter_0": 1}
        assert kw == {"num_total_minibatches": 4}  # ceil(2 epochs * 198 steps / (2 learners * 64))
    assert minibatches_per_learner(252, 2, 128, 1) == 1  # RLlib's int() gives 0: each learner picks its own count
    assert minibatches_per_learner(1000, 4, 100, 3) == 8
    assert minibatches_per_learner(1000, 2, None, 1) == 0  # no minibatches: one step on each learner's share


def test_global_batch_sizes_are_split_over_the_learners():
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config({"env": {"id": C4}, "agent": {"train_batch_size": 1000, "minibatch_size": 250},
                        "resources": {"num_learners": 2, "num_cpus_per_learner": 0.5}})
    algo = build_algo_config(cfg)
    assert (algo.train_batch_size_per_learner, algo.minibatch_size, algo.total_train_batch_size) == (500, 125, 1000)
    with pytest.raises(ConfigError) as e:  # a remainder would be dropped without a word
        parse_config({"env": {"id": C4}, "agent": {"train_batch_size": 1001, "minibatch_size": 250},
                      "resources": {"num_learners": 2}})
    assert str(e.value) == ("agent.train_batch_size = 1001: not divisible by resources.num_learners = 2 (each learner "
                            "takes an equal share); did you mean 1000 or 1002?")


def test_bad_multi_learner_combinations_are_one_line_config_errors(monkeypatch):
    with pytest.raises(ConfigError) as e:
        load_config(FLAGSHIP, ["resources.num_learners=2"])
    assert str(e.value).startswith("curriculum.plr.score = 'positive_value_loss': only allowed with resources.num_learners = 0")
    assert "learnability" in str(e.value) and "\n" not in str(e.value)
    load_config(FLAGSHIP, ["resources.num_learners=2", "curriculum.plr.score=learnability"])

    learnability = "curriculum.plr.score=learnability"
    cfg = load_config(QUICKSTART, ["resources.num_cpus=2", "resources.num_learners=3", learnability,
                                   "agent.train_batch_size=6144"])
    with pytest.raises(ConfigError, match=r"^resources.num_learners = 3: out of range, the learners alone take 3 CPUs .* "
                                          r"resources.num_cpus = 2; lower num_learners or num_cpus_per_learner"):
        preflight.check_launch(cfg)
    preflight.check_launch(load_config(QUICKSTART, ["resources.num_cpus=2", "resources.num_learners=2", learnability,
                                                    "resources.num_cpus_per_learner=0.5", "training.num_env_runners=0"]))

    monkeypatch.setattr(resources, "machine_gpus", lambda: 0)
    cfg = load_config(QUICKSTART, ["resources.num_gpus_per_learner=0.25"])
    with pytest.raises(ConfigError) as e:
        preflight.check_launch(cfg)
    assert str(e.value) == ("resources.num_gpus_per_learner = 0.25: out of range, this machine has no GPU "
                            "(torch.cuda.is_available() is False); set it to 0, or attach to a cluster with GPUs (--address)")
    preflight.check_launch(cfg, address="10.0.0.1:6379")  # attached: the GPU may be on another node


def test_train_and_tune_refuse_gpus_without_cuda_before_ray(tmp_path, monkeypatch, capsys):
    import ray

    from spade_rllib import train, tune

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(resources, "machine_gpus", lambda: 0)
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray was started"))
    assert train.main(["--config", QUICKSTART, "--set", "resources.num_learners=2", "--set", "resources.num_cpus=4",
                       "--set", "curriculum.plr.score=learnability",
                       "--set", "resources.num_gpus_per_learner=0.5"]) == 2
    out = capsys.readouterr()
    assert out.err.strip().splitlines() == [
        "config error: resources.num_gpus_per_learner = 0.5: out of range, this machine has no GPU "
        "(torch.cuda.is_available() is False); set it to 0, or attach to a cluster with GPUs (--address)"], out
    monkeypatch.chdir(ROOT)  # a sweep's base config names its maps relative to the repository
    assert tune.main(["--sweep", "seeds", "--smoke", "--gpus-per-trial", "0.25", "--storage", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("config error: --gpus-per-trial 0.25: out of range, this machine has no GPU "
                                               "(torch.cuda.is_available() is False)"), err
    assert not (tmp_path / "s").exists()
    tune.check_local_gpus(tune.parse_args(["--sweep", "seeds", "--gpus-per-trial", "0.25", "--address", "auto"]), {})
    # A trial whose learners need more CPUs than the local Ray has would stay pending for ever.
    assert tune.main(["--sweep", "seeds", "--smoke", "--storage", str(tmp_path / "s"), "--set", "resources.num_cpus=2",
                      "--set", "resources.num_learners=2", "--set", "curriculum.plr.score=learnability"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("config error: resources.num_learners = 2: out of range, the trial with "
                                               "experiment.seed=0 asks for 3 CPUs"), err
    args = tune.parse_args(["--sweep", "seeds", "--smoke", "--set", "resources.num_cpus=2", "--set", "resources.num_learners=2",
                            "--set", "curriculum.plr.score=learnability", "--set", "resources.num_cpus_per_learner=0.5"])
    tune.check_local_trial_fits(args, *tune.resolve(args))  # 1 + 2 x 0.5 CPUs fit
    assert not (tmp_path / "s").exists()


# ------------------------------------------------------------------------------------------------
# Ray
# ------------------------------------------------------------------------------------------------
LSTM = {"memory": "lstm", "lstm_cell_size": 8, "max_seq_len": 8}


def _c4(num_learners: int, model: dict = None) -> dict:
    return {"experiment": {"name": "t", "seed": 1}, "env": {"id": C4},
            "agent": {"train_batch_size": 256, "minibatch_size": 256, "epochs": 1,
                      "model": {"hidden": [16], **(model or {})}},
            "training": {"num_envs_per_runner": 4, "num_env_runners": 0}, "evaluation": {"interval": 0},
            "resources": {"num_learners": num_learners, "num_cpus_per_learner": 0.5}}


@pytest.mark.parametrize("model", [None, LSTM], ids=["mlp", "lstm"])
def test_two_learners_match_one_learner_on_a_fixed_batch(ray_session, model):
    """One update (1 epoch, one step on the whole batch) with 2 DDP learners, each on half of the batch,
    gives the gradient and weights of 1 learner on all of it. Adam's first moment after one step is
    0.1 x the gradient the optimizer saw: 2 learners that did not average would each hold their half's
    (measured: 73-82 % relative error, against 2.5 % here from per-shard advantage normalization).
    The recurrent model takes the same path (one of its ~32 chunks is cut between the learners, too
    few to tell whether the cut piece starts from the right state)."""
    from spade_rllib.rllib.algo_config import build_algo_config

    def state(learner):
        m = learner.module["main"]
        m = m.unwrapped() if hasattr(m, "unwrapped") else m
        opt = learner.get_optimizers_for_module("main")[0][1]
        names = {id(p): n for n, p in m.named_parameters()}
        return ({k: v.detach().cpu().numpy().copy() for k, v in m.state_dict().items()},
                {names[id(p)]: opt.state[p]["exp_avg"].cpu().numpy().copy() for p in m.parameters() if p in opt.state})

    one = build_algo_config(parse_config(_c4(1, model))).build_algo()
    two = build_algo_config(parse_config(_c4(2, model))).build_algo()
    try:
        episodes = one.env_runner.sample(num_timesteps=256, explore=True)
        before = [r.get()[0] for r in one.learner_group.foreach_learner(state)]
        assert all(np.array_equal(before[0][k], r.get()[0][k]) for r in two.learner_group.foreach_learner(state)
                   for k in before[0])  # same seed: same initial weights
        for algo in (one, two):
            algo.update_learners(copy.deepcopy(episodes), num_epochs=1, minibatch_size=None)
        ((w1, g1),) = [r.get() for r in one.learner_group.foreach_learner(state)]
        (w2, g2), (w2b, _) = [r.get() for r in two.learner_group.foreach_learner(state)]
        assert all(np.array_equal(w2[k], w2b[k]) for k in w2)  # DDP: both learners hold the same weights
        assert max(float(np.abs(w1[k] - before[0][k]).max()) for k in w1) > 1e-4  # the update moved them
        assert len(g1) == len(g2) > 0
        rel = np.sqrt(sum(((g1[k] - g2[k]) ** 2).sum() for k in g1) / sum((g1[k] ** 2).sum() for k in g1))
        assert rel < 0.1, rel
        # Adam's first step is ~lr x sign(gradient): weights differ only where a tiny gradient flips sign.
        off = sum(int((np.abs(w1[k] - w2[k]) > 1e-5).sum()) for k in w1) / sum(w1[k].size for k in w1)
        assert off < 0.05, off
        two.train()  # and the 2-learner algorithm trains through its own training step
        assert two.iteration == 1
    finally:
        one.stop()
        two.stop()


def _iteration_lines(text: str) -> dict[int, str]:
    return {int(m.group(1)): line for line in text.splitlines() if (m := re.match(r"iter +(\d+) \|", line))}


@pytest.mark.ray
def test_two_learners_train_ctf_league_checkpoint_and_resume(tmp_path):
    """The flagship recipe shrunk (league with a main exploiter, PLR by learnability) on 2 learners:
    `train` for 2 iterations with a checkpoint each, then `--resume` for a third; the league's
    snapshots carry over (the resumed run starts from the saved league, not a fresh one)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    sets = ["agent.train_batch_size=256", "agent.minibatch_size=256", "agent.epochs=1", "agent.model.hidden=[16]",
            "training.num_envs_per_runner=4", "training.num_env_runners=0", "training.checkpoint_every=1",
            "evaluation.interval=0", "evaluation.heldout_levels=[]", "evaluation.final_heldout_levels=[]",
            "league.every_n_iterations=1", "league.min_iterations_between=1", "league.win_rate_threshold=null",
            "league.main_exploiters=1", "curriculum.plr.score=learnability", "curriculum.plr.capacity=16",
            "resources.num_learners=2", "resources.num_cpus_per_learner=0.5", "resources.num_cpus=2",
            f"experiment.storage_path={tmp_path}"]
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/flagship.yaml",
           *[a for s in sets for a in ("--set", s)], "--final-eval-games", "0", "--final-replays", "0"]
    proc = subprocess.run(cmd + ["--set", "training.stop.iterations=2"], capture_output=True, text=True, timeout=240,
                          cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "training CaptureTheFlag-v0 (league) as 'flagship'" in proc.stdout, proc.stdout[:2000]  # not "(mirror)"
    trial = next((tmp_path / "flagship").glob("flagship_*"))
    lines = _iteration_lines((trial / "iterations.log").read_text())
    assert sorted(lines) == [1, 2] and all("+snapshot" in ln for ln in lines.values()), lines
    # 5 references + main and its exploiter's snapshot per iteration: 7, then 9
    assert "league 7 " in lines[1] and "league 9 " in lines[2] and "main_exploiter_0 wr - v2" in lines[2], lines
    ckpt = sorted(trial.glob("checkpoint_*"))[-1]
    for module in ("main", "main_exploiter_0"):
        assert (ckpt / "learner_group" / "learner" / "rl_module" / module).is_dir()

    resume = [sys.executable, "-m", "spade_rllib.train", "--resume", str(trial), "--set", "training.stop.iterations=3",
              "--set", f"experiment.storage_path={tmp_path / 'resumed'}", "--final-eval-games", "0", "--final-replays", "0"]
    proc = subprocess.run(resume, capture_output=True, text=True, timeout=240, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    resumed = next((tmp_path / "resumed" / "flagship").glob("flagship_*"))
    lines = _iteration_lines((resumed / "iterations.log").read_text())
    assert sorted(lines) == [3] and "league 11 " in lines[3] and "main_exploiter_0 wr - v3" in lines[3], lines
    assert "num_learners: 2" in (resumed / "config.yaml").read_text()


def test_broadcast_reaches_remote_runners_by_reference(ray_session):
    """`SpadePPO._on_all_runners` runs the closure on the local runner and hands the remote runners one
    ObjectRef of it (serialized once), not the closure itself (serialized once per runner)."""
    import ray

    from spade_rllib.rllib.algorithm import SpadePPO

    class Group:
        def __init__(self, local):
            self.local_env_runner, self.calls = local, []

        def num_remote_env_runners(self):
            return 3

        def foreach_env_runner(self, func, local_env_runner=True):
            self.calls.append((func, local_env_runner))
            return []

    seen = []
    algo = object.__new__(SpadePPO)
    algo.env_runner_group = Group(local="local runner")
    algo.run_config = parse_config({"env": {"id": C4}, "training": {"sample_ahead": False}})
    payload = np.arange(200_000, dtype=np.float32)  # 800 KB: what slot weights weigh

    def apply(runner):
        seen.append(runner)
        return runner, float(payload.sum())

    algo._on_all_runners(apply, tag="spade_update")
    assert seen == ["local runner"]
    ((func, with_local),) = algo.env_runner_group.calls
    assert isinstance(func, ray.ObjectRef) and with_local is False
    assert ray.get(func)("remote runner") == ("remote runner", float(payload.sum()))  # what each runner's call gets


GPU_SHARE_SCRIPT = r"""
import json, sys, time
import ray
from ray import tune
from spade_rllib import tune as cli

# Eight logical CPUs, so the one logical GPU is what limits how many trials run at once.
ray.init(num_cpus=8, num_gpus=1, include_dashboard=False, log_to_driver=False)
args = cli.parse_args(["--sweep", "seeds", "--smoke", "--gpus-per-trial", "0.25"])
spec, base = cli.resolve(args)
pgf = cli.resource_request(cli.trial_template(spec, base, args), spec)  # what SweepPPO asks Tune for

def stand_in(config):
    start = time.time()
    gpus = [str(g) for g in ray.get_gpu_ids()]
    time.sleep(config["hold_s"])
    tune.report({"start": start, "end": time.time(), "gpu_ids": gpus})

tuner = tune.Tuner(tune.with_resources(stand_in, pgf),
                   param_space={"hold_s": 6.0, "i": tune.grid_search(list(range(5)))},
                   run_config=tune.RunConfig(storage_path=sys.argv[1], name="gpu_share", verbose=0))
trials = [{k: r.metrics[k] for k in ("start", "end", "gpu_ids")} for r in tuner.fit()]
print("RESULT " + json.dumps({"bundles": pgf.bundles, "trials": trials}))
"""


@pytest.mark.ray
def test_four_quarter_gpu_trials_share_one_logical_gpu(tmp_path):
    """A Ray declaring one logical GPU (no CUDA needed) runs four trials of `--gpus-per-trial 0.25`
    at the same time and the fifth only after one of them ends; all got GPU 0. The trials are a
    stand-in for SweepPPO with SweepPPO's own placement group (a real learner would need CUDA)."""
    proc = subprocess.run([sys.executable, "-c", GPU_SHARE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=180, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    out = json.loads(line[len("RESULT "):])
    assert out["bundles"] == [{"CPU": 1.0, "GPU": 0.25}]
    trials = out["trials"]
    assert len(trials) == 5 and all(t["gpu_ids"] == ["0"] for t in trials), trials
    events = sorted([(t["start"], 1) for t in trials] + [(t["end"], -1) for t in trials])
    running, most = 0, 0
    for _, step in events:
        running += step
        most = max(most, running)
    assert most == 4, trials
