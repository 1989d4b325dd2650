"""Issue 16: bad inputs refused before Ray starts (one line, exit 2, nothing on disk), one CLI exit
path, whole checkpoints only, no symlink escape, NaN stops a run. Ray-free except where marked."""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.artifacts import output_paths

from spade_rllib.config import preflight, resources
from spade_rllib.cli import cli_entry, one_line, root_cause
from spade_rllib.config.run_config import ConfigError, load_config, parse_config
from spade_rllib.rllib.health import NonFiniteError, check_losses, check_weights, non_finite_losses, trained_now

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "tune_configs" / "mazerace.yaml")  # the MazeRace demo these checks were written against (quickstart.yaml plays CTF now)
NO_FLAG = "#####\n#A.B#\n#####\n"


def _err(overrides, path=QUICKSTART) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(path, overrides)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------------------------
# Pre-Ray checks of the config
# ------------------------------------------------------------------------------------------------

def test_bot_names_are_checked_per_env():
    assert "'bot:nobody': unknown opponent" in _err(["evaluation.opponents=[bot:nobody]"])
    assert "did you mean 'bot:rusher'" in _err(["self_play.opponent_mix={'bot:rushr': 0.1}"])
    assert load_config(QUICKSTART, ["evaluation.opponents=[bot:rusher_tagger]"]).evaluation.opponents == ["bot:rusher_tagger"]


def test_bad_maps_name_file_line_and_column(tmp_path):
    bad = tmp_path / "no_flag.txt"
    bad.write_text(NO_FLAG)
    msg = _err([f"env.level_file={bad}"])
    assert str(bad) in msg and "line 1, column 1" in msg
    junk = tmp_path / "junk.txt"
    junk.write_bytes(bytes(range(256)))
    assert "env.level_file" in _err([f"env.level_file={junk}"])
    three = tmp_path / "3v3.txt"
    three.write_text("#########\n#AAA.BBB#\n#...F...#\n#########\n")
    assert "env.level_file" in _err([f"env.level_file={three}"])
    held = tmp_path / "held"
    held.mkdir()
    (held / "bad.txt").write_text(NO_FLAG)
    msg = _err([f"evaluation.heldout_levels=[{held}]"])
    assert "bad.txt" in msg and "line 1, column 1" in msg
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    assert "no *.txt maps" in _err([f"evaluation.heldout_levels=[{empty}]"])


def test_env_kwargs_against_the_constructor():
    assert "env.kwargs.bogus: unknown key" in _err(["env.kwargs={bogus: 1}"])
    assert "did you mean 'view_radius'" in _err(["env.kwargs={view_radiu: 3}"])
    assert "MazeRace-v0 refuses it" in _err(["env.kwargs={agents_per_team: 3}"])
    assert load_config(QUICKSTART, ["env.kwargs={view_radius: 3}"]).env.kwargs == {"view_radius": 3}
    # Gymnasium ids: the entry point's signature (CartPole takes render_mode only).
    assert "env.kwargs.bogus: unknown key" in _err(["env.kwargs={bogus: 1}"], str(ROOT / "tune_configs" / "cartpole.yaml"))


@pytest.mark.parametrize("metric", ["env_runners/episode_return_maen", "episode_return_mean", "learners/main/loss",
                                    "train/random/win", "bogus/x", "env_runners//x"])
def test_stop_metric_must_exist(metric):
    msg = _err([f"training.stop.metric={metric}", "training.stop.target=1"])
    assert "training.stop.metric" in msg


@pytest.mark.parametrize("metric", ["env_runners/episode_return_mean", "training_iteration", "eval/random/win_rate",
                                    "learners/main/total_loss", "curriculum/difficulty", "league/main_rating",
                                    "heldout/rusher_tagger/score"])
def test_stop_metrics_a_run_reports_are_accepted(metric):
    assert load_config(QUICKSTART, [f"training.stop.metric={metric}", "training.stop.target=1"]).training.stop.metric == metric


