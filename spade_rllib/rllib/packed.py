"""`PackedEpisodes` and `SpadeGAEConnector`: a module's experience as a few big arrays, and PPO's GAE on them.

Why: short MazeRace episodes (4 steps once both seats rush the flag) made per-episode objects the
bottleneck — building, pickling and unpickling ~4,000 `SingleAgentEpisode`s per iteration and
running RLlib's per-episode learner connectors over them cost more than the gradient steps.
A `SpadeEnvRunner` with `packed=True` returns ONE `PackedEpisodes` per trained module per `sample()`
call instead; `SpadeGAEConnector` (the whole learner connector pipeline in that mode) computes the
values of all rows of a module in one forward pass, GAE with one backward scan, and hands PPO the
usual train batch (obs, actions, action_logp, action_dist_inputs, advantages, value_targets) for
each module ("main", and league exploiters when there are any).

Layout: chunk c (one agent's consecutive transitions, ended by a terminal or by a cut) owns
`lengths[c]` step rows followed by one bootstrap row (the observation after its last step) in
`obs`; `is_boot` marks the bootstrap rows. Step arrays (`actions`, `rewards`, `logp`, `logits`)
have one entry per step row, in the same order. `terminated[c]`: the chunk ended in a terminal
state (bootstrap value 0); otherwise it was truncated (time limit or sample cut) and is
bootstrapped from the value of its bootstrap row. `levels[c]`: the curriculum's `level_id` of the
level chunk c was played on ("" when the curriculum did not choose it).

Kickstarting (`agent.teacher`): `teacher` holds the teacher bot's action at each step row (empty without a
teacher), handed to the learner as the `teacher_actions` column (`TEACHER_ACTIONS`).

Recurrent modules (`agent.model.memory: lstm`): `states` holds, per chunk, the recurrent state at each training
sequence start (rows 0, L, 2L, ... of the chunk's step + bootstrap rows, L = the module's
`max_seq_len`), and `prev_actions` / `prev_rewards` one entry per row (steps and bootstrap rows).
The connector cuts every chunk into sequences of at most L rows, zero pads them to (B, L), runs
the values of all rows through the LSTM from the recorded start states, and hands PPO the train
batch in that (B, L) layout with `seq_lens`, `state_in` and a `loss_mask` that is true on step rows
only (bootstrap rows and padding carry no loss). GAE and PLR's per-level sums run on the same flat
rows as for feed-forward modules, so both mean the same. Feed-forward packs leave the three arrays
empty.

PLR's positive value loss is computed here, where the advantages are: for main's chunks on
curriculum levels, the connector sums max(GAE_t, 0) (raw advantages, before normalization) and
counts steps per level (`level_positive_advantages`); the driver pops the per-level sums from the
learner after each update (`pop_level_value_loss`) and attaches their mean to main's outcomes on
those levels as `EpisodeOutcome.positive_value_loss`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.framework import try_import_torch

torch, _ = try_import_torch()
from spade_rllib.core.outcome import MAIN  # noqa: E402
ARRAY_FIELDS = ("obs", "is_boot", "actions", "rewards", "logp", "logits", "lengths", "terminated", "levels",
                "states", "prev_actions", "prev_rewards", "teacher")
TEACHER_ACTIONS = "teacher_actions"
"""The train batch column (and `SingleAgentEpisode` extra model output) of the teacher's action per step."""


