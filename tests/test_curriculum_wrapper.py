"""AdaptiveCurriculum: PettingZoo API conformance, local (standalone) and remote (driver-fed) modes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test

from spade_rllib.curriculum import AdaptiveCurriculum, LevelSpec, load_heldout_levels, make_strategy
from spade_rllib.games import heldout_dir

envs = pytest.importorskip("spade_rllib.envs")
MazeRace = envs.MazeRace

STEP_TOWARD = {(-1, 0): 1, (1, 0): 2, (0, -1): 3, (0, 1): 4}


def rusher_action(env, agent) -> int:
    """Move one step down the BFS distance to the flag (a scripted agent that always gets there)."""
    base = env.unwrapped
    dist = base.level.distance_to_flag()
    r, c = base.positions[agent]
    best = min(((dist[r + dr, c + dc], move) for (dr, dc), move in STEP_TOWARD.items()
                if dist[r + dr, c + dc] >= 0), default=(None, 0))
    return best[1]


def run_episode(env, policy_a=rusher_action, options=None):
    """Team A rushes the flag, team B stands still; returns the final infos."""
    env.reset(options=options)
    infos = {}
    while env.agents:
        actions = {a: (policy_a(env, a) if env.unwrapped.team_of(a) == 0 else 0) for a in env.agents}
        _, _, _, _, infos = env.step(actions)
    return infos


@pytest.mark.parametrize("kind", ["threshold", "plr", "uniform", "fixed"])
def test_parallel_api_local(kind):
    env = AdaptiveCurriculum(MazeRace(), make_strategy({"strategy": kind}, seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the API test reports problems as warnings
        parallel_api_test(env, num_cycles=200)


def test_parallel_api_remote_and_2v2():
    state = make_strategy({"strategy": "uniform", "agents_per_team": 2,
                           "uniform": {"size": [7, 11]}}).sampling_state()
    env = AdaptiveCurriculum(MazeRace(agents_per_team=2), sampling_state=state, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=200)


def test_standalone_difficulty_rises_when_a_scripted_agent_always_wins():
    strategy = make_strategy({"strategy": "threshold", "threshold": {"min_episodes": 5, "window": 10}}, seed=0)
    env = AdaptiveCurriculum(MazeRace(), strategy)
    seen = []
    for _ in range(80):
        infos = run_episode(env)
        assert next(iter(infos.values()))["winner"] == "A"
        seen.append(strategy.difficulty)
    assert seen == sorted(seen)  # never goes down while A always wins
    assert strategy.difficulty > 4.0  # 1.2^8 = 4.3 after 8 changes of 5 episodes each
    m = strategy.metrics()
    assert m["curriculum/difficulty"] == strategy.difficulty and m["curriculum/completion_rate"] == 1.0
    assert m["curriculum/size_mean"] > 5 and m["curriculum/flag_distance_mean"] > 1


def test_outcome_record_and_final_infos():
    strategy = make_strategy({"strategy": "plr"}, seed=0)
    env = AdaptiveCurriculum(MazeRace(), strategy)
    infos = run_episode(env, options={"outcome_extra": {"main_team": 1, "opponent": "gen_3"}})
    outcome = env.last_outcome
    assert outcome.winner == "A" and outcome.reason == "flag"
    assert outcome.learner_team == 1 and outcome.opponent == "gen_3"
    assert outcome.returns == (1.0, -1.0)
    assert outcome.level["level_id"] == env.level_spec.level_id == outcome.level_spec["level_id"]
    assert outcome.length == env.unwrapped.step_count
    assert all(i["curriculum_outcome"] is outcome and i["level_id"] == env.level_spec.level_id for i in infos.values())
    assert strategy.entries[0].spec == env.level_spec.to_dict()  # reported to the local strategy
    # the stored spec rebuilds exactly the level that was played
    from spade_rllib.curriculum import build_level
    assert build_level(LevelSpec.from_dict(outcome.level_spec), "MazeRace-v0") == env.unwrapped.level


def test_caller_chosen_level_bypasses_the_curriculum():
    strategy = make_strategy({"strategy": "uniform"}, seed=0)
    env = AdaptiveCurriculum(MazeRace(), strategy)
    level = load_heldout_levels(heldout_dir("MazeRace-v0"))["open_room"]
    run_episode(env, options={"level": level})
    assert env.unwrapped.level == level and env.level_spec is None
    assert env.last_outcome is None and strategy.episodes == 0


def test_remote_mode_two_env_runners_follow_the_driver():
    """Driver owns the strategy; two 'env runners' sample from its broadcast and queue outcomes."""
    driver = make_strategy({"strategy": "threshold", "threshold": {"min_episodes": 4, "window": 8}}, seed=0)
    runners = [AdaptiveCurriculum(MazeRace(), sampling_state=driver.sampling_state(), seed=i) for i in range(2)]
    for iteration in range(6):
        state = driver.sampling_state()
        outcomes = []
        for runner in runners:
            runner.set_sampling_state(state)
            for _ in range(3):
                run_episode(runner)
                assert runner.level_spec.difficulty == state["difficulty"]  # no runner drifts
            outcomes += runner.pop_outcomes()
        assert len(outcomes) == 6 and all(r.pop_outcomes() == [] for r in runners)
        driver.update(outcomes)
    assert driver.difficulty > 1.0
    with pytest.raises(ValueError, match="remote mode"):
        AdaptiveCurriculum(MazeRace(), driver).set_sampling_state(state)


def test_remote_mode_is_seeded_and_evaluation_runners_do_not_report():
    state = make_strategy({"strategy": "uniform"}).sampling_state()
    a = AdaptiveCurriculum(MazeRace(), sampling_state=state, seed=7)
    b = AdaptiveCurriculum(MazeRace(), sampling_state=state, seed=7, report_outcomes=False)
    ids_a, ids_b = [], []
    for _ in range(3):
        a.reset(), b.reset()
        ids_a.append(a.level_spec.level_id), ids_b.append(b.level_spec.level_id)
    assert ids_a == ids_b and len(set(ids_a)) == 3
    a.reset(seed=3), b.reset(seed=3)
    assert a.level_spec == b.level_spec
    run_episode(b)
    assert b.pop_outcomes() == [] and b.last_outcome is not None


def test_wrapper_needs_exactly_one_mode():
    with pytest.raises(ValueError, match="exactly one of strategy"):
        AdaptiveCurriculum(MazeRace())


class CoinFlipEnv(ParallelEnv):
    """A minimal level-driven env (no MazeRace infos): the level is a LevelSpec; team A wins on action 1."""

    metadata = {"name": "coin_flip_v0"}
    possible_agents = ["a", "b"]

    def __init__(self):
        import gymnasium
        self._space = gymnasium.spaces.Discrete(2)
        self._obs = gymnasium.spaces.Box(0, 1, (1,), np.float32)
        self.agents = []

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._space

    def reset(self, seed=None, options=None):
        assert isinstance(options["level"], LevelSpec)
        self.level = options["level"]
        self.agents = list(self.possible_agents)
        return {a: np.zeros(1, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        win = actions["a"] == 1
        rewards = {"a": 1.0 if win else 0.0, "b": -1.0 if win else 0.0}
        self.agents = []
        obs = {a: np.zeros(1, np.float32) for a in self.possible_agents}
        return obs, rewards, {a: True for a in obs}, {a: False for a in obs}, {a: {} for a in obs}


def test_any_level_driven_env_with_a_custom_builder():
    strategy = make_strategy({"strategy": "threshold", "threshold": {"min_episodes": 2, "window": 2}}, seed=0,
                             knobs_fn=lambda d, fam, apt: {"size": 5, "d": d})
    env = AdaptiveCurriculum(CoinFlipEnv(), strategy, level_builder=lambda spec: spec)
    for _ in range(4):
        env.reset()
        env.step({"a": 1, "b": 0})
    assert env.last_outcome.winner == "A" and env.last_outcome.reason == "unknown"
    assert strategy.difficulty == pytest.approx(1.44)


def test_uniform_levels_always_build_even_at_extreme_ranges():
    from spade_rllib.curriculum import build_level
    from spade_rllib.curriculum.strategies import _max_flag_distance
    from spade_rllib.envs.generators import max_flag_distance

    for size in range(5, 26, 2):
        for family in ("open", "rooms", "maze"):
            for braid in (0.0, 0.5, 1.0):
                assert _max_flag_distance(size, family, braid) == max_flag_distance(size, family, braid)
    s = make_strategy({"strategy": "uniform", "uniform": {"size": [5, 15], "wall_density": [0.0, 0.4],
                                                           "flag_distance_frac": [1.0, 3.0]}}, seed=0)
    for _ in range(100):
        spec = s.sample()
        level = build_level(spec, "MazeRace-v0")
        assert level.meta["level_id"] == spec.level_id and level.height == spec.knobs["size"]
