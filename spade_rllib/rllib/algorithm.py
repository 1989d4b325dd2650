"""`SpadePPO` (PPO + driver components + in-runner evaluation) and `build_algo_config(cfg)`.

`build_algo_config(run_config)` turns the validated `RunConfig` into a `PPOConfig` whose algo class
is `SpadePPO`, with the trained module "main" (`SpadeModule`), one more per league exploiter
("main_exploiter_<i>", "league_exploiter_<i>"), and the vectorized `SpadeEnvRunner`. Checkpoints
hold `learner_group/learner/rl_module/<module>`.

`SpadePPO` adds to PPO, once per iteration (after PPO's own sample -> learn -> weight sync):
  * driver components (`spade_rllib.rllib.components`): drain episode outcomes from all env
    runners, update the components, broadcast their `DriverUpdate`s;
  * metrics: main's W/D/L per opponent over this iteration's training episodes under
    "spade/train/<opponent>/win_rate", component metrics ("league/size", "curriculum/difficulty"),
    and every `evaluation.interval` iterations an evaluation against `evaluation.opponents` under
    "eval/<opponent>/win_rate" (games played inside the env runners, off the learner);
  * checkpoint state: `get_state()` / `set_state()` carry every component's `state_dict()` under
    "spade_components", so `--resume` and `Algorithm.from_checkpoint` bring them back;
  * env runner restarts: restored runners get every component's full state again;
  * module resets: a component may ask (`DriverContext.reset_module`) for a trained module to be
    re-initialised (a main exploiter after each of its snapshots): fresh weights from a seeded
    init, a fresh optimizer state, pushed to the runners at once.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core import ALL_MODULES
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from spade_rllib.checkpoint_layout import COMPONENTS_STATE_KEY
from spade_rllib.config import RunConfig, parse_config
from spade_rllib.games import LEVEL_KIND, env_kind
from spade_rllib.outcome import MAIN
from spade_rllib.phases import COMPONENT_PREFIX, PhaseClock
from spade_rllib.rllib.component_registry import build_components
from spade_rllib.rllib.components import (
    DriverContext,
    DriverUpdate,
    EnvInfo,
    SelfPlayComponent,
    counter_means,
    placeholder_win_rates,
    win_rates,
)
from spade_rllib.games.adapter import game_factory_for
from spade_rllib.rllib.health import check_losses, check_weights, trained_now
from spade_rllib.rllib.model_config import model_config_for
from spade_rllib.rllib.module import SpadeModule
from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, RunnerSpec
from spade_rllib.rllib.runner import SpadeEnvRunner

logger = logging.getLogger(__name__)

SAMPLE_TAG = "spade_sample_ahead"


def _policy_mapping_fn(agent_id, episode, **kwargs):
    return MAIN


def _policy_mapping_fn_for(roles: dict):
    """RLlib's agent -> module mapping: "main" for every agent, or each agent's `main_<role>`. (The env
    runner maps agents itself from `RunnerSpec.roles`; RLlib's config gets the same mapping.)"""
    if not roles:
        return _policy_mapping_fn
    from spade_rllib.games.roles import role_module_id

    return functools.partial(_role_policy_mapping, {a: role_module_id(r) for a, r in roles.items()})


def _role_policy_mapping(modules: dict, agent_id, episode=None, **kwargs):
    return modules[agent_id]


def learner_module_ids(cfg: RunConfig, info: Optional[EnvInfo] = None) -> list[str]:
    """Trained module ids: one `main_<role>` per role in a role game (`info.roles`); else "main", then
    the league's main exploiters, then its league exploiters."""
    if info is not None and info.roles:
        return list(info.role_modules())
    if not cfg.league.enabled:
        return [MAIN]
    from spade_rllib.league.member_ids import learner_ids

    return [str(m) for m in learner_ids(cfg.league.main_exploiters, cfg.league.league_exploiters)]


def _make_gae_connector(input_observation_space, input_action_space, *, gamma: float, lambda_: float):
    from spade_rllib.rllib.packed import SpadeGAEConnector

    return SpadeGAEConnector(input_observation_space, input_action_space, gamma=gamma, lambda_=lambda_)


def _learner_class(lean: bool):
    """SpadePPOLearner (RLlib's PPO math, less work per minibatch: lean_learner.py), or RLlib's stock learner."""
    if not lean:
        from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

        return PPOTorchLearner
    from spade_rllib.rllib.lean_learner import SpadePPOLearner

    return SpadePPOLearner


def env_kwargs_for(cfg: RunConfig) -> dict:
    """Constructor kwargs for one env copy (level games: level_file and difficulty folded in)."""
    kwargs = dict(cfg.env.kwargs)
    if env_kind(cfg.env.id) == LEVEL_KIND:
        if cfg.env.level_file:
            from spade_rllib.envs import Level

            kwargs["level"] = Level.from_ascii(Path(os.path.expanduser(cfg.env.level_file)).read_text())
        elif cfg.env.difficulty is not None:
            kwargs["difficulty"] = cfg.env.difficulty
    return kwargs


def describe_env(cfg: RunConfig) -> EnvInfo:
    """Build one env copy on the driver to learn spaces, teams and the mask size."""
    game = game_factory_for(cfg.env.id, env_kwargs_for(cfg), cfg.to_dict()["env"])()
    window = map_shape = None
    kind = env_kind(cfg.env.id)
    if kind == LEVEL_KIND:
        from spade_rllib.games import game as game_spec

        level_class = game_spec(cfg.env.id).level_class
        window = tuple(level_class.obs_layout(int(cfg.env.kwargs.get("view_radius", 4)))[0])
        map_shape = level_class.map_layout(**dict(cfg.env.kwargs))
    from spade_rllib.games.roles import game_roles

    roles = game_roles(game, cfg.env.roles, cfg.env.id)
    role_shapes = {}
    for agent, role in roles.items():
        role_shapes.setdefault(role, tuple(game.agent_shape(agent)))
    info = EnvInfo(cfg.env.id, kind, tuple(game.teams), game.num_actions, game.obs_size, game.mask_size, window,
                   map_shape=None if map_shape is None else tuple(map_shape),
                   action_space=game.action_space(), roles=roles, role_shapes=role_shapes)
    close = getattr(game.raw_env, "close", None)
    if close:
        close()
    return info


def build_algo_config(cfg: RunConfig, *, runinfo: Optional[dict] = None, restore_from: Optional[str] = None) -> PPOConfig:
    """The RLlib config for a validated `RunConfig` (reusable by sweeps: see `spade_rllib.train`)."""
    info = describe_env(cfg)
    import gymnasium as gym

    def spaces(module_id: str) -> tuple:
        obs_size, _, num_actions = info.module_shape(module_id)
        obs = gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
        if not info.roles and info.action_space is not None:
            return obs, info.action_space  # Discrete, or a continuous game's flat Box
        return obs, gym.spaces.Discrete(num_actions)

    learners = learner_module_ids(cfg, info)
    if info.roles and (cfg.league.main_exploiters or cfg.league.league_exploiters):
        from spade_rllib.validation import ConfigError

        raise ConfigError(f"league.main_exploiters = {cfg.league.main_exploiters}: exploiters are not supported in a "
                          f"role game ({cfg.env.id} has roles {', '.join(info.role_shapes)}); set them to 0")
    obs_space, act_space = spaces(learners[0])
    spec = MultiRLModuleSpec(
        rl_module_specs={
            module_id: RLModuleSpec(module_class=SpadeModule, observation_space=spaces(module_id)[0],
                                    action_space=spaces(module_id)[1],
                                    model_config=model_config_for(cfg, info, module_id))
            for module_id in learners
        }
    )
    a, t, r = cfg.agent, cfg.training, cfg.resources
    num_learners = r.num_learners
    spade = RunnerSpec(
        run_config=cfg.to_dict(),
        env_id=cfg.env.id,
        env_kwargs=env_kwargs_for(cfg),
        seed=cfg.experiment.seed,
        # Local learner: ship experience packed and run SpadeGAEConnector (see packed.py). Remote
        # learners shard episodes, which needs RLlib's SingleAgentEpisodes and default connectors.
        packed=num_learners == 0,
        level_pool=cfg.env.level_pool if (env_kind(cfg.env.id) == LEVEL_KIND and not cfg.env.level_file) else 0,
        random_opening_plies=cfg.env.random_opening_plies,
        eval_random_opening_plies=cfg.evaluation.random_opening_plies,
        learners=tuple(learners),
        roles=dict(info.roles),
        runinfo=runinfo,
        restore_from=restore_from,
        # Runners start with the config's self-play plan (the driver re-broadcasts it, or the league's).
        opponent_plan=SelfPlayComponent(cfg.self_play.mode, cfg.self_play.opponent_mix, cfg.experiment.seed).plan,
    ).to_dict()
    config = (
        PPOConfig(algo_class=SpadePPO)
        .environment(env=None, env_config={RUNNER_SPEC_KEY: spade}, observation_space=obs_space, action_space=act_space)
        .framework("torch")
        .env_runners(
            env_runner_cls=SpadeEnvRunner,
            num_env_runners=t.num_env_runners,
            num_envs_per_env_runner=t.num_envs_per_runner,
            num_cpus_per_env_runner=r.num_cpus_per_env_runner,
            rollout_fragment_length="auto",
            merge_env_runner_states=False,
            broadcast_env_runner_states=False,
            sample_timeout_s=600.0,
            # Weight syncs and driver updates queue behind an in-flight sample-ahead request.
            max_requests_in_flight_per_env_runner=8,
        )
        .multi_agent(policies=set(learners), policy_mapping_fn=_policy_mapping_fn_for(info.roles),
                     policies_to_train=list(learners))
        .rl_module(rl_module_spec=spec)
        .training(
            lr=a.lr,
            gamma=a.gamma,
            lambda_=a.lambda_,
            clip_param=a.clip,
            vf_clip_param=a.vf_clip,
            entropy_coeff=a.entropy,
            vf_loss_coeff=a.vf_coeff,
            use_kl_loss=a.kl_coeff > 0,
            kl_coeff=a.kl_coeff,
            grad_clip=a.grad_clip,
            grad_clip_by="global_norm",
            num_epochs=a.epochs,
            # RLlib's batch sizes are per learner; the config's are global: with N data-parallel
            # learners (gradients averaged) each takes 1/N of the batch and of every minibatch.
            minibatch_size=max(1, a.minibatch_size // max(1, num_learners)),
            train_batch_size_per_learner=max(1, a.train_batch_size // max(1, num_learners)),
        )
        .learners(num_learners=num_learners, num_gpus_per_learner=r.num_gpus_per_learner,
                  learner_class=_learner_class(t.lean_learner),
                  num_cpus_per_learner=r.num_cpus_per_learner if num_learners else 1,
                  # Local learner: runners ship PackedEpisodes and SpadeGAEConnector is the whole pipeline.
                  add_default_connectors_to_learner_pipeline=num_learners > 0,
                  learner_connector=(None if num_learners > 0 else
                                     functools.partial(_make_gae_connector, gamma=a.gamma, lambda_=a.lambda_)))
        .debugging(seed=cfg.experiment.seed, log_level="WARN")
        .fault_tolerance(restart_failed_env_runners=True)
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
    return config


class SpadePPO(PPO):
    """PPO with driver components, per-opponent outcome metrics and in-runner evaluation."""

    # ------------------------------------------------------------------ setup
    def setup(self, config) -> None:
        import torch

        spade = RunnerSpec.from_mapping(config.env_config[RUNNER_SPEC_KEY])
        self.run_config: RunConfig = parse_config(spade.run_config)
        super().setup(config)
        threads = self.run_config.training.torch_threads or min(4, os.cpu_count() or 1)
        torch.set_num_threads(threads)  # the local learner; env runners act single-threaded
        self.env_info = describe_env(self.run_config)
        self.components = build_components(self.run_config, self.env_info)
        self._in_flight: set = set()  # remote runner ids with a sample-ahead request in flight
        self._pending_outcomes: list = []
        self._reset_modules: set = set()  # modules re-initialised since the in-flight samples were launched
        self._last_eval: dict = self._eval_placeholders("eval") if self.run_config.evaluation.interval else {}
        from spade_rllib.rllib.periodic_heldout_eval import make_heldout_evaluator

        self.heldout = make_heldout_evaluator(self.run_config, config, self.env_info)  # held-out maps, in a Ray task
        self._spade_metrics: dict = {}
        self.phases = PhaseClock()  # wall seconds per phase of the iteration: spade/phase_s/<phase>
        for comp in self.components:
            self._spade_metrics.update(getattr(comp, "initial_metrics", lambda: {})())
        self.broadcast(full=True)
        if spade.runinfo:
            trial_dir = self.trial_dir()
            if trial_dir is not None:
                _write_runinfo(trial_dir, spade.runinfo, self.run_config)
        if spade.restore_from:
            logger.info("restoring from %s", spade.restore_from)
            self.restore_from_path(spade.restore_from)

    def trial_dir(self) -> Optional[Path]:
        """The Tune trial directory under the storage path (local storage), else the logdir."""
        storage = getattr(self, "_storage", None)
        if storage is not None and getattr(storage, "trial_fs_path", None):
            p = Path(storage.trial_fs_path)
            if p.is_absolute():
                return p
        return Path(self.logdir) if getattr(self, "logdir", None) else None

    # ------------------------------------------------------------------ per iteration
    def _sample_ahead_on(self) -> bool:
        return bool(self.run_config.training.sample_ahead) and self.env_runner_group.num_remote_env_runners() > 0

    def training_step(self) -> None:
        """PPO's step (sample -> learn -> weight sync), each part timed into `self.phases`.

        With `training.sample_ahead` the remote runners sample the next batch while the learner
        updates on this one (policy lag of one iteration; PPO's ratio uses the behaviour policy's
        logp recorded by the runner, so the clipped objective stays correct). Without it this is
        PPO's own `training_step` (RLlib 2.60), restated so the phases can be timed apart."""
        with self.phases.phase("sample_wait"), self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if self._sample_ahead_on():
                episodes, runner_metrics, outcomes = self._collect_sampled_ahead()
                self._pending_outcomes.extend(outcomes)
                if self._reset_modules:
                    # Sampled by the weights a module had before its reset: its new weights never acted
                    # there, so PPO's ratio would compare unrelated policies. Drop that module's share.
                    episodes = [e for e in episodes if getattr(e, "module_id", MAIN) not in self._reset_modules]
                    self._reset_modules = set()
            else:
                episodes, runner_metrics = synchronous_parallel_sample(
                    worker_set=self.env_runner_group, max_env_steps=self.config.total_train_batch_size,
                    sample_timeout_s=self.config.sample_timeout_s, _uses_new_env_runners=True, _return_metrics=True)
            if not episodes:
                return None
            self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        with self.phases.phase("learn"), self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.update_learners(episodes, num_epochs=self.config.num_epochs,
                                                   minibatch_size=self.config.minibatch_size)
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with self.phases.phase("weight_sync"), self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            # With sample-ahead: queued behind the in-flight sample on each runner (the round after next uses them).
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=set(learner_results[0].keys()) - {ALL_MODULES},
                inference_only=True,
            )
        return None

    def update_learners(self, episodes: list, num_epochs: int, minibatch_size: Optional[int]) -> list:
        """One PPO update of the learner group on `episodes` (RLlib's results list). Several learners
        get every module's episodes split evenly and the same minibatch count (`sharding.py`);
        `minibatch_size` is per learner, None = one step on each learner's whole share."""
        timesteps = {
            NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0),
            NUM_MODULE_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME), default=0),
        }
        data: dict = {"episodes": episodes}
        if len(self.learner_group) > 1:
            from spade_rllib.rllib.sharding import ModuleShardedTrainingData

            data = {"training_data": ModuleShardedTrainingData(episodes=episodes)}
        return self.learner_group.update(**data, timesteps=timesteps, num_epochs=num_epochs,
                                         minibatch_size=minibatch_size,
                                         shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch)

    def _collect_sampled_ahead(self) -> tuple[list, list, list]:
        """Results of the in-flight sampling round (waiting for it), then launch the next round."""
        group = self.env_runner_group
        if not self._in_flight:
            self._launch_samples()
        episodes: list = []
        metrics: list = []
        outcomes: list = []
        deadline = time.time() + float(self.config.sample_timeout_s or 600.0)
        while self._in_flight and time.time() < deadline:
            for actor_id, (eps, met, outs) in group.fetch_ready_async_reqs(tags=SAMPLE_TAG, timeout_seconds=0.05):
                self._in_flight.discard(actor_id)
                episodes.extend(eps)
                metrics.append(met)
                outcomes.extend(outs)
            self._in_flight &= set(group.healthy_env_runner_ids())  # a runner that died will not answer
        self._in_flight.clear()
        self._launch_samples()
        return episodes, metrics, outcomes

    def _launch_samples(self) -> None:
        group = self.env_runner_group
        ids = [i for i in group.healthy_env_runner_ids() if i not in self._in_flight]
        if not ids:
            return
        steps = max(1, -(-self.config.total_train_batch_size // max(1, len(group.healthy_env_runner_ids()))))
        group.foreach_env_runner_async(lambda r: r.sample_with_outcomes(steps), tag=SAMPLE_TAG, remote_worker_ids=ids)
        self._in_flight.update(ids)

    def step(self) -> dict:
        t0 = time.perf_counter()
        clock = self.phases
        trained_with = self.learner_hyperparams()  # read before the update: the values it trains with
        results = super().step()  # training_step times sample_wait, learn and weight_sync
        lifetime = self.__dict__.setdefault("_trained_lifetime", {})  # NaN stops here
        check_losses(trained_now(results.get("learners") or {}, lifetime), self.iteration + 1)
        with clock.phase("outcomes"):
            outcomes = self._gather_outcomes()
            metrics: dict[str, Any] = {}
            if self.env_info.roles:  # "train/<role>/...": each role's main, with its mean return
                for module_id, role in self._role_modules():
                    metrics.update(role_metrics([o for o in outcomes if o.learner == module_id], f"train/{role}"))
            else:
                # "train/<opponent>/..." is main's view; exploiters' games reach the league's metrics only.
                main_outcomes = [o for o in outcomes if o.learner == MAIN]
                metrics.update(win_rates(main_outcomes, "train"))
                metrics.update(counter_means(main_outcomes))  # CTF: counters/tags, counters/captures, ... (main's side)
        with clock.phase("components"):
            ctx = DriverContext(
                iteration=self.iteration + 1,
                env_steps_lifetime=int(self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)),
                main_weights=self.main_weights,
                num_runners=self.env_runner_group.num_remote_env_runners(),
                module_weights=self.module_weights,
                reset_module=self.reset_module,
                level_value_loss=self._pop_level_value_loss(),
            )
            for comp in self.components:
                with clock.phase(COMPONENT_PREFIX + comp.name):
                    metrics.update(comp.update(outcomes, ctx) or {})
            with clock.phase(COMPONENT_PREFIX + "broadcast"):
                self.broadcast(full=False)
        ev = self.run_config.evaluation
        if ev.interval and (self.iteration + 1) % ev.interval == 0:
            with clock.phase("evaluation"):
                self._last_eval = self.evaluate_main(ev.opponents, ev.games, greedy=ev.greedy)
        # Training W/D/L describes this iteration only: an opponent not met this time keeps its
        # column (progress.csv needs stable columns) but reads NaN with 0 games, not last time's.
        for key in self._spade_metrics:
            if key.startswith("train/") and key not in metrics:
                metrics[key] = 0.0 if key.endswith("/games") else math.nan
        self._spade_metrics.update(metrics)
        _nest_into(results, self._spade_metrics)
        _nest_into(results, self._last_eval)
        if self.heldout is not None:
            with clock.phase("heldout"):
                _nest_into(results, self.heldout.step(self.iteration + 1, self.main_weights))
        _nest_into(results, {f"learners/{self._first_module}/trained_with/{k}": v for k, v in trained_with.items()})
        driver_s = time.perf_counter() - t0
        results.setdefault("spade", {})["driver_s"] = driver_s
        # The checkpoint Tune wrote after the previous iteration, charged to this one (its wall time
        # falls between two steps, outside `driver_s`).
        _nest_into(results, {f"spade/phase_s/{k}": v for k, v in clock.pop(driver_s + clock.seconds.get("checkpoint", 0.0)).items()})
        return results

    def evaluate_main(self, opponents: list, games: int, greedy: bool = False, levels: Optional[list] = None,
                      prefix: str = "eval") -> dict:
        """Play `games` games per opponent (and per level) on the env runners; flat metrics with `prefix`.
        A role game evaluates each role's main (`<prefix>/<role>/<opponent>/...`, with `return_mean`)."""
        spec = {"opponents": list(opponents), "games": int(games), "greedy": greedy, "levels": levels}
        if not self.env_info.roles:
            outcomes = self.run_on_runners_for_eval(spec)
            out = placeholder_win_rates(opponents, prefix)
            out.update(win_rates(outcomes, prefix))
            return out
        out = {}
        for module_id, role in self._role_modules():
            out.update(placeholder_win_rates(opponents, f"{prefix}/{role}"))
            out.update(role_metrics(self.run_on_runners_for_eval({**spec, "learner": module_id}), f"{prefix}/{role}",
                                    opponents))
        return out

    def _role_modules(self) -> list[tuple[str, str]]:
        """(module id, role) of each role's main, in role order (empty in a symmetric game)."""
        from spade_rllib.games.roles import role_of_module

        return [(m, role_of_module(m)) for m in self.env_info.role_modules()]

    @property
    def _first_module(self) -> str:
        """main, or the first role's main in a role game."""
        return learner_module_ids(self.run_config, self.env_info)[0]

    def _eval_placeholders(self, prefix: str) -> dict:
        opponents = self.run_config.evaluation.opponents
        if not self.env_info.roles:
            return placeholder_win_rates(opponents, prefix)
        out = {}
        for _, role in self._role_modules():
            out.update(placeholder_win_rates(opponents, f"{prefix}/{role}"))
            out.update({f"{prefix}/{role}/{opp}/return_mean": math.nan for opp in opponents})
        return out

    def run_on_runners_for_eval(self, spec: dict) -> list:
        """Outcome records of evaluation games split over the env runners (local runner when none)."""
        group = self.env_runner_group
        n = group.num_healthy_remote_workers()
        if n == 0 or (self._sample_ahead_on() and self.env_runner is not None):
            # The local runner (driver process) evaluates while remote runners keep sampling.
            return self.env_runner.evaluate_main({**spec, "share": (0, 1)})
        parts = group.foreach_env_runner(lambda r: r.evaluate_main({**spec, "share": (r.worker_index - 1, n)}), local_env_runner=False)
        return [rec for part in parts for rec in part]

    def _gather_outcomes(self) -> list:
        if self._sample_ahead_on():
            out, self._pending_outcomes = self._pending_outcomes, []
            return out
        group = self.env_runner_group
        local = group.num_remote_env_runners() == 0
        parts = group.foreach_env_runner(lambda r: r.pop_episode_outcomes(), local_env_runner=local)
        return [rec for part in parts for rec in (part or [])]

    def main_weights(self) -> dict:
        """The learner's copy of main's weights (numpy state dict; the first role's main in a role game)."""
        return self.module_weights(self._first_module)

    def _pop_level_value_loss(self) -> dict:
        """Per-level (sum of max(GAE, 0), steps) of main's experience since the last call, summed over learners."""
        from spade_rllib.rllib.packed import merge_level_sums, pop_level_value_loss

        total: dict = {}
        for part in self.learner_group.foreach_learner(pop_level_value_loss):
            merge_level_sums(total, part.get())
        return total

    def module_weights(self, module_id: str) -> dict:
        """Numpy state dict (inference-only) of a trained module, from the learner."""
        state = self.learner_group.get_state(components=f"learner/rl_module/{module_id}", inference_only=True)
        return state["learner"]["rl_module"][module_id]

    def reset_module(self, module_id: str, seed: int) -> None:
        """Re-initialise a trained module: seeded fresh weights and optimizer state on every learner,
        pushed to the env runners now (the next sample acts with them)."""
        import torch

        spec = self.config.get_multi_rl_module_spec().rl_module_specs[module_id]
        with torch.random.fork_rng():
            torch.manual_seed(int(seed))
            fresh = spec.build().get_state()
        self.load_module_weights(module_id, fresh)

    def load_main_weights(self, weights: dict) -> None:
        """`load_module_weights` for main (the first role's main in a role game): e.g. a learner that starts
        from a trained main's weights (`main_weights()`)."""
        self.load_module_weights(self._first_module, weights)

    def load_module_weights(self, module_id: str, weights: dict) -> None:
        """Set a trained module's weights (a state dict, numpy or torch) on every learner, with a fresh
        optimizer state, and push them to the env runners now (the next sample acts with them)."""
        def reset(learner) -> None:
            learner.module[module_id].set_state(weights)
            for _, optimizer in learner.get_optimizers_for_module(module_id):
                optimizer.state.clear()  # Adam's moments belong to the old weights

        self.learner_group.foreach_learner(reset)
        # RLlib's sync_weights would not do: runners skip states whose weights_seq_no they have seen,
        # and a load does not advance the learner's.
        pushed = self.module_weights(module_id)
        self._on_all_runners(lambda r: r.set_module_weights(module_id, pushed), tag="spade_update")
        if self._sample_ahead_on():
            self._reset_modules.add(module_id)

    def _runner_update(self, full: bool) -> Optional[DriverUpdate]:
        update: Optional[DriverUpdate] = None
        for comp in self.components:
            u = comp.runner_update(full)
            if u is not None:
                update = u if update is None else update.merged(u)
        return update

    def broadcast(self, full: bool) -> None:
        """Send the merged `DriverUpdate` of all components to every env runner (local included)."""
        update = self._runner_update(full)
        if update is not None:
            self._on_all_runners(lambda r: r.apply_driver_update(update), tag="spade_update")

    # Checkpoints pickle this class by value (class_and_ctor_args.pkl names its methods), so the
    # names older checkpoints hold must keep resolving after a rename.
    _broadcast = broadcast
    _main_weights = main_weights

    def _on_all_runners(self, fn, tag: str) -> None:
        """Run `fn(runner)` on every env runner, the local one included.

        The remote runners get `fn` by reference: it (with what it holds: slot weights, the level
        source) is serialized into the object store once, and each runner's call carries only the
        ObjectRef, which Ray resolves before the call. Passing `fn` itself would serialize it once
        per runner (bench/driver_scale.py: ~1.2 ms per runner per broadcast, docs/scaling.md)."""
        group = self.env_runner_group
        if group.num_remote_env_runners() == 0:
            group.foreach_env_runner(fn, local_env_runner=True)
            return
        import ray

        if self.env_runner is not None:
            fn(self.env_runner)
        shared = ray.put(fn)
        if self._sample_ahead_on():
            # Fire-and-forget, queued behind the in-flight sample (a blocking call would wait for it).
            group.foreach_env_runner_async_fetch_ready(shared, tag=tag, timeout_seconds=0.0)
            return
        group.foreach_env_runner(shared, local_env_runner=False)

    def learner_hyperparams(self) -> dict:
        """main's lr (the torch optimizer's), entropy coeff and clip param, read from the (first) learner.

        Reported as "learners/main/trained_with/{lr,entropy_coeff,clip_param}", read before each
        update: sweeps (PBT) check that perturbed values really reach the learner.
        """
        first = self._first_module

        def read(learner) -> dict:
            optims = learner.get_optimizers_for_module(first)
            scheds = getattr(learner, "entropy_coeff_schedulers_per_module", None)
            ent = scheds[first] if scheds is not None else None  # a LambdaDefaultDict: built from the config on first use
            return {
                "lr": float(optims[0][1].param_groups[0]["lr"]) if optims else math.nan,
                "entropy_coeff": float(ent.get_current_value()) if ent is not None else math.nan,
                "clip_param": float(learner.config.get_config_for_module(first).clip_param),
            }

        for res in self.learner_group.foreach_learner(read):
            return res.get()
        return {}

    # ------------------------------------------------------------------ restarts, checkpoints
    def restore_env_runners(self, env_runner_group) -> list:
        restored = super().restore_env_runners(env_runner_group)
        if restored and env_runner_group is self.env_runner_group:
            # The actor manager dropped their queued requests when it marked them unhealthy
            # (FaultTolerantActorManager.set_actor_state): a sample-ahead request sent before the
            # restart will never answer, and waiting for it would stall until sample_timeout_s.
            self._in_flight.difference_update(restored)
            update = self._runner_update(full=True)
            if update is not None:
                env_runner_group.foreach_env_runner(lambda r: r.apply_driver_update(update), local_env_runner=False,
                                                    remote_worker_ids=restored)
        return restored

    def restore_from_path(self, path, *args, **kwargs):
        super().restore_from_path(path, *args, **kwargs)
        # The checkpoint's torch optimizer state carries the lr it was saved with (param_groups) and
        # RLlib re-applies the config's lr only after the next update, so the first iteration after a
        # restore would train with the old lr (e.g. a PBT donor's). Re-apply this run's lr now.
        self.learner_group.foreach_learner(_reapply_config_lr)

    def save_checkpoint(self, checkpoint_dir):
        """Refuse to write a checkpoint whose trained weights hold NaN/inf."""
        with self.phases.phase("checkpoint"):
            check_weights({m: self.module_weights(m) for m in learner_module_ids(self.run_config, self.env_info)},
                          self.iteration)
            return super().save_checkpoint(checkpoint_dir)

    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(COMPONENTS_STATE_KEY, components, not_components):
            state[COMPONENTS_STATE_KEY] = {c.name: c.state_dict() for c in getattr(self, "components", [])}
        return state

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        self._trained_lifetime = {}  # the restored counters may be lower: start the NaN check afresh
        saved = state.get(COMPONENTS_STATE_KEY)
        if saved:
            for comp in self.components:
                if comp.name in saved:
                    comp.load_state_dict(saved[comp.name])
            self.broadcast(full=True)

    def cleanup(self) -> None:
        """End of run (Tune stop / `algo.stop()`): components with `finish(trial_dir)` write their files
        (the league's league.csv)."""
        if getattr(self, "heldout", None) is not None:
            self.heldout.stop()
        trial_dir = self.trial_dir()
        for comp in getattr(self, "components", []):
            finish = getattr(comp, "finish", None)
            if finish is not None:
                try:
                    finish(trial_dir)
                except Exception:
                    logger.exception("component %s: finish(%s) failed", comp.name, trial_dir)
        super().cleanup()


def _reapply_config_lr(learner) -> None:
    """Set every optimizer's lr to its lr scheduler's current value (the run config's lr)."""
    for optimizer in learner._named_optimizers.values():
        schedule = learner._optimizer_lr_schedules.get(optimizer)
        if schedule is not None:
            learner._set_optimizer_lr(optimizer, float(schedule.get_current_value()))


def role_metrics(outcomes: list, prefix: str, opponents: Optional[list] = None) -> dict:
    """A role main's W/D/L per opponent (`win_rates`) plus its mean return, per opponent and over all
    (`<prefix>/return_mean`, `<prefix>/episodes`): role games are read by their returns."""
    out = win_rates(outcomes, prefix)
    by_opponent: dict[str, list[float]] = {str(o): [] for o in (opponents or [])}
    for o in outcomes:
        by_opponent.setdefault(str(o.opponent), []).append(float(o.learner_return))
    for opp, values in by_opponent.items():
        out[f"{prefix}/{opp}/return_mean"] = float(np.mean(values)) if values else math.nan
    every = [float(o.learner_return) for o in outcomes]
    out[f"{prefix}/return_mean"] = float(np.mean(every)) if every else math.nan
    out[f"{prefix}/episodes"] = float(len(every))
    return out


def _nest_into(results: dict, flat: dict) -> None:
    """Put "a/b/c" keys into results["a"]["b"]["c"] (Tune flattens them back to "a/b/c")."""
    for key, value in flat.items():
        parts = key.split("/")
        node = results
        for p in parts[:-1]:
            nxt = node.get(p)
            if not isinstance(nxt, dict):
                nxt = {}
                node[p] = nxt
            node = nxt
        node[parts[-1]] = float(value) if isinstance(value, (int, float, np.floating, np.integer)) else value


def _write_runinfo(logdir: Path, runinfo: dict, cfg: RunConfig) -> None:
    from spade_rllib.config import dump_config

    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "config.yaml").write_text(dump_config(cfg))
    (logdir / "runinfo.json").write_text(json.dumps(runinfo, indent=2, sort_keys=True, default=str))


def main_win_rate(result: dict, opponent: str = "random", prefix: str = "eval") -> float:
    """Main's win rate vs `opponent` in a (nested) result dict, NaN when absent."""
    try:
        return float(result[prefix][opponent]["win_rate"])
    except (KeyError, TypeError):
        return math.nan