@dataclass
class PackedEpisodes:
    obs: np.ndarray  # (steps + chunks, obs_size) float32
    is_boot: np.ndarray  # (steps + chunks,) bool
    actions: np.ndarray  # (steps,) int64; Box actions: (steps, d) float32, the unclipped samples
    rewards: np.ndarray  # (steps,) float32
    logp: np.ndarray  # (steps,) float32
    logits: np.ndarray  # (steps, num_actions) float32; Box actions: (steps, 2d) [mean, log_std]
    lengths: np.ndarray  # (chunks,) int64
    terminated: np.ndarray  # (chunks,) bool
    levels: np.ndarray  # (chunks,) str, curriculum level_id or ""
    states: np.ndarray = None  # (sequence starts, 2 * cell) float32 [h, c]; (0, 0) feed-forward
    prev_actions: np.ndarray = None  # (steps + chunks,) int64 (Box: (steps + chunks, d) float32); (0,) feed-forward
    prev_rewards: np.ndarray = None  # (steps + chunks,) float32; (0,) feed-forward
    teacher: np.ndarray = None  # (steps,) int64, the teacher's action per step; (0,) without a teacher
    module_id: str = MAIN

    def __post_init__(self):
        if self.states is None:
            self.states = np.zeros((0, 0), np.float32)
        if self.prev_actions is None:
            self.prev_actions = np.zeros(0, np.int64)
        if self.prev_rewards is None:
            self.prev_rewards = np.zeros(0, np.float32)
        if self.teacher is None:
            self.teacher = np.zeros(0, np.int64)
        if self.teacher.shape[0] not in (0, self.actions.shape[0]):
            raise ValueError(f"{self.teacher.shape[0]} teacher actions for {self.actions.shape[0]} steps")

    @property
    def recurrent(self) -> bool:
        return self.states.shape[0] > 0

    # Sized like an episode list entry: RLlib sums len(e) for step counts.
    def __len__(self) -> int:
        return int(self.actions.shape[0])

    def env_steps(self) -> int:
        return len(self)

    def agent_steps(self) -> int:
        return len(self)

    @property
    def num_chunks(self) -> int:
        return int(self.lengths.shape[0])

    @staticmethod
    def build(chunks: list, obs_size: int, num_actions: int, module_id: str = MAIN, action_size: int = 0) -> "PackedEpisodes":
        """From a list of (obs list (T+1), actions, rewards, logp, logits list, terminated[, level_id[, recurrent[,
        teacher]]]) tuples; `recurrent` is None or {"states", "prev_actions", "prev_rewards"} of the chunk (runner),
        `teacher` None or the teacher's action per step (every chunk or none).
        `num_actions`: the width of a logits row; `action_size` d > 0: Box actions, float vectors of d."""
        action_dtype = np.float32 if action_size else np.int64
        if not chunks:
            return PackedEpisodes(np.zeros((0, obs_size), np.float32), np.zeros(0, bool),
                                  np.zeros((0, action_size) if action_size else 0, action_dtype),
                                  np.zeros(0, np.float32), np.zeros(0, np.float32), np.zeros((0, num_actions), np.float32),
                                  np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, str), module_id=module_id)
        all_obs: list = []
        boot: list = []
        actions: list = []
        rewards: list = []
        logp: list = []
        logits: list = []
        lengths = np.empty(len(chunks), np.int64)
        terminated = np.empty(len(chunks), bool)
        levels = [str(chunk[6]) if len(chunk) > 6 else "" for chunk in chunks]
        rec = [chunk[7] if len(chunk) > 7 else None for chunk in chunks]
        optional = {}  # the recurrent and teacher arrays, when the chunks have them
        if rec[0] is not None:
            optional = {k: np.concatenate([r[k] for r in rec]) for k in ("states", "prev_actions", "prev_rewards")}
        teach = [chunk[8] if len(chunk) > 8 else None for chunk in chunks]
        if any(t is None for t in teach) and not all(t is None for t in teach):
            raise ValueError("teacher actions in some chunks only")
        if teach[0] is not None:
            optional["teacher"] = np.concatenate([np.asarray(t, np.int64) for t in teach])
        for c, (obs, acts, rews, lps, lgs, term, *_) in enumerate(chunks):
            n = len(acts)
            all_obs.extend(obs)
            boot.extend([False] * n)
            boot.append(True)
            actions.extend(acts)
            rewards.extend(rews)
            logp.extend(lps)
            logits.extend(lgs)
            lengths[c] = n
            terminated[c] = term
        return PackedEpisodes(
            obs=np.stack(all_obs).astype(np.float32, copy=False),
            is_boot=np.asarray(boot, bool),
            actions=np.asarray(actions, action_dtype),
            rewards=np.asarray(rewards, np.float32),
            logp=np.asarray(logp, np.float32),
            logits=np.stack(logits).astype(np.float32, copy=False),
            lengths=lengths,
            terminated=terminated,
            levels=np.asarray(levels, str),
            module_id=module_id,
            **optional,
        )

    @staticmethod
    def concat(packs: list) -> "PackedEpisodes":
        """One pack from several of the same module."""
        packs = [p for p in packs if len(p)]
        if len({p.module_id for p in packs}) > 1:
            raise ValueError(f"cannot concat packs of modules {sorted({p.module_id for p in packs})}")
        if len({bool(p.teacher.shape[0]) for p in packs}) > 1:
            raise ValueError("cannot concat packs with and without teacher actions")
        if len(packs) == 1:
            return packs[0]
        return PackedEpisodes(**{f: np.concatenate([getattr(p, f) for p in packs]) for f in ARRAY_FIELDS},
                              module_id=packs[0].module_id)

    @staticmethod
    def from_episodes(episodes: list, module_id: str = MAIN) -> Optional["PackedEpisodes"]:
        """Pack RLlib `SingleAgentEpisode`s (the non-packed runner output) of one module the same way."""
        chunks = []
        for e in episodes:
            if len(e) == 0:
                continue
            extra = e.get_extra_model_outputs
            teacher = list(extra(TEACHER_ACTIONS)) if TEACHER_ACTIONS in e.extra_model_outputs else None
            chunks.append((list(e.get_observations()), list(e.get_actions()), list(e.get_rewards()),
                           list(extra("action_logp")), list(extra("action_dist_inputs")), bool(e.is_terminated),
                           "", None, teacher))
        if not chunks:
            return None
        o = chunks[0][0][0]
        a = np.asarray(chunks[0][1][0])
        action_size = int(a.size) if np.issubdtype(a.dtype, np.floating) else 0
        return PackedEpisodes.build(chunks, int(np.prod(np.shape(o))), int(np.shape(chunks[0][4][0])[0]), module_id,
                                    action_size=action_size)


