"""Nothing loads, resumes or overwrites silently; bad input is refused before Ray; Ray on loopback.

Weights checked on every load (keys, shapes, finite; MLP and LSTM modules), the newest checkpoint by
number, resume compatibility, atomic writes and refused overwrites, storage URIs, the YAML reader,
bounds, the CTF movement rule in map validation, `root_cause` through `ActorDiedError`, and (marked
`slow`) SIGINT/SIGTERM of a real run with the listening sockets of its embedded Ray.
"""
from __future__ import annotations

import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, apply_overrides, load_config, read_yaml
from spade_rllib.players.policy import PolicyLoadError, load_policy

ROOT = Path(__file__).resolve().parents[1]
MAZERACE = str(ROOT / "tune_configs" / "mazerace.yaml")
STATE = Path("learner_group/learner/rl_module/main/module_state.pkl")


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

    root = tmp_path_factory.mktemp("trial")
    save_tiny_checkpoint(root, "MazeRace-v0", snapshots=1, checkpoint_name="checkpoint_000001")
    save_tiny_checkpoint(root, "MazeRace-v0", snapshots=1, seed=1, checkpoint_name="checkpoint_000002")
    return root


def _copy(trial, tmp_path) -> Path:
    t = tmp_path / "t"
    shutil.copytree(trial, t)
    return t


def _rewrite_state(ckpt: Path, change) -> None:
    file = ckpt / STATE
    state = pickle.loads(file.read_bytes())
    file.write_bytes(pickle.dumps(change(dict(state))))


def _load_error(path, *args, **kwargs) -> str:
    with pytest.raises(PolicyLoadError) as e:
        load_policy(path, *args, **kwargs)
    assert "\n" not in str(e.value)
    return str(e.value)


# ------------------------------------------------------------------------------------------------
# Weights are checked on every load
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("change, expect", [
    (lambda s: {}, "key 'pi_trunk.0.weight' is missing"),
    (lambda s: {k: v for k, v in s.items() if k.startswith("vf_")}, "key 'pi_trunk.0.weight' is missing"),
    (lambda s: {**s, "pi_head.weight": np.full_like(s["pi_head.weight"], np.nan)}, "key 'pi_head.weight' holds NaN"),
    (lambda s: {**s, "vf_head.bias": np.array([np.inf], np.float32)}, "key 'vf_head.bias' holds NaN or inf"),
    (lambda s: {**s, "pi_head.weight": s["pi_head.weight"][:, :3]}, "key 'pi_head.weight' has shape (6, 3)"),
    (lambda s: {**s, "extra.weight": np.zeros(3, np.float32)}, "key 'extra.weight' is not a key of the module"),
])
def test_damaged_weights_are_refused_naming_file_and_key(trial, tmp_path, change, expect):
    t = _copy(trial, tmp_path)
    ckpt = t / "checkpoint_000002"
    _rewrite_state(ckpt, change)
    msg = _load_error(ckpt)
    assert expect in msg and str(ckpt / STATE) in msg


def test_export_evaluate_play_refuse_nan_weights(trial, tmp_path, capsys):
    from spade_rllib import evaluate, export, play

    t = _copy(trial, tmp_path)
    _rewrite_state(t / "checkpoint_000002", lambda s: {**s, "pi_head.weight": s["pi_head.weight"] * np.nan})
    ckpt = str(t / "checkpoint_000002")
    assert export.main(["--checkpoint", ckpt, "--out", str(tmp_path / "m.onnx")]) == 2
    assert evaluate.main(["--checkpoint", ckpt, "--local", "--out", str(tmp_path / "ev")]) == 2
    assert play.main(["--checkpoint", ckpt]) == 2
    err = capsys.readouterr().err
    assert err.count("holds NaN or inf") == 3
    assert not (tmp_path / "m.onnx").exists() and not (tmp_path / "ev").exists()


