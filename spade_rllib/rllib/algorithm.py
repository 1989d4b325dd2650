"""`SpadePPO`: PPO with driver components, per-opponent outcome metrics and in-runner evaluation.

`SpadePPO` adds to PPO, once per iteration (after PPO's own sample -> learn -> weight sync):
  * driver components (`spade_rllib.rllib.components`): drain episode outcomes from all env
    runners, update the components, broadcast their `DriverUpdate`s;
  * metrics (`spade_rllib.rllib.metrics`): main's W/D/L per opponent over this iteration's training
    episodes under "spade/train/<opponent>/win_rate", component metrics ("league/size",
    "curriculum/difficulty"), and every `evaluation.interval` iterations an evaluation against
    `evaluation.opponents` under "eval/<opponent>/win_rate" (games played inside the env runners, off the learner);
  * checkpoint state: `get_state()` / `set_state()` carry every component's `state_dict()` under
    "spade_components", so `--resume` and `Algorithm.from_checkpoint` bring them back;
  * env runner restarts: restored runners get every component's full state again;
  * restores (`--resume`, a trial retry under `training.max_failures`): a checkpoint that lost a file the
    restore reads is replaced by the newest whole one before it, with a note (`checkpoint_layout.restorable_checkpoint`);
  * module resets: a component may ask (`DriverContext.reset_module`) for a trained module to be
    re-initialised (a main exploiter after each of its snapshots): fresh weights from a seeded
    init, a fresh optimizer state, pushed to the runners at once.

The `PPOConfig` whose algo class is `SpadePPO` is built by `spade_rllib.rllib.algo_config.build_algo_config`.

Why these concepts share one class: each is a hook RLlib calls on the `Algorithm` itself (`setup`,
`training_step`, `step`, `save_checkpoint`, `get_state` / `set_state`, `restore_from_path`,
`restore_env_runners`, `cleanup`), so the override must be a method here, and `step` is where one iteration's
pieces meet in order. Each method only sequences; the work lives in the module of its concept: the components
(`components`, `league_component`, `curriculum_component`), the metrics (`metrics`), the runners' evaluation
games (`evaluation_runner`), health checks (`health`), the phase clock (`training.phases`), the checkpoint
names (`artifacts.checkpoint_layout`) and the run's `runinfo.json` (`artifacts.provenance.write_runinfo`).
The class's path is pickled into every checkpoint (`class_and_ctor_args.pkl`), so it stays in this module.
"""
from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

from ray.rllib.algorithms.ppo import PPO
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

from spade_rllib.artifacts.checkpoint_layout import COMPONENTS_STATE_KEY
from spade_rllib.artifacts.provenance import write_runinfo
from spade_rllib.config.run_config import RunConfig, dump_config, parse_config
from spade_rllib.core.outcome import MAIN
from spade_rllib.training.phases import COMPONENT_PREFIX, PhaseClock
from spade_rllib.rllib.component_registry import build_components
from spade_rllib.rllib.components import DriverContext, DriverUpdate
from spade_rllib.rllib.env_description import describe_env
from spade_rllib.rllib.health import check_losses, check_weights, trained_now
from spade_rllib.rllib.metrics import counter_means, nest_into, placeholder_win_rates, role_metrics, win_rates
from spade_rllib.rllib.model_config import learner_module_ids
from spade_rllib.rllib.plan import RUNNER_SPEC_KEY, RunnerSpec
from spade_rllib.rllib import torch_determinism

torch_determinism.install()  # RLlib seeds torch in every process: skip the Inductor import (module docstring)

logger = logging.getLogger(__name__)

SAMPLE_TAG = "spade_sample_ahead"


# The algo config `build_algo_config` makes holds these three by reference (module and name), and
# checkpoints pickle that config: they stay in this module so saved checkpoints keep loading.
def _policy_mapping_fn(agent_id, episode, **kwargs):
    return MAIN


def _role_policy_mapping(modules: dict, agent_id, episode=None, **kwargs):
    return modules[agent_id]


def _make_gae_connector(input_observation_space, input_action_space, *, gamma: float, lambda_: float):
    from spade_rllib.rllib.packed import SpadeGAEConnector

    return SpadeGAEConnector(input_observation_space, input_action_space, gamma=gamma, lambda_=lambda_)


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
                write_runinfo(trial_dir, spade.runinfo, dump_config(self.run_config))
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
        nest_into(results, self._spade_metrics)
        nest_into(results, self._last_eval)
        if self.heldout is not None:
            with clock.phase("heldout"):
                nest_into(results, self.heldout.step(self.iteration + 1, self.main_weights))
        nest_into(results, {f"learners/{self._first_module}/trained_with/{k}": v for k, v in trained_with.items()})
        driver_s = time.perf_counter() - t0
        results.setdefault("spade", {})["driver_s"] = driver_s
        # The checkpoint Tune wrote after the previous iteration, charged to this one (its wall time
        # falls between two steps, outside `driver_s`).
        nest_into(results, {f"spade/phase_s/{k}": v for k, v in clock.pop(driver_s + clock.seconds.get("checkpoint", 0.0)).items()})
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
        per runner (bench/speed/driver_scale.py: ~1.2 ms per runner per broadcast, docs/scaling.md)."""
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
        if kwargs.get("component") is None:  # a whole checkpoint: the newest whole one if it lost a file
            from spade_rllib.artifacts.checkpoint_layout import restorable_checkpoint

            path = str(restorable_checkpoint(path))
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


