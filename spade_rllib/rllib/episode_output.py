"""What `SpadeEnvRunner.sample()` returns: the learners' chunks in one of two formats.

With `packed` (local learner, the default) one `PackedEpisodes` per learner holding every chunk as
big arrays, for `SpadeGAEConnector`; otherwise numpy `SpadeSingleAgentEpisode`s, one per (episode
chunk, learning agent), with the learner's `module_id`, for PPO's default learner connectors.
`EpisodeOutput` (mixed into `SpadeEnvRunner`) turns a `LearnerTrajectory` into either.
"""
from __future__ import annotations

import uuid
from typing import Optional

import numpy as np

from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from spade_rllib.rllib.lanes import LearnerTrajectory
from spade_rllib.rllib.packed import TEACHER_ACTIONS, PackedEpisodes


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


class EpisodeOutput:
    """`SpadeEnvRunner`'s episode builders (they use its `packed` flag, spaces and modules)."""

    def _make_episode(self, module_id: str, agent: str, tr: LearnerTrajectory, terminated: bool, truncated: bool, level: str = ""):
        """A numpy `SingleAgentEpisode` of the learner `module_id` (len(obs) == len(actions) + 1), or
        in packed mode (module_id, the chunk tuple `PackedEpisodes.build` takes, tagged with the
        curriculum `level` id for PLR's positive value loss)."""
        if self.packed:
            return module_id, (tr.obs, tr.actions, tr.rewards, tr.logp, tr.logits, terminated, level,
                               self._recurrent_record(module_id, tr), tr.teacher if self.spec.teacher else None)
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
        if self.spec.teacher:  # a recurrent chunk's lookback step gets a dummy label, like its action
            extra[TEACHER_ACTIONS] = [0] * lookback + list(tr.teacher)
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

    def _recurrent_record(self, module_id: str, tr: LearnerTrajectory) -> Optional[dict]:
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

    def _pack_by_module(self, chunks: list) -> list:
        """Packed mode: one `PackedEpisodes` per learner from the (module_id, chunk) pairs of one `sample()`."""
        by_module: dict[str, list] = {}
        for module_id, chunk in chunks:
            by_module.setdefault(module_id, []).append(chunk)
        episodes = []
        for module_id, module_chunks in by_module.items():
            obs_space, act_space = self.spaces_of(module_id)
            if self._continuous:  # dist inputs: [mean, log_std]; float actions of that size
                dist_size, action_size = 2 * act_space.shape[0], act_space.shape[0]
            else:
                dist_size, action_size = act_space.n, 0
            episodes.append(PackedEpisodes.build(module_chunks, obs_space.shape[0], dist_size, module_id=module_id,
                                                 action_size=action_size))
        return episodes