def test_league_snapshot_weights_are_checked(trial, tmp_path):
    t = _copy(trial, tmp_path)
    ckpt = t / "checkpoint_000002"
    file = ckpt / "algorithm_state.pkl"
    original = file.read_bytes()

    def with_member_weights(change):
        state = pickle.loads(original)
        member = state["spade_components"]["league"]["league"]["members"][0]
        member["weights"] = change(member["weights"])
        file.write_bytes(pickle.dumps(state))

    with_member_weights(lambda w: {k: v for k, v in w.items() if k.startswith("vf_")})
    assert "league member 'main_v1': weights do not fit main's module: key 'pi_trunk.0.weight' is missing" in \
        _load_error(ckpt, "main_v1")
    with_member_weights(lambda w: {**w, "pi_head.bias": w["pi_head.bias"] * np.nan})
    assert "key 'pi_head.bias' holds NaN" in _load_error(ckpt, "main_v1")
    with_member_weights(lambda w: {k: v for k, v in w.items() if not k.startswith("vf_")})
    assert load_policy(ckpt, "main_v1").module_id == "main_v1"  # an inference-only snapshot (no value head) loads


def test_recurrent_modules_are_checked_against_their_own_model_config(tmp_path):
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from spade_rllib.players.policy import _quiet_deprecations
    from spade_rllib.rllib.module import SpadeModule
    from spade_rllib.testing.tiny_checkpoints import env_spaces

    obs, act, mask = env_spaces("MazeRace-v0")
    torch.manual_seed(0)
    spec = RLModuleSpec(module_class=SpadeModule, observation_space=obs, action_space=act,
                        model_config={"kind": "mlp", "hidden": [16], "activation": "tanh", "mask_size": mask,
                                      "use_lstm": True, "lstm_cell_size": 8})
    with _quiet_deprecations():
        module = spec.build()
    lstm_keys = [k for k in module.get_state() if "lstm" in k]
    assert lstm_keys
    directory = tmp_path / "main"
    module.save_to_path(str(directory))
    assert load_policy(directory, module_id="main").module_id == "main"
    state = pickle.loads((directory / "module_state.pkl").read_bytes())
    state.pop(lstm_keys[0])
    (directory / "module_state.pkl").write_bytes(pickle.dumps(state))
    assert f"key {lstm_keys[0]!r} is missing" in _load_error(directory, module_id="main")


# ------------------------------------------------------------------------------------------------
# One rule for "the newest checkpoint": by number, damaged ones skipped with a note
# ------------------------------------------------------------------------------------------------

def test_resume_after_cp_r_takes_the_newest_by_number(trial, tmp_path, capsys):
    from spade_rllib.artifacts.checkpoint_layout import resolve_checkpoint
    from spade_rllib.train import find_checkpoint

    t = tmp_path / "copied"
    subprocess.run(["cp", "-r", str(trial), str(t)], check=True)
    now = time.time()
    os.utime(t / "checkpoint_000002", (now - 3600, now - 3600))  # the copy made the older one look newer
    os.utime(t / "checkpoint_000001", (now, now))
    assert find_checkpoint(str(t)).endswith("checkpoint_000002")
    assert find_checkpoint(str(tmp_path)).endswith("checkpoint_000002")  # an experiment dir above the trial
    assert resolve_checkpoint(t).path.name == "checkpoint_000002"
    (t / "checkpoint_000002" / "rllib_checkpoint.json").write_text("{not json")
    policy = load_policy(t)  # the loader falls back past the damaged newest one, with a note
    assert policy.checkpoint.name == "checkpoint_000001"
    err = capsys.readouterr().err
    assert "note: skipping incomplete checkpoint" in err and "checkpoint_000002" in err
    assert find_checkpoint(str(t)).endswith("checkpoint_000001")


def test_resume_compatibility_is_checked_before_ray(trial, tmp_path):
    from spade_rllib.rllib.resume_fit import check_resume

    ckpt = str(trial / "checkpoint_000002")
    ok = load_config(MAZERACE, ["agent.model.hidden=[16]", "agent.model.vf_share_layers=false"])
    check_resume(ok, ckpt)
    with pytest.raises(ConfigError, match=r"was trained with agent.model.hidden = \[16\]; the config gives \[32\]"):
        check_resume(load_config(MAZERACE, ["agent.model.hidden=[32]"]), ckpt)
    with pytest.raises(ConfigError, match="was trained with agent.model.memory = 'none'; the config gives 'lstm'"):
        check_resume(load_config(MAZERACE, ["agent.model.hidden=[16]", "agent.model.memory=lstm"]), ckpt)
    with pytest.raises(ConfigError, match="was trained on MazeRace-v0; the config says env.id = 'CaptureTheFlag-v0'"):
        check_resume(load_config(MAZERACE, ["env.id=CaptureTheFlag-v0", "agent.model.hidden=[16]"]), ckpt)
    t = _copy(trial, tmp_path)
    _rewrite_state(t / "checkpoint_000002", lambda s: {})
    with pytest.raises(ConfigError, match="--resume: .*key 'pi_trunk.0.weight' is missing"):
        check_resume(ok, str(t / "checkpoint_000002"))


