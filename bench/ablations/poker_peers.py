"""`bench/ablations/poker_peers.py --game kuhn|leduc`: OpenSpiel's own learners beside the league, at equal env steps.

    python bench/ablations/poker_peers.py --game kuhn|leduc [--seeds 3] [--env-steps N] [--peers nfsp,psro,cfr_plus]
        [--cfr-iterations K] [--out-dir bench_out/poker_peers_<game>] [--only-seeds K,K] [--max-units K]
        [--minutes CAP] [--figure PNG] [--league-dir DIR]

The peers run OpenSpiel's code as the installed `open_spiel` wheel ships it (2.0.2, the pinned
`open_spiel>=1.5,<3`; files under `open_spiel/python/`), each with the settings its authors ship:

  * nfsp      PyTorch NFSP (`pytorch/nfsp.py`, `pytorch/dqn.py`) with the settings of
              `examples/nfsp_kuhn_pytorch.py` (Kuhn: hidden [128], replay 2e5, reservoir 2e6, anticipatory 0.1,
              epsilon 0.06 -> 0.001 over 3e6 of each agent's steps, the NFSP/DQN defaults otherwise: batch 128,
              learn every 64, SGD lr 0.01 both nets, min buffer 1000) and `examples/nfsp_leduc_pytorch.py`
              (Leduc: the same, and target update every 19,200, MSE loss, discount 1, epsilon decay 20e6).
              Scored: the average-policy network (what OpenSpiel's examples score).
  * psro      PSRO v2 (`algorithms/psro_v2/psro_v2.py`, `rl_oracle.py`) with a policy-gradient oracle and the
              settings of `examples/psro_v2_example.py --oracle_type=PG`: 1e4 training episodes per best
              response, QPG loss, 4 x 256 hidden, entropy 0.001, critic lr 1e-2, policy lr 1e-3, 8 critic steps per
              policy step, Adam, 1,000 simulations per meta-game entry, the `probabilistic` strategy selector, no
              rectifier, one policy per iteration. Two changes, both forced: (1) the oracle is OpenSpiel's
              PyTorch `pytorch/policy_gradient.py` wrapped by `TorchRLPolicy` here, a copy of
              `psro_v2/rl_policy.py`'s wrapper (that file imports the JAX agents, and JAX is not installed);
              (2) the meta-solver is `nash` (the example's default `alpharank` does not aim at a Nash
              equilibrium of a zero-sum game, and exploitability measures the distance from one); its LP is
              solved by `spade_rllib.league.nash.zero_sum_nash` (scipy's HiGHS) when cvxpy, which
              `algorithms/lp_solver.py` needs, is missing (it is not in the project's extras). Scored: the
              players' meta-strategy mixtures of their policies (reach-weighted, as `PolicyAggregator` does).
  * cfr_plus  tabular CFR+ (`pyspiel.CFRPlusSolver`, C++), deterministic: one unit (seed 0); its average
              policy scored at iterations 1, 2, 5, 10, 20, 50, ... up to `--cfr-iterations` (own axis: it
              walks the whole tree each iteration and samples no env steps).

Env steps are counted the same way for every arm, as the league's runner counts them: one per decision by
either player, chance nodes excluded (`CountingEnv` wraps OpenSpiel's `rl_environment`; the PSRO
meta-game's simulated episodes count too, `CountingPSRO`). Exact exploitability (NashConv / 2, OpenSpiel's
C++ best response through `spade_rllib.games.exploitability.exploitability_of_table`, the league's code)
at the league bench's measurement points: every `GRID[game]` env steps (kuhn 20,480, leduc 81,920: the
recipe's batch times the league bench's `--every`). NFSP is scored when its count first reaches a point;
PSRO's output changes only at the end of an iteration, so a point holds the mixture of the last iteration
finished by then (the raw per-iteration points are kept as `iterations`).

Units (one peer x seed of one game: its curve and settings) are written to `<out-dir>/units/` as they finish;
a rerun with the same `--out-dir` reuses them (bench/ablation_common.py). `--figure PNG` draws mean and 95%
t-interval over seeds of every peer beside the league bench's arms (`LEAGUE_ARMS`: league_nash's Nash mixture,
league_uniform's mixture, mirror's snapshot average, ppo_iig's main) from `--league-dir` (default: the committed
bench/data/league_claim_kuhn and league_claim_leduc_10m), and CFR+ on its own axis; the summary lists every one
at the last env-step point they all share (`beside_league`).

The LAST line is one JSON object: {"bench": "poker_peers", "game", "env_id", "seeds", "env_steps", "grid",
"peers": {peer: {"final": stat, "curve": [mean per point], "curve_env_steps", "env_steps", "train_s"}},
"beside_league": {"env_steps", "exploitability": {peer or "league <arm>": stat}} (the last point all share),
"cfr_plus": {"iterations", "exploitability"}, "complete", "units_done", "units_missing"};
stat = {mean, low, high, n, iqm, iqm_low, iqm_high, values}.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import types
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.ablation_common import ROOT, UnitCache, fmt_interval, over_seeds, pyplot, save_figure, unit_progress, unit_runs
from bench.common import check_bench_args, refuse
from spade_rllib.artifacts.atomic_io import write_text

PEERS = ("nfsp", "psro", "cfr_plus")
LEARNERS = ("nfsp", "psro")
GAMES = {"kuhn": "kuhn_poker", "leduc": "leduc_poker"}
GRID = {"kuhn": 20_480, "leduc": 81_920}
"""The league bench's measurement interval in env steps (league_claim_poker: batch x --every)."""
ENV_STEPS = {"kuhn": 1_000_000, "leduc": 10_000_000}
CFR_ITERATIONS = {"kuhn": 1_000, "leduc": 1_000}
LEAGUE_DIRS = {"kuhn": "league_claim_kuhn", "leduc": "league_claim_leduc_10m"}
LEAGUE_ARMS = {"league_nash": "mixture_nash", "league_uniform": "mixture_uniform", "mirror": "average", "ppo_iig": "main"}
"""The league bench's arms drawn beside the peers, each by the curve its docs score it by: PSRO's Nash mixture (the
league's best player on Leduc), fictitious play's uniform mixture, mirror self-play's snapshot average (averaging
alone) and the IIG-RL-Benchmark-configured PPO's main (the best arm on Kuhn)."""

