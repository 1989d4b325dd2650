"""League RLlib glue (spade_rllib/rllib/league_component.py): config section, plan translation, slot
bandwidth, outcome mapping, and tiny real runs (MazeRace 1v1 with a remote env runner, MazeRace 2v2,
connect four): the league grows, slot weights reach the env runners and survive PPO updates,
checkpoint -> restore is exact and makes the same next decisions, league.csv is written."""
from __future__ import annotations

import copy
import csv
import dataclasses
import math

import numpy as np
import pytest

from spade_rllib.config.run_config import ConfigError, parse_config
from spade_rllib.league import MAIN, RANDOM, LeagueConfig, MemberId, format_table, read_table
from spade_rllib.rllib.league_component import LEAGUE_CSV, LeagueComponent, league_member_of, make_component
from spade_rllib.rllib.components import DriverContext, EnvInfo
from spade_rllib.rllib.plan import MIRROR, OpponentPlan
from spade_rllib.testing.state_equality import assert_exactly_equal

MAZE = {"env": {"id": "MazeRace-v0"}}

C4 = "pettingzoo.classic:connect_four_v3"
TABLE_COLUMNS = ["member", "rating", "games", "main_win_rate", "main_plan_p"]



def fake_weights(value: float) -> dict:
    return {"pi_head.weight": np.full((3, 2), value, np.float32), "pi_head.bias": np.zeros(3, np.float32)}


def ctx(iteration: int, value: float = 0.0) -> DriverContext:
    return DriverContext(iteration=iteration, env_steps_lifetime=100 * iteration,
                         main_weights=lambda: fake_weights(value), num_runners=1)


def decisions(metrics: dict) -> dict:
    """Update metrics minus the per-session transport counter."""
    return {k: v for k, v in metrics.items() if k != "league/slot_loads"}


def outcome(opponent, winner="A", main_team=0, **extra) -> dict:
    return {"winner": winner, "reason": "goal", "length": 10, "level": {}, "main_team": main_team,
            "opponent": opponent, **extra}


# ------------------------------------------------------------------------------------------------
# config section (no Ray)
# ------------------------------------------------------------------------------------------------
def test_config_section_carries_every_core_field_with_core_defaults():
    section = set(parse_config(MAZE).to_dict()["league"]) - {"enabled"}  # the run config embeds the core
    assert section == {f.name for f in dataclasses.fields(LeagueConfig)}
    assert parse_config(MAZE).league.to_core() == LeagueConfig()
    cfg = parse_config({**MAZE, "league": {"enabled": True, "every_n_iterations": 3, "sampling": "uniform", "max_size": 7}})
    core = cfg.league.to_core()
    assert (core.every_n_iterations, core.sampling, core.max_size) == (3, "uniform", 7)


@pytest.mark.parametrize("raw, expect", [
    ({"league": {"windw": 5}}, "league.windw: unknown key (did you mean 'window'?)"),
    ({"league": {"window": 0}}, "league.window = 0: out of range, allowed an integer >= 1"),
    ({"league": {"sampling": "pfps"}}, "league.sampling = 'pfps': not allowed (did you mean 'pfsp'?)"),
    ({"league": {"eviction": "olddest"}}, "league.eviction = 'olddest': not allowed (did you mean 'oldest'?)"),
    ({"league": {"win_rate_threshold": None}}, "both None"),
    ({"league": {"enabled": True, "main_exploiters": -1}}, "league.main_exploiters = -1: out of range, allowed an integer >= 0"),
    ({"league": {"enabled": True}, "env": {"id": "CartPole-v1"}}, "single-agent env"),
])
def test_config_section_errors_reuse_the_core_messages(raw, expect):
    with pytest.raises(ConfigError) as info:
        parse_config({**MAZE, **raw})
    assert expect in str(info.value)
    assert "\n" not in str(info.value)