def test_resume_without_runinfo_reads_the_trial_config(trial, tmp_path):
    from spade_rllib.train import parse_args, resolve_config

    t = _copy(trial, tmp_path)
    assert not (t / "runinfo.json").exists()
    with pytest.raises(ConfigError, match="holds no config.yaml"):
        resolve_config(parse_args(["--resume", str(t)]))
    shutil.copy(MAZERACE, t / "config.yaml")
    cfg, checkpoint = resolve_config(parse_args(["--resume", str(t)]))
    assert checkpoint.endswith("checkpoint_000002") and cfg.env.id == "MazeRace-v0"


# ------------------------------------------------------------------------------------------------
# Everything before Ray
# ------------------------------------------------------------------------------------------------

def test_env_dependencies_and_model_size_before_ray(tmp_path):
    from spade_rllib.rllib.env_description import check_env_builds
    from spade_rllib.rllib.model_config import check_modules_fit_memory

    car = tmp_path / "car.yaml"
    car.write_text("env: {id: CarRacing-v3}\ntraining: {stop: {iterations: 1}}\n")
    try:
        import Box2D  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="env.id = 'CarRacing-v3': the env cannot be built here"):
            check_env_builds(load_config(str(car)))
    cfg = load_config(MAZERACE, ["agent.model.hidden=[4096, 4096]"])
    with pytest.raises(ConfigError, match=r"agent.model.hidden = \[4096, 4096\]: out of range, .* parameters need about"):
        check_modules_fit_memory(cfg, check_env_builds(cfg), memory=2**30)
    check_modules_fit_memory(load_config(MAZERACE), check_env_builds(cfg), memory=2**30)
    with pytest.raises(ConfigError, match="experiment.seed = 4294967296: out of range"):
        load_config(MAZERACE, ["experiment.seed=4294967296"])


def test_root_cause_reads_actor_died_errors():
    from ray.exceptions import ActorDiedError, RayTaskError

    from spade_rllib.cli import one_line

    cause = ValueError("Seed must be between 0 and 2**32 - 1")
    task = RayTaskError("SpadePPO.__init__", "Traceback (most recent call last):\n  File \"x\", line 1\n"
                        "ValueError: Seed must be between 0 and 2**32 - 1", cause)
    assert one_line(ActorDiedError(task)) == "ValueError: Seed must be between 0 and 2**32 - 1"
    from ray.tune.error import TuneError

    wrapped = TuneError("Trial task failed")
    wrapped.__cause__ = ActorDiedError(task)
    assert one_line(wrapped) == "ValueError: Seed must be between 0 and 2**32 - 1"


def test_small_cli_items(tmp_path, capsys):
    from spade_rllib import train

    assert train.main(["--config", MAZERACE, "--final-eval-games", "-5"]) == 2
    assert "--final-eval-games = -5: out of range" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="agent.lr"):  # --debug shows the traceback of config errors too
        train.main(["--config", MAZERACE, "--set", "agent.lr=fast", "--debug"])


# ------------------------------------------------------------------------------------------------
# Writes are atomic and never clobber inputs
# ------------------------------------------------------------------------------------------------