NFSP_SETTINGS = {
    # examples/nfsp_kuhn_pytorch.py: hidden [128], replay 2e5, reservoir 2e6, anticipatory 0.1, epsilon 0.06 -> 0.001
    # decayed over num_train_episodes (3e6); every other argument at the NFSP / DQN defaults
    "kuhn": {"hidden_layers_sizes": [128], "reservoir_buffer_capacity": int(2e6), "anticipatory_param": 0.1,
             "replay_buffer_capacity": int(2e5), "epsilon_decay_duration": int(3e6), "epsilon_start": 0.06,
             "epsilon_end": 0.001},
    # examples/nfsp_leduc_pytorch.py's flags
    "leduc": {"hidden_layers_sizes": [128], "reservoir_buffer_capacity": int(2e6), "anticipatory_param": 0.1,
              "replay_buffer_capacity": int(2e5), "min_buffer_size_to_learn": 1000, "batch_size": 128,
              "learn_every": 64, "rl_learning_rate": 0.01, "sl_learning_rate": 0.01, "optimizer_str": "sgd",
              "loss_str": "mse", "update_target_network_every": 19200, "discount_factor": 1.0,
              "epsilon_decay_duration": int(20e6), "epsilon_start": 0.06, "epsilon_end": 0.001},
}
PSRO_SETTINGS = {  # examples/psro_v2_example.py with --oracle_type=PG; meta_strategy_method nash (see the docstring)
    "number_training_episodes": int(1e4), "self_play_proportion": 0.0, "sigma": 0.0, "sims_per_entry": 1000,
    "training_strategy_selector": "probabilistic", "rectifier": "", "number_policies_selected": 1,
    "meta_strategy_method": "nash", "prd_iterations": 50000, "prd_gamma": 1e-10, "sample_from_marginals": True,
    "symmetric_game": False,
    "agent": {"loss_str": "qpg", "loss_class": False, "hidden_layers_sizes": [256] * 4, "entropy_cost": 0.001,
              "critic_learning_rate": 1e-2, "pi_learning_rate": 1e-3, "num_critic_before_pi": 8,
              "optimizer_str": "adam"},
}


def require_peers(peer: str) -> None:
    """Raise ValueError (one line) when the installed open_spiel cannot run `peer`."""
    try:
        if peer == "nfsp":
            from open_spiel.python.pytorch import nfsp  # noqa: F401
        elif peer == "psro":
            _psro_modules()
        else:
            import pyspiel

            if not hasattr(pyspiel, "CFRPlusSolver"):
                raise ImportError("pyspiel has no CFRPlusSolver")
    except ImportError as e:
        raise ValueError(f"peer {peer} cannot run: {' '.join(str(e).split())}") from e


# ----------------------------------------------------------------------------------------------
# Counting env steps the league's way
# ----------------------------------------------------------------------------------------------