def test_launch_checks(tmp_path):
    cfg = parse_config({"env": {"id": "MazeRace-v0"}})  # defaults: no stop condition
    with pytest.raises(ConfigError, match="no stop condition"):
        preflight.check_launch(cfg, required={"CPU": 1})
    cfg = load_config(QUICKSTART)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        output_paths.check_storage_path(str(afile / "sub" / "deeper"))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(ConfigError, match="not writable"):
            output_paths.check_storage_path(str(ro / "x"))
    finally:
        ro.chmod(0o755)
    output_paths.check_storage_path(str(tmp_path / "new" / "dir"))
    assert not (tmp_path / "new").exists()


def test_resource_requests_against_the_machine():
    cfg = load_config(QUICKSTART, ["resources.num_cpus=1", "training.num_env_runners=3"])
    need = resources.required_resources(cfg)
    assert need == {"CPU": 4.0, "GPU": 0.0}
    with pytest.raises(ConfigError, match="needs 4 CPUs"):
        resources.check_resources(cfg, need)
    cfg = load_config(QUICKSTART, ["resources.num_gpus_per_learner=1"])
    with pytest.raises(ConfigError, match="num_gpus_per_learner = 1: out of range"):
        resources.check_resources(cfg, resources.required_resources(cfg), cpus=2, gpus=0)
    resources.check_resources(cfg, resources.required_resources(cfg), cpus=2, gpus=1)
    cfg = load_config(QUICKSTART, ["resources.num_learners=2", "resources.num_cpus_per_learner=1",
                                 "curriculum.plr.score=learnability"])  # pvl needs the local learner
    assert resources.required_resources(cfg) == {"CPU": 4.0, "GPU": 0.0}  # 1 driver + 1 runner + 2 learners


def test_required_resources_match_rllib():
    """Our arithmetic equals RLlib's own placement-group request for the same config."""
    pytest.importorskip("ray")
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.algorithm import SpadePPO

    for sets in ([], ["training.num_env_runners=2", "resources.num_cpus_per_env_runner=0.5"],
                 ["resources.num_learners=2", "resources.num_cpus_per_learner=2", "curriculum.plr.score=learnability"]):
        cfg = load_config(QUICKSTART, sets)
        pgf = SpadePPO.default_resource_request(build_algo_config(cfg))
        rllib = pgf.required_resources
        ours = resources.required_resources(cfg)
        assert rllib.get("CPU", 0) == ours["CPU"] and rllib.get("GPU", 0) == ours["GPU"], (sets, rllib, ours)


# ------------------------------------------------------------------------------------------------
# CLIs: one line, exit 2, nothing created
# ------------------------------------------------------------------------------------------------

def _one_line(capsys) -> str:
    out = capsys.readouterr()
    text = out.out + out.err
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("note:")]
    assert "Traceback" not in text and len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("sets", [
    ["resources.num_cpus=1", "training.num_env_runners=3"], ["resources.num_gpus_per_learner=1"],
    ["training.stop={}"], ["experiment.storage_path=afile/x"], ["agent.lr=.nan"],
    ["evaluation.opponents=[bot:nobody]"], ["env.kwargs={bogus: 1}"],
])
def test_train_refuses_before_ray_and_creates_nothing(tmp_path, monkeypatch, capsys, sets):
    from spade_rllib import train

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    monkeypatch.setattr(resources, "machine_gpus", lambda: 0)
    import ray

    started = []
    monkeypatch.setattr(ray, "init", lambda *a, **k: started.append(1))  # must not be reached
    args = ["--config", QUICKSTART] + [a for s in sets for a in ("--set", s)]
    assert train.main(args) == 2
    assert "config error:" in _one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert not started


def test_cli_entry_one_line_and_debug(capsys):
    @cli_entry()
    def main(argv=None):
        raise NotADirectoryError(20, "Not a directory", "x/y")

    assert main([]) == 2
    assert _one_line(capsys).startswith("error: NotADirectoryError")

    @cli_entry()
    def broken(argv=None):
        raise KeyError("bug")

    assert broken([]) == 1
    assert _one_line(capsys).startswith("internal error: KeyError")
    with pytest.raises(NotADirectoryError):
        main(["--debug"])


