"""Driver component + runner-side level source (the RLlib glue's curriculum hooks), without Ray."""
from __future__ import annotations

import functools
import json
import pickle

import pytest

from spade_rllib.curriculum import CurriculumLevelSource, LevelSpec, make_strategy
from spade_rllib.curriculum.level_spec import build_level
from spade_rllib.config.run_config import parse_config
from spade_rllib.rllib.components import EnvInfo
from spade_rllib.rllib.curriculum_component import CurriculumComponent, make_component

MAZE_BUILDER = functools.partial(build_level, env_id="MazeRace-v0")


def curriculum_config(section: dict):
    """The curriculum core's config of a run config's `curriculum:` section."""
    return parse_config({"env": {"id": "MazeRace-v0"}, "curriculum": section}).curriculum.to_core()

envs = pytest.importorskip("spade_rllib.envs")
plan = pytest.importorskip("spade_rllib.rllib.plan")


def play_outcome(options: dict, winner: str = "A") -> dict:
    """What SpadeEnvRunner records: env infos' level + the level source's extra keys."""
    env = envs.MazeRace()
    env.reset(options={"level": options["level"]})
    level_info = env._level_info(env.level)  # the `level` dict the env puts in final infos
    record = {"winner": winner, "reason": "flag" if winner != "draw" else "timeout", "length": 9,
              "level": level_info, "main_team": 0, "opponent": "main", "returns": {"A": 1.0, "B": -1.0}, "return": 1.0}
    record.update({k: v for k, v in options.items() if k not in ("level", "knobs", "level_seed", "difficulty")})
    return record


def test_level_source_is_a_pure_function_of_key_and_picklable():
    strategy = make_strategy({"strategy": "uniform"}, seed=0)
    source = CurriculumLevelSource(strategy.sampling_state(), MAZE_BUILDER, seed=3, version=1)
    assert isinstance(source, plan.LevelSource)
    a = source.reset_options((1, 0, 5))
    clone = pickle.loads(pickle.dumps(source))
    assert len(pickle.dumps(source)) < 2000  # built levels do not travel: only the sampling state
    b = clone.reset_options((1, 0, 5))
    assert a["level_id"] == b["level_id"] and a["level"] == b["level"]
    assert a["level"].meta["level_id"] == a["level_id"]
    assert LevelSpec.from_dict(a["level_spec"]).level_id == a["level_id"]
    ids = {source.reset_options((w, e, n))["level_id"] for w in range(2) for e in range(2) for n in range(3)}
    assert len(ids) == 12
    assert CurriculumLevelSource(strategy.sampling_state(), MAZE_BUILDER, seed=3, version=2).spec_for((1, 0, 5)).level_id != a["level_id"]


def test_level_seeds_bound_the_levels_and_built_levels_are_reused_across_broadcasts():
    from spade_rllib.curriculum import source as source_module

    source_module.clear_level_cache()
    strategy = make_strategy({"strategy": "fixed", "fixed": {"difficulty": 3.0}, "level_seeds": 4}, seed=0)
    first = CurriculumLevelSource(strategy.sampling_state(), MAZE_BUILDER, seed=3, version=1)
    picks = [first.reset_options((0, e, n)) for e in range(4) for n in range(8)]
    assert {LevelSpec.from_dict(p["level_spec"]).seed for p in picks} <= set(range(4))
    assert len({p["level_id"] for p in picks}) <= 4
    # the next broadcast is a new source object (as on a runner): the same specs give the same built objects
    later = pickle.loads(pickle.dumps(CurriculumLevelSource(strategy.sampling_state(), MAZE_BUILDER, seed=3, version=2)))
    by_id = {p["level_id"]: p["level"] for p in picks}
    for e in range(8):
        again = later.reset_options((1, e, 0))
        if again["level_id"] in by_id:
            assert again["level"] is by_id[again["level_id"]]
    assert len(source_module._BUILT) <= 4
    fresh = make_strategy({"strategy": "fixed", "fixed": {"difficulty": 3.0}, "level_seeds": 0}, seed=0)
    free = CurriculumLevelSource(fresh.sampling_state(), MAZE_BUILDER, seed=3, version=1)
    assert max(LevelSpec.from_dict(free.reset_options((0, 0, n))["level_spec"]).seed for n in range(8)) > 4


def test_component_cycle_threshold():
    comp = CurriculumComponent(curriculum_config(
        {"enabled": True, "strategy": "threshold", "threshold": {"min_episodes": 4, "window": 8}}), "MazeRace-v0", seed=1)
    first = comp.runner_update(full=False)
    assert isinstance(first.level_source, CurriculumLevelSource)
    assert comp.runner_update(full=False) is None  # nothing changed: no broadcast
    assert comp.runner_update(full=True).level_source.version == first.level_source.version
    source = first.level_source
    # an exploiter's episodes are not main's progress: a freshly reset one would pull difficulty down
    exploiter = [{**play_outcome(source.reset_options((1, e, 2)), winner="draw"), "learner": "main_exploiter_0"}
                 for e in range(4)]
    outcomes = [play_outcome(source.reset_options((1, e, 1))) for e in range(4)]
    outcomes.append({"winner": "A", "reason": "flag", "length": 3, "level": {}})  # not a curriculum level
    metrics = comp.update(exploiter + outcomes, ctx=None)  # with them, the window would read 0.5: no change
    assert metrics["curriculum/difficulty"] == pytest.approx(1.2) and comp.ignored_outcomes == 5
    assert outcomes[0]["level"]["difficulty"] == 1.0 and outcomes[0]["level"]["level_id"] == outcomes[0]["level_id"]
    update = comp.runner_update(full=False)
    assert update.level_source.sampling_state["difficulty"] == pytest.approx(1.2)
    assert update.level_source.version == first.level_source.version + 1


def test_component_state_round_trip_plr():
    comp = CurriculumComponent(curriculum_config({"strategy": "plr", "plr": {"capacity": 4}}), "MazeRace-v0", seed=0)
    source = comp.runner_update(full=True).level_source
    comp.update([play_outcome(source.reset_options((0, e, 1)), w) for e, w in enumerate("AB")])
    saved = json.loads(json.dumps(comp.state_dict()))
    other = CurriculumComponent(curriculum_config({"strategy": "plr", "plr": {"capacity": 4}}), "MazeRace-v0", seed=9)
    other.load_state_dict(saved)
    assert other.state_dict() == comp.state_dict()
    restored = other.runner_update(full=False)  # after a restore the next update always sends
    assert restored is not None
    assert restored.level_source.sampling_state == comp.runner_update(full=True).level_source.sampling_state


def test_make_component_factory():
    info = EnvInfo("MazeRace-v0", "level", (("a_0", "a_1"), ("b_0", "b_1")), 6, 10, 0)
    off = parse_config({"env": {"id": "MazeRace-v0"}})
    assert make_component(off, info) is None
    on = parse_config({"env": {"id": "MazeRace-v0"}, "curriculum": {"enabled": True, "strategy": "uniform"}, "experiment": {"seed": 4}})
    with pytest.raises(ValueError, match="level-driven env"):
        make_component(on, EnvInfo("CartPole-v1", "gymnasium", (("agent",),), 2, 4, 0))
    comp = make_component(on, info)
    assert comp.config.agents_per_team == 2 and comp.seed == 4
    assert comp.runner_update(full=True).level_source.sampling_state["agents_per_team"] == 2
