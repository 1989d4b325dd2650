"""Actions from a network's outputs, for every acting row of a runner step at once.

`sample_actions` (discrete: Gumbel-max over logits) and `sample_gaussian` (Box: diagonal Gaussian, unclipped)
return (actions, log-probabilities); `single_torch_thread` keeps torch on one thread while acting.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ray.rllib.utils.framework import try_import_torch

torch, nn = try_import_torch()


@contextlib.contextmanager
def single_torch_thread():
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
