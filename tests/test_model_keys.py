"""`agent.model.encoder` (mlp | cnn) and `agent.model.memory` (none | lstm): the new spelling, the old one
(`kind`, `use_lstm`) read with one warning line, bad values refused in one line before Ray. Pure config, no Ray."""
from __future__ import annotations

from pathlib import Path

import pytest

from spade_rllib.config import run_config as config_module
from spade_rllib.config.run_config import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "tune_configs" / "quickstart.yaml")
OLD_TRIAL_CONFIG = str(ROOT / "tests" / "fixtures" / "checkpoint_before_issue12" / "config.yaml")


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(config_module, "_warned", set())


def model(**keys) -> dict:
    return {"env": {"id": "MazeRace-v0"}, "agent": {"model": keys}}


def test_new_spelling_reads_without_a_warning(capsys):
    cfg = parse_config(model(encoder="cnn", memory="lstm"), resolve=False)
    assert (cfg.agent.model.encoder, cfg.agent.model.memory) == ("cnn", "lstm")
    assert parse_config(model(), resolve=False).agent.model.memory == "none"
    assert capsys.readouterr().err == ""


def test_every_shipped_config_uses_the_new_spelling(capsys):
    files = sorted((ROOT / "tune_configs").glob("*.yaml"))
    assert len(files) > 10
    for path in files:
        text = path.read_text()
        assert "use_lstm" not in text and "kind: " not in text, path.name
        load_config(str(path), resolve=False)
    assert capsys.readouterr().err == ""
    assert load_config(QUICKSTART, resolve=False).agent.model.memory == "lstm"  # the demo's LSTM


@pytest.mark.parametrize("old, new", [
    ({"kind": "cnn", "use_lstm": True}, ("cnn", "lstm")),
    ({"kind": "mlp", "use_lstm": False}, ("mlp", "none")),
])
def test_old_spelling_is_read_with_one_warning_line_per_key(capsys, old, new):
    cfg = parse_config(model(**old), resolve=False)
    assert (cfg.agent.model.encoder, cfg.agent.model.memory) == new
    parse_config(model(**old), resolve=False)  # once per key and process
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("warning: agent.model.") for line in err)
    assert f"as memory: {new[1]}" in err[1] and "use_lstm" in err[1]
    assert "kind" not in cfg.to_dict()["agent"]["model"] and "use_lstm" not in cfg.to_dict()["agent"]["model"]


def test_an_old_trial_config_and_an_old_set_still_work():
    cfg = load_config(OLD_TRIAL_CONFIG, resolve=False)  # a checkpoint's config.yaml written with `kind: mlp`
    assert (cfg.agent.model.encoder, cfg.agent.model.memory) == ("mlp", "none")
    # an old --set on a new file replaces its new key instead of clashing with it
    assert load_config(QUICKSTART, ["agent.model.use_lstm=false"], resolve=False).agent.model.memory == "none"
    assert load_config(OLD_TRIAL_CONFIG, ["agent.model.memory=lstm"], resolve=False).agent.model.memory == "lstm"


@pytest.mark.parametrize("keys, needle", [
    ({"memory": "lstmm"}, "agent.model.memory = 'lstmm': not allowed (did you mean 'lstm'?); allowed: 'none', 'lstm'"),
    ({"memory": True}, "agent.model.memory = true: not allowed (did you mean 'lstm'?)"),
    ({"encoder": "mlpp"}, "agent.model.encoder = 'mlpp': not allowed (did you mean 'mlp'?); allowed: 'mlp', 'cnn'"),
    ({"kind": "cnnn"}, "agent.model.kind = 'cnnn': not allowed (did you mean 'cnn'?)"),
    ({"use_lstm": "yes"}, "agent.model.use_lstm = 'yes': wrong type, expected true/false"),
    ({"use_lstm": True, "memory": "lstm"}, "agent.model.use_lstm: given beside agent.model.memory"),
    ({"kind": "mlp", "encoder": "mlp"}, "agent.model.kind: given beside agent.model.encoder"),
    ({"memroy": "lstm"}, "agent.model.memroy: unknown key (did you mean 'memory'?)"),
])
def test_bad_model_values_get_one_line(keys, needle):
    with pytest.raises(ConfigError) as e:
        parse_config(model(**keys), resolve=False)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_train_refuses_a_bad_memory_before_ray(capsys):
    import sys

    from spade_rllib import train

    ray_loaded = "ray" in sys.modules
    assert train.main(["--config", QUICKSTART, "--set", "agent.model.memory=lsmt", "--print-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "agent.model.memory = 'lsmt'" in err and "did you mean 'lstm'" in err
    assert ray_loaded or "ray" not in sys.modules


def test_a_sweep_over_the_old_key_sets_the_new_one():
    from spade_rllib.sweeps.sweep_spec import trial_run_config

    base = load_config(QUICKSTART, resolve=False).to_dict()  # memory: lstm
    cfg = trial_run_config(base, {"agent.model.use_lstm": False, "agent.model.kind": "mlp"}, resolve=False)
    assert (cfg.agent.model.encoder, cfg.agent.model.memory) == ("mlp", "none")