def test_root_cause_unwraps_ray_errors():
    from ray.exceptions import RayTaskError

    inner = ValueError("bad map at line 3, column 4")
    wrapped = RayTaskError("SpadePPO.train", "Traceback ...\nValueError: bad map", inner)
    outer = RuntimeError("trial failed")
    outer.__cause__ = wrapped.as_instanceof_cause()
    assert root_cause(wrapped.as_instanceof_cause()) is inner
    assert root_cause(outer) is outer  # a plain RuntimeError is not a wrapper: its own message counts
    tune_error = type("TuneError", (Exception,), {})("trial errored")
    tune_error.__cause__ = wrapped.as_instanceof_cause()
    assert root_cause(tune_error) is inner
    assert one_line(wrapped) == "ValueError: bad map at line 3, column 4"


def test_export_play_evaluate_refuse_bad_arguments(tmp_path, monkeypatch, capsys):
    from spade_rllib import evaluate, export, play

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    ckpt = str(tmp_path / "nothing_needed")  # the checks run before the checkpoint is read
    assert export.main(["--checkpoint", ckpt, "--out", "afile/m.onnx"]) == 2
    assert "--out" in _one_line(capsys)
    assert export.main(["--checkpoint", ckpt, "--out", "m.onnx", "--opset", "3"]) == 2
    assert "--opset = 3" in _one_line(capsys)
    assert evaluate.main(["--checkpoint", ckpt, "--out", "afile/ev", "--local"]) == 2
    assert "--out" in _one_line(capsys)
    assert play.main(["--checkpoint", ckpt, "--difficulty", "99"]) == 2
    assert "--difficulty = 99" in _one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


# ------------------------------------------------------------------------------------------------
# Checkpoints: whole ones only, no symlink escape
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    root = tmp_path_factory.mktemp("trial")
    save_tiny_checkpoint(root, "MazeRace-v0", snapshots=1, checkpoint_name="checkpoint_000000")
    return root


def test_truncated_newest_checkpoint_is_never_the_latest(trial, tmp_path, capsys):
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem, resolve_checkpoint
    from spade_rllib.train import find_checkpoint

    t = tmp_path / "t"
    shutil.copytree(trial, t)
    shutil.copytree(t / "checkpoint_000000", t / "checkpoint_000001")
    state = t / "checkpoint_000001" / "algorithm_state.pkl"
    state.write_bytes(state.read_bytes()[:100])  # killed mid-write
    assert "algorithm_state.pkl" in checkpoint_problem(t / "checkpoint_000001")
    assert checkpoint_problem(t / "checkpoint_000000") is None
    assert find_checkpoint(str(t)).endswith("checkpoint_000000")
    assert "skipping incomplete checkpoint" in capsys.readouterr().err
    assert resolve_checkpoint(t).path.name == "checkpoint_000000"
    with pytest.raises(ConfigError, match="not a usable checkpoint"):
        find_checkpoint(str(t / "checkpoint_000001"))
    (t / "checkpoint_000000" / "rllib_checkpoint.json").unlink()
    with pytest.raises(ConfigError, match="every checkpoint under it"):
        find_checkpoint(str(t))


def test_loader_refuses_symlinks_out_of_the_checkpoint(trial, tmp_path):
    from spade_rllib.artifacts.checkpoint_layout import PolicyLoadError, checkpoint_problem, resolve_checkpoint
    from spade_rllib.players.policy import load_policy

    t = tmp_path / "t"
    shutil.copytree(trial, t)
    secret = tmp_path / "secret.pkl"
    secret.write_bytes(pickle.dumps({"not": "yours"}))
    module_state = next((t / "checkpoint_000000").rglob("module_state.pkl"))
    module_state.unlink()
    module_state.symlink_to(secret)
    with pytest.raises(PolicyLoadError, match="outside the checkpoint"):
        load_policy(str(t))
    with pytest.raises(PolicyLoadError, match="outside the checkpoint"):
        resolve_checkpoint(t / "checkpoint_000000")
    assert "outside the checkpoint" in checkpoint_problem(t / "checkpoint_000000")
    # A link that stays inside is fine.
    module_state.unlink()
    inside = module_state.parent / "real_state.pkl"
    shutil.copy(next(trial.rglob("module_state.pkl")), inside)
    module_state.symlink_to(inside)
    assert resolve_checkpoint(t).path.name == "checkpoint_000000"


