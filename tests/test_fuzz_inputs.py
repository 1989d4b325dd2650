"""Fuzzing (hypothesis, bounded): mutated shipped configs only ever give a one-line `ConfigError`;
random ASCII maps only ever give a valid `Level` or a `LevelError`, never another exception or a hang."""
from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spade_rllib.config.run_config import ConfigError, load_config, load_raw, parse_config
from spade_rllib.envs import Level, LevelError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {p.name: load_raw(str(p)) for p in sorted((ROOT / "tune_configs").glob("*.yaml"))}
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=12).map(lambda b: b.decode("latin-1")),  # binary junk, NUL bytes included
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(-3, 3), max_size=2),
)


def _paths(node, prefix=()):
    """Every key path of a nested dict (sections and leaves)."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    return out


def _one_line_config_error(raw) -> None:
    try:
        parse_config(raw)
    except ConfigError as e:
        assert str(e) and "\n" not in str(e), repr(str(e))


@FUZZ
@given(name=st.sampled_from(sorted(SHIPPED)), op=st.sampled_from(["replace", "unknown", "delete", "empty"]),
       data=st.data())
def test_mutated_shipped_configs_give_one_line_errors(name, op, data):
    raw = copy.deepcopy(SHIPPED[name])
    paths = _paths(raw)
    path = data.draw(st.sampled_from(paths))
    node = raw
    for k in path[:-1]:
        node = node[k]
    if op == "replace":
        node[path[-1]] = data.draw(JUNK)
    elif op == "unknown":
        target = node[path[-1]] if isinstance(node[path[-1]], dict) else node
        target[data.draw(st.text(min_size=1, max_size=8))] = data.draw(JUNK)
    elif op == "delete":
        del node[path[-1]]
    else:
        node[path[-1]] = {} if isinstance(node[path[-1]], dict) else None
    _one_line_config_error(raw)


@FUZZ
@given(blob=st.binary(max_size=200))
def test_binary_junk_config_files_give_one_line_errors(tmp_path_factory, blob):
    f = tmp_path_factory.mktemp("junk") / "cfg.yaml"
    f.write_bytes(blob)
    try:
        load_config(str(f))
    except ConfigError as e:
        assert "\n" not in str(e)


@FUZZ
@given(text=st.text(max_size=60))
def test_junk_set_values_give_one_line_errors(text):
    for key in ("agent.lr", "env.kwargs", "training.stop", "evaluation.opponents", "env.level_file"):
        try:
            load_config(str(ROOT / "tune_configs" / "quickstart.yaml"), [f"{key}={text}"])
        except ConfigError as e:
            assert "\n" not in str(e)


MAP_CHARS = st.sampled_from(list("#.ABFab ") + ["\n"] * 3 + list("xZ9\t~"))


@settings(max_examples=300, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=MAP_CHARS, max_size=400))
def test_random_ascii_maps_give_a_level_or_level_error(text):
    try:
        level = Level.from_ascii(text)
    except LevelError as e:
        assert "line" in str(e) or "empty" in str(e)
        return
    assert level.height >= 1 and level.width >= 1
    assert Level.from_ascii(level.to_ascii()).to_ascii() == level.to_ascii()


@settings(max_examples=150, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(3, 25), cols=st.integers(3, 25), data=st.data())
def test_random_rectangular_maps_give_a_level_or_level_error(rows, cols, data):
    """Rectangular maps reach the deeper checks (spawns, reachability, fairness) more often."""
    cells = data.draw(st.lists(st.sampled_from("#....AB"), min_size=rows * cols, max_size=rows * cols))
    grid = [cells[r * cols:(r + 1) * cols] for r in range(rows)]
    fr, fc = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
    grid[fr][fc] = "F"
    text = "\n".join("".join(r) for r in grid)
    try:
        level = Level.from_ascii(text, max_unfairness=data.draw(st.sampled_from([None, 0, 2])))
    except LevelError:
        return
    assert level.distance_to_flag().shape == (level.height, level.width)