def test_interrupted_export_leaves_the_old_file_whole(trial, tmp_path, monkeypatch):
    import torch

    from spade_rllib import export

    out = tmp_path / "main.onnx"
    assert export.main(["--checkpoint", str(trial), "--out", str(out), "--no-check"]) == 0
    before = out.read_bytes()

    class CutShort:  # torch.onnx.export(dynamo=True) returns a program that export_onnx saves to the file
        def save(self, path):
            Path(path).write_bytes(b"half an onnx file")
            raise KeyboardInterrupt

    def cut_short(model, args, *rest, **kwargs):
        return CutShort()

    monkeypatch.setattr(torch.onnx, "export", cut_short)
    with pytest.raises(KeyboardInterrupt):
        export.export_onnx(load_policy(trial), out)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.onnx"]  # no temporary file left


def test_outputs_never_clobber_inputs(trial, tmp_path, capsys):
    from spade_rllib import evaluate, export

    t = _copy(trial, tmp_path)
    state = (t / "checkpoint_000002" / STATE).read_bytes()
    assert export.main(["--checkpoint", str(t), "--out", str(t / "checkpoint_000002" / STATE)]) == 2
    assert "inside the checkpoint" in capsys.readouterr().err
    assert (t / "checkpoint_000002" / STATE).read_bytes() == state
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert export.main(["--checkpoint", str(t), "--out", str(notes)]) == 2
    assert "is not an ONNX export of this command; refused (pass --force" in capsys.readouterr().err
    assert notes.read_text() == "mine"
    onnx_out = tmp_path / "m.onnx"
    assert export.main(["--checkpoint", str(t), "--out", str(onnx_out), "--no-check"]) == 0
    assert export.main(["--checkpoint", str(t), "--out", str(onnx_out), "--no-check"]) == 0  # its own output
    assert export.main(["--checkpoint", str(t), "--out", str(notes), "--no-check", "--force"]) == 0
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "report.md").write_text("an earlier report")
    args = ["--checkpoint", str(t), "--local", "--out", str(ev), "--games-per-pair", "2", "--bootstrap", "2",
            "--replays", "0", "--bots", "none", "--no-progress"]
    assert evaluate.main(args) == 2
    assert "the directory exists and is not empty" in capsys.readouterr().err
    assert (ev / "report.md").read_text() == "an earlier report"
    assert evaluate.main(["--checkpoint", str(t), "--local", "--out", str(t / "checkpoint_000002" / "ev")]) == 2


# ------------------------------------------------------------------------------------------------
# Storage URIs, experiment names
# ------------------------------------------------------------------------------------------------

def test_storage_uris_stay_uris_and_names_are_one_component(tmp_path):
    from spade_rllib.config.preflight import check_launch
    from spade_rllib.train import make_tune_run_config

    cfg = load_config(MAZERACE, ["experiment.storage_path=s3://bucket/x"])
    check_launch(cfg)
    assert make_tune_run_config(cfg).storage_path == "s3://bucket/x"
    assert make_tune_run_config(load_config(MAZERACE, [f"experiment.storage_path={tmp_path}/r"])).storage_path == \
        str((tmp_path / "r").resolve())
    for value, expect in (("ftp://host/x", "unknown storage scheme 'ftp'"), ("s3:///x", "no bucket"),
                          (f"file://{tmp_path}/f/x", None)):
        c = load_config(MAZERACE, [f"experiment.storage_path={value}"])
        if expect is None:
            check_launch(c)
        else:
            with pytest.raises(ConfigError, match=expect):
                check_launch(c)
    for name in ("../x", "/abs", "a/b", "..", ""):
        with pytest.raises(ConfigError, match="experiment.name = .*one directory name"):
            load_config(MAZERACE, [f"experiment.name={name!r}"])


# ------------------------------------------------------------------------------------------------
# YAML
# ------------------------------------------------------------------------------------------------

def _alias_bomb(levels: int = 10) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + f"\nagent: {{lr: *a{levels - 1}}}\n"