# ------------------------------------------------------------------------------------------------
# NaN stops a run
# ------------------------------------------------------------------------------------------------

def test_health_checks_name_module_and_key():
    results = {"__all_modules__": {"total_loss": float("nan")}, "main": {"total_loss": float("nan"), "vf_loss": 1.0}}
    assert non_finite_losses(results) == ["main/total_loss = nan"]
    with pytest.raises(NonFiniteError, match=r"iteration 7: learners/main/total_loss = nan"):
        check_losses(results, 7)
    check_losses({"main": {"total_loss": 0.5}}, 1)
    # Only modules updated this iteration count: a dropped batch reports NaN losses, not a divergence.
    seen: dict = {}
    first = {"main": {"num_module_steps_trained_lifetime": 100, "total_loss": 0.1},
             "main_exploiter_0": {"num_module_steps_trained_lifetime": 50, "total_loss": 0.2}}
    assert set(trained_now(first, seen)) == {"main", "main_exploiter_0"}
    second = {"main": {"num_module_steps_trained_lifetime": 200, "total_loss": 0.1},
              "main_exploiter_0": {"num_module_steps_trained_lifetime": 50, "total_loss": float("nan")}}
    assert set(trained_now(second, seen)) == {"main"}
    third = {"main": {"num_module_steps_trained_lifetime": 300, "total_loss": float("nan")}}
    with pytest.raises(NonFiniteError):
        check_losses(trained_now(third, seen), 3)
    w = {"pi.0.weight": np.ones((2, 2), np.float32), "vf.0.bias": np.array([np.inf], np.float32)}
    with pytest.raises(NonFiniteError, match="module 'main' has NaN/inf weights \\(vf.0.bias"):
        check_weights({"main": w}, 3)
    check_weights({"main": {"a": np.zeros(3)}}, 3)


@pytest.fixture(scope="module")
def tiny_algo(ray_session):
    """A one-process SpadePPO on MazeRace, trained one iteration (shared: building costs ~10 s)."""
    from test_train import tiny

    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(parse_config(tiny("MazeRace-v0", evaluation={"interval": 0}))).build_algo()
    algo.train()
    yield algo
    algo.stop()


@pytest.mark.ray
def test_failed_checkpoint_write_leaves_the_previous_one_latest(tiny_algo, tmp_path, monkeypatch, capsys):
    """A disk that fills up mid-write: a clear OSError, the half-written checkpoint is skipped,
    the previous one is found by --resume and restores."""
    import errno

    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem
    from spade_rllib.train import find_checkpoint

    trial = tmp_path / "trial"
    first = trial / "checkpoint_000001"
    tiny_algo.save_checkpoint(str(first))
    before = tiny_algo.module_weights("main")
    group = tiny_algo.learner_group
    real = group.save_to_path

    def full_disk(path, *args, **kwargs):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "state.pkl").write_bytes(b"\x80\x04\x95")  # a few bytes, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(group, "save_to_path", full_disk)
    second = trial / "checkpoint_000002"
    with pytest.raises(OSError, match="No space left on device"):
        tiny_algo.save_checkpoint(str(second))
    monkeypatch.setattr(group, "save_to_path", real)
    assert second.is_dir() and checkpoint_problem(second) is not None
    assert find_checkpoint(str(trial)) == str(first)
    assert "skipping incomplete checkpoint" in capsys.readouterr().err
    tiny_algo.train()  # move on, then go back to the first checkpoint
    tiny_algo.restore_from_path(str(first))
    after = tiny_algo.module_weights("main")
    assert all(np.array_equal(np.asarray(before[k]), np.asarray(after[k])) for k in before)


