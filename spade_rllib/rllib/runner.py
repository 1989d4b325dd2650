"""`SpadeEnvRunner`: a vectorized multi-agent env runner that returns only the trained modules' experience.

Why: RLlib's stock `MultiAgentEnvRunner` runs its connector pipelines per step and builds a
`MultiAgentEpisode` per env; measured here it, not the env, sets the pace (docs/internals.md).
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

`sample()` returns the learners' experience only, packed or as episodes (`episode_output.py`).
PPO's `training_step` counts env steps from `get_metrics()[num_env_steps_sampled]`, hands the list
to the learner, and syncs the trained modules' weights back through `set_state({"rl_module": {...}})`.

Per episode the learner, its opponent and its seat come from the broadcast `OpponentPlan` as a pure
function of (worker_index, env_index, episode_number); the learner's team alternates between
episodes. Experience is recorded for every agent the learner controls (all of them against
"mirror"). At the end of each episode an `EpisodeOutcome` (spade_rllib/core/outcome.py) is appended to
a buffer that the driver drains with `pop_episode_outcomes()` via `foreach_env_runner`; its
`learner_team` and `learner` fields name the learner's team and module.

Where the pieces live (this class mixes them in): `sampling.LaneStepping` (the step loop, episode
starts and ends, outcomes), `lanes` (per-lane state: `LaneStates`, `LearnerTrajectory`; recurrent
seats' states), `episode_output.EpisodeOutput` (the two output formats), `evaluation_runner.
RunnerEvaluation` (`evaluate_main`) and `action_sampling` (actions from network outputs).
"""
from __future__ import annotations

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

from spade_rllib.core.outcome import MAIN, EpisodeOutcome
from spade_rllib.games.adapter import Game, game_factory_for
from spade_rllib.games.catalog import evaluation_kwargs
from spade_rllib.games.resolved_env import read_env_id
from spade_rllib.games.roles import role_module_id, role_names
from spade_rllib.rllib.action_sampling import sample_actions, sample_gaussian, single_torch_thread
from spade_rllib.rllib.episode_output import EpisodeOutput, SpadeSingleAgentEpisode
from spade_rllib.rllib.evaluation_runner import RunnerEvaluation
from spade_rllib.rllib.lanes import LaneStates
from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, SLOT_PREFIX, DriverUpdate, OpponentPlan, RunnerSpec
from spade_rllib.rllib.sampling import LaneStepping
from spade_rllib.rllib import torch_determinism

torch_determinism.install()  # RLlib seeds torch in every process: skip the Inductor import (module docstring)

# Importers of the runner reach these here too (tests, benches, final_heldout_eval).
__all__ = ["MAIN", "SpadeEnvRunner", "SpadeSingleAgentEpisode", "sample_actions", "sample_gaussian"]

torch, nn = try_import_torch()

OUTCOME_BUFFER_MAX = 100_000  # outcome records kept between two drains by the driver


class SpadeEnvRunner(LaneStepping, EpisodeOutput, RunnerEvaluation, EnvRunner, Checkpointable):
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
        self.resolved_env = env = read_env_id(env_id, strict=False)  # read once: both factories, the level pool
        self._make_game: Callable[[], Game] = game_factory_for(env, env_kwargs, env_section, spec.random_opening_plies)
        # evaluation games: the same rules without training-only signals (an auxiliary reward)
        self._make_eval_game: Callable[[], Game] = game_factory_for(env, evaluation_kwargs(env_kwargs), env_section,
                                                                    spec.eval_random_opening_plies)
        self._base_seed = spec.seed * 1_000_003 + 7919 * self.worker_index + (1_000_000 if self.config.in_evaluation else 0)
        self._rng = np.random.default_rng([spec.seed, self.worker_index, 17])
        self.learner_ids: tuple[str, ...] = spec.learners
        self.roles: dict = dict(spec.roles)  # agent -> role (role games); agent a is played by main_<role>
        self.module_of_agent: dict = {a: role_module_id(r) for a, r in self.roles.items()}
        # a role module's side of an outcome: the index of its role (the LaneStates' sides follow role_names)
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
        self._bots: dict[tuple, Any] = {}  # (name, training lanes?, lane, agent, teacher) -> the bot of that seat
        self._warned_empty_slots: set = set()
        self._outcomes: deque = deque(maxlen=OUTCOME_BUFFER_MAX)
        self._episode_metric_buffer: dict = {}  # key -> deque of main's per-episode values (sampling.flush_episode_metrics)
        self._weights_seq_no = 0
        self._eval_lanes: Optional[LaneStates] = None
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
                import gymnasium as gym

                self._module_spaces[module_id] = (gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32),
                                                  gym.spaces.Discrete(num_actions))
        self.lanes = LaneStates(self.games, record=True, roles=self.roles)
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
        from spade_rllib.envs import Knobs, knobs_for_difficulty

        knobs = kwargs.get("knobs")
        if isinstance(knobs, dict):
            knobs = Knobs.from_dict(knobs)
        if knobs is None:
            knobs = knobs_for_difficulty(float(kwargs.get("difficulty", 5.0)), family=kwargs.get("family"),
                                         agents_per_team=int(kwargs.get("agents_per_team") or 1))
        seeds = np.random.default_rng([self.spec.seed, self.worker_index, 23]).integers(2**31 - 1, size=size)
        generate = self.resolved_env.spec.level_generator
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
        """Apply one broadcast from the driver (opponent plan, slot weights, level source, training signals)."""
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
        if update.env_signals:  # training envs only: the evaluation games are built without the signals
            for game in self.games:
                game.raw_env.set_training_signals(**update.env_signals)
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
        with single_torch_thread():
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
            episodes = self._pack_by_module(episodes)
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
        self.flush_episode_metrics()
        return self.metrics.reduce()

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
                import ray

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