def test_yaml_reader_refuses_duplicates_bombs_and_keeps_quoted_strings(tmp_path):
    bomb = _alias_bomb()
    assert len(bomb) < 2000
    t0 = time.perf_counter()
    with pytest.raises(Exception, match="expands to more than 100,000 values"):
        read_yaml(bomb)
    assert time.perf_counter() - t0 < 5.0
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb)
    with pytest.raises(ConfigError, match="expands to more than"):
        load_config(str(path))
    flow = "[&a0 [" + ", ".join(["x"] * 10) + "]" + "".join(
        f", &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)) + "]"
    with pytest.raises(ConfigError, match="--set .*expands to more than"):  # the same reader serves --set values
        apply_overrides({}, ["env.kwargs=" + flow])
    twice = tmp_path / "twice.yaml"
    twice.write_text(Path(MAZERACE).read_text() + "\nagent:\n  lr: 0.001\n")
    with pytest.raises(ConfigError, match="duplicate key 'agent' at line"):
        load_config(str(twice))
    with pytest.raises(Exception, match="duplicate key 'lr'"):
        read_yaml("agent: {lr: 1, lr: 2}")
    assert read_yaml("a: 1e3\nb: '1e3'\nc: \"1e-4\"\nd: 1.0e3\n") == {"a": 1000.0, "b": "1e3", "c": "1e-4", "d": 1000.0}
    assert load_config(MAZERACE, ["experiment.name='1e3'"]).experiment.name == "1e3"
    assert read_yaml("base: &b {x: 1}\nuse: {<<: *b, x: 2}\n")["use"] == {"x": 2}  # merge keys still override
    with pytest.raises(Exception, match="recursive alias"):
        read_yaml("&a [*a]")


def test_set_values_and_sweep_files_use_the_same_reader():
    with pytest.raises(ConfigError, match="not valid YAML .*duplicate key"):
        apply_overrides({}, ["env.kwargs={a: 1, a: 2}"])
    import spade_rllib.sweeps.sweep_spec as sweep_spec

    assert sweep_spec.read_yaml is read_yaml


# ------------------------------------------------------------------------------------------------
# Bounds
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sets, expect", [
    (["agent.train_batch_size=1e12"], "agent.train_batch_size = 1000000000000"),
    (["evaluation.games=1e9"], "evaluation.games = 1000000000"),
    (["agent.model.hidden=[1000000000]"], "agent.model.hidden[0] = 1000000000: out of range"),
    (["env.kwargs={max_steps: 1000000000000}"], "max_steps must be None or an int in [1, 100000]"),
])
def test_config_counts_are_bounded(sets, expect):
    with pytest.raises(ConfigError) as e:
        load_config(MAZERACE, sets)
    assert expect in str(e.value) and ("out of range" in str(e.value) or "must be None or" in str(e.value))


def test_cli_counts_and_maps_are_bounded(tmp_path):
    from spade_rllib.config import resources
    from spade_rllib.envs import Level, LevelError
    from spade_rllib.evaluate import parse_args
    from spade_rllib.evaluation.schedule import ScheduleError, parse_levels
    from spade_rllib.tune import main as tune_main

    for args, expect in ((["--games-per-pair", "1000000000"], "--games-per-pair = 1000000000: out of range, allowed 1..10000"),
                         (["--bootstrap", "1000000000"], "--bootstrap = 1000000000: out of range"),
                         (["--replays", "100000"], "--replays = 100000: out of range")):
        with pytest.raises(ValueError, match=expect):
            parse_args(["--checkpoint", "x", "--out", str(tmp_path / "ev"), *args])
    with pytest.raises(ScheduleError, match="N = 1000000: out of range, allowed 1..1000"):
        parse_levels("generated:1000000@5", "MazeRace-v0", 0)
    assert tune_main(["--sweep", "lr_gamma", "--num-samples", "1000000000", "--dry-run"]) == 2
    too_many = min(4096, 4 * (os.cpu_count() or 1) + 1)
    cfg = load_config(MAZERACE, [f"resources.num_cpus={too_many}"])
    with pytest.raises(ConfigError, match=f"resources.num_cpus = {too_many}: out of range, this machine has"):
        resources.check_resources(cfg, resources.required_resources(cfg))
    t0 = time.perf_counter()
    big = "\n".join(["#" * 3000] * 3000)
    with pytest.raises(LevelError, match="at most 256x256"):
        Level.from_ascii(big)
    assert time.perf_counter() - t0 < 2.0


# ------------------------------------------------------------------------------------------------
# Maps follow the game's movement rules
# ------------------------------------------------------------------------------------------------

