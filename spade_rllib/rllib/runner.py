"""`SpadeEnvRunner`: a vectorized multi-agent env runner that returns only the trained modules' experience.

Why: RLlib's stock `MultiAgentEnvRunner` runs its connector pipelines per step and builds a
`MultiAgentEpisode` per env; measured here it, not the env, sets the pace (docs/training.md).
This runner steps `num_envs_per_env_runner` env copies ("lanes")
in lock-step and makes ONE batched forward pass per policy per step:

  * `main` (the trained module, id "main", weights synced by RLlib after every update);
  * opponents played *inside* the runner: "mirror" (main itself), "random", "bot:<name>" scripted
    bots of the game (`spade_rllib.games.make_bot`), and K frozen opponent slots "slot_<k>" whose weights the driver (the league)
    swaps in with `apply_driver_update`. Slots are plain torch modules, not part of the
    MultiRLModule, so RLlib never syncs or overwrites them and Learners never see them.

With league exploiters the runner holds several trained modules (`RunnerSpec.learners`, main
first); each episode has one *learner*, the trained module whose experience is recorded. A main
exploiter's opponent "live:main" is main at its current weights, acting but not recorded.

`sample()` returns the learners' experience only: with `packed` (local learner, the default) one
`PackedEpisodes` per learner holding every chunk as big arrays, for `SpadeGAEConnector`; otherwise
numpy `SingleAgentEpisode`s, one per (episode chunk, learning agent), with the learner's
`module_id`, for PPO's default learner connectors. PPO's `training_step` counts env steps from
`get_metrics()[num_env_steps_sampled]`, hands the list to the learner, and syncs the trained
modules' weights back through `set_state({"rl_module": {...}})`.

Per episode the learner, its opponent and its seat come from the broadcast `OpponentPlan` as a pure
function of (worker_index, env_index, episode_number); the learner's team alternates between
episodes. Experience is recorded for every agent the learner controls (all of them against
"mirror"). At the end of each episode an `EpisodeOutcome` (spade_rllib/outcome.py) is appended to
a buffer that the driver drains with `pop_episode_outcomes()` via `foreach_env_runner`; its
`learner_team` and `learner` fields name the learner's team and module.

Recurrent networks (`use_lstm`): each lane keeps one hidden state per agent seat (`_Lanes.state`,
flat rows [h, c]) for whichever network controls that seat (main, mirror seats, frozen slots,
exploiters, live modules). A seat's state starts at zeros with each episode, is reset when the
driver swaps the weights of the slot playing it, and advances only when that agent acts, so in
turn-based games it carries across the opponent's moves (counted in the agent's own steps). The
learner's trajectories record the state each step acted from (`_Traj.states`) and the previous
action and reward; the chunk's bootstrap row gets the state after its last step.
"""
from __future__ import annotations

import contextlib
import logging
import math
import uuid
from collections import deque
from typing import Any, Callable, Optional

import numpy as np

from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.env import INPUT_ENV_SPACES
from ray.rllib.env.env_runner import EnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.checkpoints import Checkpointable
from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.metrics import (
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MEAN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    WEIGHTS_SEQ_NO,
)

from spade_rllib.outcome import MAIN, RESULTS, EpisodeOutcome
from spade_rllib.games.adapter import LEVEL_RESET_KEYS, Game, game_factory_for
from spade_rllib.games.roles import role_module_id, role_names
from spade_rllib.rllib.health import env_fault, first_non_finite_row
from spade_rllib.rllib.packed import PackedEpisodes
from spade_rllib.rllib.plan import (BOT_PREFIX, LIVE_PREFIX, MIRROR, RANDOM, RUNNER_SPEC_KEY, SLOT_PREFIX, DriverUpdate,
                                    OpponentPlan, RunnerSpec)

torch, nn = try_import_torch()
logger = logging.getLogger(__name__)

# Reset-option extras a level source may return that name fields of the episode's outcome.
OUTCOME_EXTRA_FIELDS = ("level_spec", "heldout_level")
OUTCOME_BUFFER_MAX = 100_000  # outcome records kept between two drains by the driver
METRICS_WINDOW = 200  # episodes over which W/D/L rates and returns are averaged per runner


class SpadeSingleAgentEpisode(SingleAgentEpisode):
    """A learner's chunk whose slices keep `agent_id`, `module_id` and a `multi_agent_episode_id`.

    With several remote learners RLlib shards the episodes (`ShardEpisodesIterator`) and cuts one
    that straddles two shards with `slice`, whose RLlib 2.60 version drops these three fields: the
    multi-agent learner pipeline then fails on the piece (`AgentToModuleMapping`: "not enough values
    to unpack"). Each piece gets its own `multi_agent_episode_id` (the learner batches by it)."""

    __slots__ = ()

    def slice(self, slice_: slice, *, len_lookback_buffer=None) -> "SpadeSingleAgentEpisode":
        piece = super().slice(slice_, len_lookback_buffer=len_lookback_buffer)
        piece.__class__ = SpadeSingleAgentEpisode  # no state of its own: a piece slices the same way
        piece.agent_id, piece.module_id = self.agent_id, self.module_id
        piece.multi_agent_episode_id = f"{self.multi_agent_episode_id}:{slice_.start or 0}"
        return piece


@contextlib.contextmanager
def _single_thread():
    """Torch on one thread while acting (batches of tens of rows); the learner may use more."""
    prev = torch.get_num_threads()
    if prev != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if prev != 1:
            torch.set_num_threads(prev)


