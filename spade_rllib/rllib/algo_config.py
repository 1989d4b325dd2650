"""`build_algo_config(run_config)`: the validated `RunConfig` as a `PPOConfig` whose algo class is `SpadePPO`.

The config holds the trained module "main" (`SpadeModule`; one `main_<role>` per role in a role game),
one more per league exploiter ("main_exploiter_<i>", "league_exploiter_<i>"), and the vectorized
`SpadeEnvRunner`. Checkpoints hold `learner_group/learner/rl_module/<module>`.
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from spade_rllib.config.run_config import RunConfig, resolved_env_of
from spade_rllib.rllib.algorithm import SpadePPO, _make_gae_connector, _policy_mapping_fn, _role_policy_mapping
from spade_rllib.rllib.components import SelfPlayComponent
from spade_rllib.rllib.env_description import describe_env, env_kwargs_for
from spade_rllib.rllib.lean_learner import MAGNET_KEY, TEACHER_COEFF_KEY
from spade_rllib.rllib.model_config import learner_module_ids, model_config_for
from spade_rllib.rllib.module import SpadeModule
from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, RunnerSpec
from spade_rllib.rllib.runner import SpadeEnvRunner


def _policy_mapping_fn_for(roles: dict):
    """RLlib's agent -> module mapping: "main" for every agent, or each agent's `main_<role>`. (The env
    runner maps agents itself from `RunnerSpec.roles`; RLlib's config gets the same mapping.)"""
    if not roles:
        return _policy_mapping_fn
    from spade_rllib.games.roles import role_module_id

    return functools.partial(_role_policy_mapping, {a: role_module_id(r) for a, r in roles.items()})


def learner_settings(a) -> dict:
    """`learner_config_dict` of the lean learner's own terms (RLlib's public channel for a custom learner's settings):
    the teacher's weight (kickstarting) and the magnet (`agent.magnet_*`), each only when on."""
    out = {}
    if a.teacher:
        out[TEACHER_COEFF_KEY] = ([[int(t), float(v)] for t, v in a.teacher_schedule] if a.teacher_schedule
                                  else float(a.teacher_coeff))
    if a.magnet_coeff > 0:
        out[MAGNET_KEY] = {"coeff": float(a.magnet_coeff), "ema": float(a.magnet_ema)}
    return out


def _learner_class(lean: bool):
    """SpadePPOLearner (RLlib's PPO math, less work per minibatch: lean_learner.py), or RLlib's stock learner."""
    if not lean:
        from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

        return PPOTorchLearner
    from spade_rllib.rllib.lean_learner import SpadePPOLearner

    return SpadePPOLearner


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
        from spade_rllib.core.validation import ConfigError

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
        level_pool=cfg.env.level_pool if (resolved_env_of(cfg).is_level_game and not cfg.env.level_file) else 0,
        random_opening_plies=cfg.env.random_opening_plies,
        eval_random_opening_plies=cfg.evaluation.random_opening_plies,
        learners=tuple(learners),
        roles=dict(info.roles),
        runinfo=runinfo,
        restore_from=restore_from,
        teacher=a.teacher or "",
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
            entropy_coeff=([[int(t), float(v)] for t, v in a.entropy_schedule] if a.entropy_schedule
                           else a.entropy),
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
                  # RLlib's public channel for a custom learner's settings (`learner_settings`).
                  learner_config_dict=learner_settings(a),
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


__all__ = ["build_algo_config"]
