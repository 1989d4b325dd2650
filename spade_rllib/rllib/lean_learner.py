"""`SpadePPOLearner`: RLlib's PPO torch learner with the same math and less work around it.

Why a subclass: on this product's batches (one 4,096-env-step batch, ~7,500 rows, 2 epochs x 4 minibatches, a
small MLP or LSTM on one CPU thread) RLlib's stock `PPOTorchLearner` spends a large share of each update on work
that is not the PPO math (bench/speed/learner_ceiling.py profiles it). This learner keeps RLlib's `Learner.update` loop,
connector, optimizer registry, lr / entropy schedules and result keys, and changes only how the same numbers are
computed:

  * minibatches: the same sequence of minibatches as RLlib's `MiniBatchCyclicIterator` (same cycling, same
    `np.random.permutation` draws, so the same rows in the same order), gathered by index from the unshuffled
    train batch (one `index_select` per column and minibatch) instead of shuffling the whole batch in place every
    epoch (a copy of every column) and slicing + concatenating `SampleBatch`es;
  * loss: PPO's clipped surrogate, clipped value loss and entropy from one `log_softmax` of the logits (the
    categorical distribution's own formulas) instead of two `torch.distributions` objects per minibatch, the
    previous-policy one unused without the KL term; the loss statistics (policy / value loss, explained variance,
    entropy) of the last minibatch are logged once per update (RLlib logs them with window=1 every minibatch,
    so only the last one is ever reported: the results are the same);
  * gradients: the global-norm clip from one multi-tensor norm (`torch._foreach_norm`) and one multi-tensor scale,
    and that norm also tells whether every gradient is finite (a tensor's norm is finite only if all its entries
    are), replacing RLlib's two `isfinite` passes per parameter before the step; any non-finite norm falls back
    to RLlib's own path (zeroing NaN gradients, warnings);
  * Adam with `foreach=True` (torch picks the multi-tensor implementation by default only for CUDA tensors):
    the same update rule in a few kernels instead of ~10 small ops per parameter.
Kickstarting (`agent.teacher`, Schmitt et al. 2018, "Kickstarting Deep Reinforcement Learning"): when the batch has a
`teacher_actions` column (a scripted bot's action in each state the learner acted in, recorded by the env runner), the
loss adds `coeff * cross-entropy(teacher action, policy)` with `coeff` from `learner_config_dict[TEACHER_COEFF_KEY]`
(a number or a schedule over lifetime env steps, like the entropy coefficient); it logs `teacher_loss`,
`teacher_agreement` (share of steps whose most likely action is the teacher's) and `curr_teacher_coeff` per module.
A moving magnet (`agent.magnet_coeff`, magnetic mirror descent, Sokota et al. 2023, with EMAgnet's magnet, Maidment
et al. 2026): with `learner_config_dict[MAGNET_KEY] = {"coeff": c, "ema": t}` each trained module gets a frozen copy,
the magnet, whose weights move toward the module's by `t` after every optimizer step (`torch._foreach_lerp_`); the loss
adds `c * KL(policy || magnet)` over the legal actions (discrete actions; the magnet's logits from its own forward pass
on the minibatch, no gradient). It logs `magnet_kl` and is saved with the learner's state (`MAGNET_STATE_KEY`), so a
restored run goes on with the same magnet.
Anything this learner does not cover (a KL term, a Box action space, other clip modes, lr schedulers, grad
scalers) takes RLlib's stock path. tests/test_learner_numerics.py checks one update against the stock learner:
same loss terms and gradients, same weights after an update of several minibatches (float tolerance), MLP and LSTM.
`training.lean_learner: false` builds RLlib's stock learner instead.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional

import numpy as np

from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator
from ray.rllib.utils.schedules.scheduler import Scheduler
from ray.rllib.utils.torch_utils import explained_variance

torch, nn = try_import_torch()
from spade_rllib.rllib.packed import TEACHER_ACTIONS  # noqa: E402
from spade_rllib.rllib import torch_determinism  # noqa: E402

torch_determinism.install()  # RLlib seeds torch in every process: skip the Inductor import (module docstring)

TEACHER_COEFF_KEY = "teacher_coeff"
"""`learner_config_dict` key of the teacher's weight: a number or [[env steps, weight], ...] (`agent.teacher_*`)."""

