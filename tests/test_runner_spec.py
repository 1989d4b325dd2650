"""The driver -> env runner handoff is one typed record: `RunnerSpec` round-trips through the plain
mapping stored in `env_config`, and a mapping with a misspelled or missing key is refused."""
import pickle

import pytest

from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, OpponentPlan, RunnerSpec


def test_round_trip_and_defaults():
    spec = RunnerSpec(env_id="MazeRace-v0", env_kwargs={"difficulty": 2.0}, seed=3, learners=("main", "main_exploiter_0"),
                      opponent_plan=OpponentPlan())
    raw = spec.to_dict()
    assert RunnerSpec.from_mapping(raw) == spec and RunnerSpec.from_mapping(spec) is spec
    assert pickle.loads(pickle.dumps(raw))["env_id"] == "MazeRace-v0"
    plain = RunnerSpec.from_mapping({"env_id": "CartPole-v1", "learners": ["main"], "seed": None})
    assert plain.learners == ("main",) and plain.seed == 0 and plain.env_kwargs == {} and not plain.packed


def test_bad_mappings_are_refused():
    with pytest.raises(ValueError, match="unknown keys \\['pakced'\\]"):
        RunnerSpec.from_mapping({"env_id": "MazeRace-v0", "pakced": True})
    with pytest.raises(ValueError, match=f"env_config\\['{RUNNER_SPEC_KEY}'\\] must be a RunnerSpec mapping"):
        RunnerSpec.from_mapping({"seed": 1})