def test_make_component_is_none_when_disabled():
    info = EnvInfo("MazeRace-v0", "level", (("a0",), ("b0",)), 6, 10, 0)
    assert make_component(parse_config(MAZE), info) is None
    comp = make_component(parse_config({**MAZE, "league": {"enabled": True}}), info)
    assert isinstance(comp, LeagueComponent) and comp.name == "league"


# ------------------------------------------------------------------------------------------------
# glue logic (no Ray)
# ------------------------------------------------------------------------------------------------
def test_outcome_ids_map_to_league_members():
    assert league_member_of("main_v3") == MemberId.snapshot(3)
    assert league_member_of("random") == RANDOM
    assert league_member_of(MIRROR) == MAIN
    for not_a_member in (None, "bot:rusher", "slot_2"):
        assert league_member_of(not_a_member) is None
    comp = LeagueComponent(LeagueConfig(every_n_iterations=1, win_rate_threshold=None))
    comp.update([], ctx(1))  # main_v1 joins
    counts = comp.record_outcomes([
        outcome("main_v1", winner="A", main_team=0),          # win
        outcome("main_v1", winner="A", main_team=1),          # loss
        outcome("random", winner="draw"),                     # draw
        outcome("bot:rusher"),                                # not a league member: ignored
        outcome(None, winner=None),                           # single-agent record: ignored
        outcome("main_v1", opponent_swapped=True),            # slot reloaded mid-episode: ignored
        outcome(MIRROR),                                      # payoff only
    ])
    assert counts == {MAIN: {MemberId.snapshot(1): 2, RANDOM: 1, MAIN: 1}}
    assert comp.league.payoff(MAIN, MemberId.snapshot(1)) == (1, 0, 1)
    assert comp.league.payoff(MAIN, RANDOM) == (0, 1, 0)
    assert comp.counters == {"ignored_games": 3, "swapped_games": 1}


def test_plan_translation_and_slot_weights_only_when_they_change():
    comp = LeagueComponent(LeagueConfig(every_n_iterations=1, win_rate_threshold=None, num_opponent_slots=2,
                                        max_size=10, latest_ratio=0.5, sampling="uniform"))
    first = comp.runner_update(full=True)
    assert first.opponent_plan.probabilities() == {"random": 1.0}
    assert first.slot_weights == {"slot_0": None, "slot_1": None}
    assert comp.runner_update(full=False) is None  # nothing new
    sent: dict[str, str] = {}
    for it in range(1, 7):
        metrics = comp.update([outcome("random")], ctx(it, value=float(it)))
        assert metrics["league/snapshots"] == it and metrics["league/snapshot_event"] == 1.0
        update = comp.runner_update(full=False)
        plan = comp.plan
        # the runner plan is the league plan with snapshots renamed to the slot that holds them
        expected: dict[str, float] = {}
        for entry in plan.entries:
            key = f"slot_{entry.opponent_slot}" if entry.opponent_slot is not None else str(entry.opponent)
            expected[key] = expected.get(key, 0.0) + entry.probability
        assert update.opponent_plan.probabilities() == pytest.approx(expected)
        assert update.opponent_plan.seed == plan.seed
        changed = {f"slot_{k}" for k, m in enumerate(plan.slots) if m is not None and sent.get(f"slot_{k}") != str(m)}
        assert set(update.slot_weights or {}) == changed
        for sid, slot in (update.slot_weights or {}).items():
            member = MemberId.parse(slot["member"])
            np.testing.assert_array_equal(slot["weights"]["pi_head.weight"], fake_weights(member.generation)["pi_head.weight"])
            sent[sid] = slot["member"]
    full = comp.runner_update(full=True)
    assert {sid: s["member"] for sid, s in full.slot_weights.items() if s} == \
        {f"slot_{k}": str(m) for k, m in enumerate(comp.plan.slots) if m is not None}