@pytest.mark.ray
def test_nan_weights_stop_the_run_instead_of_a_nan_checkpoint(tiny_algo, tmp_path):
    from spade_rllib.artifacts.checkpoint_layout import checkpoint_problem

    good = tmp_path / "good"
    tiny_algo.save_checkpoint(str(good))  # finite weights: written as usual
    assert checkpoint_problem(good) is None

    def poison(learner):
        import torch

        with torch.no_grad():
            for p in learner.module["main"].parameters():
                p.fill_(float("nan"))

    tiny_algo.learner_group.foreach_learner(poison)
    bad = tmp_path / "bad"
    bad.mkdir()
    with pytest.raises(NonFiniteError, match="module 'main' has NaN/inf weights"):
        tiny_algo.save_checkpoint(str(bad))
    assert list(bad.iterdir()) == []  # nothing written
    with pytest.raises(NonFiniteError, match=r"iteration \d+: learners/main/\w+ = nan"):
        tiny_algo.train()  # the update with NaN weights gives NaN losses: the step stops


@pytest.mark.ray
@pytest.mark.parametrize("fault, expect", [
    ("raise", r"env MazeRace-v0 \(copy \d+\), agent \['player_0', 'player_1'\], step \d+: step raised RuntimeError: boom"),
    ("nan_obs", r"env MazeRace-v0 \(copy \d+\), agent 'player_1', step \d+: observation holds NaN/inf"),
    ("nan_reward", r"env MazeRace-v0 \(copy \d+\), agent 'player_0', step \d+: reward is nan"),
])
def test_env_faults_name_env_agent_and_step(fault, expect):
    from test_train import tiny

    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.health import EnvFault
    from spade_rllib.rllib.runner import SpadeEnvRunner

    cfg = parse_config(tiny("MazeRace-v0", evaluation={"interval": 0}))
    runner = SpadeEnvRunner(config=build_algo_config(cfg), worker_index=0, num_workers=0)
    try:
        runner.sample(num_timesteps=64)  # healthy first
        for game in runner.games:
            real = game.raw_env.step

            def faulty(actions, real=real):
                if fault == "raise":
                    raise RuntimeError("boom")
                obs, rew, term, trunc, info = real(actions)
                if fault == "nan_obs" and "player_1" in obs:
                    obs["player_1"] = np.full_like(obs["player_1"], np.nan)
                if fault == "nan_reward" and "player_0" in rew:
                    rew["player_0"] = float("nan")
                return obs, rew, term, trunc, info

            game.raw_env.step = faulty
        with pytest.raises(EnvFault, match=expect):
            runner.sample(num_timesteps=256)
    finally:
        runner.stop()


def test_nothing_outside_tests_turns_token_auth_off():
    """Token authentication stays on: no shipped file sets RAY_AUTH_MODE to anything but 'token'
    (the refusal of a token-less client is checked on a real cluster in test_cluster_multinode)."""
    import re

    offenders = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        code = path.suffix in (".py", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".env") or path.name in ("Dockerfile", "Makefile")
        if not path.is_file() or rel.parts[0] in ("tests", ".git", ".venv") or not code:
            continue
        text = path.read_text(errors="ignore")
        for m in re.finditer(r"RAY_AUTH_MODE[\"']?\]?\s*[=:,]\s*[\"']?([A-Za-z_]+)", text):
            if m.group(1) != "token":
                offenders.append(f"{rel}: {m.group(0)}")
    assert not offenders, offenders


def test_failed_run_summary_names_the_cause_and_only_existing_files(tmp_path, capsys):
    from types import SimpleNamespace

    from ray.exceptions import RayTaskError

    from spade_rllib.training.run_summary import print_summary

    cause = ValueError("bad map in x.txt at line 2, column 3")
    error = RayTaskError("SpadePPO.train", "Traceback (most recent call last): ...", cause).as_instanceof_cause()
    trial = tmp_path / "trial"
    trial.mkdir()
    result = SimpleNamespace(error=error, metrics={}, path=str(trial), checkpoint=None)
    print_summary(load_config(QUICKSTART), result, SimpleNamespace(last_result=None, trial_path=None), 1.0, 0)
    out = capsys.readouterr().out
    assert "run FAILED: ValueError: bad map in x.txt at line 2, column 3" in out
    assert "progress.csv" not in out and "runinfo.json" not in out and "tensorboard" not in out
    (trial / "progress.csv").write_text("a\n1\n")
    print_summary(load_config(QUICKSTART), result, SimpleNamespace(last_result=None, trial_path=None), 1.0, 0)
    assert f"progress.csv:  {trial / 'progress.csv'}" in capsys.readouterr().out
