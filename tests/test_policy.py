"""Ray-free policy loading (`spade_rllib.players.policy`): acting, masks, league members, one-line errors."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from spade_rllib.players.policy import PolicyLoadError, load_policy, resolve_checkpoint
from spade_rllib.testing.tiny_checkpoints import save_tiny_checkpoint

MAZE = "MazeRace-v0"
C4 = "connect_four_v3"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("policy_ckpts")
    return {
        "maze": save_tiny_checkpoint(root / "maze_run", MAZE, snapshots=2, seed=0),
        "c4": save_tiny_checkpoint(root / "c4_run", C4, seed=1),
        "root": root,
    }


def _maze_obs(n=4, seed=0):
    from spade_rllib.games import make_env

    env = make_env(MAZE, difficulty=3)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    batch = [obs["player_0"], obs["player_1"]]
    batch += [rng.uniform(-1, 1, size=obs["player_0"].shape).astype(np.float32) for _ in range(n - 2)]
    return batch


def test_load_acts_without_ray(ckpts):
    # a fresh interpreter: other tests in this session may have started Ray
    code = ("import sys, numpy as np; from spade_rllib.players.policy import load_policy; "
            f"p = load_policy({str(ckpts['maze'])!r}, env_id='MazeRace-v0'); a = p.act(np.zeros(p.feature_size)); "
            "import ray; assert not ray.is_initialized(); print('ok', a)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stderr[-2000:]
    policy = load_policy(ckpts["maze"], env_id=MAZE)
    obs = _maze_obs()
    actions = policy.act_batch(obs)
    assert actions.shape == (len(obs),) and all(0 <= a < 6 for a in actions)
    assert [policy.act(o) for o in obs] == list(actions)
    # deterministic=True is the argmax of the module's own inference logits
    import torch

    with torch.no_grad():
        ref = policy.module.forward_inference({"obs": torch.as_tensor(np.stack(obs))})["action_dist_inputs"]
    assert list(ref.argmax(dim=1).numpy()) == list(actions)
    # sampling is reproducible with a seeded generator
    a1 = policy.act_batch(obs, deterministic=False, rng=np.random.default_rng(3))
    a2 = policy.act_batch(obs, deterministic=False, rng=np.random.default_rng(3))
    assert list(a1) == list(a2)


def test_trial_dir_resolves_to_newest_checkpoint(ckpts, tmp_path):
    run = tmp_path / "run"
    save_tiny_checkpoint(run, MAZE, seed=5, checkpoint_name="checkpoint_000001")
    save_tiny_checkpoint(run, MAZE, seed=6, checkpoint_name="checkpoint_000010")
    info = resolve_checkpoint(run)
    assert info.path.name == "checkpoint_000010" and info.trial_dir == run.resolve()
    # a single module directory also loads
    policy = load_policy(info.module_dir("main"), module_id="main")
    assert policy.num_actions == 6


def test_masked_policy_never_picks_illegal(ckpts):
    policy = load_policy(ckpts["c4"], env_id=C4)
    assert policy.input_style == "trailing_mask" and policy.num_actions == 7
    rng = np.random.default_rng(0)
    for _ in range(50):
        board = rng.integers(0, 2, size=(6, 7, 2)).astype(np.int8)
        mask = (rng.uniform(size=7) < 0.4).astype(np.int8)
        mask[rng.integers(7)] = 1
        a = policy.act({"observation": board, "action_mask": mask})
        assert mask[a] == 1
        # an explicit mask overrides the one inside the observation
        only = np.zeros(7, np.int8)
        only[rng.integers(7)] = 1
        assert policy.act({"observation": board, "action_mask": mask}, action_mask=only) == int(np.argmax(only))
        s = policy.act({"observation": board, "action_mask": mask}, deterministic=False, rng=rng)
        assert mask[s] == 1
    # the flat vector the trainer feeds (features + trailing mask) works too
    flat = np.concatenate([board.reshape(-1), mask]).astype(np.float32)
    assert mask[policy.act(flat)] == 1


def test_league_members_load_from_weights(ckpts):
    info = resolve_checkpoint(ckpts["maze"])
    assert info.module_ids == ("main",) and info.league_ids == ("main_v1", "main_v2")
    obs = _maze_obs(8)
    main = load_policy(ckpts["maze"]).logits_batch(obs)
    snap = load_policy(ckpts["maze"], "main_v1", env_id=MAZE).logits_batch(obs)
    assert snap.shape == main.shape and not np.allclose(snap, main)


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(PolicyLoadError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_inputs_one_line_errors(ckpts, tmp_path):
    assert "does not exist" in _error(load_policy, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert "not an RLlib checkpoint" in _error(load_policy, tmp_path / "empty")
    (tmp_path / "file.txt").write_text("x")
    assert "is a file" in _error(load_policy, tmp_path / "file.txt")
    message = _error(load_policy, ckpts["maze"], "mian")
    assert "'mian'" in message and "available: main, main_v1, main_v2" in message and "did you mean 'main'" in message
    assert "trained on connect_four_v3, not on MazeRace-v0" in _error(load_policy, ckpts["c4"], env_id=MAZE)
    assert "trained on MazeRace-v0, not on connect_four_v3" in _error(load_policy, ckpts["maze"], env_id=C4)


def test_wrong_env_detected_from_spaces_without_metadata(ckpts, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(ckpts["c4"], bare)  # the checkpoint folder alone: no params.json above it
    assert "is not for MazeRace-v0" in _error(load_policy, bare, env_id=MAZE)
    assert load_policy(bare, env_id=C4).num_actions == 7


@pytest.mark.parametrize("cli", ["export", "evaluate", "play"])
def test_cli_bad_checkpoint_exits_2_one_line(cli, tmp_path, ckpts):
    extra = ["--out", str(tmp_path / "x.onnx")] if cli == "export" else []
    for bad, needle in ((tmp_path / "missing", "does not exist"), (ckpts["root"], "not an RLlib checkpoint")):
        proc = subprocess.run([sys.executable, "-m", f"spade_rllib.{cli}", "--checkpoint", str(bad), *extra],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and needle in lines[0]
        assert "Traceback" not in proc.stderr


def test_unknown_module_cli(ckpts, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spade_rllib.export", "--checkpoint", str(ckpts["maze"]),
                           "--module", "nope", "--out", str(tmp_path / "x.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "available: main, main_v1, main_v2" in proc.stderr
    json.dumps(proc.stderr)  # plain text


def test_env_and_league_from_spade_run_layout(ckpts, tmp_path):
    """A spade run: env id in the trial's config.yaml (params.json has env None); league in a
    stand-alone league_state.pkl when the algorithm state holds none."""
    import pickle

    from spade_rllib.players.policy import checkpoint_env_id

    trial = tmp_path / "trial"
    shutil.copytree(ckpts["c4"], trial / "checkpoint_000004")
    (trial / "params.json").write_text(json.dumps({"env": None, "env_config": {}}))
    (trial / "config.yaml").write_text("experiment:\n  name: x\nenv:\n  id: pettingzoo.classic:connect_four_v3\n")
    info = resolve_checkpoint(trial)
    assert info.path.name == "checkpoint_000004" and checkpoint_env_id(info) == C4
    assert "trained on connect_four_v3" in _error(load_policy, trial, env_id=MAZE)
    main = load_policy(trial)
    weights = {k: np.asarray(v) * 0.5 for k, v in main.module.get_state().items()}
    with open(info.path / "league_state.pkl", "wb") as f:
        pickle.dump({"members": [{"id": "main_v10", "weights": weights}, {"id": "main_v2", "weights": weights},
                                 {"id": "random", "weights": None}]}, f)
    assert resolve_checkpoint(trial).league_ids == ("main_v2", "main_v10")
    snap = load_policy(trial, "main_v10", env_id=C4)
    board = {"observation": np.zeros((6, 7, 2), np.int8), "action_mask": np.ones(7, np.int8)}
    assert np.allclose(snap.logits_batch([board]), load_policy(trial, "main_v2").logits_batch([board]))
    bad = dict(weights)
    key = next(iter(bad))
    bad[key] = np.zeros((3, 3), np.float32)
    with open(info.path / "league_state.pkl", "wb") as f:
        pickle.dump({"members": [{"id": "main_v1", "weights": bad}]}, f)
    assert "do not fit main's module" in _error(load_policy, trial, "main_v1")