def test_component_state_round_trip_gives_the_same_next_decisions():
    config = LeagueConfig(every_n_iterations=2, win_rate_threshold=0.6, window=4, num_opponent_slots=2, max_size=3)
    comp = LeagueComponent(config, seed=5)
    rng = np.random.default_rng(0)
    for it in range(1, 8):
        opponents = [str(m) for m in comp.league.pool()]
        comp.update([outcome(opponents[rng.integers(len(opponents))], winner="AB"[rng.integers(2)]) for _ in range(6)],
                    ctx(it, value=it))
        comp.runner_update(full=False)
    saved = copy.deepcopy(comp.state_dict())
    other = LeagueComponent(config, seed=99)
    other.load_state_dict(copy.deepcopy(saved))
    assert_exactly_equal(other.state_dict(), saved)
    assert other.opponent_plan == comp.opponent_plan
    for it in range(8, 12):
        recs = [outcome("random", winner="A") for _ in range(5)]
        assert_exactly_equal(decisions(other.update(recs, ctx(it, value=it))), decisions(comp.update(recs, ctx(it, value=it))))
        a, b = comp.runner_update(full=True), other.runner_update(full=True)
        assert a.opponent_plan == b.opponent_plan
        assert [OpponentPlan.pick(a.opponent_plan, (0, e, n)) for e in range(4) for n in range(20)] == \
               [OpponentPlan.pick(b.opponent_plan, (0, e, n)) for e in range(4) for n in range(20)]


def test_table_text_and_csv_columns(tmp_path):
    comp = LeagueComponent(LeagueConfig(every_n_iterations=1, win_rate_threshold=None))
    comp.update([], ctx(1))
    comp.update([outcome("main_v1"), outcome("random", winner="B")], ctx(2))
    path = comp.finish(tmp_path)
    rows = read_table(path)
    by_member = {r["member"]: r for r in rows}
    assert set(by_member) == {"main", "main_v1", "main_v2", "random"}
    assert by_member["main"]["main_win_rate"] == ""  # no win rate against itself
    assert float(by_member["main_v1"]["main_win_rate"]) == 1.0 and float(by_member["random"]["main_win_rate"]) == 0.0
    assert [float(r["rating"]) for r in rows] == sorted((float(r["rating"]) for r in rows), reverse=True)
    with open(path) as f:
        assert next(csv.reader(f)) == TABLE_COLUMNS
    text = format_table(rows)
    assert "main_v1" in text and "main_win_rate" in text


# ------------------------------------------------------------------------------------------------
# tiny real runs (Ray)
# ------------------------------------------------------------------------------------------------
def tiny(env_id: str, env_kwargs=None, **sections) -> dict:
    raw = {
        "experiment": {"name": "league_test", "seed": 3},
        "env": {"id": env_id, "kwargs": dict(env_kwargs or {})},
        "agent": {"train_batch_size": 256, "minibatch_size": 128, "epochs": 1, "model": {"hidden": [16]}},
        "training": {"num_envs_per_runner": 4, "num_env_runners": 0},
        "evaluation": {"interval": 0},
        "league": {"enabled": True, "every_n_iterations": 1, "win_rate_threshold": None, "num_opponent_slots": 4},
    }
    if env_id == "MazeRace-v0":
        raw["env"]["difficulty"] = 1.0
    for k, v in sections.items():
        raw.setdefault(k, {}).update(v)
    return raw


def league_of(algo) -> LeagueComponent:
    (comp,) = [c for c in algo.components if c.name == "league"]
    return comp


def slot_logits(algo, obs: np.ndarray) -> dict:
    """{slot id: (member, logits)} as every remote env runner's slot modules compute them."""
    def probe(runner):
        import torch
        with torch.no_grad():
            return {sid: (runner.slot_members[sid], mod.logits(torch.from_numpy(obs)).numpy())
                    for sid, mod in runner.slot_modules.items()}
    return algo.env_runner_group.foreach_env_runner(probe, local_env_runner=False)