def gae(values: np.ndarray, pack: PackedEpisodes, gamma: float, lambda_: float) -> tuple[np.ndarray, np.ndarray]:
    """(advantages, value targets) for the step rows of `pack`; `values` covers every row."""
    step_rows = np.flatnonzero(~pack.is_boot)
    n_rows = values.shape[0]
    next_values = np.zeros(n_rows, np.float32)
    next_values[:-1] = values[1:]
    done = np.zeros(n_rows, bool)
    # Last step row of each chunk: the row just before each boot row.
    boot_rows = np.flatnonzero(pack.is_boot)
    last_steps = boot_rows - 1
    done[last_steps[pack.terminated]] = True
    rewards = np.zeros(n_rows, np.float32)
    rewards[step_rows] = pack.rewards
    delta = rewards + gamma * next_values * (~done) - values
    delta[boot_rows] = 0.0
    carry = gamma * lambda_ * (~done).astype(np.float32)
    carry[boot_rows] = 0.0  # the scan restarts at every chunk boundary
    d, c = delta.tolist(), carry.tolist()
    out = [0.0] * n_rows
    running = 0.0
    for i in range(n_rows - 1, -1, -1):  # ~20k rows: a few ms on Python floats
        running = d[i] + c[i] * running
        out[i] = running
    adv = np.asarray(out, np.float32)
    adv_steps = adv[step_rows]
    return adv_steps, adv_steps + values[step_rows]


def level_positive_advantages(adv: np.ndarray, pack: PackedEpisodes) -> dict[str, tuple[float, int]]:
    """level_id -> (sum of max(advantage, 0), steps) over the chunks of `pack` tagged with a level;
    `adv` are the raw (unnormalized) GAE advantages of its step rows. PLR's positive value loss of a
    level is sum / steps (Jiang et al. 2021: the mean clipped positive GAE)."""
    if not any(pack.levels.tolist()):
        return {}
    chunk_of_step = np.repeat(np.arange(pack.num_chunks), pack.lengths)
    positive = np.maximum(adv.astype(np.float64), 0.0)
    per_chunk = np.bincount(chunk_of_step, weights=positive, minlength=pack.num_chunks)
    out: dict[str, list] = {}
    for level, total, steps in zip(pack.levels.tolist(), per_chunk.tolist(), pack.lengths.tolist()):
        if level and steps:
            acc = out.setdefault(level, [0.0, 0])
            acc[0] += total
            acc[1] += int(steps)
    return {k: (v[0], v[1]) for k, v in out.items()}


def merge_level_sums(into: dict, new: dict) -> dict:
    """Add per-level (sum, steps) pairs of `new` into `into` (in place) and return it."""
    for level, (total, steps) in new.items():
        t, n = into.get(level, (0.0, 0))
        into[level] = (t + total, n + steps)
    return into


def pop_level_value_loss(learner) -> dict[str, tuple[float, int]]:
    """What `SpadeGAEConnector.pop_level_value_loss` holds in a learner's connector pipeline ({} without one)."""
    pipeline = getattr(learner, "_learner_connector", None)  # no public accessor in RLlib 2.60
    out: dict = {}
    for connector in getattr(pipeline, "connectors", []) or []:
        if isinstance(connector, SpadeGAEConnector):
            merge_level_sums(out, connector.pop_level_value_loss())
    return out


