"""The one env-id parser and resolver (`spade_rllib.games.env_ids`) and the checks before Ray (`preflight`).

Every id form, the catalog ids exactly as before, bad ids (one line, "did you mean", the allowed forms),
and the refusals that must come before Ray starts: unsupported action spaces, envs that fail on their
first step, bad kwargs. No Ray; the one subprocess runs `train` to its refusal.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.games import EnvIdError, canonical_env_id, env_kind, parse_env_id, resolve_env
from spade_rllib.games.adapter import AECGame, GymGame, ParallelGame, make_game_factory
from spade_rllib.games.spaces import UnsupportedSpace, check_action_space

ROOT = Path(__file__).resolve().parents[1]
USER_ENVS = Path(__file__).resolve().parent / "fixtures" / "user_envs"


def _err(env_id, **env) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config({"env": {"id": env_id, **env}})
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------------------------------ forms
@pytest.mark.parametrize("env_id, form, kind, game", [
    ("MazeRace-v0", "catalog", "level", ParallelGame),
    ("CaptureTheFlag-v0", "catalog", "level", ParallelGame),
    ("connect_four_v3", "catalog", "pettingzoo", AECGame),
    ("pettingzoo.classic:connect_four_v3", "catalog", "pettingzoo", AECGame),
    ("classic/tictactoe-v3", "registry", "pettingzoo", AECGame),
    ("classic/tictactoe_v3", "registry", "pettingzoo", AECGame),  # PettingZoo normalizes _vN
    ("classic/tictactoe", "registry", "pettingzoo", AECGame),  # the highest version
    ("pettingzoo.classic:tictactoe_v3", "module", "pettingzoo", AECGame),
    ("pettingzoo.classic.tictactoe_v3", "module", "pettingzoo", AECGame),
    ("mpe2:simple_spread_v3", "module", "pettingzoo", AECGame),  # a submodule the package does not import
    ("mpe2.simple_spread_v3", "module", "pettingzoo", AECGame),
    ("pettingzoo.classic.tictactoe.tictactoe:raw_env", "factory", "pettingzoo", AECGame),  # an AECEnv class
    ("CartPole-v1", "gymnasium", "gymnasium", GymGame),
])
def test_every_form_parses_resolves_and_builds(env_id, form, kind, game):
    assert resolve_env(env_id).ref.form == form
    assert env_kind(env_id) == kind and resolve_env(env_id).kind == kind
    g = make_game_factory(env_id)()
    assert isinstance(g, game)
    obs = g.reset(seed=0)
    agent, o = next(iter(obs.items()))
    assert o.shape == (g.obs_size,)
    g.step({a: int(g.legal_actions(o)[0]) for a, o in obs.items()})


def test_parsing_imports_nothing():
    assert parse_env_id("nosuchpkg.sub:Env").form == "factory" and parse_env_id("nosuchpkg:env_v1").form == "module"
    assert parse_env_id("nosuchpkg.sub.env_v1").form == "module"
    assert "nosuchpkg" not in sys.modules


def test_a_users_class_and_factories(user_envs):
    for env_id in ("myenv:Matching", "myenv:make_env"):
        assert resolve_env(env_id).ref.form == "factory" and env_kind(env_id) == "pettingzoo"
        g = make_game_factory(env_id, {"rounds": 2})()
        assert isinstance(g, ParallelGame) and g.teams == (("player_0",), ("player_1",))
        obs = g.reset(seed=0)
        assert not g.step({a: 0 for a in obs}).done and g.step({a: 0 for a in obs}).done
        cfg = parse_config({"env": {"id": env_id, "kwargs": {"rounds": 2}}})
        assert cfg.self_play.mode == "mirror"
    # a factory annotated to return a Gymnasium env is a single-agent env
    assert env_kind("myenv:make_cartpole") == "gymnasium"
    assert parse_config({"env": {"id": "myenv:make_cartpole"}}).self_play.mode == "none"
    assert isinstance(make_game_factory("myenv:make_cartpole")(), GymGame)


def test_catalog_ids_keep_their_meaning():
    assert canonical_env_id("pettingzoo.classic:connect_four_v3") == "connect_four_v3"
    assert canonical_env_id("spade/MazeRace-v0") == "MazeRace-v0"
    assert canonical_env_id("pkg:CaptureTheFlag-v0") == "CaptureTheFlag-v0"
    # a foreign id is what builds the env: it comes back whole
    assert canonical_env_id("pettingzoo.classic:tictactoe_v3") == "pettingzoo.classic:tictactoe_v3"
    assert canonical_env_id("classic/tictactoe-v3") == "classic/tictactoe-v3"
    assert parse_config({"env": {"id": "MazeRace-v0"}}).env.id == "MazeRace-v0"
    assert env_kind("CaptureTheFlag-v0", resolve=False) == "level"


# ------------------------------------------------------------------------------------------ bad ids
@pytest.mark.parametrize("env_id, parts", [
    ("classic/tictactoe-v9", ["unknown env id", "did you mean 'classic/tictactoe-v3'", "PettingZoo registry id"]),
    ("tictactoe_v3", ["unknown env id", "did you mean 'classic/tictactoe-v3'"]),
    ("CartPol-v1", ["unknown env id", "did you mean 'CartPole-v1'", "Gymnasium id"]),
    ("MazeRace-v1", ["did you mean 'MazeRace-v0'"]),
    ("mpe2:simple_tagg_v3", ["module 'mpe2' has no env named 'simple_tagg_v3'", "did you mean 'simple_tag_v3'"]),
    ("pettingzoo.classic:connect_four_v2", ["deprecated", "did you mean 'connect_four_v3'"]),
    ("pettingzoo.clasic:connect_four_v3", ["cannot import module 'pettingzoo.clasic'", "allowed:"]),
    ("nosuchpkg.sub:Env", ["cannot import module 'nosuchpkg.sub'"]),
    ("a:b:c", ["one ':'"]),
    ("", ["must be a non-empty string"]),
])
def test_bad_ids_are_one_line_with_what_is_allowed(env_id, parts):
    msg = _err(env_id)
    assert msg.startswith(f"env.id = {env_id!r}: "), msg
    for part in parts:
        assert part in msg, msg


def test_bad_user_attributes(user_envs):
    assert "is a class but not an env" in _err("myenv:NotAnEnv")
    assert "is a int, not an env module" in _err("myenv:NOT_CALLABLE")
    assert "did you mean 'Matching'" in _err("myenv:Matchin")


def test_resolve_raises_the_same_one_line_error():
    with pytest.raises(EnvIdError, match="did you mean 'classic/tictactoe-v3'"):
        resolve_env("classic/tictactoe-v9")


# ------------------------------------------------------------------------------------------ before Ray
def test_unsupported_action_spaces_are_refused_by_one_function():
    import gymnasium as gym

    check_action_space(gym.spaces.Discrete(3))
    check_action_space(gym.spaces.Box(-1, 1, (2,)))  # continuous: a Gaussian policy
    for space in (gym.spaces.MultiDiscrete([3, 3]), gym.spaces.Box(0, 5, (2,), np.int64), gym.spaces.MultiBinary(2)):
        with pytest.raises(UnsupportedSpace, match="only Discrete and float Box action spaces are supported"):
            check_action_space(space, "agent 'x'")


def test_agents_with_different_spaces_are_one_line_before_ray():
    # predators and prey observe different sizes: one role each (tests/test_foreign_roles.py), unless the
    # roles put them together
    msg = _err("mpe2:simple_tag_v3", roles={"adversary": "tagger", "agent": "tagger"})
    assert "role 'tagger' (from env.roles) holds agents with different spaces (adversary_0 (obs 16, 5 actions)" in msg, msg


def test_an_env_that_fails_on_its_first_step_or_refuses_kwargs(user_envs):
    msg = _err("myenv:MultiDiscreteMatching")
    assert "agent 'player_0' has action space MultiDiscrete(" in msg and "only Discrete and float Box" in msg, msg
    msg = _err("myenv:Broken")
    assert "fails" in msg and "RuntimeError: this env is broken" in msg
    msg = _err("myenv:Matching", kwargs={"roundz": 2})
    assert "env.kwargs.roundz: unknown key (did you mean 'rounds'?)" in msg, msg
    msg = _err("classic/tictactoe-v3", kwargs={"bogus": 1})  # env(**kwargs): the env itself refuses it
    assert "env.kwargs = {'bogus': 1}" in msg and "TypeError" in msg, msg


def test_train_refuses_before_ray_starts(tmp_path):
    """The CLI prints one line and exits 2 well before an embedded Ray could start (~18 s here)."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "spade_rllib.train", "--config", str(ROOT / "tune_configs" / "pettingzoo_board.yaml"),
         "--set", "env.id=myenv:MultiDiscreteMatching", "--set", "env.random_opening_plies=0",
         "--set", f"experiment.storage_path={tmp_path}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(USER_ENVS)]), "PYTHONWARNINGS": "ignore"})
    took = time.perf_counter() - started
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1 and "only Discrete and float Box action spaces are supported" in lines[0], lines
    assert "Traceback" not in out.stderr and "Ray" not in out.stdout + out.stderr
    assert not any(tmp_path.iterdir()), "nothing is written for a refused run"
    assert took < 60, took