def logits_for(algo, weights: dict, obs: np.ndarray) -> np.ndarray:
    import torch

    module = copy.deepcopy(algo.get_module("main"))
    module.set_state({k: np.array(v) for k, v in weights.items()})
    with torch.no_grad():
        return module.logits(torch.from_numpy(obs)).numpy()


@pytest.fixture(scope="module")
def mazerace_league(ray_session, tmp_path_factory):
    """MazeRace 1v1, one remote env runner, a snapshot every iteration, 3 iterations."""
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny("MazeRace-v0", training={"num_env_runners": 1},
                            resources={"num_cpus_per_env_runner": 0.5}))
    algo = build_algo_config(cfg).build_algo()
    results = [algo.train() for _ in range(3)]
    yield algo, results, tmp_path_factory.mktemp("league_ckpt")
    algo.stop()


@pytest.mark.ray
def test_league_grows_and_reports_metrics(mazerace_league):
    algo, results, _ = mazerace_league
    comp = league_of(algo)
    assert [m for m in comp.league.snapshots()] == [MemberId.snapshot(g) for g in (1, 2, 3)]
    sizes = [r["league"]["size"] for r in results]
    assert sizes == [2.0, 3.0, 4.0]  # random + one snapshot per iteration
    last = results[-1]["league"]
    for key in ("main_rating", "snapshots_total", "games_total", "snapshot_event", "games_this_iter"):
        assert key in last, key
    assert set(last["matchups"]) >= {"random", "main_v1", "main_v2"}
    assert last["snapshot_event"] == 1.0
    assert results[-1]["league"]["games_total"] > 0
    from spade_rllib.training.console import format_line
    assert "league 4" in format_line(results[-1])


@pytest.mark.ray
def test_slot_weights_reach_runners_and_survive_ppo_updates(mazerace_league):
    algo, _, _ = mazerace_league
    comp = league_of(algo)
    obs = np.random.default_rng(0).random((5, algo.env_runner.games[0].obs_size), dtype=np.float32)
    (held,) = slot_logits(algo, obs)
    assert {member for member, _ in held.values()} == {"main_v1", "main_v2", "main_v3"}
    for sid, (member, logits) in held.items():
        np.testing.assert_allclose(logits, logits_for(algo, comp.league.weights(MemberId.parse(member)), obs), rtol=1e-5, atol=1e-6)
    before = {member: logits for member, logits in held.values()}
    algo.train()  # a PPO update (and main_v4 joins); earlier slots must keep their snapshot's weights
    (after,) = slot_logits(algo, obs)
    after_by_member = {member: logits for member, logits in after.values()}
    assert set(after_by_member) == {"main_v1", "main_v2", "main_v3", "main_v4"}
    for member, logits in before.items():
        np.testing.assert_array_equal(after_by_member[member], logits)
    main_logits = logits_for(algo, algo.main_weights(), obs)
    assert not np.allclose(after_by_member["main_v1"], main_logits)


@pytest.mark.ray
def test_checkpoint_restore_is_exact_and_decides_the_same(mazerace_league):
    from ray.rllib.algorithms.algorithm import Algorithm

    algo, _, ckpt = mazerace_league
    comp = league_of(algo)
    algo.save_to_path(str(ckpt))
    saved = copy.deepcopy(comp.state_dict())
    restored = Algorithm.from_checkpoint(str(ckpt))
    try:
        other = league_of(restored)
        assert_exactly_equal(other.state_dict(), saved)
        # the restored env runner got the same plan and slots
        (runner_plan,) = restored.env_runner_group.foreach_env_runner(lambda r: (r.plan, dict(r.slot_members)),
                                                                       local_env_runner=False)
        assert runner_plan[0] == comp.opponent_plan
        assert runner_plan[1] == {f"slot_{k}": str(m) for k, m in enumerate(comp.plan.slots) if m is not None}
        # same outcomes + same weights -> same snapshot, same plan, same per-episode draws
        recs = [outcome(str(m), winner="AB"[i % 2]) for i, m in enumerate(comp.league.pool() * 3)]
        weights = {k: np.array(v) for k, v in algo.main_weights().items()}
        it = algo.iteration + 1
        fixed = DriverContext(iteration=it, env_steps_lifetime=0, main_weights=lambda: weights, num_runners=1)
        assert_exactly_equal(decisions(other.update(list(recs), fixed)), decisions(comp.update(list(recs), fixed)))
        assert other.opponent_plan == comp.opponent_plan
        assert_exactly_equal(other.state_dict(), comp.state_dict())
    finally:
        restored.stop()