class SpadeGAEConnector(ConnectorV2):
    """Learner connector for packed runner output (also accepts plain SingleAgentEpisodes)."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, gamma: float = 0.99,
                 lambda_: float = 0.95, value_batch: int = 16384, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = float(gamma)
        self.lambda_ = float(lambda_)
        self.value_batch = int(value_batch)
        # level_id -> (sum of positive advantages, steps) of main's chunks since the last pop
        self.level_positive_advantages: dict[str, tuple[float, int]] = {}

    def pop_level_value_loss(self) -> dict[str, tuple[float, int]]:
        """The per-level (sum of max(GAE, 0), steps) of main's experience since the last call, and reset."""
        out, self.level_positive_advantages = self.level_positive_advantages, {}
        return out

    def __call__(self, *, rl_module, batch: dict, episodes: list, explore=None, shared_data=None, **kwargs) -> Any:
        packs: dict[str, list] = {}
        plain: dict[str, list] = {}
        for e in episodes:
            module_id = getattr(e, "module_id", None) or MAIN
            (packs if isinstance(e, PackedEpisodes) else plain).setdefault(module_id, []).append(e)
        for module_id, eps in plain.items():
            extra = PackedEpisodes.from_episodes(eps, module_id)
            if extra is not None:
                packs.setdefault(module_id, []).append(extra)
        for module_id, module_packs in packs.items():
            pack = PackedEpisodes.concat(module_packs)
            if len(pack) and module_id in rl_module:  # an empty module batch would stall PPO's minibatch cycle
                batch[module_id] = self._module_batch(rl_module[module_id], pack)
                if Columns.SEQ_LENS in batch[module_id] and shared_data is not None:
                    # Learner reads this key to build a zero-padded SampleBatch (RLlib's own padding connector sets it too).
                    shared_data[f"_zero_padded_for_mid={module_id}"] = True
        return batch

    def _module_batch(self, module, pack: PackedEpisodes) -> dict:
        # Arrays deserialized by Ray are read-only; torch wants writable memory (copies only then).
        pack = PackedEpisodes(**{f: np.require(getattr(pack, f), requirements="W") for f in ARRAY_FIELDS},
                              module_id=pack.module_id)
        if getattr(module, "use_lstm", False):
            return self._recurrent_batch(module, pack)
        device = next(module.parameters()).device
        obs_t = torch.from_numpy(pack.obs).to(device)
        with torch.no_grad():
            values = torch.cat([module.compute_values({Columns.OBS: obs_t[i:i + self.value_batch]})
                                for i in range(0, obs_t.shape[0], self.value_batch)]).cpu().numpy().astype(np.float32)
        adv, targets = gae(values, pack, self.gamma, self.lambda_)
        if pack.module_id == MAIN:
            merge_level_sums(self.level_positive_advantages, level_positive_advantages(adv, pack))
        adv = (adv - adv.mean()) / max(1e-4, float(adv.std()))
        steps = torch.from_numpy(np.flatnonzero(~pack.is_boot)).to(device)
        teacher = {TEACHER_ACTIONS: torch.from_numpy(pack.teacher).to(device)} if pack.teacher.shape[0] else {}
        return {**teacher,
            Columns.OBS: obs_t.index_select(0, steps),
            Columns.ACTIONS: torch.from_numpy(pack.actions).to(device),
            Columns.ACTION_LOGP: torch.from_numpy(pack.logp).to(device),
            Columns.ACTION_DIST_INPUTS: torch.from_numpy(pack.logits).to(device),
            Columns.REWARDS: torch.from_numpy(pack.rewards).to(device),
            Postprocessing.ADVANTAGES: torch.from_numpy(adv.astype(np.float32)).to(device),
            Postprocessing.VALUE_TARGETS: torch.from_numpy(targets.astype(np.float32)).to(device),
        }

    def _recurrent_batch(self, module, pack: PackedEpisodes) -> dict:
        """The (B, max_seq_len) train batch of a recurrent module (see the module docstring)."""
        if not pack.recurrent:
            raise ValueError(f"module {pack.module_id!r} is recurrent but its experience has no recorded states "
                             "(sampled by a feed-forward runner?)")
        device = next(module.parameters()).device
        layout = sequence_layout(pack.lengths + 1, int(module.max_seq_len))
        if layout.num_seqs != pack.states.shape[0]:
            raise ValueError(f"module {pack.module_id!r}: {pack.states.shape[0]} recorded sequence start states, "
                             f"{layout.num_seqs} sequences of max_seq_len {module.max_seq_len}")
        cell = pack.states.shape[1] // 2
        states = torch.from_numpy(pack.states).to(device)
        state_in = {"h": states[:, :cell], "c": states[:, cell:]}
        slot_row = layout.flat_index  # (B*L,) row of each padded slot, -1 padding
        rows = torch.from_numpy(slot_row).to(device)
        valid = rows >= 0
        # One gather per column and zeros written on the padding slots only (no full-size where / zeros_like).
        step_rows = np.flatnonzero(~pack.is_boot)
        step_of_row = np.full(pack.obs.shape[0], -1, np.int64)
        step_of_row[step_rows] = np.arange(step_rows.shape[0])
        slot_step = np.where(slot_row >= 0, step_of_row[np.maximum(slot_row, 0)], -1)  # step of each slot, -1 none

        def index(slots: np.ndarray) -> tuple:
            empty = np.flatnonzero(slots < 0)
            return torch.from_numpy(np.maximum(slots, 0)), (torch.from_numpy(empty) if empty.size else None)

        by_row, by_step = index(slot_row), index(slot_step)

        def gather(arr: np.ndarray, where: tuple):
            take, empty = where
            t = torch.from_numpy(arr).index_select(0, take)
            if empty is not None:
                t[empty] = 0
            return t.reshape(layout.num_seqs, layout.max_len, *t.shape[1:]).to(device)

        def padded(arr: np.ndarray):  # one entry per row (steps and bootstrap rows)
            return gather(arr, by_row)

        def padded_steps(arr: np.ndarray):  # one entry per step row; bootstrap rows and padding get zeros
            return gather(arr, by_step)

        seq_batch = {Columns.OBS: padded(pack.obs), Columns.STATE_IN: state_in,
                     Columns.SEQ_LENS: torch.from_numpy(layout.seq_lens).to(device)}
        if module.use_prev_action:
            seq_batch["prev_actions"] = padded(pack.prev_actions)
        if module.use_prev_reward:
            seq_batch["prev_rewards"] = padded(pack.prev_rewards)
        with torch.no_grad():
            values_seq = module.compute_values(seq_batch).reshape(-1)
        values = torch.zeros(pack.obs.shape[0], device=device)
        values[rows[valid]] = values_seq[valid].float()
        values = values.cpu().numpy().astype(np.float32)
        adv, targets = gae(values, pack, self.gamma, self.lambda_)
        if pack.module_id == MAIN:
            merge_level_sums(self.level_positive_advantages, level_positive_advantages(adv, pack))
        adv = (adv - adv.mean()) / max(1e-4, float(adv.std()))
        seq_batch.update({
            Columns.ACTIONS: padded_steps(pack.actions),
            Columns.ACTION_LOGP: padded_steps(pack.logp),
            Columns.ACTION_DIST_INPUTS: padded_steps(pack.logits),
            Columns.REWARDS: padded_steps(pack.rewards),
            Postprocessing.ADVANTAGES: padded_steps(adv.astype(np.float32)),
            Postprocessing.VALUE_TARGETS: padded_steps(targets.astype(np.float32)),
            Columns.LOSS_MASK: padded(~pack.is_boot),
        })
        if pack.teacher.shape[0]:
            seq_batch[TEACHER_ACTIONS] = padded_steps(pack.teacher)
        return seq_batch


