"""How a batch of episodes is split over several data-parallel learners (`resources.num_learners > 1`).

RLlib 2.60 splits the episode list by length alone (`TrainingData.shard`): with league exploiters a
learner can get no episode of a module the other learners train, and then only those learners run
that module's backward pass, whose DDP all-reduce waits for a partner that never comes. It also
lets each learner pick its own number of minibatches when the formula
`int(epochs * steps / (learners * minibatch))` gives 0, and the learners' batches differ in length
(one bootstrap row per episode piece): again a mismatch of backward passes.

`ModuleShardedTrainingData` shards each module's episodes on its own (`ShardEpisodesIterator`,
which cuts an episode at a shard boundary), so every learner gets an equal share of every module,
and gives every learner the same minibatch count, `ceil(epochs * steps / (learners * minibatch))`
with `steps` the largest module's. A module with fewer steps than there are learners cannot be
split and is left out of this update. `minibatch_size=None` (one step on the whole shard) is kept.
"""
from __future__ import annotations

import logging
import math
from typing import Optional

from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.utils.minibatch_utils import ShardEpisodesIterator

logger = logging.getLogger(__name__)


def module_of(episode, default: str = "main") -> str:
    return getattr(episode, "module_id", None) or default


def shard_by_module(episodes: list, num_shards: int, len_lookback_buffer: Optional[int] = None) -> tuple[list[list], dict]:
    """(shards, steps per module kept): each module's episodes cut into `num_shards` equal-length parts."""
    by_module: dict[str, list] = {}
    for e in episodes:
        by_module.setdefault(module_of(e), []).append(e)
    shards: list[list] = [[] for _ in range(num_shards)]
    steps: dict[str, int] = {}
    for module_id, eps in by_module.items():
        total = sum(len(e) for e in eps)
        if total < num_shards:
            logger.warning("module %s: %d steps cannot be split over %d learners; left out of this update",
                           module_id, total, num_shards)
            continue
        steps[module_id] = total
        for shard, part in zip(shards, ShardEpisodesIterator(list(eps), num_shards=num_shards,
                                                             len_lookback_buffer=len_lookback_buffer)):
            shard.extend(part)
    return shards, steps


def minibatches_per_learner(max_steps: int, num_shards: int, minibatch_size: Optional[int], num_epochs: int) -> int:
    """The one minibatch count all learners run (0: no minibatches, one step on the whole shard)."""
    if not minibatch_size:
        return 0
    return max(1, math.ceil(num_epochs * max_steps / (num_shards * minibatch_size)))


class ModuleShardedTrainingData(TrainingData):
    """Episodes for `LearnerGroup.update(training_data=...)`, sharded per module (see the module docstring)."""

    def shard(self, num_shards: int, len_lookback_buffer: Optional[int] = None, **kwargs):
        if self.episodes is None or num_shards <= 1:
            return super().shard(num_shards, len_lookback_buffer=len_lookback_buffer, **kwargs)
        shards, steps = shard_by_module(self.episodes, num_shards, len_lookback_buffer)
        if not steps:
            return super().shard(num_shards, len_lookback_buffer=len_lookback_buffer, **kwargs)
        count = minibatches_per_learner(max(steps.values(), default=0), num_shards, kwargs.get("minibatch_size"),
                                        int(kwargs.get("num_epochs", 1) or 1))
        return [(TrainingData(episodes=part), {"num_total_minibatches": count}) for part in shards]
