"""Training pipeline: build, 2 iterations, checkpoint, restore + continue, masking, driver components,
and `python -m spade_rllib.train` as a user runs it. Tiny budgets; one Ray per session (`ray_session`)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import parse_config

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
C4 = "pettingzoo.classic:connect_four_v3"


def tiny(env_id: str, **sections) -> dict:
    raw = {
        "experiment": {"name": "t", "seed": 1},
        "env": {"id": env_id},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 4, "num_env_runners": 0},
        "evaluation": {"interval": 1, "games": 2, "opponents": ["random"]},
    }
    if env_id == "MazeRace-v0":
        raw["env"]["difficulty"] = 1.0
    if env_id == "CartPole-v1":
        raw["evaluation"] = {"interval": 0}
    for k, v in sections.items():
        raw.setdefault(k, {}).update(v)
    return raw


def _main_state(algo) -> dict:
    return algo.learner_group.get_state(components="learner/rl_module/main")["learner"]["rl_module"]["main"]


@pytest.mark.parametrize(
    "env_id, extra",
    [
        ("CartPole-v1", {}),
        (C4, {}),
        ("MazeRace-v0", {"training": {"num_env_runners": 1}}),  # also covers remote env runners
    ],
    ids=["cartpole", "connect_four", "mazerace_remote_runner"],
)
def test_build_train_checkpoint_restore(ray_session, tmp_path, env_id, extra):
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.core.rl_module.rl_module import RLModule

    from spade_rllib.rllib.algo_config import build_algo_config

    from spade_rllib.rllib.algorithm import SpadePPO

    cfg = parse_config(tiny(env_id, **extra))
    algo = build_algo_config(cfg).build_algo()
    try:
        assert isinstance(algo, SpadePPO)
        for _ in range(2):
            result = algo.train()
        assert result["training_iteration"] == 2
        steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
        assert steps >= 2 * 256
        if env_id != "CartPole-v1":
            assert not np.isnan(result["eval"]["random"]["win_rate"])
            assert sum(v["games"] for v in result["train"].values()) > 0
        # where the iteration's time went: every phase present, and together they make up the iteration
        from spade_rllib.training.phases import PHASES

        phases = result["spade"]["phase_s"]
        assert set(PHASES) <= set(phases) and phases["learn"] > 0 and phases["sample_wait"] > 0, phases
        assert (phases["evaluation"] > 0) == (env_id != "CartPole-v1"), phases  # interval 1 where there are opponents
        assert sum(phases[k] for k in PHASES) == pytest.approx(result["spade"]["driver_s"], rel=1e-6)
        ckpt = Path(algo.save_to_path(str(tmp_path / "ckpt")))
        saved = _main_state(algo)
    finally:
        algo.stop()
    module_dir = ckpt / "learner_group" / "learner" / "rl_module" / "main"
    assert module_dir.is_dir()
    module = RLModule.from_checkpoint(str(module_dir))
    import torch

    obs = torch.zeros((3, module.observation_space.shape[0]))
    if module.mask_size:
        obs[:, -module.mask_size:] = 1.0
    assert module.forward_inference({"obs": obs})["action_dist_inputs"].shape == (3, module.action_space.n)

    restored = Algorithm.from_checkpoint(str(ckpt))
    try:
        assert type(restored).__name__ == "SpadePPO"
        for k, v in _main_state(restored).items():
            np.testing.assert_array_equal(v, saved[k])
        result = restored.train()
        assert result["training_iteration"] == 3
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] > steps
    finally:
        restored.stop()


def test_masked_policy_never_picks_illegal_moves(ray_session):
    import torch

    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import MAIN, SpadeEnvRunner

    cfg = parse_config(tiny(C4, self_play={"mode": "vs_random"}, training={"num_envs_per_runner": 16}))
    runner = SpadeEnvRunner(config=build_algo_config(cfg), worker_index=0, num_workers=0)
    # Large random weights make unmasked logits extreme: masking, not luck, must keep moves legal.
    with torch.no_grad():
        for p in runner.module[MAIN].parameters():
            p.normal_(0.0, 3.0)
    (pack,) = runner.sample(num_timesteps=3000)  # one PackedEpisodes (local learner mode)
    step_masks = pack.obs[~pack.is_boot][:, -7:]
    assert len(pack) > 500
    assert bool((step_masks[np.arange(len(pack)), pack.actions] == 1.0).all()), "main chose a masked (illegal) column"
    outcomes = runner.pop_episode_outcomes()
    assert outcomes and all(o.opponent == "random" for o in outcomes)
    # Argmax over masked logits is legal too, for every mask pattern.
    mod = runner.module[MAIN]
    obs = torch.randn(256, mod.observation_space.shape[0])
    masks = (torch.rand(256, 7) < 0.4).float()
    masks[torch.arange(256), torch.randint(0, 7, (256,))] = 1.0
    obs[:, -7:] = masks
    logits = mod.forward_inference({"obs": obs})["action_dist_inputs"]
    assert bool((masks[torch.arange(256), logits.argmax(1)] == 1).all())
    dist = mod.get_exploration_action_dist_cls().from_logits(logits)
    for _ in range(20):
        sample = dist.sample()
        assert bool((masks[torch.arange(256), sample] == 1).all())
    runner.stop()


class CountingComponent:
    """A minimal driver component for the hook-API test (counts outcome records it saw)."""

    name = "counting"

    def __init__(self):
        self.seen = 0
        self.iterations = 0

    def state_dict(self):
        return {"seen": self.seen, "iterations": self.iterations}

    def load_state_dict(self, state):
        self.seen, self.iterations = state["seen"], state["iterations"]

    def update(self, outcomes, ctx):
        self.seen += len(outcomes)
        self.iterations += 1
        assert ctx.iteration == self.iterations and ctx.main_weights()
        return {"counting/seen": self.seen}

    def runner_update(self, full):
        from spade_rllib.rllib.plan import DriverUpdate

        return DriverUpdate(extra={"counting_seen": self.seen, "full": full})


def make_counting_component(cfg, info):
    return CountingComponent()


def test_driver_component_hooks_and_checkpoint(ray_session, tmp_path, monkeypatch):
    from ray.rllib.algorithms.algorithm import Algorithm

    from spade_rllib.rllib import component_registry
    from spade_rllib.rllib.algo_config import build_algo_config

    monkeypatch.setitem(component_registry.COMPONENT_FACTORIES, "counting", make_counting_component)
    cfg = parse_config(tiny("MazeRace-v0", evaluation={"interval": 0}))
    algo = build_algo_config(cfg).build_algo()
    try:
        algo.train()
        result = algo.train()
        comp = next(c for c in algo.components if c.name == "counting")
        assert comp.iterations == 2 and comp.seen > 0
        assert result["counting"]["seen"] == comp.seen
        extra = algo.env_runner.driver_extra
        assert extra["counting_seen"] == comp.seen and extra["full"] is False
        ckpt = algo.save_to_path(str(tmp_path / "ckpt"))
        seen = comp.seen
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(ckpt)
    try:
        comp = next(c for c in restored.components if c.name == "counting")
        assert (comp.seen, comp.iterations) == (seen, 2)
        assert restored.env_runner.driver_extra == {"counting_seen": seen, "full": True}
    finally:
        restored.stop()


def test_opponent_plan_is_pure_and_follows_probabilities():
    from spade_rllib.rllib.plan import OpponentPlan

    plan = OpponentPlan(entries=(("mirror", 0.7), ("random", 0.2), ("slot_0", 0.1)), seed=5)
    keys = [(w, e, n) for w in range(2) for e in range(16) for n in range(200)]
    picks = [plan.pick(k) for k in keys]
    assert picks == [OpponentPlan(entries=plan.entries, seed=5).pick(k) for k in keys]
    freq = {o: picks.count(o) / len(picks) for o in ("mirror", "random", "slot_0")}
    assert abs(freq["mirror"] - 0.7) < 0.02 and abs(freq["random"] - 0.2) < 0.02 and abs(freq["slot_0"] - 0.1) < 0.015
    teams = [OpponentPlan.main_team((0, 3, n), 2) for n in range(10)]
    assert teams == [1, 0] * 5  # main's seat alternates between episodes


def test_train_cli_smoke_and_resume(tmp_path):
    """`python -m spade_rllib.train` as a user runs it: Tune layout, TensorBoard, runinfo, resume."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    base = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/connect_four.yaml",
            "--set", f"experiment.storage_path={tmp_path}", "--set", "agent.train_batch_size=256",
            "--set", "agent.minibatch_size=128", "--set", "agent.epochs=1", "--set", "training.num_envs_per_runner=4",
            "--set", "evaluation.interval=1", "--set", "evaluation.games=2", "--set", "resources.num_cpus=2",
            "--set", "training.num_env_runners=0",  # no runner actor to start twice (remote runners: tests below, c4 learning)
            "--final-eval-games", "4"]
    proc = subprocess.run(base + ["--set", "training.stop.iterations=2"], capture_output=True, text=True, timeout=240, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "iter    2 |" in out and re.search(r"\n  random +\d\.\d{3}  ", out) and "final evaluation" in out, out
    assert all(len(ln) <= 80 for ln in out.splitlines() if ln.startswith("iter ")), out  # not a terminal: short lines
    trial = next((tmp_path / "connect_four").glob("connect_four_*"))
    log = (trial / "iterations.log").read_text()  # the full per-iteration lines
    assert "iter    2 |" in log and re.search(r"vs mirror \(\d+\) W/D/L", log), log
    assert re.search(r"\| ms( \w+ \d+)* learn \d+", log), log  # each iteration's phases, in ms
    assert "time per phase: " in out and "learn " in out.split("time per phase: ")[1], out
    assert (trial / "report.html").is_file() and "python -m spade_rllib.report" in out
    assert (trial / "progress.csv").is_file() and list(trial.glob("events.out.tfevents*")), list(trial.iterdir())
    info = json.loads((trial / "runinfo.json").read_text())
    assert {"ray", "torch", "pettingzoo"} <= set(info["versions"]) and info["seeds"]["experiment"] == 0
    assert "commit" in info["git"] and info["python"]
    assert (trial / "config.yaml").is_file()
    ckpts = sorted(trial.glob("checkpoint_*"))
    assert ckpts and (ckpts[-1] / "learner_group" / "learner" / "rl_module" / "main").is_dir()
    header = (trial / "progress.csv").read_text().splitlines()[0].split(",")
    assert "eval/random/win_rate" in header and "env_runners/num_env_steps_sampled_lifetime" in header

    resume = [sys.executable, "-m", "spade_rllib.train", "--resume", str(trial), "--set", "training.stop.iterations=3",
              "--set", f"experiment.storage_path={tmp_path / 'resumed'}", "--final-eval-games", "0"]
    proc = subprocess.run(resume, capture_output=True, text=True, timeout=240, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "iter    3 |" in proc.stdout and "iter    1 |" not in proc.stdout, proc.stdout


def test_packed_gae_matches_per_episode_reference():
    """SpadeGAEConnector's one-scan GAE equals textbook GAE computed chunk by chunk."""
    from spade_rllib.rllib.packed import PackedEpisodes, gae

    rng = np.random.default_rng(0)
    chunks, refs = [], []
    for c in range(7):
        n = int(rng.integers(1, 9))
        obs = [rng.normal(size=3).astype(np.float32) for _ in range(n + 1)]
        rews = rng.normal(size=n).astype(np.float32).tolist()
        term = bool(c % 2)
        chunks.append((obs, [0] * n, rews, [0.0] * n, [np.zeros(2, np.float32)] * n, term))
    pack = PackedEpisodes.build(chunks, 3, 2)
    values = rng.normal(size=pack.obs.shape[0]).astype(np.float32)
    gamma, lam = 0.97, 0.9
    row = 0
    for obs, _, rews, _, _, term in chunks:
        n = len(rews)
        v = values[row:row + n + 1]
        adv = np.zeros(n)
        last = 0.0
        for t in reversed(range(n)):
            nonterminal = 0.0 if (term and t == n - 1) else 1.0
            delta = rews[t] + gamma * v[t + 1] * nonterminal - v[t]
            last = delta + gamma * lam * nonterminal * last
            adv[t] = last
        refs.append(adv)
        row += n + 1
    adv, targets = gae(values, pack, gamma, lam)
    np.testing.assert_allclose(adv, np.concatenate(refs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets, adv + values[~pack.is_boot], rtol=1e-6)
    assert len(pack) == sum(len(c[1]) for c in chunks) and pack.num_chunks == 7


def test_console_line_summarizes_snapshots_exploiters_and_heldout():
    from spade_rllib.training.console import format_line

    result = {
        "training_iteration": 7,
        "env_runners": {"num_env_steps_sampled_lifetime": 1000, "num_env_steps_sampled_lifetime_throughput": 500.0,
                        "episode_return_mean": 0.25},
        "learners": {"main": {"entropy": 1.234}},
        "train": {"random": {"games": 4, "win_rate": 1.0, "draw_rate": 0.0, "loss_rate": 0.0},
                  "main_v3": {"games": 2, "win_rate": 0.5, "draw_rate": 0.5, "loss_rate": 0.0},
                  "main_exploiter_0_v1": {"games": 2, "win_rate": 0.0, "draw_rate": 1.0, "loss_rate": 0.0}},
        "league": {"size": 5.0, "main_rating": 1310.0, "main_win_rate": 0.625, "snapshot_event": 1.0,
                   "learner": {"main_exploiter_0": {"win_rate": 0.4, "snapshots": 2.0},
                               "league_exploiter_0": {"win_rate": float("nan"), "snapshots": 0.0}}},
        "heldout": {"iteration": 5.0, "rusher_tagger": {"win_rate": 0.0, "score": 0.5}},
    }
    line = format_line(result)
    assert "vs league (4) W/D/L 0.25/0.75/0.00" in line  # every snapshot, main's and exploiters', in one row
    assert "vs random (4) W/D/L 1.00/0.00/0.00" in line
    assert "entropy 1.23" in line
    assert "league 5 elo 1310 wr 0.62 +snapshot" in line
    assert "main_exploiter_0 wr 0.40 v2" in line and "league_exploiter_0 wr - v0" in line
    assert "heldout vs rusher_tagger win 0.00 score 0.50 (it 5)" in line


def test_opponent_plan_learner_entries():
    from spade_rllib.rllib.plan import OpponentPlan

    plan = OpponentPlan(entries=(("mirror", 0.5), ("main_exploiter_0", "live:main", 0.3),
                                 ("league_exploiter_0", "slot_0", 0.2)), seed=9)
    assert plan.entries[0] == ("main", "mirror", 0.5)  # a 2-tuple means learner main
    assert plan.learners() == ("main", "main_exploiter_0", "league_exploiter_0")
    keys = [(w, e, n) for w in range(2) for e in range(8) for n in range(300)]
    picks = [plan.pick_matchup(k) for k in keys]
    assert [plan.pick(k) for k in keys] == [opp for _, opp in picks]
    for pair, p in (("main", "mirror"), 0.5), (("main_exploiter_0", "live:main"), 0.3), (("league_exploiter_0", "slot_0"), 0.2):
        assert abs(picks.count(pair) / len(picks) - p) < 0.025, pair
    assert plan.probabilities("main") == {"mirror": 0.5}
    with pytest.raises(ValueError, match="is not"):
        OpponentPlan(entries=(("main", "mirror", 0.5, 1.0),))