@dataclass
class SequenceLayout:
    """Chunks of rows cut into sequences of at most `max_len` rows (each chunk starts a sequence)."""

    seq_lens: np.ndarray  # (B,) int32
    flat_index: np.ndarray  # (B * max_len,) int64: row of each padded slot, -1 for padding
    max_len: int

    @property
    def num_seqs(self) -> int:
        return int(self.seq_lens.shape[0])


def sequence_layout(chunk_rows: np.ndarray, max_len: int) -> SequenceLayout:
    """Cut consecutive chunks of `chunk_rows[c]` rows into sequences of <= `max_len` rows."""
    chunk_rows = np.asarray(chunk_rows, np.int64)
    n_seq = -(-chunk_rows // max_len)  # ceil
    first_row = np.concatenate([[0], np.cumsum(chunk_rows)[:-1]])
    chunk_of_seq = np.repeat(np.arange(len(chunk_rows)), n_seq)
    k = np.arange(int(n_seq.sum())) - np.repeat(np.cumsum(n_seq) - n_seq, n_seq)  # sequence index in its chunk
    start = first_row[chunk_of_seq] + k * max_len
    seq_lens = np.minimum(max_len, chunk_rows[chunk_of_seq] - k * max_len)
    offs = np.arange(max_len)
    idx = start[:, None] + offs[None, :]
    idx = np.where(offs[None, :] < seq_lens[:, None], idx, -1)
    return SequenceLayout(seq_lens.astype(np.int32), idx.reshape(-1), int(max_len))
