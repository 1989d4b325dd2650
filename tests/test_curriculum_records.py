"""Typed curriculum records (`curriculum/sampling_state.py`): PLR buffer entries and the sampling states.
The formats on the wire and in checkpoints are the dicts earlier code wrote; old states load. Pure Python."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spade_rllib.curriculum import LevelSpec, make_strategy, sample_level
from spade_rllib.curriculum.sampling_state import (
    DifficultySampling,
    JointSampling,
    PLREntry,
    PLRSampling,
    UniformSampling,
    sampling_record,
)

X, Y = (LevelSpec.generated({"family": "open", "size": 9, "wall_density": 0.1}, seed=i) for i in range(2))


def outcome(level: LevelSpec, winner: str, opponent=None, **extra):
    return {"winner": winner, "reason": "flag" if winner in "AB" else "timeout", "length": 5,
            "level": level.summary(), "level_spec": level.to_dict(), "main_team": None, "opponent": opponent, **extra}


# A PLR strategy's state_dict as the code before the typed records wrote it (entries as plain dicts).
OLD_PLR_STATE = {
    "kind": "plr", "episodes": 3, "recent": [], "episode_count": 3, "missing_values": 0, "unreplayable": 0,
    "entries": [
        {"spec": X.to_dict(), "history": [1.0, 0.0], "pvl": None, "timestamp": 2, "plays": 2, "score": 0.25},
        {"spec": Y.to_dict(), "history": [1.0], "pvl": 0.5, "timestamp": 3, "plays": 1, "score": 0.0},
    ],
}


def _plr(**params):
    return make_strategy({"strategy": "plr", "plr": {"capacity": 4, "prior": 0.0, "min_fill": 0.1, **params}}, seed=0)


def test_an_old_plr_state_loads_into_typed_entries_and_saves_back_the_same():
    s = _plr()
    state = {**OLD_PLR_STATE, "config": s.config.to_dict(), "rng": s.rng.bit_generator.state}
    s.load_state_dict(json.loads(json.dumps(state)))
    assert all(isinstance(e, PLREntry) for e in s.entries)
    assert [e.level_id for e in s.entries] == [X.level_id, Y.level_id]
    assert s.entries[0].history == [1.0, 0.0] and s.entries[1].pvl == 0.5 and s.entries[0].plays == 2
    saved = s.state_dict()
    assert saved["entries"] == OLD_PLR_STATE["entries"]  # the checkpoint format is unchanged
    s.update([outcome(X, "A")])
    assert s.entries[0].plays == 3 and s.entries[0].timestamp == 4 and s.entries[0].history == [1.0, 0.0, 1.0]


def test_state_dict_round_trip_keeps_sampling_identical():
    a = _plr()
    a.update([outcome(X, "A"), outcome(Y, "B"), outcome(X, "B")])
    b = _plr()
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.entries == a.entries and b.sampling_state() == a.sampling_state()
    assert [sample_level(a.sampling_state(), np.random.default_rng(7)) for _ in range(5)] == \
           [sample_level(b.sampling_state(), np.random.default_rng(7)) for _ in range(5)]


def test_a_malformed_entry_is_refused():
    s = _plr()
    bad = {**OLD_PLR_STATE, "config": s.config.to_dict(), "rng": s.rng.bit_generator.state,
           "entries": [{"spec": X.to_dict(), "history": [], "timestamp": 1}]}  # no score
    with pytest.raises(KeyError):
        s.load_state_dict(bad)


@pytest.mark.parametrize("strategy", ["threshold", "fixed", "uniform", "plr", "accel", "maestro"])
def test_every_sampling_state_is_a_typed_record_and_its_dict(strategy):
    s = make_strategy({"strategy": strategy, "plr": {"capacity": 4, "min_fill": 0.1}}, seed=0)
    s.update([outcome(X, "A", opponent="random"), outcome(Y, "B", opponent="bot:rusher")])
    state = s.sampling_state()
    record = sampling_record(state)
    assert isinstance(record, (DifficultySampling, UniformSampling, PLRSampling, JointSampling))
    assert record.to_dict() == state and sampling_record(json.loads(json.dumps(state))) == record
    # the record and its dict pick the same levels
    for opponent in (None, "random"):
        assert sample_level(record, np.random.default_rng(3), opponent=opponent) == \
               sample_level(state, np.random.default_rng(3), opponent=opponent)


def test_accel_records_its_edits_and_plr_does_not():
    accel = make_strategy({"strategy": "accel"}, seed=0).sampling_state()
    plr = make_strategy({"strategy": "plr"}, seed=0).sampling_state()
    assert "edit_prob" in accel and "edits" in accel and "edit_prob" not in plr
    assert sampling_record(accel).edits == accel["edits"]


def test_unknown_kind_or_format_is_one_line():
    with pytest.raises(ValueError, match="kind 'nope' is unknown"):
        sampling_record({"format": 1, "kind": "nope"})
    with pytest.raises(ValueError, match="format 2 is not supported"):
        sampling_record({"format": 2, "kind": "plr"})
