"""Role games: one trained module per role (`main_<role>`), each with its own league and evaluation.

Fast tests (no Ray): the role mapping (`spade_rllib.games.roles`), its one-line errors before Ray,
the per-role leagues (`RoleLeaguesComponent`) and the runner's plan for roles. Slow tests train
MPE's `simple_tag_v3` (3 predators, 1 prey: observations of 16 and 14 values) with a predator and a
prey main, each with a league; checkpoint, resume, load each role. Whether the predators learn is
measured over seeds by bench/ablations/roles_learning.py (docs/envs.md, "Role games"): one 80k-step run is not
reliable enough for a test.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from spade_rllib.games.roles import name_stem, resolve_roles, role_module_id, role_of_module
from spade_rllib.core.validation import ConfigError

pytest.importorskip("mpe2")

TAG = "mpe2:simple_tag_v3"
TAG_AGENTS = ["adversary_0", "adversary_1", "adversary_2", "agent_0"]
TAG_SHAPES = {"adversary_0": (16, 0, 5), "adversary_1": (16, 0, 5), "adversary_2": (16, 0, 5), "agent_0": (14, 0, 5)}
TAG_ROLES = {"adversary": "predator", "agent": "prey"}


def _role_of_tag_agent(agent: str) -> str:
    """A role function for `env.roles: "tests.test_foreign_roles:_role_of_tag_agent"`."""
    return "predator" if agent.startswith("adversary") else "prey"


# ------------------------------------------------------------------------------------------------
# the role mapping (pure)
# ------------------------------------------------------------------------------------------------
def test_roles_are_inferred_from_pettingzoo_names_when_spaces_differ():
    assert name_stem("adversary_12") == "adversary" and name_stem("agent") == "agent"
    assert resolve_roles(TAG_AGENTS, TAG_SHAPES) == {"adversary_0": "adversary", "adversary_1": "adversary",
                                                     "adversary_2": "adversary", "agent_0": "agent"}
    same = {a: (16, 0, 5) for a in TAG_AGENTS}
    assert resolve_roles(TAG_AGENTS, same) == {}  # symmetric: one "main", exactly as before
    assert role_module_id("prey") == "main_prey" and role_of_module("main_prey") == "prey"
    assert role_of_module("main") is None


def test_a_role_mapping_by_prefix_by_name_or_by_function():
    by_prefix = resolve_roles(TAG_AGENTS, TAG_SHAPES, TAG_ROLES)
    assert set(by_prefix.values()) == {"predator", "prey"} and by_prefix["adversary_1"] == "predator"
    by_name = resolve_roles(TAG_AGENTS, TAG_SHAPES, {"adversary": "predator", "agent_0": "prey"})
    assert by_name == by_prefix
    assert resolve_roles(TAG_AGENTS, TAG_SHAPES, "tests.test_foreign_roles:_role_of_tag_agent") == by_prefix
    # same spaces, different jobs: a mapping makes two roles
    same = {a: (16, 0, 5) for a in TAG_AGENTS}
    assert set(resolve_roles(TAG_AGENTS, same, TAG_ROLES).values()) == {"predator", "prey"}


@pytest.mark.parametrize("spec, message", [
    ({"advesary": "predator", "agent": "prey"}, "env.roles.advesary: names no agent of the env (did you mean 'adversary'?)"),
    ({"adversary": "predator"}, "env.roles: agents agent_0 of the env have no role"),
    ({"adversary_0": "a", "adversary_1": "a", "adversary_2": "b", "agent_0": "b"}, "role 'b' (from env.roles) holds agents with different spaces"),
    ({"adversary": "Predator", "agent": "prey"}, "env.roles.adversary = 'Predator': not allowed"),
    ({"adversary": "team_v2", "agent": "prey"}, "not allowed"),
    ("tests.test_foreign_roles:no_such_function", "env.roles = 'tests.test_foreign_roles:no_such_function': cannot import it"),
    (["adversary"], "env.roles = ['adversary']: wrong type"),
])
def test_a_bad_role_mapping_is_one_line(spec, message):
    with pytest.raises(ConfigError) as err:
        resolve_roles(TAG_AGENTS, TAG_SHAPES, spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_different_spaces_that_names_cannot_group_are_refused():
    shapes = {"player_0": (16, 0, 5), "player_1": (14, 0, 5)}
    with pytest.raises(ConfigError, match=r"env.roles: role 'player' \(inferred from the agent names\) holds agents "
                                          r"with different spaces \(player_0 \(obs 16, 5 actions\), .*set env.roles"):
        resolve_roles(["player_0", "player_1"], shapes)
    with pytest.raises(ConfigError, match=r"env.roles: role 'p' \(from env.roles\) holds agents with different spaces"):
        resolve_roles(["player_0", "player_1"], shapes, {"player": "p"})
    assert resolve_roles(["player_0", "player_1"], {"player_0": (4, 0, 2), "player_1": (4, 0, 2)}, {"player": "p"}) == {}


def test_bad_roles_stop_the_config_before_ray():
    """`parse_config` (what `train` runs before Ray starts) builds the env once and refuses the mapping."""
    from spade_rllib.config.run_config import parse_config

    base = {"env": {"id": TAG, "kwargs": {"max_cycles": 5}}, "league": {"enabled": False}}
    with pytest.raises(ConfigError, match=r"^env.roles.advesary: names no agent of mpe2:simple_tag_v3 \(did you mean 'adversary'\?\)"):
        parse_config({**base, "env": {**base["env"], "roles": {"advesary": "predator", "agent": "prey"}}})
    with pytest.raises(ConfigError, match=r"^env.roles: agents agent_0 of mpe2:simple_tag_v3 have no role"):
        parse_config({**base, "env": {**base["env"], "roles": {"adversary": "predator"}}})
    with pytest.raises(ConfigError, match=r"^env.roles = 'predator': not allowed"):
        parse_config({**base, "env": {**base["env"], "roles": "predator"}}, resolve=False)
    cfg = parse_config({**base, "env": {**base["env"], "roles": TAG_ROLES}})
    assert cfg.env.roles == TAG_ROLES


def test_the_game_adapter_keeps_each_agents_spaces():
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.games.roles import env_roles, game_roles

    game = make_game_factory(TAG, {"max_cycles": 5})()
    assert {a: game.agent_shape(a) for a in game.agents} == TAG_SHAPES
    obs = game.reset(seed=0)
    agent = next(iter(obs))
    assert obs[agent].shape == (TAG_SHAPES[agent][0],)
    assert game_roles(game, TAG_ROLES, TAG)["agent_0"] == "prey"
    assert env_roles("pettingzoo.classic:connect_four_v3", {}) == {}  # symmetric: no roles
    assert env_roles("MazeRace-v0", {}) == {}


# ------------------------------------------------------------------------------------------------
# per-role leagues and the runner's plan (no Ray)
# ------------------------------------------------------------------------------------------------
def _role_leagues(**overrides):
    from spade_rllib.league.league_config import LeagueConfig
    from spade_rllib.rllib.league_component import RoleLeaguesComponent

    config = LeagueConfig(**{"every_n_iterations": 1, "win_rate_threshold": None, "num_opponent_slots": 2, **overrides})
    return RoleLeaguesComponent(config, ("predator", "prey"), seed=3)


def _ctx(iteration, weights):
    from spade_rllib.rllib.components import DriverContext

    return DriverContext(iteration=iteration, env_steps_lifetime=0, main_weights=lambda: {}, num_runners=0,
                         module_weights=lambda m: weights[m])


def _outcome(learner, opponent, learner_team, winner):
    from spade_rllib.core.outcome import EpisodeOutcome

    return EpisodeOutcome(winner=winner, reason="timeout", length=100, learner_team=learner_team, learner=learner,
                          opponent=opponent, returns=(1.0, -1.0))


def test_each_role_has_its_own_league_of_the_other_roles_snapshots():
    comp = _role_leagues()
    plan = comp.opponent_plan
    assert set(plan.learners()) == {"main_predator", "main_prey"}
    assert plan.probabilities("main_predator") == {"random": pytest.approx(0.5)}  # an empty pool: random only
    weights = {"main_predator": {"w": np.full(3, 1.0, np.float32)}, "main_prey": {"w": np.full(2, 2.0, np.float32)}}
    metrics = comp.update([_outcome("main_predator", "random", 0, "A"), _outcome("main_prey", "random", 1, "A")],
                          _ctx(1, weights))
    # each role's rule froze its main; the snapshot joined the OTHER role's pool
    pred, prey = comp.leagues["predator"], comp.leagues["prey"]
    assert [pred.view.outside(m) for m in pred.league.snapshots()] == ["main_prey_v1"]
    assert [prey.view.outside(m) for m in prey.league.snapshots()] == ["main_predator_v1"]
    np.testing.assert_array_equal(pred.league.weights(pred.league.snapshots()[0])["w"], weights["main_prey"]["w"])
    assert metrics["league/predator/snapshots"] == 1.0 and metrics["league/prey/snapshot_event"] == 1.0
    assert "league/predator/rating/main_prey_v1" in metrics and "league/prey/rating/random" in metrics
    assert metrics["league/predator/win_rate_vs/random"] == 1.0  # predator main won its game vs random
    assert metrics["league/prey/win_rate_vs/random"] == 0.0  # prey main (team B) lost its game
    # the runners: predator main meets a prey snapshot in a predator-league slot, prey main a predator
    # snapshot in the prey league's slots (offset by K = 2); the slot says whose architecture it holds
    update = comp.runner_update(full=True)
    loaded = {sid: (s["member"], s["module"]) for sid, s in update.slot_weights.items() if s is not None}
    assert loaded == {"slot_0": ("main_prey_v1", "main_prey"), "slot_2": ("main_predator_v1", "main_predator")}
    probabilities = update.opponent_plan.probabilities("main_predator")
    assert set(probabilities) <= {"random", "slot_0", "slot_1"} and probabilities.get("slot_0", 0) > 0
    assert set(update.opponent_plan.probabilities("main_prey")) <= {"random", "slot_2", "slot_3"}
    assert sum(p for _, _, p in update.opponent_plan.entries) == pytest.approx(1.0)
    # results against a snapshot are recorded in the learner's own league, by the snapshot's name
    comp.update([_outcome("main_predator", "main_prey_v1", 0, "B")], _ctx(2, weights))
    assert pred.league.payoff(pred.view.inside("main_predator"), pred.view.inside("main_prey_v1")) == (0, 0, 1)


def test_role_leagues_round_trip_through_a_checkpoint_state():
    comp = _role_leagues()
    weights = {"main_predator": {"w": np.ones(3, np.float32)}, "main_prey": {"w": np.zeros(2, np.float32)}}
    for it in (1, 2):
        comp.update([_outcome("main_predator", "random", 0, "A")], _ctx(it, weights))
    state = comp.state_dict()
    again = _role_leagues()
    again.load_state_dict(state)
    assert again.opponent_plan == comp.opponent_plan
    for role in ("predator", "prey"):
        assert again.leagues[role].league.state_dict()["members"].__len__() == len(comp.leagues[role].league.snapshots()) + 2
        assert again.leagues[role].table() == comp.leagues[role].table()
    with pytest.raises(ValueError, match="roles"):
        _role_leagues().load_state_dict({"roles": {"predator": state["roles"]["predator"]}})


def test_a_league_needs_two_roles():
    from spade_rllib.league.league_config import LeagueConfig
    from spade_rllib.rllib.league_component import RoleLeaguesComponent

    with pytest.raises(ConfigError, match="a league needs a two-role game; this one has roles a, b, c"):
        RoleLeaguesComponent(LeagueConfig(), ("a", "b", "c"))


def test_a_plan_for_main_trains_every_role():
    from spade_rllib.rllib.plan import OpponentPlan

    plan = OpponentPlan(entries=(("mirror", 0.8), ("random", 0.2)), seed=5)
    spread = plan.spread_over(("main_predator", "main_prey"))
    assert spread.probabilities("main_predator") == {"mirror": pytest.approx(0.4), "random": pytest.approx(0.1)}
    assert spread.learners() == ("main_predator", "main_prey") and spread.seed == 5
    assert spread.spread_over(("main_predator", "main_prey")) is spread


# ------------------------------------------------------------------------------------------------
# training (Ray)
# ------------------------------------------------------------------------------------------------
def _tag_config(seed=0, **league):
    from spade_rllib.config.run_config import parse_config

    return parse_config({
        "experiment": {"seed": seed},
        "env": {"id": TAG, "kwargs": {"max_cycles": 25}, "roles": TAG_ROLES},
        "agent": {"lr": 1e-3, "train_batch_size": 2000, "minibatch_size": 500, "epochs": 4, "model": {"hidden": [64, 64]}},
        "league": {"enabled": True, "every_n_iterations": 2, "win_rate_threshold": None, "self_play_ratio": 0.5, **league},
        "training": {"num_env_runners": 0, "num_envs_per_runner": 16, "stop": {"iterations": 1}},
        "evaluation": {"interval": 2, "games": 16, "opponents": ["random"]},
    })


@pytest.mark.slow
def test_simple_tag_trains_a_predator_and_a_prey_main_with_leagues_checkpoints_and_resumes(ray_session, tmp_path):
    from spade_rllib.artifacts.checkpoint_layout import resolve_checkpoint
    from spade_rllib.players.policy import load_policy
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = _tag_config()
    algo = build_algo_config(cfg).build_algo()
    try:
        assert sorted(algo.env_runner.module.keys()) == ["main_predator", "main_prey"]
        for _ in range(4):
            result = algo.train()
        assert set(result["learners"]) >= {"main_predator", "main_prey"}  # both mains trained
        for role in ("predator", "prey"):
            assert result["train"][role]["episodes"] > 0 and math.isfinite(result["train"][role]["return_mean"])
            assert math.isfinite(result["eval"][role]["random"]["return_mean"])  # each role's own evaluation
            assert result["eval"][role]["random"]["games"] == 16
            assert result["league"][role]["snapshots"] == 2.0  # every 2 iterations: the other role's snapshots
        ckpt = tmp_path / "checkpoint_000004"
        algo.save_to_path(str(ckpt))
        plan = algo.env_runner.plan
    finally:
        algo.stop()
    info = resolve_checkpoint(str(ckpt))
    assert info.module_ids == ("main_predator", "main_prey")
    assert set(info.league_ids) == {"main_predator_v1", "main_predator_v2", "main_prey_v1", "main_prey_v2"}
    predator, prey = load_policy(str(ckpt), role="predator"), load_policy(str(ckpt), role="prey")
    assert (predator.feature_size, prey.feature_size) == (16, 14)
    assert load_policy(str(ckpt), "main_prey_v2").feature_size == 14  # a snapshot gets its role's architecture
    assert 0 <= predator.act(np.zeros(16, np.float32)) < 5
    from spade_rllib.artifacts.checkpoint_layout import PolicyLoadError

    with pytest.raises(PolicyLoadError, match=r"role 'pray' is not in checkpoint .* \(did you mean 'prey'\?\); roles: predator, prey"):
        load_policy(str(ckpt), role="pray")
    # resume: the leagues, the plan and the slots come back; training goes on
    again = build_algo_config(cfg).build_algo()
    try:
        again.restore_from_path(str(ckpt))
        assert again.env_runner.plan == plan
        assert sorted(again.env_runner.slot_members.values()) == sorted(
            m for m in info.league_ids if m in again.env_runner.slot_members.values())
        assert set(again.env_runner.slot_members.values()) & {"main_prey_v1", "main_prey_v2"}
        result = again.train()
        assert result["league"]["predator"]["snapshots"] == 2.0
        assert result["train"]["predator"]["episodes"] > 0
    finally:
        again.stop()