@pytest.mark.ray
def test_league_csv_written_at_the_end_of_the_run(mazerace_league):
    algo, _, _ = mazerace_league
    algo.stop()
    path = algo.trial_dir() / LEAGUE_CSV
    rows = read_table(path)
    with open(path) as f:
        assert next(csv.reader(f)) == TABLE_COLUMNS
    assert {r["member"] for r in rows} >= {"main", "random", "main_v1", "main_v2", "main_v3"}
    assert all(float(r["games"]) >= 0 and r["rating"] for r in rows)


@pytest.mark.ray
@pytest.mark.parametrize("env_id, env_kwargs", [(C4, {}), ("MazeRace-v0", {"agents_per_team": 2})],
                         ids=["connect_four", "mazerace_2v2"])
def test_league_smoke_other_envs(ray_session, env_id, env_kwargs):
    from spade_rllib.rllib.algo_config import build_algo_config

    algo = build_algo_config(parse_config(tiny(env_id, env_kwargs))).build_algo()
    try:
        results = [algo.train() for _ in range(3)]
        comp = league_of(algo)
        assert len(comp.league.snapshots()) == 3
        assert results[-1]["league"]["size"] == 4.0
        played = sum(comp.league.games(m) for m in comp.league.snapshots())
        assert played > 0, "main never met a snapshot"
        assert set(algo.env_runner.slot_members.values()) == {"main_v1", "main_v2", "main_v3"}
    finally:
        algo.stop()


def test_evicted_members_metrics_are_blanked():
    comp = LeagueComponent(LeagueConfig(every_n_iterations=1, win_rate_threshold=None, max_size=2, keep_first=False))
    for it in range(1, 4):
        metrics = comp.update([outcome("random")], ctx(it))
    assert [str(m) for m in comp.league.snapshots()] == ["main_v2", "main_v3"]
    assert math.isnan(metrics["league/rating/main_v1"]) and metrics["league/plan/main_v1"] == 0.0
    assert metrics["league/eviction_event"] == 1.0
    assert sum(v for k, v in metrics.items() if k.startswith("league/plan/")) == pytest.approx(1.0)