def sample_actions(logits: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(actions, log-probabilities) for rows of logits: argmax, or a sample by Gumbel-max with `rng`."""
    if greedy:
        actions = logits.argmax(axis=1)
    else:
        gumbel = -np.log(-np.log(rng.random(logits.shape, dtype=np.float32) + 1e-20) + 1e-20)
        actions = (logits + gumbel).argmax(axis=1)
    mx = logits.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
    return actions, logits[np.arange(len(actions)), actions] - lse


LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def sample_gaussian(dist_inputs: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(actions (B, d) float32, log-probabilities (B,)) for rows of diagonal-Gaussian inputs [mean (d), log_std (d)]:
    the mean, or mean + std * N(0, 1) drawn with `rng`. The actions are NOT clipped: the game clips what it sends
    to the env, the loss sees the sample itself (its log-prob is the Gaussian's, as in cleanrl / SB3)."""
    d = dist_inputs.shape[1] // 2
    mean, log_std = dist_inputs[:, :d], dist_inputs[:, d:]
    if greedy:
        noise = np.zeros_like(mean)
    else:
        noise = rng.standard_normal(mean.shape, dtype=np.float32)
    actions = (mean + np.exp(log_std) * noise).astype(np.float32, copy=False)
    logp = -(0.5 * noise * noise + log_std + LOG_SQRT_2PI).sum(axis=1)
    return actions, logp.astype(np.float32, copy=False)


class _Traj:
    """The learner's pending transitions for one agent in one lane (recurrent learners also keep the
    state each step acted from and that step's previous action / reward)."""

    __slots__ = ("obs", "actions", "logp", "logits", "rewards", "states", "prev_actions", "prev_rewards", "boot_state")

    def __init__(self):
        self.obs: list = []
        self.actions: list = []
        self.logp: list = []
        self.logits: list = []
        self.rewards: list = []
        self.states: list = []
        self.prev_actions: list = []
        self.prev_rewards: list = []
        self.boot_state: Optional[np.ndarray] = None  # the state after the last step (set when emitted)

    def head(self, n: int) -> "_Traj":
        """The first n steps (obs: n + 1 rows when available)."""
        out = _Traj()
        out.obs, out.actions, out.logp, out.logits, out.rewards = self.obs[:n + 1], self.actions[:n], self.logp[:n], self.logits[:n], self.rewards[:n]
        out.states, out.prev_actions, out.prev_rewards = self.states[:n], self.prev_actions[:n], self.prev_rewards[:n]
        return out

    def tail(self, n: int) -> "_Traj":
        """The last n steps (with their obs)."""
        out = _Traj()
        out.obs, out.actions, out.logp, out.logits, out.rewards = self.obs[-n:], self.actions[-n:], self.logp[-n:], self.logits[-n:], self.rewards[-n:]
        out.states, out.prev_actions, out.prev_rewards = self.states[-n:], self.prev_actions[-n:], self.prev_rewards[-n:]
        return out


class _Lanes:
    """N env copies stepped in lock-step, each with its own episode bookkeeping."""

    def __init__(self, games: list[Game], record: bool, roles: Optional[dict] = None):
        self.games = games
        self.n = len(games)
        self.record = record  # keep the learner's transitions (training) or only outcomes (evaluation)
        g0 = games[0]
        # Sides of an episode's outcome: the teams, or in a role game the roles (side k = k-th role).
        if roles:
            self.sides = tuple(tuple(a for a in g0.agents if roles[a] == r) for r in role_names(roles))
        else:
            self.sides = tuple(g0.teams)
        self.team_of = {a: t for t, team in enumerate(self.sides) for a in team}
        self.num_teams = len(self.sides)
        self.active = [False] * self.n
        self.episode_number = [-1] * self.n
        self.opponent = [MIRROR] * self.n
        self.member = [MIRROR] * self.n  # league member behind the opponent id when the episode started
        self.learner = [MAIN] * self.n  # the trained module whose experience this episode records
        self.main_team = [0] * self.n  # the learner's team
        self.controller: list[dict] = [{} for _ in range(self.n)]  # agent -> learner module id or opponent id
        self.recorders: list[frozenset] = [frozenset() for _ in range(self.n)]  # trained modules recording this episode
        self.pending: list[dict] = [{} for _ in range(self.n)]  # agent -> obs to act on now
        self.last_obs: list[dict] = [{} for _ in range(self.n)]
        self.traj: list[dict] = [{} for _ in range(self.n)]  # agent -> _Traj (learning agents)
        self.agent_return: list[dict] = [{} for _ in range(self.n)]
        self.length = [0] * self.n
        self.extras: list[dict] = [{} for _ in range(self.n)]  # level-source extras for the outcome
        # Recurrent networks: agent -> its state row [h, c] (absent = zeros), previous action, and
        # the reward it got since it last acted.
        self.state: list[dict] = [{} for _ in range(self.n)]
        self.prev_action: list[dict] = [{} for _ in range(self.n)]
        self.prev_reward: list[dict] = [{} for _ in range(self.n)]

    def reset_seats_of(self, who: str) -> None:
        """Zero the recurrent state of every seat `who` controls (its weights were swapped)."""
        for i in range(self.n):
            for agent, ctrl in self.controller[i].items():
                if ctrl == who:
                    self.state[i].pop(agent, None)


def _curriculum_level(lanes: _Lanes, i: int) -> str:
    """The curriculum's level_id of lane i's episode ("" when the curriculum did not choose the level)."""
    extras = lanes.extras[i]
    return str(extras.get("level_id") or "") if extras.get("level_spec") else ""


class SpadeEnvRunner(EnvRunner, Checkpointable):
    """See the module docstring. Config: `config.env_config["spade"]`, a `RunnerSpec` (built by `build_algo_config`)."""

    def __init__(self, *, config, **kwargs):
        super().__init__(config=config, **kwargs)
        if self.worker_index:  # a remote runner process: one thread (small-batch inference)
            torch.set_num_threads(1)
        self.spec: RunnerSpec = RunnerSpec.from_mapping(self.config.env_config[RUNNER_SPEC_KEY])
        self.worker_index = int(self.worker_index or 0)
        self.num_envs = int(self.config.num_envs_per_env_runner)
        spec = self.spec
        env_id, env_kwargs = spec.env_id, spec.env_kwargs
        env_section = (spec.run_config or {}).get("env")  # teams, mode, api
        self._make_game: Callable[[], Game] = game_factory_for(env_id, env_kwargs, env_section, spec.random_opening_plies)
        self._make_eval_game: Callable[[], Game] = game_factory_for(env_id, env_kwargs, env_section,
                                                                    spec.eval_random_opening_plies)
        self._base_seed = spec.seed * 1_000_003 + 7919 * self.worker_index + (1_000_000 if self.config.in_evaluation else 0)
        self._rng = np.random.default_rng([spec.seed, self.worker_index, 17])
        self.learner_ids: tuple[str, ...] = spec.learners
        self.roles: dict = dict(spec.roles)  # agent -> role (role games); agent a is played by main_<role>
        self.module_of_agent: dict = {a: role_module_id(r) for a, r in self.roles.items()}
        # a role module's side of an outcome: the index of its role (the _Lanes' sides follow role_names)
        self._side_of_module: dict = {role_module_id(r): k for k, r in enumerate(role_names(self.roles))}
        self.plan: OpponentPlan = self._fit_plan(spec.opponent_plan or OpponentPlan())
        self.level_source: Any = None
        self.fixed_reset_options: Optional[dict] = spec.reset_options
        # One PackedEpisodes per sample() instead of SingleAgentEpisodes (needs SpadeGAEConnector).
        self.packed: bool = spec.packed
        self.slot_members: dict[str, str] = {}
        self.slot_modules: dict[str, Any] = {}
        self._slot_arch: dict[str, str] = {}  # slot -> the trained module whose architecture it holds
        self.driver_extra: dict = {}
        self._bots: dict[str, Any] = {}
        self._warned_empty_slots: set = set()
        self._outcomes: deque = deque(maxlen=OUTCOME_BUFFER_MAX)
        self._weights_seq_no = 0
        self._eval_lanes: Optional[_Lanes] = None
        self.env = None
        self.make_env()
        self.make_module()

    # ------------------------------------------------------------------ construction
    def make_env(self) -> None:
        self.games = [self._make_game() for _ in range(self.num_envs)]
        self.env = self.games  # RLlib's notes: reach envs via `env_runner.env` (list of `Game`)
        g0 = self.games[0]
        self._obs_space = g0.observation_space()
        self._act_space = g0.action_space()
        self._continuous = bool(g0.continuous)  # Box actions: float vectors, a Gaussian head
        self._module_spaces: dict = {}  # role modules: their role's (obs space, action space)
        for agent, module_id in self.module_of_agent.items():
            if module_id not in self._module_spaces:
                obs_size, _, num_actions = g0.agent_shape(agent)
                import gymnasium as gym  # noqa: PLC0415

                self._module_spaces[module_id] = (gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32),
                                                  gym.spaces.Discrete(num_actions))
        self.lanes = _Lanes(self.games, record=True, roles=self.roles)
        self._seeded = False
        self._level_pool: Optional[list] = None  # built by the first training reset that draws from it

    def _training_level_pool(self) -> list:
        """The level pool, generated on first use: a runner that only evaluates, or whose levels come from a
        level source (the curriculum), never pays for it. Its levels depend on the seed and worker index alone."""
        if self._level_pool is None:
            self._level_pool = self._make_level_pool(self.spec.level_pool, self.games[0]) or []
        return self._level_pool

    def _make_level_pool(self, size: int, game: Game) -> Optional[list]:
        """Pre-generated levels (the game's own generator) for training resets without a level source (saves the
        generator and per-level caches on every reset; short episodes made resets the bottleneck)."""
        kwargs = dict(self.spec.env_kwargs)
        if not size or not game.is_level_game or kwargs.get("level") is not None:
            return None
        from spade_rllib.envs import Knobs, knobs_for_difficulty  # noqa: PLC0415
        from spade_rllib.games import game as game_spec  # noqa: PLC0415

        knobs = kwargs.get("knobs")
        if isinstance(knobs, dict):
            knobs = Knobs.from_dict(knobs)
        if knobs is None:
            knobs = knobs_for_difficulty(float(kwargs.get("difficulty", 5.0)), family=kwargs.get("family"),
                                         agents_per_team=int(kwargs.get("agents_per_team") or 1))
        seeds = np.random.default_rng([self.spec.seed, self.worker_index, 23]).integers(2**31 - 1, size=size)
        generate = game_spec(self.spec.env_id).level_generator
        return [generate(knobs, int(s)) for s in seeds]

    def make_module(self) -> None:
        spec = self.config.get_multi_rl_module_spec(spaces=self.get_spaces(), inference_only=True)
        self.module = spec.build()
        for module_id in self.learner_ids:
            self.module[module_id].eval()
        self._module_specs = dict(spec.rl_module_specs)
        self._main_spec = self._module_specs[self.learner_ids[0]]

    def spaces_of(self, module_id: str) -> tuple:
        """(observation space, action space) of a trained module (its role's in a role game)."""
        return self._module_spaces.get(module_id, (self._obs_space, self._act_space))

    def get_spaces(self):
        spaces = {INPUT_ENV_SPACES: (self._obs_space, self._act_space)}
        spaces.update({module_id: self.spaces_of(module_id) for module_id in self.learner_ids})
        return spaces

    def _fit_plan(self, plan: OpponentPlan) -> OpponentPlan:
        """Role games: a plan for "main" (the config's self-play mix) trains every role's main."""
        return plan.spread_over(self.learner_ids) if self.roles else plan

    def assert_healthy(self):
        assert self.games and self.module is not None

    # ------------------------------------------------------------------ driver hooks
    def apply_driver_update(self, update: DriverUpdate) -> None:
        """Apply one broadcast from the driver (opponent plan, slot weights, level source)."""
        if update.opponent_plan is not None:
            self.plan = self._fit_plan(update.opponent_plan)
        for sid, slot in (update.slot_weights or {}).items():
            if not sid.startswith(SLOT_PREFIX):
                raise ValueError(f"slot id {sid!r} must start with {SLOT_PREFIX!r}")
            if slot is None:
                self.slot_members.pop(sid, None)
                self.slot_modules.pop(sid, None)
                continue
            mod = self.slot_modules.get(sid)
            arch = str(slot.get("module") or self.learner_ids[0])  # the trained module the snapshot was taken of
            if mod is None or self._slot_arch.get(sid) != arch:
                mod = self._module_specs[arch].build()
                mod.eval()
                self._slot_arch[sid] = arch
                self.slot_modules[sid] = mod
            mod.set_state(slot["weights"])
            self.slot_members[sid] = str(slot.get("member", sid))
            for lanes in (self.lanes, self._eval_lanes):
                if lanes is not None:
                    lanes.reset_seats_of(sid)  # a new member plays this slot: its memory starts afresh
        if update.level_source is not None:
            self.level_source = None if update.level_source == "none" else update.level_source
        self.driver_extra.update(update.extra or {})

    def pop_episode_outcomes(self) -> list[EpisodeOutcome]:
        """Outcome records of training episodes finished since the last call (then forgotten)."""
        out = list(self._outcomes)
        self._outcomes.clear()
        return out

    @property
    def pending_outcomes(self) -> int:
        """How many outcome records wait for the next `pop_episode_outcomes`."""
        return len(self._outcomes)

    def set_module_weights(self, module_id: str, weights: dict) -> None:
        """Overwrite one trained module's weights now (a reset by the driver; normal updates arrive
        through RLlib's weight sync)."""
        self.module[module_id].set_state(weights)

    def main_weights(self) -> dict:
        """Numpy state dict of main's module on this runner."""
        return self.module[MAIN].get_state()

    # ------------------------------------------------------------------ sampling
    def sample(self, *, num_timesteps: Optional[int] = None, num_episodes: Optional[int] = None, explore: bool = True,
               random_actions: bool = False, force_reset: bool = False, **kwargs) -> list[SingleAgentEpisode]:
        with _single_thread():
            return self._sample(num_timesteps, num_episodes, explore, random_actions, force_reset)

    def _sample(self, num_timesteps, num_episodes, explore, random_actions, force_reset) -> list[SingleAgentEpisode]:
        lanes = self.lanes
        if force_reset or not self._seeded:
            for i in range(lanes.n):
                self._start_episode(lanes, i, seed=None if self._seeded else self._base_seed + i)
            self._seeded = True
        if num_timesteps is None and num_episodes is None:
            num_timesteps = int(self.config.get_rollout_fragment_length(self.worker_index)) * self.num_envs
        episodes: list[SingleAgentEpisode] = []
        steps = done_eps = 0
        while (num_timesteps is not None and steps < num_timesteps) or (num_episodes is not None and done_eps < num_episodes):
            s, d = self._step_lanes(lanes, episodes, greedy=not explore, random_actions=random_actions)
            steps += s
            done_eps += d
        for i in range(lanes.n):
            for agent, tr in list(lanes.traj[i].items()):
                self._emit_cut(lanes, i, agent, tr, episodes)
        if self.packed:
            by_module: dict[str, list] = {}
            for module_id, chunk in episodes:
                by_module.setdefault(module_id, []).append(chunk)
            episodes = []
            for module_id, chunks in by_module.items():
                obs_space, act_space = self.spaces_of(module_id)
                if self._continuous:  # dist inputs: [mean, log_std]; float actions of that size
                    dist_size, action_size = 2 * act_space.shape[0], act_space.shape[0]
                else:
                    dist_size, action_size = act_space.n, 0
                episodes.append(PackedEpisodes.build(chunks, obs_space.shape[0], dist_size, module_id=module_id,
                                                     action_size=action_size))
        self._log_sample_metrics(steps, done_eps, episodes)
        return episodes

    def sample_with_outcomes(self, num_timesteps: int) -> tuple[list, dict, list]:
        """One remote round for sample-ahead training: (episodes, reduced metrics, outcome records)."""
        episodes = self.sample(num_timesteps=num_timesteps)
        return episodes, self.get_metrics(), self.pop_episode_outcomes()

    def _log_sample_metrics(self, env_steps: int, num_eps: int, episodes: list) -> None:
        module_steps: dict[str, int] = {self.learner_ids[0]: 0}
        for e in episodes:
            module_steps[e.module_id] = module_steps.get(e.module_id, 0) + len(e)
        m = self.metrics
        m.log_value(NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
        m.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True)
        for module_id, agent_steps in module_steps.items():
            m.log_value((NUM_AGENT_STEPS_SAMPLED, module_id), agent_steps, reduce="sum")
            m.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, module_id), agent_steps, reduce="lifetime_sum")
            m.log_value((NUM_MODULE_STEPS_SAMPLED, module_id), agent_steps, reduce="sum")
            m.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), agent_steps, reduce="lifetime_sum")
        m.log_value(NUM_EPISODES, num_eps, reduce="sum")
        m.log_value(NUM_EPISODES_LIFETIME, num_eps, reduce="lifetime_sum")
        self.num_env_steps_sampled_lifetime += env_steps

    def get_metrics(self):
        return self.metrics.reduce()

    # ------------------------------------------------------------------ evaluation
    def evaluate_main(self, spec: dict) -> list[EpisodeOutcome]:
        """Play evaluation games and return their outcome records (training state untouched).

        spec: {"opponents": [ids], "games": games per opponent (and per level), "greedy": bool,
               "levels": optional list of reset-option dicts (each played `games` times per opponent),
               "share": (k, n) to play only this runner's k-th of n shares}.
        Main's team alternates between games; `spec["learner"]` names the trained module evaluated (a
        role's main plays its role's agents, the opponent every other agent). A level's extra reset options (`heldout_level`) land in
        the records (`OUTCOME_EXTRA_FIELDS`).
        """
        with _single_thread():
            return self._evaluate_main(spec)

    def _evaluate_main(self, spec: dict) -> list[EpisodeOutcome]:
        opponents = list(spec.get("opponents", [RANDOM]))
        levels = list(spec.get("levels") or [None])
        games = int(spec.get("games", 10))
        k, n = spec.get("share", (0, 1))
        jobs = [(o, li, g) for o in opponents for li in range(len(levels)) for g in range(games)]
        jobs = jobs[k::n]
        if not jobs:
            return []
        if self._eval_lanes is None:
            self._eval_lanes = _Lanes([self._make_eval_game() for _ in range(min(self.num_envs, 32))], record=False,
                                      roles=self.roles)
        lanes = self._eval_lanes
        queue = deque(jobs)
        results: list[EpisodeOutcome] = []
        self._eval_learner = str(spec.get("learner") or self.learner_ids[0])
        if self._eval_learner not in self.learner_ids:
            raise ValueError(f"evaluation learner {self._eval_learner!r}; this runner trains {', '.join(self.learner_ids)}")
        saved = (self.plan, self.level_source)
        try:
            lanes.active = [False] * lanes.n
            for i in range(lanes.n):
                if queue:
                    self._start_eval_episode(lanes, i, queue.popleft(), levels)
            while any(lanes.active):
                self._step_lanes(lanes, None, greedy=bool(spec.get("greedy", False)), eval_queue=(queue, levels, results))
        finally:
            self.plan, self.level_source = saved
        return results

    def _start_eval_episode(self, lanes: _Lanes, i: int, job: tuple, levels: list) -> None:
        opp, li, g = job
        options = levels[li]
        learner = self._eval_learner
        team = g % lanes.num_teams if not self.roles else self._role_side(learner)
        self._start_episode(lanes, i, seed=int(self._rng.integers(2**31)), opponent=opp, main_team=team,
                            options=options, learner=learner)

    def _role_side(self, module_id: str) -> int:
        """A role module's side (the index of its role)."""
        return self._side_of_module[module_id]

    # ------------------------------------------------------------------ core loop
    def _start_episode(self, lanes: _Lanes, i: int, seed: Optional[int] = None, opponent: Optional[str] = None,
                       main_team: Optional[int] = None, options: Optional[dict] = None, extras: Optional[dict] = None,
                       learner: Optional[str] = None) -> None:
        lanes.episode_number[i] += 1
        key = (self.worker_index, i, lanes.episode_number[i])
        learner = learner or MAIN
        if opponent is None:
            learner, opponent = self.plan.pick_matchup(key) if lanes.num_teams > 1 else (MAIN, MIRROR)
            # A role's main always plays its role; in symmetric games main's team alternates.
            main_team = self._role_side(learner) if self.roles else OpponentPlan.main_team(key, lanes.num_teams)
            if learner not in self.learner_ids:
                raise ValueError(f"opponent plan names learner {learner!r}; this runner trains {', '.join(self.learner_ids)}")
        if opponent.startswith(SLOT_PREFIX) and opponent not in self.slot_modules:
            if opponent not in self._warned_empty_slots:
                self._warned_empty_slots.add(opponent)
                logger.warning("opponent %s has no weights on runner %d yet; playing 'random' instead", opponent, self.worker_index)
            opponent = RANDOM
        game = lanes.games[i]
        extras = dict(extras or {})
        if options is None and game.is_level_game:
            options = self.fixed_reset_options
            if self.level_source is not None:
                if getattr(self.level_source, "opponent_aware", False):  # joint curriculum: levels per co-player
                    options = self.level_source.reset_options(key, opponent=self._member_of(opponent)) or options
                else:
                    options = self.level_source.reset_options(key) or options
            elif options is None and lanes.record and (pool := self._training_level_pool()):
                options = {"level": pool[int(self._rng.integers(len(pool)))]}
        env_options = None
        if options:
            env_options = {k: v for k, v in options.items() if k in LEVEL_RESET_KEYS} or None
            extras.update({k: v for k, v in options.items() if k not in LEVEL_RESET_KEYS})
        obs = game.reset(seed=seed, options=env_options)
        lanes.active[i] = True
        lanes.opponent[i] = opponent
        lanes.member[i] = self._member_of(opponent)
        lanes.learner[i] = learner
        lanes.main_team[i] = int(main_team or 0)
        ctrl = {}
        if self.roles:  # each agent's own role main, or the opponent where the agent is not the learner's role
            for a in game.agents:
                own = self.module_of_agent[a]
                ctrl[a] = own if (own == learner or opponent == MIRROR) else opponent
        else:
            for t, team in enumerate(game.teams):
                for a in team:
                    ctrl[a] = learner if (t == lanes.main_team[i] or opponent == MIRROR) else opponent
        lanes.controller[i] = ctrl
        lanes.recorders[i] = frozenset(c for c in ctrl.values() if c in self.learner_ids)
        lanes.pending[i] = obs
        lanes.last_obs[i] = dict(obs)
        lanes.traj[i] = {a: _Traj() for a, c in ctrl.items() if c in lanes.recorders[i]} if lanes.record else {}
        lanes.agent_return[i] = {a: 0.0 for a in ctrl}
        lanes.length[i] = 0
        lanes.extras[i] = extras
        lanes.state[i] = {}
        lanes.prev_action[i] = {}
        lanes.prev_reward[i] = {}

    def _member_of(self, opponent: str) -> str:
        """The league member an opponent id stands for now (slots: their member; live modules: the module)."""
        if opponent.startswith(LIVE_PREFIX):
            return opponent[len(LIVE_PREFIX):]
        return self.slot_members.get(opponent, opponent)

    def _module_for(self, who: str):
        if who in self.learner_ids:
            return self.module[who]
        if who.startswith(SLOT_PREFIX):
            return self.slot_modules[who]
        if who.startswith(LIVE_PREFIX) and who[len(LIVE_PREFIX):] in self.learner_ids:
            return self.module[who[len(LIVE_PREFIX):]]
        return None

    def _logits(self, who: str, obs: np.ndarray) -> np.ndarray:
        module = self._module_for(who)
        if module is None:
            raise KeyError(who)
        with torch.no_grad():
            return module.fast_logits(torch.from_numpy(obs)).numpy()

    def _recurrent_logits(self, module, lanes: _Lanes, members: list, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of a recurrent network for its seats: (logits, the state rows they acted from,
        previous actions, previous rewards); the seats' states advance in `lanes.state`."""
        cell = module.cell_size
        zeros = np.zeros(2 * cell, np.float32)
        state = np.stack([lanes.state[i].get(agent, zeros) for i, agent in members])
        if self._continuous:
            no_action = np.zeros(self._act_space.shape, np.float32)
            prev_a = np.stack([lanes.prev_action[i].get(agent, no_action) for i, agent in members]).astype(np.float32, copy=False)
        else:
            prev_a = np.fromiter((lanes.prev_action[i].get(agent, 0) for i, agent in members), np.int64, len(members))
        prev_r = np.fromiter((lanes.prev_reward[i].get(agent, 0.0) for i, agent in members), np.float32, len(members))
        st = torch.from_numpy(state)
        with torch.no_grad():
            logits, new = module.step(torch.from_numpy(obs), {"h": st[:, :cell], "c": st[:, cell:]},
                                      torch.from_numpy(prev_a), torch.from_numpy(prev_r))
        new_state = torch.cat([new["h"], new["c"]], dim=1).numpy()
        for j, (i, agent) in enumerate(members):
            lanes.state[i][agent] = new_state[j]
            lanes.prev_reward[i][agent] = 0.0  # rewards from here on belong to this step's action
        return logits.numpy(), state, prev_a, prev_r

    def _sample_actions(self, logits: np.ndarray, greedy: bool) -> tuple[np.ndarray, np.ndarray]:
        """Actions and log-probabilities for the rows of every network of a step, in one call: numpy's
        per-call overhead, not the arithmetic, is what costs at these sizes (Box: Gaussian samples, unclipped)."""
        if self._continuous:
            return sample_gaussian(logits, self._rng, greedy)
        return sample_actions(logits, self._rng, greedy)

    def _random_action(self, game: Game, obs: np.ndarray, agent: Optional[str] = None):
        return game.random_action(obs, self._rng, agent)

    def _bot(self, name: str):
        bot = self._bots.get(name)
        if bot is None:
            from spade_rllib.games import make_bot  # noqa: PLC0415

            bot = make_bot(name, seed=int(self._rng.integers(2**31)), env_id=self.spec.env_id)
            self._bots[name] = bot
        return bot

    def _step_lanes(self, lanes: _Lanes, episodes: Optional[list], greedy: bool, random_actions: bool = False,
                    eval_queue: Optional[tuple] = None) -> tuple[int, int]:
        """One step of every active lane. Returns (env steps, finished episodes)."""
        # 1) group the acting agents by controller
        groups: dict[str, list[tuple[int, str]]] = {}
        for i in range(lanes.n):
            if not lanes.active[i]:
                continue
            ctrl = lanes.controller[i]
            for agent in lanes.pending[i]:
                who = ctrl[agent]
                if random_actions:
                    who = RANDOM
                groups.setdefault(who, []).append((i, agent))  # "mirror" was resolved to the learner at reset
        actions: list[dict] = [{} for _ in range(lanes.n)]
        learner_out: dict[tuple[int, str], tuple] = {}
        network: list[tuple] = []  # (who, members, obs, logits) of each network controller
        recurrent: dict[str, tuple] = {}  # who -> (state rows, previous actions, previous rewards)
        for who, members in groups.items():
            if who == RANDOM:
                for i, agent in members:
                    actions[i][agent] = self._random_action(lanes.games[i], lanes.pending[i][agent], agent)
            elif who.startswith(BOT_PREFIX):
                bot = self._bot(who[len(BOT_PREFIX):])
                for i, agent in members:
                    actions[i][agent] = int(bot.act(lanes.games[i].raw_env, agent))
            else:
                obs = np.stack([lanes.pending[i][agent] for i, agent in members])
                bad = first_non_finite_row(obs)  # NaN in, NaN loss out: name the env, agent and step instead
                if bad >= 0:
                    i, agent = members[bad]
                    raise env_fault(self.spec.env_id, i, lanes.length[i], agent, "observation holds NaN/inf")
                module = self._module_for(who)
                if module is not None and getattr(module, "use_lstm", False):
                    logits, *rec = self._recurrent_logits(module, lanes, members, obs)
                    recurrent[who] = rec
                    network.append((who, members, obs, logits))
                else:
                    network.append((who, members, obs, self._logits(who, obs)))
        if network:  # one sampling pass over every network's rows (main, league slots, live modules)
            all_logits = network[0][3] if len(network) == 1 else np.concatenate([g[3] for g in network])
            acts, logp = self._sample_actions(all_logits, greedy)
            row = 0
            for who, members, obs, logits in network:
                rec = recurrent.get(who)
                for j, (i, agent) in enumerate(members):
                    a = acts[row] if self._continuous else int(acts[row])
                    actions[i][agent] = a
                    if rec is not None:
                        lanes.prev_action[i][agent] = a
                    if lanes.record and who in lanes.recorders[i]:
                        learner_out[(i, agent)] = (obs[j], a, float(logp[row]), logits[j],
                                                   None if rec is None else (rec[0][j], rec[1][j] if self._continuous else int(rec[1][j]),
                                                                                 float(rec[2][j])))
                    row += 1
        # 2) record the learners' decisions, step every lane
        env_steps = finished = 0
        for i in range(lanes.n):
            if not lanes.active[i]:
                continue
            if lanes.record:
                trajs = lanes.traj[i]
                for agent in actions[i]:
                    tr = trajs.get(agent)
                    if tr is None and lanes.controller[i].get(agent) in lanes.recorders[i]:
                        tr = trajs[agent] = _Traj()  # an agent that joined (or came back) mid-episode
                    if tr is not None:
                        o, a, lp, lg, rec = learner_out[(i, agent)]
                        tr.obs.append(o)
                        tr.actions.append(a)
                        tr.logp.append(lp)
                        tr.logits.append(lg)
                        tr.rewards.append(0.0)
                        if rec is not None:
                            tr.states.append(rec[0])
                            tr.prev_actions.append(rec[1])
                            tr.prev_rewards.append(rec[2])
            try:
                res = lanes.games[i].step(actions[i])
            except Exception as e:  # the env's own error, with where it happened
                raise env_fault(self.spec.env_id, i, lanes.length[i], sorted(actions[i]) or None,
                                f"step raised {e.__class__.__name__}: {' '.join(str(e).split())}") from e
            env_steps += 1
            lanes.length[i] += 1
            ret = lanes.agent_return[i]
            prev_reward = lanes.prev_reward[i]
            for agent, r in res.rewards.items():
                if not math.isfinite(r):
                    raise env_fault(self.spec.env_id, i, lanes.length[i], agent, f"reward is {r}")
                if agent in ret:
                    ret[agent] += r
                if agent in prev_reward:
                    prev_reward[agent] += r
                if lanes.record:
                    tr = lanes.traj[i].get(agent)
                    if tr is not None and tr.rewards:
                        tr.rewards[-1] += r
            lanes.pending[i] = res.obs
            lanes.last_obs[i].update(res.obs)
            if res.ended and not res.done:
                self._end_agents(lanes, i, res, episodes)
            if res.done:
                finished += 1
                if res.final_obs:
                    lanes.last_obs[i].update(res.final_obs)
                records = self._finish_episode(lanes, i, res, episodes)
                lanes.active[i] = False
                if eval_queue is None:
                    self._outcomes.extend(records)
                    self._start_episode(lanes, i)
                else:
                    queue, levels, results = eval_queue
                    results.extend(records)
                    if queue:
                        self._start_eval_episode(lanes, i, queue.popleft(), levels)
        return env_steps, finished

    def _end_agents(self, lanes: _Lanes, i: int, res, episodes: Optional[list]) -> None:
        """Agents whose own episode ended while the others play on (dead, or out of time): emit the
        learner's transitions of each, terminated (no bootstrap) or truncated (bootstrap from its last obs)."""
        lanes.last_obs[i].update(res.final_obs)
        for agent, truncated in res.ended.items():
            state = lanes.state[i].pop(agent, None)  # a seat that comes back starts a fresh memory
            lanes.prev_action[i].pop(agent, None)
            lanes.prev_reward[i].pop(agent, None)
            tr = lanes.traj[i].pop(agent, None) if lanes.record else None
            if tr is None or not tr.actions or episodes is None:
                continue
            tr.obs.append(lanes.last_obs[i].get(agent, tr.obs[-1]))
            if tr.states:
                tr.boot_state = state if state is not None else np.zeros_like(tr.states[-1])
            episodes.append(self._make_episode(lanes.controller[i][agent], agent, tr, terminated=not truncated,
                                               truncated=bool(truncated), level=_curriculum_level(lanes, i)))

    def _finish_episode(self, lanes: _Lanes, i: int, res, episodes: Optional[list]) -> list[EpisodeOutcome]:
        """The episode's outcome records: one, of its learner; in a role game's mirror episode one per
        role main (each main learned from its own role's agents)."""
        if lanes.record and episodes is not None:
            for agent, tr in lanes.traj[i].items():
                if tr.actions:
                    tr.obs.append(lanes.last_obs[i].get(agent, tr.obs[-1]))
                    if tr.states:
                        tr.boot_state = lanes.state[i].get(agent)
                    episodes.append(self._make_episode(lanes.controller[i][agent], agent, tr, terminated=not res.truncated,
                                                       truncated=res.truncated, level=_curriculum_level(lanes, i)))
            lanes.traj[i] = {}
        if self.roles and lanes.opponent[i] == MIRROR:
            learners = [role_module_id(r) for r in role_names(self.roles)]
        else:
            learners = [lanes.learner[i]]
        return [self._outcome(lanes, i, res, learner) for learner in learners]

    def _outcome(self, lanes: _Lanes, i: int, res, learner: str) -> EpisodeOutcome:
        team_returns = [float(np.mean([lanes.agent_return[i][a] for a in team])) for team in lanes.sides]
        info = res.info or {}
        main_team = self._role_side(learner) if self.roles else lanes.main_team[i]
        opponent = lanes.opponent[i]
        member = lanes.member[i]
        swapped = self._member_of(opponent) != member  # slot reloaded with another member mid-episode
        extras = lanes.extras[i]
        fields = {k: extras[k] for k in OUTCOME_EXTRA_FIELDS if k in extras}
        if lanes.num_teams >= 2:
            record = EpisodeOutcome.from_final_info(
                info, team_returns=tuple(team_returns), length=lanes.length[i], truncated=res.truncated,
                learner_team=main_team, learner=learner, opponent=member,
                opponent_swapped=swapped,  # two policies played that seat: the league ignores it
                **fields)
        else:  # one team: nobody to win against, no opponent
            success = info.get("success", info.get("is_success"))
            record = EpisodeOutcome(winner=None, reason="timeout" if res.truncated else "terminal",
                                    length=lanes.length[i], learner=learner, returns=(team_returns[0],),
                                    success=None if success is None else bool(success), **fields)
        if lanes.record and learner == self.learner_ids[0]:  # RLlib's episode metrics describe main (the first role's)
            self._log_episode_metrics(record, member)
        return record

    def _log_episode_metrics(self, record: EpisodeOutcome, member: Optional[str]) -> None:
        win = max(1, METRICS_WINDOW // max(1, self.config.num_env_runners or 1))
        m = self.metrics
        m.log_value(EPISODE_RETURN_MEAN, record.learner_return, window=win)
        m.log_value(EPISODE_LEN_MEAN, record.length, window=win)
        result = record.learner_result
        if result is not None:
            for k in RESULTS:
                m.log_value(("vs", str(member), k), 1.0 if k == result else 0.0, window=win)

    def _make_episode(self, module_id: str, agent: str, tr: _Traj, terminated: bool, truncated: bool, level: str = ""):
        """A numpy `SingleAgentEpisode` of the learner `module_id` (len(obs) == len(actions) + 1), or
        in packed mode (module_id, the chunk tuple `PackedEpisodes.build` takes, tagged with the
        curriculum `level` id for PLR's positive value loss)."""
        if self.packed:
            return module_id, (tr.obs, tr.actions, tr.rewards, tr.logp, tr.logits, terminated, level,
                               self._recurrent_record(module_id, tr))
        extra = {"action_logp": tr.logp, "action_dist_inputs": tr.logits}
        obs, actions, rewards, lookback = tr.obs, tr.actions, tr.rewards, 0
        if tr.states:
            # RLlib's AddStatesFromEpisodesToBatch reads STATE_OUT: step t's is the state step t+1
            # acted from; the lookback entry (one dummy step before the chunk) carries the state
            # the chunk starts from, so a chunk cut mid-episode resumes its memory.
            cell = tr.states[0].shape[0] // 2
            outs = tr.states[1:] + [tr.boot_state]
            state_out = [{"h": x[:cell], "c": x[cell:]} for x in [tr.states[0]] + outs]
            extra = {"action_logp": [0.0] + list(tr.logp), "action_dist_inputs": [np.zeros_like(tr.logits[0])] + list(tr.logits),
                     "state_out": state_out}
            dummy = np.zeros_like(tr.actions[0]) if self._continuous else 0
            obs, actions, rewards, lookback = [tr.obs[0]] + list(tr.obs), [dummy] + list(tr.actions), [0.0] + list(tr.rewards), 1
        eps = SpadeSingleAgentEpisode(
            observations=obs,
            actions=actions,
            rewards=rewards,
            extra_model_outputs=extra,
            terminated=terminated,
            truncated=truncated,
            len_lookback_buffer=lookback,
            t_started=lookback,
            observation_space=self.spaces_of(module_id)[0],
            action_space=self.spaces_of(module_id)[1],
            agent_id=agent,
            module_id=module_id,
            multi_agent_episode_id=uuid.uuid4().hex,  # unique per chunk: the learner batches by this key
        )
        return eps.to_numpy()

    def _recurrent_record(self, module_id: str, tr: _Traj) -> Optional[dict]:
        """A recurrent learner's chunk: the state at each training sequence start (every
        `max_seq_len` rows of the chunk's steps + bootstrap row) and each row's previous action and
        reward; None for feed-forward learners."""
        if not tr.states:
            return None
        seq = int(self.module[module_id].max_seq_len)
        n = len(tr.actions)
        states = [tr.states[k] if k < n else tr.boot_state for k in range(0, n + 1, seq)]
        return {"states": np.stack(states).astype(np.float32, copy=False),
                "prev_actions": np.asarray(tr.prev_actions + [tr.actions[-1]], np.float32 if self._continuous else np.int64),
                "prev_rewards": np.asarray(tr.prev_rewards + [tr.rewards[-1]], np.float32)}

    def _emit_cut(self, lanes: _Lanes, i: int, agent: str, tr: _Traj, episodes: list) -> None:
        """At the end of `sample()`: emit the learner's complete transitions of an ongoing episode."""
        if not tr.actions:
            return
        nxt = lanes.pending[i].get(agent)
        if nxt is not None:  # the last action's next obs is known: emit everything
            chunk = tr.head(len(tr.actions))
            chunk.obs = tr.obs + [nxt]
            if tr.states:
                chunk.boot_state = lanes.state[i].get(agent)
            episodes.append(self._make_episode(lanes.controller[i][agent], agent, chunk, terminated=False, truncated=True,
                                               level=_curriculum_level(lanes, i)))
            lanes.traj[i][agent] = _Traj()
            return
        if len(tr.actions) < 2:  # only an incomplete transition (turn-based: opponent to move)
            return
        chunk = tr.head(len(tr.actions) - 1)
        chunk.obs = tr.obs
        if tr.states:
            chunk.boot_state = tr.states[-1]  # the bootstrap row is the kept step's obs: its state
        episodes.append(self._make_episode(lanes.controller[i][agent], agent, chunk, terminated=False, truncated=True,
                                           level=_curriculum_level(lanes, i)))
        lanes.traj[i][agent] = tr.tail(1)

    # ------------------------------------------------------------------ state (Checkpointable)
    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict:
        state = {NUM_ENV_STEPS_SAMPLED_LIFETIME: self.num_env_steps_sampled_lifetime}
        if self._check_component(COMPONENT_RL_MODULE, components, not_components):
            state[COMPONENT_RL_MODULE] = self.module.get_state(
                components=self._get_subcomponents(COMPONENT_RL_MODULE, components),
                not_components=self._get_subcomponents(COMPONENT_RL_MODULE, not_components),
                **kwargs,
            )
            state[WEIGHTS_SEQ_NO] = self._weights_seq_no
        return state

    def set_state(self, state: dict) -> None:
        if COMPONENT_RL_MODULE in state:
            seq = state.get(WEIGHTS_SEQ_NO, 0)
            if seq == 0 or self._weights_seq_no < seq:
                module_state = state[COMPONENT_RL_MODULE]
                import ray  # noqa: PLC0415

                if isinstance(module_state, ray.ObjectRef):
                    module_state = ray.get(module_state)
                self.module.set_state(module_state)
            if seq > 0:
                self._weights_seq_no = seq
        if NUM_ENV_STEPS_SAMPLED_LIFETIME in state:
            self.num_env_steps_sampled_lifetime = state[NUM_ENV_STEPS_SAMPLED_LIFETIME]

    def get_ctor_args_and_kwargs(self):
        return ((), {"config": self.config})

    def get_checkpointable_components(self):
        return [(COMPONENT_RL_MODULE, self.module)]

    def stop(self) -> None:
        for g in self.games or []:
            close = getattr(g.raw_env, "close", None)
            if close:
                close()
