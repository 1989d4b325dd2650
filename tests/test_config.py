"""Config parsing, validation errors (one line, key path, value, allowed, did-you-mean), overrides. No Ray."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spade_rllib.config.run_config import ConfigError, RunConfig, apply_overrides, dump_config, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["quickstart.yaml", "connect_four.yaml", "cartpole.yaml"]


def _err(raw=None, overrides=()) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(apply_overrides(raw or {}, overrides))
    msg = str(e.value)
    assert "\n" not in msg, "errors must be one line"
    return msg


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_parse_and_round_trip(name):
    cfg = load_config(str(ROOT / "tune_configs" / name))
    assert isinstance(cfg, RunConfig)
    again = parse_config(cfg.to_dict())
    assert again.to_dict() == cfg.to_dict()
    assert dump_config(cfg)


@pytest.mark.parametrize("path", sorted((ROOT / "tune_configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_fits_a_two_cpu_machine(path):
    """`make demo` and the README's commands run on 2 CPUs: no shipped config may ask an embedded Ray for more."""
    from spade_rllib.config import resources
    cfg = load_config(str(path))
    resources.check_resources(cfg, resources.required_resources(cfg), cpus=2, gpus=0)


def test_defaults():
    cfg = parse_config({"env": {"id": "MazeRace-v0"}})
    assert cfg.self_play.mode == "mirror"
    assert cfg.league.enabled is False and cfg.curriculum.strategy == "none"


def test_dropped_agent_algorithm_key():
    """`agent.algorithm` was validated and never read: configs saved by earlier runs (`algorithm: PPO`) still
    parse, the key is gone from the schema, and any other value is an unknown key."""
    old = {"env": {"id": "MazeRace-v0"}, "agent": {"algorithm": "PPO", "lr": 0.001}}
    cfg = parse_config(old)
    assert cfg.agent.lr == 0.001 and "algorithm" not in cfg.to_dict()["agent"]
    assert old["agent"]["algorithm"] == "PPO"  # the input is not changed
    with pytest.raises(ConfigError, match=r"agent\.algorithm: unknown key"):
        parse_config({"env": {"id": "MazeRace-v0"}, "agent": {"algorithm": "DQN"}})


def test_env_id_is_required(tmp_path):
    """No game by default: a config without env.id is one line naming what is allowed, before Ray."""
    for raw in ({}, {"env": {"id": None}}, {"agent": {"lr": 1e-3}, "env": {"level_pool": 0}}):
        msg = _err(raw)
        assert msg.startswith("env.id: missing") and "'CaptureTheFlag-v0'" in msg and "'CartPole-v1'" in msg, msg
    assert "env.id = ''" in _err({"env": {"id": ""}})
    from spade_rllib.train import parse_args, resolve_config

    no_env = tmp_path / "no_env.yaml"
    no_env.write_text("agent:\n  lr: 1.0e-3\n")
    with pytest.raises(ConfigError, match=r"^env\.id: missing"):
        resolve_config(parse_args(["--config", str(no_env)]))


@pytest.mark.parametrize(
    "raw, expect",
    [
        ({"agnet": {}}, ["agnet: unknown key", "did you mean 'agent'"]),
        ({"agent": {"lrr": 0.1}}, ["agent.lrr: unknown key", "did you mean 'lr'", "allowed:"]),
        ({"agent": {"model": {"hiden": [64]}}}, ["agent.model.hiden", "did you mean 'hidden'"]),
        ({"training": {"stop": {"time": 5}}}, ["training.stop.time", "did you mean 'time_s'"]),
        ({"league": {"size": 3}}, ["league.size: unknown key", "allowed: enabled, win_rate_threshold"]),
        ({"curriculum": {"stratgy": "plr"}}, ["curriculum.stratgy", "did you mean 'strategy'"]),
    ],
)
def test_unknown_keys(raw, expect):
    msg = _err(raw)
    for part in expect:
        assert part in msg, msg


@pytest.mark.parametrize(
    "raw, expect",
    [
        ({"agent": {"lr": "fast"}}, "agent.lr = 'fast': wrong type, expected a number"),
        ({"agent": {"epochs": 2.5}}, "agent.epochs = 2.5: wrong type, expected an integer"),
        ({"agent": {"epochs": True}}, "agent.epochs = True: wrong type, expected an integer"),
        ({"agent": {"model": {"hidden": 64}}}, "agent.model.hidden = 64: wrong type, expected a list of integers"),
        ({"experiment": {"name": 3}}, "experiment.name = 3: wrong type, expected a string"),
        ({"league": {"enabled": "yes"}}, "league.enabled = 'yes': wrong type, expected true/false"),
        ({"agent": []}, "agent = []: wrong type, expected a mapping"),
    ],
)
def test_wrong_types(raw, expect):
    assert _err(raw).startswith(expect)