def test_runner_side_draws_follow_the_league_distribution():
    """The runner draws with `OpponentPlan.pick`; mapped back through the slots, the matchup
    frequencies over many iterations follow the league's opponent distribution (chi-square), even
    with more snapshots than slots (residual slot resampling)."""
    config = LeagueConfig(every_n_iterations=10 ** 6, win_rate_threshold=None, num_opponent_slots=3, max_size=20,
                          latest_ratio=0.4, sampling="uniform")
    comp = LeagueComponent(config, seed=11)
    for it in range(1, 8):  # 7 snapshots, 3 slots
        comp.league.add_snapshot(fake_weights(it), it)
    expected = {str(m): p for m, p in comp.league.opponent_distribution(MAIN).items()}
    counts: dict[str, int] = {}
    n = 0
    for it in range(8, 2408):  # one episode per plan: each episode's marginal is the distribution
        comp.update([], DriverContext(iteration=it, env_steps_lifetime=0, main_weights=lambda: fake_weights(0),
                                      num_runners=1))
        assert {str(m): p for m, p in comp.league.opponent_distribution(MAIN).items()} == expected
        plan, opp_plan = comp.plan, comp.opponent_plan
        for episode in range(1):
            pick = opp_plan.pick((1, it % 4, it // 4))
            member = str(plan.slots[int(pick[len("slot_"):])]) if pick.startswith("slot_") else pick
            counts[member] = counts.get(member, 0) + 1
            n += 1
    stat = sum((counts.get(m, 0) - n * p) ** 2 / (n * p) for m, p in expected.items())
    dof = len(expected) - 1
    z = 3.090232  # 0.001 false-alarm rate, Wilson-Hilferty
    critical = dof * (1.0 - 2.0 / (9.0 * dof) + z * math.sqrt(2.0 / (9.0 * dof))) ** 3
    assert set(counts) <= set(expected)
    assert stat < critical, (stat, critical, counts, expected)


def test_runner_flags_episodes_whose_slot_was_reloaded(tmp_path):
    """An episode that started against main_v1 in slot_0 and ended after slot_0 got main_v2 is
    reported as main_v1 with `opponent_swapped`; later episodes are main_v2 games."""
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.plan import DriverUpdate
    from spade_rllib.rllib.runner import SpadeEnvRunner

    cfg = parse_config(tiny(C4, training={"num_envs_per_runner": 2}))
    runner = SpadeEnvRunner(config=build_algo_config(cfg), worker_index=0, num_workers=0)
    try:
        weights = runner.main_weights()
        plan = OpponentPlan(entries=(("slot_0", 1.0),), seed=1)
        runner.apply_driver_update(DriverUpdate(opponent_plan=plan, slot_weights={"slot_0": {"member": "main_v1", "weights": weights}}))
        runner.sample(num_timesteps=4)  # episodes running against main_v1 (connect four lasts >= 7 moves)
        assert runner.pop_episode_outcomes() == []
        runner.apply_driver_update(DriverUpdate(slot_weights={"slot_0": {"member": "main_v2", "weights": weights}}))
        runner.sample(num_episodes=6)
        records = runner.pop_episode_outcomes()
        first = [r for r in records if r.opponent_swapped]  # one per env copy: started before the reload
        later = [r for r in records if not r.opponent_swapped]
        assert len(first) == 2 and all(r.opponent == "main_v1" for r in first), records
        assert len(later) >= 4 and all(r.opponent == "main_v2" for r in later), records
        comp = LeagueComponent(LeagueConfig(every_n_iterations=1, win_rate_threshold=None))
        comp.record_outcomes(records)
        assert comp.counters["swapped_games"] == 2
    finally:
        runner.stop()


# ------------------------------------------------------------------------------------------------
# AlphaStar exploiters: extra trained modules
# ------------------------------------------------------------------------------------------------
ME0, LE0 = MemberId.main_exploiter(0), MemberId.league_exploiter(0)
LEARNER_MODULES = {"main", "main_exploiter_0", "league_exploiter_0"}


def spy_on_updates(algo) -> list:
    """Record the module ids of the experience every learner update receives."""
    seen: list = []
    update = algo.learner_group.update

    def spy(*args, episodes=None, **kwargs):
        seen.append({getattr(e, "module_id", None) for e in episodes or []})
        return update(*args, episodes=episodes, **kwargs)

    algo.learner_group.update = spy
    return seen


def fresh_weights(algo, module_id: str, seed: int) -> dict:
    import torch

    spec = algo.config.get_multi_rl_module_spec().rl_module_specs[module_id]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return spec.build().get_state()


def same_weights(a: dict, b: dict) -> bool:
    return set(a) <= set(b) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def test_exploiter_plan_translation_and_reset_requests():
    """No Ray: exploiter entries name their learner module; a main exploiter meets live main; its
    snapshot asks the driver for a seeded reset, a league exploiter's does not."""
    from spade_rllib.rllib.league_component import reset_seed

    comp = LeagueComponent(LeagueConfig(main_exploiters=1, league_exploiters=1, every_n_iterations=2,
                                        win_rate_threshold=None), seed=5)
    plan = comp.opponent_plan
    assert plan.learners() == ("main", "main_exploiter_0", "league_exploiter_0")
    assert plan.probabilities("main_exploiter_0") == pytest.approx({"live:main": 1 / 3})
    assert set(plan.probabilities("league_exploiter_0")) == {"random"}
    resets = []
    context = DriverContext(iteration=2, env_steps_lifetime=0, main_weights=lambda: fake_weights(0), num_runners=1,
                            module_weights=lambda m: fake_weights(len(m)), reset_module=lambda m, s: resets.append((m, s)))
    records = [outcome("main", learner="main_exploiter_0"), outcome("random", learner="league_exploiter_0"),
               outcome("random", winner="B")]
    metrics = comp.update(records, context)
    assert resets == [("main_exploiter_0", reset_seed(5, ME0, 1))]
    assert {str(m) for m in comp.league.snapshots()} == {"main_v1", "main_exploiter_0_v1", "league_exploiter_0_v1"}
    np.testing.assert_array_equal(comp.league.weights(MemberId.main_exploiter(0, 1))["pi_head.weight"],
                                  fake_weights(len("main_exploiter_0"))["pi_head.weight"])
    assert comp.league.payoff(ME0, MAIN) == (1, 0, 0) and comp.league.payoff(LE0, RANDOM) == (1, 0, 0)
    assert metrics["league/matchups/random"] == 1.0  # main's games only
    assert metrics["league/learner/main_exploiter_0/games_this_iter"] == 1.0
    assert metrics["league/learner/main_exploiter_0/snapshots"] == 1.0
    # main's planned distribution now includes the exploiters' snapshots and sums to 1 on its own
    planned = {k[len("league/plan/"):]: v for k, v in metrics.items() if k.startswith("league/plan/")}
    assert sum(planned.values()) == pytest.approx(1.0)
    assert planned["main_exploiter_0_v1"] > 0 and planned["league_exploiter_0_v1"] > 0
    # a league exploiter plays the pool only, never live main
    assert "live:main" not in comp.opponent_plan.probabilities("league_exploiter_0")


@pytest.fixture(scope="module")
def exploiter_league(ray_session):
    """MazeRace 1v1 with one main exploiter and one league exploiter, snapshots every 2 iterations."""
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny("MazeRace-v0", league={"main_exploiters": 1, "league_exploiters": 1,
                                                   "every_n_iterations": 2}))
    algo = build_algo_config(cfg).build_algo()
    initial = {m: algo.module_weights(m) for m in LEARNER_MODULES}
    seen = spy_on_updates(algo)
    results = [algo.train() for _ in range(4)]
    yield algo, initial, seen, results
    algo.stop()


@pytest.mark.ray
def test_exploiters_train_as_their_own_modules(exploiter_league):
    algo, initial, seen, results = exploiter_league
    comp = league_of(algo)
    assert seen == [LEARNER_MODULES] * 4  # every update trains all three modules
    assert set(results[-1]["learners"]) >= LEARNER_MODULES
    for module_id in ("main", "league_exploiter_0"):
        assert not same_weights(initial[module_id], algo.module_weights(module_id)), module_id
    # who played whom: the main exploiter only live main; the league exploiter only the frozen pool
    payoff = comp.league.state.payoff
    assert {b for a, b in payoff if a == ME0} == {MAIN}
    assert {b for a, b in payoff if a == LE0} and all(b.is_frozen for a, b in payoff if a == LE0)
    assert all(b.is_frozen or b == MAIN for a, b in payoff if a == MAIN)
    # snapshots of every learner joined the pool; main's plan includes exploiter snapshots
    assert {str(m) for m in comp.league.snapshots()} >= {"main_exploiter_0_v2", "league_exploiter_0_v2", "main_v2"}
    assert any(m.role.value.endswith("exploiter") for (lrn, m) in comp.plan.probabilities() if lrn == MAIN)
    assert results[-1]["league"]["learner"]["main_exploiter_0"]["snapshots"] == 2.0
    from spade_rllib.training.console import format_line
    assert "main_exploiter_0 wr" in format_line(results[-1])


@pytest.mark.ray
def test_main_exploiter_is_reset_after_its_snapshot(exploiter_league):
    from spade_rllib.rllib.league_component import reset_seed

    algo, initial, _, _ = exploiter_league
    comp = league_of(algo)
    fresh = fresh_weights(algo, "main_exploiter_0", reset_seed(comp.seed, ME0, 2))
    # iteration 4 froze main_exploiter_0_v2 and re-initialised the module: learner and runner copies
    assert same_weights(algo.module_weights("main_exploiter_0"), fresh)
    assert same_weights(algo.env_runner.module["main_exploiter_0"].get_state(), fresh)
    frozen = comp.league.weights(MemberId.main_exploiter(0, 2))
    assert not same_weights(frozen, fresh) and not same_weights(frozen, initial["main_exploiter_0"])
    learner = algo.learner_group._learner
    assert all(not opt.state for _, opt in learner.get_optimizers_for_module("main_exploiter_0"))
    assert all(opt.state for _, opt in learner.get_optimizers_for_module("league_exploiter_0"))  # not reset


@pytest.mark.ray
def test_exploiter_checkpoint_round_trip(exploiter_league, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    algo, _, _, _ = exploiter_league
    saved = copy.deepcopy(league_of(algo).state_dict())
    ckpt = algo.save_to_path(str(tmp_path / "ckpt"))
    restored = Algorithm.from_checkpoint(ckpt)
    try:
        assert_exactly_equal(league_of(restored).state_dict(), saved)
        for module_id in LEARNER_MODULES:
            assert same_weights(restored.module_weights(module_id), algo.module_weights(module_id)), module_id
        assert restored.env_runner.plan == league_of(algo).opponent_plan
    finally:
        restored.stop()


@pytest.mark.ray
def test_sample_ahead_drops_the_batch_sampled_before_a_reset(ray_session):
    """With sample-ahead the batch in flight at a reset was acted by the old weights: it must not
    train the re-initialised main exploiter; the batch after it does."""
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny(C4, league={"main_exploiters": 1, "every_n_iterations": 2},
                            training={"num_env_runners": 1, "sample_ahead": True},
                            resources={"num_cpus_per_env_runner": 0.5}))
    algo = build_algo_config(cfg).build_algo()
    try:
        seen = spy_on_updates(algo)
        for _ in range(4):
            algo.train()
        # resets after iterations 2 and 4 (snapshots); iteration 3 trained main only
        assert seen == [{"main", "main_exploiter_0"}, {"main", "main_exploiter_0"}, {"main"},
                        {"main", "main_exploiter_0"}]
    finally:
        algo.stop()


@pytest.mark.ray
def test_exploiters_with_a_remote_learner(ray_session):
    """The remote-learner path (SingleAgentEpisodes with the learner's module id, PPO's default
    connectors, a reset on a Learner actor) trains all three modules."""
    from spade_rllib.rllib.league_component import reset_seed
    from spade_rllib.rllib.algo_config import build_algo_config

    cfg = parse_config(tiny("MazeRace-v0", league={"main_exploiters": 1, "league_exploiters": 1,
                                                   "every_n_iterations": 2},
                            resources={"num_learners": 1, "num_cpus_per_learner": 1}))
    algo = build_algo_config(cfg).build_algo()
    try:
        seen = spy_on_updates(algo)
        for _ in range(2):
            algo.train()
        assert seen == [LEARNER_MODULES] * 2
        fresh = fresh_weights(algo, "main_exploiter_0", reset_seed(league_of(algo).seed, ME0, 1))
        assert same_weights(algo.module_weights("main_exploiter_0"), fresh)
        assert same_weights(algo.env_runner.module["main_exploiter_0"].get_state(), fresh)
    finally:
        algo.stop()
