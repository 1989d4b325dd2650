"""Bad input, third round: each class refused in one line before Ray starts (no Ray in this file).

A resume that changes the model (effective model config with defaults, and the saved tensors against
a module built from the new config), the final held-out line's maps checked before training, every
trial combination of a sweep (validity and CPUs), the benches' command lines (`bench.common.
check_bench_args`), and types that used to be converted before they were validated.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from spade_rllib.config.run_config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
MAZERACE = str(ROOT / "tune_configs" / "mazerace.yaml")
FLAGSHIP = str(ROOT / "tune_configs" / "flagship.yaml")
TINY = ["agent.model.hidden=[16]", "agent.model.vf_share_layers=false"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    root = tmp_path_factory.mktemp("ckpt")
    return {"maze": save_tiny_checkpoint(root / "maze", "MazeRace-v0"),
            "ctf": save_tiny_checkpoint(root / "ctf", "CaptureTheFlag-v0", env_kwargs={"seen_map": 5})}


# ------------------------------------------------------------------------------------------------
# a. a resume that changes the model
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("game,sets,key", [
    ("maze", ["agent.model.memory=lstm"], "agent.model.memory"),
    ("ctf", ["env.kwargs.seen_map=5", "agent.model.map_channels=[8]"], "agent.model.map_channels"),
    ("maze", ["agent.model.encoder=cnn"], "agent.model.encoder"),
    ("maze", ["agent.model.activation=relu"], "agent.model.activation"),
])
def test_resume_that_changes_the_model_is_refused_naming_the_key(checkpoints, game, sets, key):
    from spade_rllib.rllib.resume_fit import check_resume

    config = MAZERACE if game == "maze" else FLAGSHIP
    base = TINY + (["env.kwargs.seen_map=5"] if game == "ctf" else [])
    check_resume(load_config(config, base), str(checkpoints[game]))  # the run's own model resumes
    with pytest.raises(ConfigError, match=rf"^--resume: module 'main' .* was trained with {key} = ") as e:
        check_resume(load_config(config, base + sets), str(checkpoints[game]))
    assert "\n" not in str(e.value)


def test_resume_may_switch_bf16_and_keys_the_module_ignores(checkpoints):
    from spade_rllib.config.model_compat import effective_model_config, model_differences
    from spade_rllib.rllib.resume_fit import check_resume

    check_resume(load_config(MAZERACE, TINY + ["agent.model.train_bf16=true"]), str(checkpoints["maze"]))
    check_resume(load_config(MAZERACE, TINY + ["agent.model.lstm_cell_size=8"]), str(checkpoints["maze"]))  # LSTM off
    # keys recorded only when on compare with their defaults
    assert model_differences({"hidden": [16]}, {"hidden": [16], "use_lstm": False, "map_channels": []}) == []
    assert model_differences({"hidden": [16]}, {"hidden": [16], "use_lstm": True}) == ["use_lstm"]
    assert effective_model_config({})["map_channels"] is None


def test_saved_tensors_are_checked_against_the_module_the_config_builds(checkpoints):
    from spade_rllib.artifacts.checkpoint_layout import resolve_checkpoint
    from spade_rllib.players.policy import load_module
    from spade_rllib.rllib.resume_fit import _module_misfit

    module = load_module(resolve_checkpoint(str(checkpoints["maze"])), "main")
    mc = dict(module.model_config)
    assert _module_misfit(module, mc) is None
    assert "shape" in _module_misfit(module, {**mc, "hidden": [32]})
    assert "missing" in _module_misfit(module, {**mc, "hidden": [16, 16]})


# ------------------------------------------------------------------------------------------------
# b. the final held-out line's maps, before training
# ------------------------------------------------------------------------------------------------

def test_final_heldout_levels_are_checked_like_heldout_levels(tmp_path):
    bad, empty = tmp_path / "bad", tmp_path / "empty"
    bad.mkdir(), empty.mkdir()
    (bad / "bad.txt").write_text("#####\n#A.B#\n#####\n")
    cases = [
        (f"evaluation.final_heldout_levels=[{bad}]", r"evaluation.final_heldout_levels: bad map in .*bad.txt"),
        (f"evaluation.final_heldout_levels=[{empty}]", r"evaluation.final_heldout_levels = .*holds no \*.txt maps"),
        ("evaluation.final_heldout_levels=[spade_rllib/levels/heldout]", r"is a MazeRace-v0 map; this run plays CaptureTheFlag-v0"),
        ("evaluation.final_heldout_max_size=3", r"evaluation.final_heldout_max_size = 3: out of range, it leaves none of the 11 maps"),
    ]
    for item, pattern in cases:
        with pytest.raises(ConfigError, match=pattern):
            load_config(FLAGSHIP, [item])
    assert load_config(FLAGSHIP, ["evaluation.final_heldout_max_size=9"]).evaluation.final_heldout_max_size == 9


# ------------------------------------------------------------------------------------------------
# c. every trial a sweep makes
# ------------------------------------------------------------------------------------------------

def _sweep(tmp_path: Path, space: str, overrides: str = "{}") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"description: t\nbase: {ROOT / 'tune_configs' / 'quickstart.yaml'}\noverrides: {overrides}\n"
                    f"space:\n{space}scheduler: {{type: none}}\n"
                    "metric: {name: env_runners/episode_return_mean, mode: max}\nbudget: {num_samples: 1, stop: {iterations: 2}}\n")
    return str(path)


def test_sweep_combination_that_breaks_a_rule_is_refused(tmp_path):
    from spade_rllib.sweeps.sweep_spec import load_sweep, trial_combinations, validate_against_base

    path = _sweep(tmp_path, "  resources.num_learners: {grid: [1, 2]}\n  agent.train_batch_size: {grid: [4000, 4001]}\n"
                            "  agent.minibatch_size: {grid: [1000]}\n", "{curriculum.plr.score: learnability}")
    with pytest.raises(ConfigError, match=r"^space: the trial with resources.num_learners=2, agent.train_batch_size=4001, "
                                          r".*not divisible by resources.num_learners = 2"):
        load_sweep(path)  # validates the base, each value alone, then every combination
    fine = _sweep(tmp_path, "  resources.num_learners: {grid: [1, 2]}\n  agent.train_batch_size: {grid: [4000, 4002]}\n",
                  "{curriculum.plr.score: learnability}")
    spec, base = load_sweep(fine)
    assert len(trial_combinations(spec)) == 4
    validate_against_base(spec, base)


def test_sweep_trial_that_does_not_fit_is_refused_by_dry_run(tmp_path, capsys):
    from spade_rllib import tune as tune_cli

    path = _sweep(tmp_path, "  training.num_env_runners: {grid: [0, 8]}\n  agent.lr: {grid: [0.001]}\n",
                  "{resources.num_cpus: 2}")
    assert tune_cli.main(["--sweep", path, "--dry-run", "--storage", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the trial with training.num_env_runners=8" in err[0] and "asks for 9 CPUs" in err[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# d. benches: one shared check of the command line, before Ray
# ------------------------------------------------------------------------------------------------

def _refused(capsys, fn, *args, **kwargs) -> str:
    with pytest.raises(SystemExit) as e:
        fn(*args, **kwargs)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_check_bench_args_refuses_each_class(tmp_path, capsys):
    sys.path.insert(0, str(ROOT))
    from bench.common import check_bench_args

    afile = tmp_path / "afile"
    afile.write_text("x")
    ns = argparse.Namespace
    assert "is a file" in _refused(capsys, check_bench_args, ns(out_dir=afile))
    assert "--cpus 0" in _refused(capsys, check_bench_args, ns(cpus=0))
    assert "--seconds nan" in _refused(capsys, check_bench_args, ns(seconds=float("nan")))
    assert "--runners 'two'" in _refused(capsys, check_bench_args, ns(runners="two"), lists={"runners": 1})
    assert "agent.lrr" in _refused(capsys, check_bench_args, ns(), overrides=["agent.lrr=1"], config=MAZERACE)
    assert "--max-map-size = 3" in _refused(capsys, check_bench_args, ns(max_map_size=3), env_id="CaptureTheFlag-v0")
    units = tmp_path / "out" / "units"
    units.mkdir(parents=True)
    (units / "mirror_seed0.json").write_text('{"name": "mirror", "se')
    assert "mirror_seed0.json: damaged JSON" in _refused(capsys, check_bench_args, ns(out_dir=tmp_path / "out"))
    check_bench_args(ns(cpus=2, seconds=None, max_map_size=9, runners="1,2"), lists={"runners": 1},
                     env_id="CaptureTheFlag-v0", overrides=["agent.lr=0.001"], config=MAZERACE)


def test_benches_refuse_before_ray(tmp_path, capsys, monkeypatch):
    sys.path.insert(0, str(ROOT))
    import ray

    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("reached ray.init"))
    from bench.ablations import league_claim
    from bench.speed import driver_scale, train_speed

    assert "--runners 'two'" in _refused(capsys, driver_scale.main, ["--runners", "two"])
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv, needle in ((["--out-dir", str(afile)], "is a file"), (["--cpus", "0"], "--cpus 0"),
                         (["--set", "agent.lrr=1"], "agent.lrr"), (["--max-map-size", "3"], "--max-map-size = 3")):
        assert needle in _refused(capsys, league_claim.main, ["--game", "ctf", "--out-dir", str(tmp_path / "o"), *argv])
    assert not (tmp_path / "o").exists()
    monkeypatch.setattr(sys, "argv", ["train_speed.py", "--seconds", "nan"])
    assert "--seconds nan" in _refused(capsys, train_speed.main)


# ------------------------------------------------------------------------------------------------
# e. types validated before they are converted; the cause named
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["5", "{maze: 1}"])
def test_curriculum_families_of_the_wrong_type_are_refused(value):
    with pytest.raises(ConfigError, match=r"curriculum.uniform.families = .*allowed a non-empty list"):
        load_config(FLAGSHIP, [f"curriculum.uniform.families={value}"])


def test_memory_refusal_names_map_channels_when_they_are_the_cause():
    from spade_rllib.rllib.env_description import check_env_builds
    from spade_rllib.rllib.model_config import check_modules_fit_memory

    cfg = load_config(FLAGSHIP, ["env.kwargs.seen_map=15", "agent.model.map_channels=[256, 256]"])
    with pytest.raises(ConfigError, match=r"^agent.model.map_channels = \[256, 256\]: out of range"):
        check_modules_fit_memory(cfg, check_env_builds(cfg), memory=2**28)
    cfg = load_config(FLAGSHIP, ["agent.model.hidden=[4096, 4096]"])
    with pytest.raises(ConfigError, match=r"^agent.model.hidden = \[4096, 4096\]: out of range"):
        check_modules_fit_memory(cfg, check_env_builds(cfg), memory=2**28)


def test_corrupt_config_yaml_in_a_trial_is_named(tmp_path):
    from spade_rllib.artifacts.checkpoint_layout import CheckpointError, checkpoint_env_setup, resolve_checkpoint
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint
    from spade_rllib.train import parse_args, resolve_config

    ckpt = save_tiny_checkpoint(tmp_path / "t", "MazeRace-v0")
    (tmp_path / "t" / "config.yaml").write_text("agent: {lr: [\n")
    with pytest.raises(ConfigError, match=r"^--resume = .*: the run's config.yaml .*config.yaml cannot be used: not valid YAML"):
        resolve_config(parse_args(["--resume", str(tmp_path / "t")]))
    with pytest.raises(CheckpointError, match=r"config.yaml: the run's config.yaml is damaged"):
        checkpoint_env_setup(resolve_checkpoint(str(ckpt)))
    (tmp_path / "t" / "config.yaml").write_text("- a list\n")
    with pytest.raises(CheckpointError, match=r"holds a list, not a config mapping"):
        checkpoint_env_setup(resolve_checkpoint(str(ckpt)))