class CountingEnv:
    """OpenSpiel's `rl_environment.Environment` (chance nodes sampled inside it by a seeded sampler), counting
    `decisions`: one per `step` (each is one player's decision; chance never reaches an agent), the unit of
    the league runner's env steps."""

    def __init__(self, game_name: str, seed: int):
        from open_spiel.python import rl_environment

        self.env = rl_environment.Environment(game_name, chance_event_sampler=rl_environment.ChanceEventSampler(seed))
        self.decisions = 0
        self.episodes = 0

    def __getattr__(self, name: str) -> Any:  # game, observation_spec, action_spec, _discounts, get_time_step ...
        return getattr(self.__dict__["env"], name)

    def reset(self):
        self.episodes += 1
        return self.env.reset()

    def step(self, actions):
        self.decisions += 1
        return self.env.step(actions)


def play_hand(env: CountingEnv, agents: Sequence[Any]):
    """One hand with `agents[player].step(time_step)` choosing the actions (OpenSpiel's example loop), then every
    agent sees the last time step. Returns that last time step."""
    time_step = env.reset()
    while not time_step.last():
        player = time_step.observations["current_player"]
        time_step = env.step([agents[player].step(time_step).action])
    for agent in agents:
        agent.step(time_step)
    return time_step


# ----------------------------------------------------------------------------------------------
# Tables of OpenSpiel policies, scored by the league's code
# ----------------------------------------------------------------------------------------------

def masked_softmax(logits: np.ndarray, masks: np.ndarray) -> np.ndarray:
    logits = np.where(masks > 0, np.asarray(logits, np.float64), -np.inf)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def nfsp_table(game_name: str, agents: Sequence[Any]) -> np.ndarray:
    """[S, A] the NFSP agents' average-policy networks on every information state (one batched pass per player;
    as `NFSP._act`: softmax over the legal actions' outputs)."""
    import torch

    from spade_rllib.games.exploitability import info_states

    states = info_states(game_name)
    table = np.zeros(states.masks.shape, np.float64)
    with torch.no_grad():
        for p, agent in enumerate(agents):
            rows = states.players == p
            logits = agent._avg_network(torch.from_numpy(np.array(states.tensors[rows]))).numpy()
            table[rows] = masked_softmax(logits, states.masks[rows])
    return table


def pg_table(game_name: str, agent: Any) -> np.ndarray:
    """[S, A] a PyTorch `PolicyGradient` agent on every information state (as its `_act`: softmax, then the legal
    actions renormalised); only its own player's rows matter."""
    import torch

    from spade_rllib.games.exploitability import info_states

    states = info_states(game_name)
    with torch.no_grad():
        logits = agent._policy_logits_layer(agent._net_torso(torch.from_numpy(np.array(states.tensors)))).numpy()
    return masked_softmax(logits, states.masks)


def exploitability(game_name: str, table: np.ndarray) -> float:
    from spade_rllib.games.exploitability import exploitability_of_table

    return round(float(exploitability_of_table(game_name, table).exploitability), 6)


def mixture_table(game_name: str, tables: Sequence[Sequence[np.ndarray]], weights: Sequence[Sequence[float]]) -> np.ndarray:
    """Each player's reach-weighted mixture (`average_table`) of its own policies' tables, on its own rows."""
    from spade_rllib.games.exploitability import average_table, info_states

    states = info_states(game_name)
    out = np.zeros(states.masks.shape, np.float64)
    for p in range(2):
        rows = states.players == p
        out[rows] = average_table(states, np.stack(tables[p]), weights[p])[rows]
    return out


class Meter:
    """Exploitability at the grid points: `due(steps)` when a point was reached, `record(steps, value)`."""

    def __init__(self, grid: int, budget: int):
        self.grid, self.budget = int(grid), int(budget)
        self.next = self.grid
        self.points: list[tuple[int, float]] = []

    def due(self, steps: int) -> bool:
        return steps >= self.next

    def record(self, steps: int, value: float) -> None:
        self.points.append((int(steps), float(value)))
        while self.next <= steps:
            self.next += self.grid


def on_grid(raw: Sequence[tuple[int, float]], grid: int, budget: int) -> dict[str, list]:
    """A step function sampled at grid, 2 * grid, ... <= max(budget, last raw step): at each point the value of
    the last raw point at or before it (None before the first)."""
    last = max([budget] + [s for s, _ in raw]) if raw else budget
    xs = list(range(grid, last + 1, grid))
    ys: list[Optional[float]] = []
    for x in xs:
        before = [v for s, v in raw if s <= x]
        ys.append(round(before[-1], 6) if before else None)
    return {"env_steps": xs, "exploitability": ys}


# ----------------------------------------------------------------------------------------------
# The peers
# ----------------------------------------------------------------------------------------------