def test_ctf_map_that_can_never_be_won_is_refused_with_the_blocking_cell(tmp_path):
    from spade_rllib.envs import Level, LevelError, generate_ctf_level, knobs_for_difficulty

    with pytest.raises(LevelError, match=r"unwinnable map: team A's spawn .* through its own base 'a'.*line 2, column 4"):
        Level.from_ascii("########\n#A.ab.B#\n########\n")
    bad = tmp_path / "unwinnable.txt"
    bad.write_text("########\n#A.ab.B#\n########\n")
    with pytest.raises(ConfigError, match="unwinnable map"):
        load_config(str(ROOT / "tune_configs" / "quickstart.yaml"), [f"env.level_file={bad}"])
    assert Level.from_ascii("########\n#A....B#\n#..ab..#\n########\n").is_ctf  # a way around the own base
    for seed in range(40):  # every generated level obeys the same rule
        for difficulty in (1, 5, 10):
            Level.from_ascii(generate_ctf_level(knobs_for_difficulty(difficulty, agents_per_team=1 + seed % 2), seed).to_ascii())


# ------------------------------------------------------------------------------------------------
# Signals and loopback (a real short run)
# ------------------------------------------------------------------------------------------------

def test_graceful_stop_counts_signals_and_pickles():
    from spade_rllib.rllib.graceful_stop import GracefulStop

    lines = []
    stop = GracefulStop({"training_iteration": 3}, printer=lines.append)
    assert not stop("t", {"training_iteration": 1}) and stop("t", {"training_iteration": 3})
    stop.handle(signal.SIGTERM, None)
    assert stop.exit_code == 143 and stop("t", {"training_iteration": 2}) and "SIGTERM received" in lines[0]
    clone = pickle.loads(pickle.dumps(stop))
    assert clone.requested and clone.criteria == {"training_iteration": 3}
    stop.count = 2
    with pytest.raises(KeyboardInterrupt):
        stop.handle(signal.SIGINT, None)


def _process_tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo += children.get(pid, [])
    return out


def listening_sockets(root: int) -> list[tuple[str, int, str]]:
    """(address, port, process name) of every TCP socket in LISTEN state held by `root`'s process tree."""
    inodes = {}
    for pid in _process_tree(root):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes[target[8:-1]] = pid
        except OSError:
            continue
    out = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            parts = row.split()
            if parts[3] != "0A" or parts[9] not in inodes:  # 0A: LISTEN
                continue
            hex_ip, hex_port = parts[1].split(":")
            raw = bytes.fromhex(hex_ip)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            try:
                name = open(f"/proc/{inodes[parts[9]]}/comm").read().strip()
            except OSError:
                name = "?"
            out.append((socket.inet_ntop(family, raw), int(hex_port, 16), name))
    return out


LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp (Linux)")
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_run_ends_gracefully_on_signals_and_its_ray_listens_on_loopback(tmp_path, sig, code):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", MAZERACE, "--final-eval-games", "0",
           "--set", f"experiment.storage_path={tmp_path}/runs", "--set", "training.num_env_runners=0",
           "--set", "training.stop.time_s=600", "--set", "agent.train_batch_size=2048",
           "--set", "agent.minibatch_size=1024", "--set", "training.num_envs_per_runner=16"]
    log = tmp_path / "out.txt"
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        def second_iteration_done() -> bool:  # the console throttles its lines; iterations.log has every one
            return any("iter    2" in p.read_text() for p in (tmp_path / "runs").glob("**/iterations.log"))

        deadline = time.time() + 240
        while time.time() < deadline and not second_iteration_done() and proc.poll() is None:
            time.sleep(1)
        assert second_iteration_done(), log.read_text()[-2000:]
        sockets = listening_sockets(proc.pid)
        assert sockets, "found no listening socket of the run's Ray"
        assert all(addr in LOOPBACK for addr, _, _ in sockets), sockets
        proc.send_signal(sig)
        assert proc.wait(timeout=240) == code
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "received: stopping after iteration" in text
    assert "interrupted at iteration" in text and "--resume" in text
    assert "Traceback" not in text and "Tuner.restore" not in text and "*** SIGTERM" not in text
    trial = next((tmp_path / "runs" / "mazerace").glob("mazerace_*"))
    assert list(trial.glob("checkpoint_*")), "no final checkpoint"