MAGNET_KEY = "magnet"
"""`learner_config_dict` key of the magnet: {"coeff": KL weight, "ema": the magnet's step toward the policy}."""
MAGNET_STATE_KEY = "spade_magnet"
"""Key of the magnets' weights in the learner's state: {module id: {parameter name: numpy array}}."""

_NORM_CAP = 10e8  # RLlib's compute_global_norm replaces inf norms by +-1e9 (nan_to_num)


class IndexedCyclicIterator:
    """`MiniBatchCyclicIterator`'s minibatches, gathered by index (see the module docstring).

    Per module: `order` is the current row (or sequence) order; RLlib's in-place `shuffle()` becomes
    `order = order[np.random.permutation(n)]` (the same draw), its slice `batch[s:e]` becomes `order[s:e]`, and a
    minibatch that wraps around an epoch end concatenates index pieces instead of sample batches."""

    def __init__(self, batch: MultiAgentBatch, *, num_epochs: int = 1, minibatch_size: int,
                 shuffle_batch_per_epoch: bool = True, num_total_minibatches: int = 0, **kwargs) -> None:
        self._batch = batch
        self._minibatch_size = minibatch_size
        self._num_epochs = num_epochs
        self._shuffle = shuffle_batch_per_epoch
        self._num_total_minibatches = num_total_minibatches
        mids = list(batch.policy_batches)
        self._start = {m: 0 for m in mids}
        self._covered = {m: 0 for m in mids}
        self._order = {m: np.arange(self._items(batch.policy_batches[m])) for m in mids}
        self._count = 0

    @staticmethod
    def _items(module_batch: SampleBatch) -> int:
        if module_batch._slice_seq_lens_in_B:
            return len(module_batch[SampleBatch.SEQ_LENS])
        return len(module_batch)

    def __iter__(self):
        while ((self._num_total_minibatches == 0 and min(self._covered.values()) < self._num_epochs)
               or (self._num_total_minibatches > 0 and self._count < self._num_total_minibatches)):
            minibatch = {}
            for mid, module_batch in self._batch.policy_batches.items():
                if len(module_batch) == 0:
                    raise ValueError(f"The batch for module_id {mid} is empty!")
                n_items = self._items(module_batch)
                n_steps = self._minibatch_size
                if module_batch._slice_seq_lens_in_B:
                    n_steps = int(n_items * (self._minibatch_size / len(module_batch)))
                s = self._start[mid]
                pieces = []
                while s + n_steps >= n_items:
                    pieces.append(self._order[mid][s:])
                    n_steps -= n_items - s
                    s = 0
                    self._covered[mid] += 1
                    if self._shuffle:
                        self._order[mid] = self._order[mid][np.random.permutation(n_items)]
                e = s + n_steps
                if e > s:
                    pieces.append(self._order[mid][s:e])
                index = torch.from_numpy(np.concatenate(pieces) if len(pieces) > 1 else pieces[0])
                minibatch[mid] = _gather(module_batch, index)
                self._start[mid] = e
            yield MultiAgentBatch(minibatch, len(self._batch))
            self._count += 1


def _masked_mean(batch):
    """The mean over the loss mask's steps (at least one counted), or a plain mean without a mask: for the teacher's
    and the magnet's terms (the PPO terms keep RLlib's own masked mean)."""
    mask = batch.get(Columns.LOSS_MASK)
    if mask is None:
        return torch.mean
    n = torch.clamp(torch.sum(mask), min=1)
    return lambda x: torch.sum(x[mask]) / n


def _take(value, index):
    if isinstance(value, dict):
        return {k: _take(v, index) for k, v in value.items()}
    if torch.is_tensor(value):
        return value.index_select(0, index.to(value.device))
    return np.asarray(value)[index.numpy()]


def _gather(module_batch: SampleBatch, index) -> SampleBatch:
    """Rows (or sequences) `index` of every column, as RLlib's slice + concat would give them."""
    data = {k: _take(v, index) for k, v in module_batch.items()}
    if module_batch.zero_padded:
        return SampleBatch(data, _zero_padded=True, _max_seq_len=module_batch.max_seq_len)
    return SampleBatch(data)


