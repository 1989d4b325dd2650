"""Teams, agents that die or join mid-episode, cooperative games, and the foreign envs that need them.

Fast tests: a tiny PettingZoo env (Parallel and, through PettingZoo's own conversion, AEC) where
one agent dies at step 2 and one joins at step 1; the runner's per-agent trajectories and GAE;
team resolution and its one-line errors. Slow tests train `pursuit_v5` (8 agents),
`knights_archers_zombies_v11` (agents die) and `simple_spread_v3` (cooperative) for a few thousand
env steps each.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.utils.env import ParallelEnv

from spade_rllib.config.run_config import ConfigError, parse_config

DIE_AT, JOIN_AT, HORIZON = 2, 1, 5


class DyingParallel(ParallelEnv):
    """`a0` lives to the time limit (truncated at HORIZON), `a1` dies at step DIE_AT with reward +1
    (terminated), `a2` joins after step JOIN_AT and is truncated with a0. Obs: [t, agent index]."""

    metadata = {"name": "dying_v0", "is_parallelizable": True}
    render_mode = None

    def __init__(self, join: bool = True):
        self.possible_agents = ["a0", "a1", "a2"] if join else ["a0", "a1"]
        self.join = join
        self.agents: list = []
        self.t = 0

    def observation_space(self, agent):
        return gym.spaces.Box(-10, 10, (2,), np.float32)

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def _obs(self, a):
        return np.array([self.t, self.possible_agents.index(a)], np.float32)

    def reset(self, seed=None, options=None):
        self.t = 0
        self.agents = ["a0", "a1"]
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (sorted(actions), self.agents)
        self.t += 1
        acting = list(self.agents)
        rew = {a: 0.0 for a in acting}
        term = {a: False for a in acting}
        trunc = {a: self.t >= HORIZON for a in acting}
        if "a1" in acting and self.t == DIE_AT:
            rew["a1"], term["a1"] = 1.0, True
        obs = {a: self._obs(a) for a in acting}
        self.agents = [a for a in acting if not (term[a] or trunc[a])]
        if self.join and self.t == JOIN_AT:
            self.agents.append("a2")
            obs["a2"] = self._obs("a2")
        return obs, rew, term, trunc, {a: {} for a in obs}

    def close(self):
        pass


def _install(monkeypatch, join: bool = True):
    from pettingzoo.utils.conversions import parallel_to_aec

    name = "dying_pz_join" if join else "dying_pz"  # one module per variant: env ids resolve once (cached)
    mod = types.ModuleType(name)
    env_mod = types.SimpleNamespace(parallel_env=lambda **kw: DyingParallel(join=join),
                                    env=lambda **kw: parallel_to_aec(DyingParallel(join=join)))
    mod.dying_v0 = env_mod
    monkeypatch.setitem(sys.modules, name, mod)
    return f"{name}:dying_v0"


def _runner(env: dict, **sections):
    from spade_rllib.rllib.algo_config import build_algo_config
    from spade_rllib.rllib.runner import SpadeEnvRunner

    raw = {"env": env, "agent": {"train_batch_size": 64, "minibatch_size": 32},
           "training": {"num_envs_per_runner": 1}, **sections}
    return SpadeEnvRunner(config=build_algo_config(parse_config(raw)), worker_index=0, num_workers=0)


def _chunks(pack):
    """(agent index from the obs, steps, terminated, rewards) per chunk of a PackedEpisodes."""
    out, row, step = [], 0, 0
    for n, term in zip(pack.lengths, pack.terminated):
        obs = pack.obs[row:row + n + 1]
        out.append((int(obs[0, 1]), int(n), bool(term), list(pack.rewards[step:step + n])))
        row += n + 1
        step += n
    return out


@pytest.mark.parametrize("api", ["parallel", "aec"])
def test_a_dead_agent_ends_its_own_trajectory(monkeypatch, api):
    env_id = _install(monkeypatch, join=api == "parallel")
    runner = _runner({"id": env_id, "mode": "cooperative", "api": api})
    try:
        assert runner.games[0].teams == (tuple(runner.games[0].raw_env.possible_agents),) and runner.games[0].cooperative
        steps = HORIZON if api == "parallel" else 2 * DIE_AT + (HORIZON - DIE_AT)  # AEC: one agent per step
        (pack,) = runner.sample(num_timesteps=steps)
        outcomes = runner.pop_episode_outcomes()
    finally:
        runner.stop()
    chunks = sorted(_chunks(pack))
    # a1 died at step 2: 2 steps, terminated (no bootstrap), its +1 on its last step
    assert (1, DIE_AT, True, [0.0, 1.0]) in chunks
    # a0 ran into the time limit: 5 steps, truncated (bootstrapped)
    assert (0, HORIZON, False, [0.0] * HORIZON) in chunks
    if api == "parallel":  # a2 joined after step 1 and acted from then on
        assert (2, HORIZON - JOIN_AT, False, [0.0] * (HORIZON - JOIN_AT)) in chunks
    assert len(chunks) == len(runner.games[0].raw_env.possible_agents)
    (record,) = outcomes
    assert record.winner is None and record.length == steps and record.returns == (pytest.approx(1 / len(chunks)),)


def test_gae_does_not_bootstrap_a_dead_agent(monkeypatch):
    """GAE over the runner's pack: the dead agent's last advantage is r - V(s), the truncated one's
    r + gamma V(s') - V(s)."""
    from spade_rllib.rllib.packed import gae

    runner = _runner({"id": _install(monkeypatch, join=False), "mode": "cooperative", "api": "parallel"})
    try:
        (pack,) = runner.sample(num_timesteps=HORIZON)
    finally:
        runner.stop()
    values = np.full(len(pack.obs), 10.0, np.float32)  # V = 10 everywhere, boot rows included
    adv, _ = gae(values, pack, gamma=0.5, lambda_=1.0)
    ends = np.cumsum(pack.lengths) - 1
    by_agent = {}
    row = 0
    for c, n in enumerate(pack.lengths):
        by_agent[int(pack.obs[row, 1])] = float(adv[ends[c]])
        row += n + 1
    assert by_agent[1] == pytest.approx(1.0 - 10.0)  # terminated: no bootstrap
    assert by_agent[0] == pytest.approx(0.0 + 0.5 * 10.0 - 10.0)  # truncated: bootstrap from V(s')


def test_teams_from_config_env_and_mode(monkeypatch):
    from spade_rllib.games.adapter import make_game_factory

    env_id = _install(monkeypatch)
    assert make_game_factory(env_id, api="parallel")().teams == (("a0",), ("a1",), ("a2",))  # free for all
    game = make_game_factory(env_id, teams={"red": ["a0", "a2"], "blue": ["a1"]}, api="parallel")()
    assert game.teams == (("a0", "a2"), ("a1",)) and game.team_names == ("red", "blue") and not game.cooperative
    fn = types.ModuleType("team_fns")
    fn.side = lambda agent: "even" if int(agent[1:]) % 2 == 0 else "odd"
    monkeypatch.setitem(sys.modules, "team_fns", fn)
    assert make_game_factory(env_id, teams="team_fns:side", api="parallel")().teams == (("a0", "a2"), ("a1",))
    assert make_game_factory(env_id, teams="team_fns.side", api="parallel")().team_names == ("even", "odd")
    assert make_game_factory(env_id, mode="cooperative", api="parallel")().cooperative


@pytest.mark.parametrize("teams, message", [
    ({"A": ["a_0"], "B": ["a1", "a2"]}, "env.teams.A: unknown agent 'a_0' (did you mean 'a0'?)"),
    ({"A": ["a0", "a1"], "B": ["a1", "a2"]}, "agent 'a1' is in two teams ('A' and 'B')"),
    ({"A": ["a0"], "B": ["a1"]}, "agent(s) ['a2'] are in no team"),
    ("team_fns_missing:side", "env.teams = 'team_fns_missing:side': cannot import it"),
])
def test_bad_teams_are_one_line_before_ray(monkeypatch, teams, message):
    env_id = _install(monkeypatch)
    with pytest.raises(ConfigError) as e:
        parse_config({"env": {"id": env_id, "teams": teams, "api": "parallel"}})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_teams_shapes_are_refused_by_the_schema(monkeypatch):
    env_id = _install(monkeypatch)
    for teams, message in [({"A": "a0"}, "env.teams.A = 'a0': wrong type"), (3, "env.teams = 3: wrong type")]:
        with pytest.raises(ConfigError, match=message):
            parse_config({"env": {"id": env_id, "teams": teams}})
    with pytest.raises(ConfigError, match="only with env.mode 'auto'"):
        parse_config({"env": {"id": env_id, "teams": {"A": ["a0"]}, "mode": "cooperative"}})
    with pytest.raises(ConfigError, match="env.teams = .*only allowed with a multi-agent env"):
        parse_config({"env": {"id": "CartPole-v1", "teams": {"A": ["agent_0"]}}})


def test_eight_teams_play_and_evaluate(monkeypatch):
    """More than four teams (pursuit_v5 has 8 pursuers, each its own team by default): records and
    evaluation work for every seat."""
    pytest.importorskip("pettingzoo.sisl")
    runner = _runner({"id": "pettingzoo.sisl:pursuit_v5", "api": "parallel",
                      "kwargs": {"max_cycles": 8, "x_size": 8, "y_size": 8, "n_evaders": 4, "shared_reward": False}})
    try:
        assert len(runner.games[0].teams) == 8
        runner.sample(num_timesteps=8 * 9)
        records = runner.pop_episode_outcomes() + runner.evaluate_main({"opponents": ["random"], "games": 8})
    finally:
        runner.stop()
    assert len(records) >= 9 and {r.learner_team for r in records} >= set(range(8))
    assert all(r.winner == "draw" or 0 <= (ord(r.winner) - ord("A")) < 8 for r in records)


def test_targets_only_from_the_config():
    """No hard-coded 90% vs random: rps_v2's optimum vs random is 0.5, and a config without targets gets no verdict."""
    from spade_rllib.training.targets import WIN_RATE, configured_targets, target_verdicts

    final = {"final/random/win_rate": 0.34, "final/random/draw_rate": 0.33}
    cfg = parse_config({"env": {"id": "pettingzoo.classic:rps_v2"}}).to_dict()
    assert configured_targets(cfg) == [] and target_verdicts(cfg, final) == []
    cfg = parse_config({"env": {"id": "pettingzoo.classic:rps_v2"}, "evaluation": {"targets": {"random": 0.45}}}).to_dict()
    (verdict,) = target_verdicts(cfg, final)
    assert verdict.met and verdict.value == pytest.approx(0.505)
    assert configured_targets({"evaluation": {"target_win_rate": 0.9}}) == [("random", WIN_RATE, 0.9)]


def test_cooperative_summary_is_the_team_return():
    from spade_rllib.training.console import team_line
    from spade_rllib.core.outcome import EpisodeOutcome
    from spade_rllib.rllib.metrics import team_returns

    records = [EpisodeOutcome(winner=None, length=25, returns=(r,), success=s)
               for r, s in ((-20.0, True), (-24.0, False), (-22.0, True), (-22.0, None))]
    final = team_returns(records, "final")
    assert final["final/team/return_mean"] == -22.0 and final["final/team/games"] == 4
    assert final["final/team/success_rate"] == pytest.approx(2 / 3)
    line = team_line(final, 4, greedy=False)
    assert line.startswith("final evaluation (4 episodes, sampled actions): team return -22.000 +- ")
    assert "success rate 0.67" in line and "win" not in line and "TARGET" not in line


# ----------------------------------------------------------------------------------------------
# Slow: the foreign envs of the matrix, trained for a few thousand env steps each
# ----------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pursuit_eight_agents_trains_checkpoints_and_evaluates(tmp_path):
    """`tune_configs/pettingzoo_parallel.yaml` as a user runs it, on pursuit_v5's 8 pursuers in two
    teams of four: two iterations, a checkpoint, the final evaluation vs random."""
    pytest.importorskip("pettingzoo.sisl")
    cmd = [sys.executable, "-m", "spade_rllib.train", "--config", "tune_configs/pettingzoo_parallel.yaml",
           "--set", "training.stop.time_s=null", "--set", "training.stop.iterations=2",
           "--set", "env.kwargs={max_cycles: 25, x_size: 8, y_size: 8, n_evaders: 6, shared_reward: false}",
           "--set", "agent.train_batch_size=200", "--set", "agent.minibatch_size=200", "--set", "agent.epochs=1",
           "--set", "training.num_envs_per_runner=8", "--set", "evaluation.interval=0",
           "--set", f"experiment.storage_path={tmp_path}", "--set", "resources.num_cpus=2", "--final-eval-games", "8"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    trial = next((tmp_path / "pettingzoo_parallel").glob("pettingzoo_parallel_*"))
    assert list(trial.glob("checkpoint_*")), sorted(p.name for p in trial.iterdir())
    final = json.loads((trial / "final_evaluation.json").read_text())
    assert final["final/random/games"] == 8 and 0.0 <= final["final/random/score"] <= 1.0
    assert "random" in proc.stdout and "Traceback" not in proc.stdout


def _team_return_rise(ray_session, overrides: list, env_steps: int, games: int) -> tuple[float, float, float]:
    """(team return before, after, 95% interval of the difference) of `pettingzoo_coop.yaml` with
    `overrides`, trained for `env_steps` env steps in this process; both evaluations play `games`
    episodes with sampled actions from the same random stream (env seeds and action draws)."""
    from spade_rllib.config.run_config import load_config
    from spade_rllib.rllib.algo_config import build_algo_config

    seed = int(os.environ.get("SPADE_TEAM_SEED", "0"))  # the docs' other seeds: SPADE_TEAM_SEED=1 pytest -s ...
    cfg = load_config(str(ROOT / "tune_configs/pettingzoo_coop.yaml"),
                      ["training.num_env_runners=0", "evaluation.interval=0", f"experiment.seed={seed}", *overrides])
    algo = build_algo_config(cfg).build_algo()
    try:
        runner = algo.env_runner

        def returns() -> np.ndarray:
            runner._rng = np.random.default_rng(12345)  # the same stream before and after training
            records = runner.evaluate_main({"opponents": ["mirror"], "games": games, "greedy": False})
            return np.asarray([r.learner_return for r in records])

        before = returns()
        steps = 0
        while steps < env_steps:
            steps = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        after = returns()
    finally:
        algo.stop()
    ci = 1.96 * math.sqrt(before.var(ddof=1) / len(before) + after.var(ddof=1) / len(after))
    print(f"{cfg.env.id} seed {seed}: team return {before.mean():.3f} -> {after.mean():.3f} after {int(steps):,d} "
          f"env steps ({games} episodes each; 95% interval of the rise +-{ci:.3f})")
    return float(before.mean()), float(after.mean()), ci


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_simple_spread_team_return_rises(ray_session):
    """Cooperative (every agent one team): the team's return rises over 30k env steps, beyond the
    95% interval of the difference. Measured: -26.09 -> -22.09 (seed 0), -26.10 -> -21.37 (seed 1)."""
    pytest.importorskip("mpe2")
    before, after, ci = _team_return_rise(ray_session, [], env_steps=30_000, games=48)
    assert after - before > ci, f"team return {before:.2f} -> {after:.2f} (95% interval of the rise {ci:.2f})"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_knights_archers_zombies_dying_agents_learn(ray_session):
    """Agents die mid-episode (zombies kill them; the runner ends their trajectories, AEC and
    Parallel alike): training runs, and the team's zombie kills per agent rise over 12k env steps.
    Measured: 0.562 -> 0.750 (seed 0), 0.547 -> 0.750 (seed 1); 95% intervals of the rise +-0.15."""
    pytest.importorskip("pettingzoo.butterfly")
    before, after, ci = _team_return_rise(
        ray_session, ["env.id=pettingzoo.butterfly:knights_archers_zombies_v11", "env.kwargs={max_cycles: 150}",
                      "agent.gamma=0.99", "agent.lr=0.003"], env_steps=12_000, games=32)
    assert after - before > ci, f"kills per agent {before:.2f} -> {after:.2f} (95% interval of the rise {ci:.2f})"
