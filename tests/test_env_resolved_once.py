"""One config's env id is read once: `parse_config` resolves it into `RunConfig.resolved_env`, and the
checks before Ray, the game-loop adapter and `build_algo_config` take that record instead of parsing and
resolving the id again (before the record: 9 parses and 12-13 entries into the games package per config).

Counted with a profile hook on the code objects, so every caller counts, whatever name it imported.
"""
from __future__ import annotations

import copy
import pickle
import sys

import pytest

import spade_rllib.games.env_ids as ids
from spade_rllib.config.run_config import parse_config, resolved_env_of
from spade_rllib.games.resolved_env import ResolvedEnv, read_env_id


def _count_runs(fn, *codes):
    """Run `fn()`; how many times each code object ran (calls from anywhere)."""
    counts = {code: 0 for code in codes}

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in counts:
            counts[frame.f_code] += 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return [counts[c] for c in codes]


@pytest.mark.parametrize("env_id", ["MazeRace-v0", "pettingzoo.classic:connect_four_v3", "CartPole-v1"])
def test_one_config_is_parsed_twice_and_resolved_once_on_its_way_into_build_algo_config(env_id):
    from spade_rllib.rllib.algo_config import build_algo_config

    raw = {"env": {"id": env_id}, "training": {"stop": {"iterations": 1}}}

    def run():
        build_algo_config(parse_config(raw))

    run()  # the lazy imports (torch, RLlib's modules) outside the count: a profile hook slows them down
    ids.resolve_env.cache_clear()  # resolve_env is cached per process: count its real runs from a cold cache
    parses, resolves = _count_runs(run, ids.parse_env_id.__code__, ids.resolve_env.__wrapped__.__code__)
    # One read in parse_config (form and family), one resolution of what the id names (preflight), which
    # parses inside `ids.resolve_env`; the adapter, describe_env, env_kwargs_for and build_algo_config parse nothing.
    assert (parses, resolves) == (2, 1)


def test_the_record_follows_the_config_and_pickles_as_its_id():
    cfg = parse_config({"env": {"id": "MazeRace-v0"}, "training": {"stop": {"iterations": 1}}})
    record = cfg.resolved_env
    assert isinstance(record, ResolvedEnv) and record.is_level_game and record.entry is not None
    assert resolved_env_of(cfg) is record
    assert record.spec.id == "MazeRace-v0"
    assert copy.deepcopy(cfg).resolved_env is record  # immutable: copies share it
    back = pickle.loads(pickle.dumps(record))
    assert (back.id, back.kind, back.form, back.spec) == (record.id, record.kind, record.form, record.spec)
    assert "resolved_env" not in cfg.to_dict()  # derived: never written to config.yaml
    cfg.env.id = "CartPole-v1"  # a config changed after parsing gets a fresh record
    assert resolved_env_of(cfg).kind == "gymnasium"


def test_reading_without_imports_keeps_the_syntactic_family_and_bad_ids_fail_where_they_are_built():
    assert read_env_id("tests.no_such_module:Env", imports=False).kind == "pettingzoo"
    with pytest.raises(ids.EnvIdError):
        read_env_id("")
    loose = read_env_id("", strict=False)
    assert loose.form is None and loose.kind == "gymnasium"
    with pytest.raises(ids.EnvIdError):
        loose.with_entry()