class SpadePPOLearner(PPOTorchLearner):
    """PPO's torch learner, same math, leaner update (see the module docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._loss_stats: Dict[str, dict] = {}  # module -> the last minibatch's loss statistics (tensors)
        self._grad_norms: Dict[str, tuple] = {}  # module -> (optimizer name, global norm) of the last minibatch
        self._grads_finite: Dict[str, Optional[bool]] = {}  # module -> all gradients finite (None: not checked)
        self._teacher_stats: Dict[str, dict] = {}  # module -> the last minibatch's teacher loss and agreement
        self._teacher_coeff: Dict[str, Scheduler] = {}  # module -> the teacher's weight (kickstarting only)
        self._magnet_cfg: Optional[tuple] = None  # (KL weight, EMA step) when agent.magnet_coeff > 0
        self._magnets: Dict[str, Any] = {}  # module -> its magnet (a frozen copy, weights an EMA of the module's)
        self._magnet_stats: Dict[str, Any] = {}  # module -> the last minibatch's KL to the magnet

    def build(self) -> None:
        super().build()
        coeff = (self.config.learner_config_dict or {}).get(TEACHER_COEFF_KEY)
        if coeff is not None:
            self._teacher_coeff = {module_id: Scheduler(fixed_value_or_schedule=coeff, framework=self.framework,
                                                        device=self._device)
                                   for module_id in self.module.keys()}
        magnet = (self.config.learner_config_dict or {}).get(MAGNET_KEY)
        if magnet:
            self._magnet_cfg = (float(magnet["coeff"]), float(magnet["ema"]))

    # ---- the magnet
    def _magnet_for(self, module_id):
        """The module's magnet, made on first use from its current weights (or from a restored state)."""
        magnet = self._magnets.get(module_id)
        if magnet is None:
            magnet = copy.deepcopy(self.module[module_id].unwrapped())
            for p in magnet.parameters():
                p.requires_grad_(False)
            self._magnets[module_id] = magnet
        return magnet

    def _magnet_loss(self, module_id, batch: Dict[str, Any], logp_all, mean):
        """`coeff * KL(policy || magnet)` over the legal actions (0 without a magnet)."""
        if not self._magnet_cfg:
            return 0.0
        with torch.no_grad():
            m_logits = self._magnet_for(module_id).forward_train(batch)[Columns.ACTION_DIST_INPUTS]
            logm = m_logits - m_logits.logsumexp(dim=-1, keepdim=True)
        low = torch.finfo(logp_all.dtype).min  # masked actions: probability 0, both log-probs clamped alike
        kl = (torch.softmax(logp_all, -1) * (torch.clamp(logp_all, min=low) - torch.clamp(logm, min=low))).sum(-1)
        kl_mean = mean(kl)
        self._magnet_stats[module_id] = kl_mean.detach()
        return self._magnet_cfg[0] * kl_mean

    def _step_magnets(self) -> None:
        """After an optimizer step: each magnet's weights move `ema` of the way to its module's."""
        with torch.no_grad():
            for module_id, magnet in self._magnets.items():
                torch._foreach_lerp_(list(magnet.parameters()),
                                     [p.detach() for p in self.module[module_id].unwrapped().parameters()],
                                     self._magnet_cfg[1])

    def get_state(self, components=None, *, not_components=None, **kwargs):
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._magnets and self._check_component(MAGNET_STATE_KEY, components, not_components):
            state[MAGNET_STATE_KEY] = {mid: {k: v.detach().cpu().numpy().copy() for k, v in m.state_dict().items()}
                                       for mid, m in self._magnets.items()}
        return state

    def set_state(self, state) -> None:
        super().set_state(state)
        for module_id, weights in (state.get(MAGNET_STATE_KEY) or {}).items():
            if module_id in self.module.keys():
                self._magnets.pop(module_id, None)
                self._magnet_for(module_id).load_state_dict({k: torch.as_tensor(v) for k, v in weights.items()})

    # ---- optimizer
    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(module_id=module_id, optimizer=torch.optim.Adam(params, foreach=True), params=params,
                                lr_or_lr_schedule=config.lr)

    # ---- minibatches
    def _create_iterator_if_necessary(self, *, training_data, num_total_minibatches: int = 0, num_epochs: int = 1,
                                      minibatch_size: Optional[int] = None, shuffle_batch_per_epoch: bool = False,
                                      **kwargs):
        # RLlib 2.60 has no public hook for the minibatch iterator; this private method is where the Learner picks
        # it. Everything except "minibatches of a given size over an in-memory batch" stays RLlib's.
        it = super()._create_iterator_if_necessary(
            training_data=training_data, num_total_minibatches=num_total_minibatches, num_epochs=num_epochs,
            minibatch_size=minibatch_size, shuffle_batch_per_epoch=shuffle_batch_per_epoch, **kwargs)
        if type(it) is not MiniBatchCyclicIterator:
            return it
        return IndexedCyclicIterator(it._batch, num_epochs=num_epochs, minibatch_size=it._minibatch_size,
                                     shuffle_batch_per_epoch=it._shuffle_batch_per_epoch,
                                     num_total_minibatches=num_total_minibatches)

    # ---- loss
    def compute_loss_for_module(self, *, module_id, config, batch: Dict[str, Any], fwd_out: Dict[str, Any]):
        module = self.module[module_id].unwrapped()
        if config.use_kl_loss or getattr(module, "continuous", True) or not config.use_critic:
            total = super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
            if not self._teacher_coeff and not self._magnet_cfg:  # no log-softmax here unless a term needs it
                return total
            logp_all = fwd_out[Columns.ACTION_DIST_INPUTS].log_softmax(-1)
            return (total + self._teacher_loss(module_id, batch, logp_all)
                    + self._magnet_loss(module_id, batch, logp_all, _masked_mean(batch)))
        mask = batch.get(Columns.LOSS_MASK)
        if mask is not None:
            num_valid = torch.sum(mask)

            def mean(x):
                return torch.sum(x[mask]) / num_valid
        else:
            mean = torch.mean
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        # torch.distributions.Categorical: logits normalized by logsumexp, log-prob gathered, entropy over
        # clamp(logits, finfo.min) * softmax (the clamp keeps masked -inf-like logits from giving 0 * inf).
        logp_all = logits - logits.logsumexp(dim=-1, keepdim=True)
        logp = logp_all.gather(-1, batch[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
        entropy = -(torch.clamp(logp_all, min=torch.finfo(logp_all.dtype).min) * torch.softmax(logp_all, -1)).sum(-1)
        ratio = torch.exp(logp - batch[Columns.ACTION_LOGP])
        adv = batch[Postprocessing.ADVANTAGES]
        surrogate = torch.min(adv * ratio, adv * torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param))
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(values - batch[Postprocessing.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total = mean(-surrogate + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * entropy)
        total = total + self._teacher_loss(module_id, batch, logp_all) + self._magnet_loss(module_id, batch, logp_all,
                                                                                            mean)
        self._loss_stats[module_id] = {"mean": mean, "surrogate": surrogate.detach(), "vf": vf_loss.detach(),
                                       "vf_clipped": vf_loss_clipped.detach(), "entropy": entropy.detach(),
                                       "values": values.detach(), "targets": batch[Postprocessing.VALUE_TARGETS]}
        return total

    def _teacher_loss(self, module_id, batch: Dict[str, Any], logp_all):
        """Kickstarting: the teacher's weight times the mean cross-entropy of the policy to the teacher's actions
        (0 without a teacher column or weight)."""
        teacher = batch.get(TEACHER_ACTIONS)
        scheduler = self._teacher_coeff.get(module_id)
        if teacher is None or scheduler is None:
            return 0.0
        teacher = teacher.long()
        ce = -logp_all.gather(-1, teacher.unsqueeze(-1)).squeeze(-1)
        agree = (logp_all.argmax(-1) == teacher).float()
        mean = _masked_mean(batch)
        ce_mean, agree_mean = mean(ce), mean(agree)
        self._teacher_stats[module_id] = {"loss": ce_mean.detach(), "agreement": agree_mean.detach()}
        return scheduler.get_current_value() * ce_mean

    def _log_loss_stats(self) -> None:
        """The last minibatch's loss statistics, as PPOTorchLearner logs them (window=1) every minibatch."""
        with torch.no_grad():
            for module_id, s in self._loss_stats.items():
                mean = s["mean"]
                self.metrics.log_dict({
                    POLICY_LOSS_KEY: -mean(s["surrogate"]),
                    VF_LOSS_KEY: mean(s["vf_clipped"]),
                    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean(s["vf"]),
                    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(s["targets"], s["values"]),
                    ENTROPY_KEY: mean(s["entropy"]),
                    LEARNER_RESULTS_KL_KEY: torch.tensor(0.0, device=s["values"].device),
                }, key=module_id, window=1)
            for module_id, (name, norm) in self._grad_norms.items():
                self.metrics.log_value(key=(module_id, f"gradients_{name}_global_norm"), value=norm, window=1)
            for module_id, t in self._teacher_stats.items():
                self.metrics.log_dict({"teacher_loss": t["loss"], "teacher_agreement": t["agreement"]},
                                      key=module_id, window=1)
            for module_id, kl in self._magnet_stats.items():
                self.metrics.log_value(key=(module_id, "magnet_kl"), value=kl, window=1)
        self._teacher_stats = {}
        self._magnet_stats = {}
        self._loss_stats = {}
        self._grad_norms = {}

    def before_gradient_based_update(self, *, timesteps: Dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        # The teacher's weight at this update's env steps (also the first update after a restore or a PBT exploit,
        # which would otherwise use the schedule's first value once).
        for scheduler in self._teacher_coeff.values():
            scheduler.update(timestep=timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))

    def after_gradient_based_update(self, *, timesteps: Dict[str, Any]) -> None:
        self._log_loss_stats()  # before PPO's hook, which may read the logged values
        super().after_gradient_based_update(timesteps=timesteps)
        for module_id, scheduler in self._teacher_coeff.items():  # set for these env steps before the update
            self.metrics.log_value((module_id, "curr_teacher_coeff"), scheduler.get_current_value(), window=1)

    # ---- gradients
    def postprocess_gradients_for_module(self, *, module_id, config=None, module_gradients_dict):
        optimizers = self.get_optimizers_for_module(module_id)
        if not config.grad_clip or config.grad_clip_by != "global_norm" or len(optimizers) != 1:
            self._grads_finite[module_id] = None
            return super().postprocess_gradients_for_module(module_id=module_id, config=config,
                                                            module_gradients_dict=module_gradients_dict)
        grads = [g for g in module_gradients_dict.values() if g is not None]
        if not grads:
            self._grads_finite[module_id] = True
            return dict(module_gradients_dict)
        norms = torch.stack(torch._foreach_norm(grads, 2.0))
        self._grads_finite[module_id] = bool(torch.isfinite(norms).all())
        # RLlib's compute_global_norm + clip_gradients(global_norm), term for term.
        total = torch.linalg.vector_norm(norms.nan_to_num(neginf=-_NORM_CAP, posinf=_NORM_CAP), 2.0)
        total = total.nan_to_num(neginf=-_NORM_CAP, posinf=_NORM_CAP)
        coeff = torch.clamp(config.grad_clip / torch.clamp(total + 1e-6, min=config.grad_clip), max=1.0)
        torch._foreach_mul_([g.detach() for g in grads], coeff)
        name = optimizers[0][0]
        self._grad_norms[module_id] = (name, total)
        return dict(module_gradients_dict)

    def apply_gradients(self, gradients_dict) -> None:
        checked, self._grads_finite = self._grads_finite, {}
        if (self._grad_scalers is not None or self._lr_scheduler_classes is not None or not checked
                or not all(v is True for v in checked.values())):
            super().apply_gradients(gradients_dict)  # RLlib's path: NaN handling, scalers, schedulers
        else:
            for pid, grad in gradients_dict.items():
                self._params[pid].grad = grad
            for module_id, names in self._module_optimizers.items():
                for name in names:
                    self.get_optimizer(module_id, name).step()
        if self._magnets:
            self._step_magnets()


def install_profile_timers(timers, data_category: str) -> None:
    """bench/speed/learner_ceiling.py's profile: this learner's own pieces under the bench's categories."""
    import sys

    timers.wrap(IndexedCyclicIterator, "__init__", data_category)
    timers.wrap(SpadePPOLearner, "compute_loss_for_module", "loss")
    timers.wrap(SpadePPOLearner, "postprocess_gradients_for_module", "optimizer: grad clip")
    timers.wrap(SpadePPOLearner, "apply_gradients", "optimizer: step (+ finite checks)")
    timers.wrap(sys.modules[__name__], "_gather", data_category)
    timers.wrap(SpadePPOLearner, "_log_loss_stats", "metrics/logging")