@pytest.mark.parametrize(
    "raw, expect",
    [
        ({"agent": {"lr": -1}}, "agent.lr = -1: out of range, allowed a number in (0.0, 1.0]"),
        ({"agent": {"gamma": 1.5}}, "agent.gamma = 1.5: out of range, allowed a number in [0.0, 1.0]"),
        ({"training": {"num_envs_per_runner": 0}}, "training.num_envs_per_runner = 0: out of range, allowed an integer in [1, 4096]"),
        ({"resources": {"num_gpus_per_learner": -0.5}}, "resources.num_gpus_per_learner = -0.5: out of range"),
        ({"env": {"difficulty": 11}}, "env.difficulty = 11: out of range, allowed a number in [1.0, 10.0]"),
        ({"agent": {"model": {"kind": "transformer"}}}, "agent.model.kind = 'transformer': not allowed"),
        ({"self_play": {"mode": "mirorr"}}, "did you mean 'mirror'"),
    ],
)
def test_out_of_range(raw, expect):
    assert expect in _err(raw)


def test_fractional_gpus_allowed():
    assert parse_config({"env": {"id": "MazeRace-v0"}, "resources": {"num_gpus_per_learner": 0.25}}).resources.num_gpus_per_learner == 0.25


@pytest.mark.parametrize(
    "env_id, expect",
    [
        ("CartPol-v1", ["env.id = 'CartPol-v1': unknown env id", "did you mean 'CartPole-v1'"]),
        ("MazeRace-v1", ["unknown env id", "did you mean 'MazeRace-v0'"]),
        ("pettingzoo.classic:conect_four_v3", ["has no env named 'conect_four_v3'", "did you mean 'connect_four_v3'"]),
        ("pettingzoo.classic:connect_four_v2", ["deprecated", "did you mean 'connect_four_v3'"]),
        ("pettingzoo.clasic:connect_four_v3", ["cannot import module 'pettingzoo.clasic'"]),
    ],
)
def test_unknown_env_ids(env_id, expect):
    msg = _err({"env": {"id": env_id}})
    for part in expect:
        assert part in msg, msg


def test_env_ids_accepted():
    assert parse_config({"env": {"id": "CartPole-v1"}}).self_play.mode == "none"
    assert parse_config({"env": {"id": "pettingzoo.classic:connect_four_v3"}}).env.id.endswith("connect_four_v3")
    assert parse_config({"env": {"id": "MazeRace-v0"}}).env.id == "MazeRace-v0"


def test_missing_files(tmp_path):
    assert "env.level_file = 'nope.txt': file not found" in _err({"env": {"level_file": "nope.txt"}})
    assert "evaluation.heldout_levels[0] = 'nope/': file not found" in _err({"env": {"id": "MazeRace-v0"}, "evaluation": {"heldout_levels": ["nope/"]}})
    with pytest.raises(ConfigError, match=r"--config = '.*missing.yaml': file not found"):
        load_config(str(tmp_path / "missing.yaml"))
    level = tmp_path / "lvl.txt"
    level.write_text("#####\n#AFB#\n#####\n")
    assert parse_config({"env": {"id": "MazeRace-v0", "level_file": str(level)}}).env.level_file == str(level)
    # A map without a flag used to pass here and fail inside Ray (issue 16): now refused up front.
    level.write_text("#####\n#A.B#\n#####\n")
    assert "line 1, column 1" in _err({"env": {"id": "MazeRace-v0", "level_file": str(level)}})


def test_cross_field_rules():
    assert "only allowed with env.id 'MazeRace-v0'" in _err({"env": {"id": "CartPole-v1", "difficulty": 2}})
    maze = {"id": "MazeRace-v0"}
    assert "needs 'mirror' or 'vs_random'" in _err({"env": maze, "self_play": {"mode": "none"}})
    assert "metric and target must be given together" in _err({"env": maze, "training": {"stop": {"metric": "x"}}})
    assert "unknown opponent" in _err({"env": maze, "evaluation": {"opponents": ["randm"]}})
    assert "scripted bots only exist" in _err({"env": {"id": "CartPole-v1"}, "evaluation": {"opponents": ["bot:rusher"]}})
    assert "weights must sum to <= 1" in _err({"env": maze, "self_play": {"opponent_mix": {"random": 0.7, "mirror": 0.6}}})


def test_overrides_are_yaml_parsed():
    cfg = load_config(str(ROOT / "tune_configs" / "quickstart.yaml"),
                      ["agent.lr=1e-4", "training.stop.time_s=120", "agent.model.hidden=[32, 16]", "league.enabled=false",
                       "evaluation.opponents=[random]", "env.kwargs.view_radius=3"])
    assert cfg.agent.lr == pytest.approx(1e-4)
    assert cfg.training.stop.time_s == 120.0
    assert cfg.agent.model.hidden == [32, 16]
    assert cfg.evaluation.opponents == ["random"]
    assert cfg.env.kwargs == {"draw_reward": -0.1, "plan": True, "view_radius": 3}  # merged into the file's kwargs