def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (OpenSpiel's agents draw from them); one torch thread
    (measured: several times faster for these batch-1 networks on a shared 2-core machine)."""
    import random

    import torch

    torch.set_num_threads(1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_nfsp(game: str, seed: int, env_steps: int, minutes: float, grid: int) -> dict:
    """Two NFSP agents (OpenSpiel's example loop) until `env_steps`; the average policy scored at the grid points."""
    from open_spiel.python.pytorch import nfsp

    game_name = GAMES[game]
    seed_everything(seed)
    env = CountingEnv(game_name, seed)
    size = env.observation_spec()["info_state"][0]
    actions = env.action_spec()["num_actions"]
    kw = dict(NFSP_SETTINGS[game])
    hidden = kw.pop("hidden_layers_sizes")
    agents = [nfsp.NFSP(p, size, actions, hidden, seed=1000 * seed + 10 * p, **kw) for p in range(2)]
    seed_everything(seed)
    meter = Meter(grid, env_steps)
    t0 = time.perf_counter()
    while env.decisions < env_steps and time.perf_counter() - t0 < minutes * 60:
        play_hand(env, agents)
        if meter.due(env.decisions):
            meter.record(env.decisions, exploitability(game_name, nfsp_table(game_name, agents)))
            if len(meter.points) % 10 == 0:
                print(f"  [nfsp {game} seed {seed}] {env.decisions:,d} env steps, exploitability {meter.points[-1][1]:.4f}, "
                      f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"curve": {"env_steps": [s for s, _ in meter.points], "exploitability": [v for _, v in meter.points]},
            "env_steps": env.decisions, "episodes": env.episodes, "train_s": round(time.perf_counter() - t0, 1),
            "settings": NFSP_SETTINGS[game]}


def _psro_modules():
    """(psro_v2, rl_oracle, policy_gradient) with a stand-in for `algorithms/lp_solver` when cvxpy is missing."""
    # find_spec, not import: cvxpy is optional here and not a declared dependency.
    if importlib.util.find_spec("cvxpy") is None:
        if "open_spiel.python.algorithms.lp_solver" not in sys.modules:
            shim = types.ModuleType("open_spiel.python.algorithms.lp_solver")
            shim.__doc__ = "poker_peers' stand-in: solve_zero_sum_matrix_game by scipy (cvxpy is not installed)"
            shim.solve_zero_sum_matrix_game = _solve_zero_sum_matrix_game
            sys.modules[shim.__name__] = shim
    from open_spiel.python.algorithms.psro_v2 import psro_v2, rl_oracle
    from open_spiel.python.pytorch import policy_gradient

    return psro_v2, rl_oracle, policy_gradient


def _solve_zero_sum_matrix_game(game):
    """`lp_solver.solve_zero_sum_matrix_game`'s answer (p0, p1, value0, value1) by `zero_sum_nash`."""
    from spade_rllib.league.nash import zero_sum_nash

    a = np.asarray(game.row_utilities(), np.float64)
    row, col = zero_sum_nash(a), zero_sum_nash(-a.T)
    return row.strategy, col.strategy, row.value, -row.value


def torch_rl_policy(agent_class):
    """`psro_v2/rl_policy.py`'s `rl_policy_factory` for a PyTorch agent class (that file imports the JAX agents):
    an OpenSpiel `Policy` around an RL agent that PSRO's RL oracle trains and freezes."""
    from open_spiel.python import policy, rl_environment

    class TorchRLPolicy(policy.Policy):
        def __init__(self, env, player_id, **kwargs):
            super().__init__(env.game, player_id)
            self._policy = agent_class(**{"player_id": player_id, **kwargs})
            self._frozen = False
            self._rl_class = agent_class
            self._env = env
            self._obs = {"info_state": [None] * self.game.num_players(), "legal_actions": [None] * self.game.num_players()}

        def action_probabilities(self, state, player_id=None):
            cur = state.current_player()
            legal = state.legal_actions(cur)
            self._obs["current_player"] = cur
            self._obs["info_state"][cur] = state.information_state_tensor(cur)
            self._obs["legal_actions"][cur] = legal
            step = rl_environment.TimeStep(observations=self._obs, rewards=[0] * self.game.num_players(),
                                           discounts=self._env._discounts, step_type=rl_environment.StepType.FIRST)
            p = self._policy.step(step, is_evaluation=True).probs
            return {a: p[a] for a in legal}

        def step(self, time_step, is_evaluation=False):
            return self._policy.step(time_step, is_evaluation or self._frozen)

        def freeze(self):
            self._frozen = True

        def unfreeze(self):
            self._frozen = False

        def is_frozen(self):
            return self._frozen

        def copy_with_noise(self, sigma=0.0):
            # PyTorch PolicyGradient.copy_with_noise builds a fresh agent from the same arguments and multiplies
            # ITS weights by (1 + sigma * noise); it fails on its own torso (nn.Sequential layers have no
            # `weight`). At the example's sigma 0 that is a fresh agent: built here the same way, minus the crash.
            if sigma:
                raise ValueError(f"sigma {sigma}: the PyTorch oracle supports only sigma 0 (the example's)")
            copied = TorchRLPolicy.__new__(TorchRLPolicy)
            policy.Policy.__init__(copied, self.game, self.player_ids)
            copied._rl_class, copied._obs, copied._env = self._rl_class, self._obs, self._env
            kwargs = {k: v for k, v in self._policy._kwargs.items() if k not in ("self", "__class__")}
            copied._policy = agent_class(**kwargs)
            copied.unfreeze()
            return copied

    return TorchRLPolicy


def counting_psro(psro_v2, counter: CountingEnv):
    """`PSROSolver` whose meta-game simulations count their decisions in `counter.decisions`."""
    from open_spiel.python.algorithms.psro_v2 import utils

    class CountingPSRO(psro_v2.PSROSolver):
        def sample_episodes(self, policies, num_episodes):
            totals = np.zeros(self._num_players)
            for _ in range(num_episodes):
                state = self._game.new_initial_state()
                while not state.is_terminal():
                    if state.is_chance_node():
                        outcomes, probs = zip(*state.chance_outcomes())
                    else:
                        counter.decisions += 1
                        outcomes, probs = zip(*policies[state.current_player()](state).items())
                    state.apply_action(utils.random_choice(outcomes, probs))
                totals += np.asarray(state.returns(), np.float64)
            return totals / num_episodes

    return CountingPSRO


def run_psro(game: str, seed: int, env_steps: int, minutes: float, grid: int) -> dict:
    """PSRO v2 with the PG oracle until `env_steps` (whole iterations); the meta-strategy mixture scored after each."""
    psro_v2, rl_oracle, policy_gradient = _psro_modules()
    game_name = GAMES[game]
    seed_everything(seed)
    env = CountingEnv(game_name, seed)
    s = PSRO_SETTINGS
    agent_class = torch_rl_policy(policy_gradient.PolicyGradient)
    kwargs = {"info_state_size": env.observation_spec()["info_state"][0],
              "num_actions": env.action_spec()["num_actions"], **s["agent"]}
    oracle = rl_oracle.RLOracle(env, agent_class, kwargs, number_training_episodes=s["number_training_episodes"],
                                self_play_proportion=s["self_play_proportion"], sigma=s["sigma"])
    agents = [agent_class(env, p, **kwargs) for p in range(2)]
    for agent in agents:
        agent.freeze()
    t0 = time.perf_counter()
    solver = counting_psro(psro_v2, env)(
        env.game, oracle, initial_policies=agents, training_strategy_selector=s["training_strategy_selector"],
        rectifier=s["rectifier"], sims_per_entry=s["sims_per_entry"], number_policies_selected=s["number_policies_selected"],
        meta_strategy_method=s["meta_strategy_method"], prd_iterations=s["prd_iterations"], prd_gamma=s["prd_gamma"],
        sample_from_marginals=s["sample_from_marginals"], symmetric_game=s["symmetric_game"])
    tables: dict[int, np.ndarray] = {}  # id(policy) -> table; PSRO's policies are frozen once trained

    def score() -> float:
        policies, weights = solver.get_policies(), solver.get_meta_strategies()
        per_player = []
        for p in range(2):
            for pol in policies[p]:
                if id(pol) not in tables:
                    tables[id(pol)] = pg_table(game_name, pol._policy)
            per_player.append([tables[id(pol)] for pol in policies[p]])
        return exploitability(game_name, mixture_table(game_name, per_player, weights))

    raw = [(env.decisions, score())]
    iterations = 0
    while env.decisions < env_steps and time.perf_counter() - t0 < minutes * 60:
        solver.iteration()
        iterations += 1
        raw.append((env.decisions, score()))
        print(f"  [psro {game} seed {seed}] iteration {iterations}: {env.decisions:,d} env steps, "
              f"exploitability {raw[-1][1]:.4f}", file=sys.stderr, flush=True)
    curve = on_grid(raw, grid, min(env.decisions, env_steps))
    return {"curve": curve, "iterations": [{"env_steps": st, "exploitability": v} for st, v in raw],
            "env_steps": env.decisions, "episodes": env.episodes, "train_s": round(time.perf_counter() - t0, 1),
            "settings": {k: v for k, v in s.items()}}


def cfr_points(iterations: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to `iterations` (and `iterations` itself)."""
    out, base = [], 1
    while base <= iterations:
        out += [k * base for k in (1, 2, 5) if k * base <= iterations]
        base *= 10
    return sorted(set(out + [iterations]))


def run_cfr_plus(game: str, iterations: int) -> dict:
    """CFR+ (C++); exploitability of its average policy at `cfr_points(iterations)`."""
    import pyspiel

    from spade_rllib.envs.openspiel_env import load_game
    from spade_rllib.games.exploitability import info_states

    game_name = GAMES[game]
    states = info_states(game_name)
    solver = pyspiel.CFRPlusSolver(load_game(game_name))
    marks, xs, ys = set(cfr_points(iterations)), [], []
    t0 = time.perf_counter()
    for it in range(1, iterations + 1):
        solver.evaluate_and_update_policy()
        if it in marks:
            avg = solver.average_policy()
            table = np.zeros(states.masks.shape, np.float64)
            for i, key in enumerate(states.keys):
                for a, p in avg.get_state_policy(key):
                    table[i, a] = p
            xs.append(it)
            ys.append(exploitability(game_name, table))
    return {"curve": {"iterations": xs, "exploitability": ys}, "train_s": round(time.perf_counter() - t0, 1),
            "settings": {"solver": "pyspiel.CFRPlusSolver", "iterations": iterations}}


# ----------------------------------------------------------------------------------------------
# Summary and figure
# ----------------------------------------------------------------------------------------------

def peer_curve(record: Mapping, grid: int) -> dict[int, float]:
    """{grid point: exploitability} of one unit (NFSP's measurements land at or just past a point: floored)."""
    c = record["curve"]
    return {int(s) // grid * grid: v for s, v in zip(c["env_steps"], c["exploitability"]) if v is not None}


def interval_curve(curves: Sequence[Mapping[int, float]]) -> tuple[list[int], list[dict]]:
    """(points every curve has, `over_seeds` at each)."""
    if not curves:
        return [], []
    xs = sorted(set.intersection(*(set(c) for c in curves)))
    return xs, [over_seeds([c[x] for c in curves]) for x in xs]


def summarize(runs: Mapping[str, Sequence[dict]], grid: int) -> dict:
    out = {}
    for peer, rs in runs.items():
        if peer == "cfr_plus" or not rs:
            continue
        xs, stats = interval_curve([peer_curve(r, grid) for r in rs])
        out[peer] = {"final": stats[-1] if stats else over_seeds([]), "curve": [s["mean"] for s in stats],
                     "curve_env_steps": xs, "env_steps": [r["env_steps"] for r in rs],
                     "train_s": [r["train_s"] for r in rs]}
    return out


def league_curves(league_dir: Path, grid: int) -> dict[str, tuple[list[int], list[dict]]]:
    """The league bench's units in `league_dir` (arms `LEAGUE_ARMS`, each by its curve there) as (env steps,
    over_seeds per point)."""
    units = sorted((league_dir / "units").glob("*_seed*.json"))
    per_arm: dict[str, list[dict[int, float]]] = {}
    for path in units:
        rec = json.loads(path.read_text())
        arm = rec["name"]
        if arm not in LEAGUE_ARMS:
            continue
        key = LEAGUE_ARMS[arm]
        c = rec["curve"]
        per_arm.setdefault(arm, []).append({int(s): v for s, v in zip(c["env_steps"], c[key]) if v is not None})
    return {arm: interval_curve(cs) for arm, cs in per_arm.items()}


def side_by_side(runs: Mapping[str, Sequence[dict]], league: Mapping[str, tuple], grid: int) -> Optional[dict]:
    """{"env_steps": the last point every peer (all its seeds) and every league arm has, "exploitability": {name:
    over_seeds}} or None when they share no point."""
    series = {p: interval_curve([peer_curve(r, grid) for r in rs]) for p, rs in runs.items() if p != "cfr_plus" and rs}
    series.update({f"league bench {arm} {LEAGUE_ARMS[arm]}": cv for arm, cv in league.items()})
    shared = set.intersection(*(set(xs) for xs, _ in series.values())) if series else set()
    if not shared:
        return None
    x = max(shared)
    return {"env_steps": x, "exploitability": {k: stats[xs.index(x)] for k, (xs, stats) in series.items()}}


def plot(game: str, peers: Mapping[str, Sequence[dict]], league: Mapping[str, tuple], grid: int, path: Path) -> Optional[Path]:
    """Left: exploitability over env steps, mean and 95% t-interval over seeds (peers solid, league dashed);
    right: CFR+ over its iterations."""
    plt = pyplot(path)
    if plt is None:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
    series = [(f"{p} (OpenSpiel)", interval_curve([peer_curve(r, grid) for r in rs]), "-")
              for p, rs in peers.items() if p != "cfr_plus" and rs]
    series += [(f"league bench {arm} ({LEAGUE_ARMS[arm].replace('_', ' ')})", cv, "--") for arm, cv in league.items()]
    for i, (label, (xs, stats), style) in enumerate(series):
        if not xs:
            continue
        mean = np.array([s["mean"] for s in stats], float)
        low = np.array([np.nan if s["low"] is None else s["low"] for s in stats], float)
        high = np.array([np.nan if s["high"] is None else s["high"] for s in stats], float)
        n = min(s["n"] for s in stats)
        steps = "steps-post" if label.startswith("psro") else "default"  # PSRO's output changes once an iteration
        ax.plot(xs, mean, style, color=f"C{i % 10}", label=f"{label}, {n} seeds", drawstyle=steps)
        ax.fill_between(xs, np.clip(low, 1e-4, None), high, color=f"C{i % 10}", alpha=0.15,
                        step="post" if steps == "steps-post" else None)
    ax.set_xlabel("env steps (decisions by either player)")
    ax.set_ylabel("exploitability (NashConv / 2, chips)")
    ax.set_yscale("log")
    ax.set_title(f"{game}: exact exploitability, mean and 95% t-interval over seeds", fontsize=9)
    ax.legend(fontsize=7)
    cfr = [r for r in peers.get("cfr_plus", [])]
    if cfr:
        c = cfr[0]["curve"]
        bx.plot(c["iterations"], c["exploitability"], "o-", color="k", ms=3)
        bx.set_xscale("log")
        bx.set_yscale("log")
    bx.set_xlabel("CFR+ iterations (full tree walks)")
    bx.set_title("tabular CFR+ (the floor), own axis", fontsize=9)
    return save_figure(plt, fig, path)


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (the CLIs' rule), not argparse's usage block
        refuse(message)


def parse_args(argv=None) -> argparse.Namespace:
    ap = OneLineParser(description=__doc__.split("\n\n")[0])
    ap.set_defaults(bench="poker_peers", games=None, max_map_size=0, overrides=[])
    ap.add_argument("--game", required=True, choices=sorted(GAMES), help="kuhn or leduc")
    ap.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated subset of {','.join(PEERS)}")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per learning peer (0..N-1); CFR+ runs once")
    ap.add_argument("--env-steps", type=int, default=None, help="env steps per unit (default: kuhn 1M, leduc 10M)")
    ap.add_argument("--cfr-iterations", type=int, default=None, help="CFR+ iterations (default 1000)")
    ap.add_argument("--minutes", type=float, default=600.0, help="wall-clock cap per unit")
    ap.add_argument("--out-dir", type=Path, default=None, help="units/, manifest.json, summary.json, peers.png")
    ap.add_argument("--only-seeds", default=None, metavar="K,K,...", help="run only these seeds now")
    ap.add_argument("--max-units", type=int, default=None, metavar="K", help="stop after K new units (0: summarize)")
    ap.add_argument("--figure", type=Path, default=None, help="also draw the figure to this PNG")
    ap.add_argument("--league-dir", type=Path, default=None,
                    help="league bench units drawn beside the peers (default bench/data/league_claim_kuhn, "
                         "bench/data/league_claim_leduc_10m)")
    args = ap.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad or not peers:
        refuse(f"--peers {args.peers!r}: allowed {', '.join(PEERS)} (comma-separated)")
    if len(set(peers)) != len(peers):
        refuse(f"--peers {args.peers!r}: a peer is named twice")
    args.peers = peers
    args.env_steps = ENV_STEPS[args.game] if args.env_steps is None else args.env_steps
    args.cfr_iterations = CFR_ITERATIONS[args.game] if args.cfr_iterations is None else args.cfr_iterations
    args.out_dir = Path(args.out_dir or Path("bench_out") / f"poker_peers_{args.game}")
    check_bench_args(args, floors={"max_units": 0})
    if args.cfr_iterations < 1:
        refuse(f"--cfr-iterations {args.cfr_iterations}: expected an integer >= 1")
    if args.only_seeds is not None:
        from bench.common import parse_counts

        args.only_seeds = sorted(set(parse_counts("only_seeds", args.only_seeds, least=0)))
        wrong = [k for k in args.only_seeds if k >= args.seeds]
        if wrong:
            refuse(f"--only-seeds {wrong}: the seeds are 0..{args.seeds - 1} (--seeds {args.seeds})")
    args.league_dir = args.league_dir or ROOT / "bench" / "data" / LEAGUE_DIRS[args.game]
    if args.figure is not None:
        if args.figure.suffix.lower() != ".png":
            refuse(f"--figure {args.figure}: expected a .png path")
        if not (args.league_dir / "units").is_dir():
            refuse(f"--league-dir {args.league_dir}: no units/ folder of the league bench there")
    args.out_dir = args.out_dir.resolve()
    return args


def manifest_of(args: argparse.Namespace) -> dict:
    from spade_rllib.artifacts.provenance import git_info

    import open_spiel

    version = getattr(open_spiel, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("open_spiel")
    return {"bench": "poker_peers", "env_id": GAMES[args.game], "env_steps": args.env_steps, "grid": GRID[args.game],
            "cfr_iterations": args.cfr_iterations, "minutes": args.minutes, "open_spiel": version,
            "nfsp": NFSP_SETTINGS[args.game], "psro": json.loads(json.dumps(PSRO_SETTINGS)),
            "git_commit": git_info(ROOT)["commit"]}


class _NoRay:
    def ensure(self) -> None:
        pass


def main(argv=None) -> int:
    args = parse_args(argv)
    from spade_rllib.envs.openspiel_env import require_pyspiel

    try:
        require_pyspiel(f"--game {args.game}")
    except ValueError as e:
        refuse(str(e))
    runnable = []
    for peer in args.peers:
        try:
            require_peers(peer)
            runnable.append(peer)
        except ValueError as e:
            print(f"skipped: {e}", file=sys.stderr, flush=True)
    manifest = manifest_of(args)
    cache = UnitCache(args.out_dir, manifest, keep_weights=False)
    cache.check()
    grid = GRID[args.game]

    def run_unit(peer: str, seed: int) -> tuple[dict, dict]:
        print(f"  [{peer} {args.game} seed {seed}] start", file=sys.stderr, flush=True)
        if peer == "nfsp":
            rec = run_nfsp(args.game, seed, args.env_steps, args.minutes, grid)
        elif peer == "psro":
            rec = run_psro(args.game, seed, args.env_steps, args.minutes, grid)
        else:
            rec = run_cfr_plus(args.game, args.cfr_iterations)
        print(f"  [{peer} {args.game} seed {seed}] done in {rec['train_s']:.0f} s", file=sys.stderr, flush=True)
        return {"game": args.game, **rec}, {}

    learners = [p for p in runnable if p in LEARNERS]
    runs = unit_runs(args, learners, run_unit, cache, _NoRay()) if learners else {}
    if "cfr_plus" in runnable:
        once = argparse.Namespace(**{**vars(args), "seeds": 1,
                                     "only_seeds": None if args.only_seeds is None or 0 in args.only_seeds else []})
        runs.update(unit_runs(once, ["cfr_plus"], run_unit, cache, _NoRay()))
    progress = unit_progress(args, learners, {p: runs[p] for p in learners}, argv)
    summary = summarize(runs, grid)
    cfr = runs.get("cfr_plus") or []
    league = league_curves(args.league_dir, grid) if (args.league_dir / "units").is_dir() else {}
    beside = side_by_side(runs, league, grid)
    if args.figure is not None:
        plot(args.game, runs, league, grid, args.figure)
    print(f"poker peers on {GAMES[args.game]}: {args.seeds} seeds x {args.env_steps:,d} env steps, exact exploitability "
          f"(NashConv/2) every {grid:,d} env steps{'' if progress['complete'] else ' (INCOMPLETE)'}; "
          "last common point, mean [95% t-interval]")
    for peer, s in summary.items():
        last = s["curve_env_steps"][-1] if s["curve_env_steps"] else 0
        print(f"{peer} | {fmt_interval(s['final'])} at {last:,d} env steps | train s {s['train_s']}")
    if beside:
        print(f"at {beside['env_steps']:,d} env steps, the last point every peer and league arm has: " + "; ".join(
            f"{k} {fmt_interval(v)}" for k, v in beside["exploitability"].items()))
    if cfr:
        c = cfr[0]["curve"]
        print("cfr_plus | " + ", ".join(f"{i} it: {v:.4f}" for i, v in zip(c["iterations"], c["exploitability"])))
    out = {"bench": "poker_peers", "game": args.game, "env_id": GAMES[args.game], "seeds": args.seeds,
           "env_steps": args.env_steps, "grid": grid, "peers": summary,
           "beside_league": beside, "cfr_plus": cfr[0]["curve"] if cfr else None, **progress}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_text(args.out_dir / "summary.json", json.dumps(out, indent=1))
    print(json.dumps(out), flush=True)
    return 0


__all__ = ["CountingEnv", "GRID", "PEERS", "main", "on_grid", "parse_args", "play_hand", "run_cfr_plus", "run_nfsp",
           "run_psro", "summarize"]

if __name__ == "__main__":
    raise SystemExit(main())