def test_override_errors():
    assert "agent.lrr: unknown key" in _err({}, ["agent.lrr=1"])
    with pytest.raises(ConfigError, match="expected KEY.PATH=VALUE"):
        apply_overrides({}, ["agent.lr"])
    with pytest.raises(ConfigError, match="is not a section"):
        apply_overrides({"agent": {"lr": 1}}, ["agent.lr.x=1"])


def test_cli_config_error_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent:\n  lr: -3\n")
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.train", "--config", str(bad)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == ["config error: agent.lr = -3: out of range, allowed a number in (0.0, 1.0]"], proc.stderr
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/cartpole.yaml", "--set", "agent.entropyy=0"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "did you mean 'entropy'" in proc.stderr and "Traceback" not in proc.stderr


def test_set_values_read_like_the_yaml_file(tmp_path):
    """`--set agent.lr=1e-4` is a number in train.py, tune.py and sweeps, as `lr: 1e-4` is in a file."""
    assert apply_overrides({}, ["agent.lr=1e-4", "agent.gamma=9.9e-1", "experiment.name=1e3x"]) == {
        "agent": {"lr": 1e-4, "gamma": 0.99}, "experiment": {"name": "1e3x"}}
    from spade_rllib.train import parse_args, resolve_config

    cfg, _ = resolve_config(parse_args(["--config", str(ROOT / "tune_configs" / "quickstart.yaml"), "--set", "agent.lr=1e-4"]))
    assert cfg.agent.lr == pytest.approx(1e-4)
    from spade_rllib.sweeps.sweep_spec import load_sweep

    spec, base = load_sweep("lr_gamma", sets=("agent.lr=2e-4", "agent.entropy=1e-3"))
    assert base["agent"]["lr"] == pytest.approx(2e-4) and base["agent"]["entropy"] == pytest.approx(1e-3)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {ROOT / 'tune_configs' / 'quickstart.yaml'}\nspace: {{agent.lr: {{loguniform: [1e-5, 1e-3]}}}}\n")
    spec, _ = load_sweep(str(sweep))
    assert spec.space["agent.lr"].low == pytest.approx(1e-5)


@pytest.mark.parametrize("raw, expect", [
    ({"agent": {"lr": float("nan")}}, "agent.lr = nan: not a finite number, allowed a number in (0.0, 1.0]"),
    ({"agent": {"vf_clip": float("inf")}}, "agent.vf_clip = inf: not a finite number, allowed a number > 0.0"),
    ({"training": {"stop": {"target": float("-inf")}}}, "training.stop.target = -inf: not a finite number, allowed any finite number"),
    ({"env": {"kwargs": {"stun_steps": float("nan")}}}, "env.kwargs.stun_steps = nan: not a finite number"),
    ({"self_play": {"opponent_mix": {"random": float("nan")}}}, "self_play.opponent_mix.random = nan: not a finite number"),
    ({"league": {"elo_k": float("inf")}}, "league.elo_k = inf: not a finite number, allowed a number > 0.0"),
    ({"league": {"pfsp_prior_games": float("nan")}}, "league.pfsp_prior_games = nan: not a finite number, allowed a number >= 0.0"),
    ({"curriculum": {"plr": {"temperature": float("nan")}}}, "curriculum.plr.temperature = nan: not a finite number, allowed a number in (0.0, 1000.0]"),
    ({"curriculum": {"threshold": {"up_threshold": float("inf")}}}, "curriculum.threshold.up_threshold = inf: not a finite number"),
])
def test_nan_and_inf_are_refused_everywhere(raw, expect):
    msg = _err(raw)
    assert msg.startswith(expect), msg


def test_nan_and_inf_from_yaml_and_set_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent:\n  lr: .nan\n")
    with pytest.raises(ConfigError, match=r"^agent\.lr = nan: not a finite number"):
        load_config(str(bad))
    with pytest.raises(ConfigError, match=r"^agent\.entropy = inf: not a finite number"):
        load_config(None, ["agent.entropy=.inf"])
    from spade_rllib.sweeps.sweep_spec import load_sweep

    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {ROOT / 'tune_configs' / 'quickstart.yaml'}\nspace: {{agent.lr: {{uniform: [.nan, 1.0e-3]}}}}\n")
    with pytest.raises(ConfigError, match=r"space\.agent\.lr\.uniform\[0\] = nan: not a finite number"):
        load_sweep(str(sweep))


def test_shipped_data_paths_resolve_from_any_working_directory(tmp_path, monkeypatch):
    """A relative `spade_rllib/...` path the working directory lacks names the installed package's data."""
    from spade_rllib.config.run_config import load_config

    monkeypatch.chdir(tmp_path)
    cfg = load_config(str(ROOT / "tune_configs" / "quickstart.yaml"))
    (maps,) = cfg.evaluation.final_heldout_levels
    assert Path(maps).is_absolute() and Path(maps, "open_field.txt").is_file(), maps
    with pytest.raises(ConfigError, match="file not found"):  # anything else still has to exist
        parse_config({"env": {"id": "CaptureTheFlag-v0"}, "evaluation": {"heldout_levels": ["levels/nowhere"]}})
