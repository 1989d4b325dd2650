"""`SpadeModule`: the PPO RLModule of every trained policy (an MLP, or a small CNN for the level games).

Observations are one flat float32 vector per agent. When the env provides an action mask, the
mask is the *last* `num_actions` entries of that vector (`model_config["mask_size"]`); the module
never feeds it to the network and sets the logits of illegal actions to `FLOAT_MIN`, so a masked
policy never picks an illegal move (neither when sampling nor with argmax).

`model_config` keys (all plain Python values, so the module rebuilds from a checkpoint alone):
  kind            "mlp" | "cnn"
  hidden          list of widths, e.g. [128, 128]
  activation      "tanh" | "relu"
  vf_share_layers bool: policy and value heads share the trunk
  mask_size       0, or the number of trailing action-mask entries in the observation
  window_shape    (H, W, C) of the level game's window (cnn only): the first H*W*C entries, channels-last
  cnn_channels    conv widths (cnn only), 3x3 kernels, same padding
  map_shape       (B, B, C) of a memory map ending the features (optional, any kind): with `map_channels`,
  map_channels    the last B*B*C feature entries (channels-last) get 3x3 conv layers of these widths
  use_lstm        bool: an LSTM after the encoder (RLlib's naming); the policy and value heads
                  both read its output (one state per agent: {"h": (cell,), "c": (cell,)})
  lstm_cell_size  LSTM hidden size
  max_seq_len     training sequence length (the learner connector cuts sequences of this length)
  planner         "none" | "vin": with `map_shape` (the cell memory of envs/cell_memory.py ending the features),
                  value iteration networks over it (`_ValueIteration`), read out at the agent's cell
  planner_iterations / planner_channels
                  vin: 0 for the exact fixed point, k > 0 for k value-iteration rounds; hidden channels of the maps
  train_bf16      bool: `forward_train` (the learner) under torch.autocast bfloat16; outputs float32
  lstm_use_prev_action / lstm_use_prev_reward
                  the LSTM also reads the one-hot previous action (Box: the action vector) / the
                  previous reward (batch columns `prev_actions` / `prev_rewards`; 0 at an episode's first step)
  log_std_init    Box actions: the initial log standard deviation of the Gaussian (default 0.0)

Action spaces: `Discrete(n)` gives n logits (`TorchCategorical`). A flat float `Box(d)` gives a
diagonal Gaussian (`TorchDiagGaussian`): `action_dist_inputs` is [mean (d), log_std (d)], the mean
from the policy head, the log-std one state-independent parameter vector (cleanrl's
ppo_continuous_action, SB3's PPO default; RLlib's `free_log_std`). The module samples unbounded
actions; the env adapter clips them to the Box when it sends them to the env, while the loss sees
the unclipped sample (as cleanrl and SB3 do), so log-probs stay those of the Gaussian.

A recurrent module takes `Columns.STATE_IN` and returns `Columns.STATE_OUT`: at inference the obs
is (B, D) and the state (B, cell) per key; in training the obs is (B, T, D) (zero padded sequences)
and the state is the one at each sequence start. `step(obs, state, prev_actions, prev_rewards)` is
the acting path of the env runner and of `load_policy` (logits, new state).

Outside Ray: `RLModule.from_checkpoint(<ckpt>/learner_group/learner/rl_module/main)` then
`forward_inference({"obs": torch.as_tensor(obs_batch)})["action_dist_inputs"]` gives masked logits
(recurrent: also pass `"state_in"` and read `"state_out"`).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional

import numpy as np

import gymnasium as gym
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.framework import try_import_torch
from ray.rllib.utils.torch_utils import FLOAT_MIN

torch, nn = try_import_torch()

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
PREV_ACTIONS = "prev_actions"  # RLlib's SampleBatch.PREV_ACTIONS / PREV_REWARDS column names
PREV_REWARDS = "prev_rewards"


def _mlp(in_size: int, hidden: list[int], activation: str) -> tuple[nn.Module, int]:
    layers: list[nn.Module] = []
    size = in_size
    for width in hidden:
        layers += [nn.Linear(size, width), _ACTIVATIONS[activation]()]
        size = width
    return nn.Sequential(*layers), size


def _convs(in_c: int, channels: list[int], activation: str) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for out_c in channels:
        layers += [nn.Conv2d(in_c, out_c, 3, padding=1), _ACTIVATIONS[activation]()]
        in_c = out_c
    return nn.Sequential(*layers), in_c


class _FixedPoint(torch.autograd.Function):
    """The exact value-iteration fixed point of `_ValueIteration` on CPU tensors: `envs/grid_values.py`'s
    Dijkstra forward and its gradient along the best paths backward (numba kernels; no autograd graph of
    unrolled rounds to keep)."""

    @staticmethod
    def forward(ctx, goal, passable):
        from spade_rllib.envs.grid_values import solve

        n, g, h, w = goal.shape
        q = passable.detach().reshape(n * g, h * w).numpy()
        v, succ, order = solve(goal.detach().reshape(n * g, h * w).numpy(), q, w)
        ctx.kernel = (v, q, succ, order, goal.shape)
        return torch.from_numpy(v).reshape(n, g, h, w)

    @staticmethod
    def backward(ctx, grad_v):
        from spade_rllib.envs.grid_values import gradient

        v, q, succ, order, shape = ctx.kernel
        grad_goal, grad_q = gradient(grad_v.detach().reshape(v.shape).float().numpy(), v, q, succ, order)
        return torch.from_numpy(grad_goal).reshape(shape), torch.from_numpy(grad_q).reshape(shape)


class _ValueIteration(nn.Module):
    """A learned planner on the cell memory: value iteration networks (Tamar et al., NeurIPS 2016) in the
    max-product form of a deterministic grid world, for two goals at once (say, the enemy flag and the way home:
    the policy picks by what it carries). Two conv layers over the memory's channels give, per goal, a goal map G
    and a passability map P (sigmoids: which channels mean "goal" and "wall" is learned, nothing is told); then
    V = max(G, P * GAMMA * max over the 4 neighbours of V), so V ~ GAMMA ** (steps to the goal over passable
    cells). Read out at the agent's cell (the memory's `self` channel: a masked sum, which ONNX exports as it
    is): per goal, for each move (up, down, left, right) the change of distance it brings, clipped to [-1, 1],
    and the distance / 64 (the fixed planner's features, `envs/cell_memory.py`, but learned).

    `iterations` 0 (exact): V is the fixed point, whatever the path lengths, solved on CPU by Dijkstra's
    algorithm with its gradient along the best paths (`envs/grid_values.py`, `_FixedPoint`), and elsewhere by
    rounds until nothing changes (CUDA: a Python loop; ONNX export: a Loop), which reach the same fixed point.
    `iterations` k > 0: k unrolled rounds (a value travels one cell a round, so k bounds the paths it plans;
    checkpoints trained this way keep it). A round is shifts and maxima, no convolution: on CPU, grouped 3x3
    convolutions made each round ~30x slower."""

    GOALS, GAMMA, SCALE = 2, 0.9, 64.0

    def __init__(self, channels: int, hidden: int, iterations: int, self_channel: int):
        super().__init__()
        self.iterations, self.self_channel = int(iterations), int(self_channel)
        self.maps = nn.Sequential(nn.Conv2d(channels, hidden, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(hidden, 2 * self.GOALS, 1))
        self.out_size = self.GOALS * 5

    @staticmethod
    def _neighbours(v):
        """(up, down, left, right) neighbour values of (N, G, H, W) `v`, 0 outside the grid."""
        p = nn.functional.pad(v, (1, 1, 1, 1))
        return p[:, :, :-2, 1:-1], p[:, :, 2:, 1:-1], p[:, :, 1:-1, :-2], p[:, :, 1:-1, 2:]

    def _values(self, goal, passable, exporting: bool):
        """V from (N, G, H, W) goal and discounted passability maps (see the class docstring)."""
        if self.iterations:
            v = goal
            for _ in range(self.iterations):
                v = self._round(goal, passable, v)
            return v
        if exporting:  # ONNX: a Loop until nothing changes (at most H * W - 1 rounds)
            from torch._higher_order_ops.while_loop import while_loop

            def body(v, _changed):
                new = self._round(goal, passable, v)
                return new, (new != v).any()

            return while_loop(lambda _v, changed: changed.clone(), body, (goal.clone(), torch.tensor(True)))[0]
        if goal.device.type == "cpu":
            return _FixedPoint.apply(goal.float(), passable.float()).to(goal.dtype)
        return self._converge(goal, passable)

    def _converge(self, goal, passable):
        """Rounds until nothing changes (at most H * W - 1): the fixed point through autograd, on any device."""
        v, new = goal, self._round(goal, passable, goal)
        while not torch.equal(new, v):
            v, new = new, self._round(goal, passable, new)
        return new

    def _round(self, goal, passable, v):
        up, down, left, right = self._neighbours(v)
        return torch.maximum(goal, passable * torch.maximum(torch.maximum(up, down), torch.maximum(left, right)))

    def forward(self, grid):
        """(N, C, H, W) memories -> (N, out_size) read-outs. Rows without an agent cell (the zero padding of
        training sequences, which no loss and no later step reads) are not planned: their read-out is 0."""
        exporting = torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or torch.compiler.is_compiling()
        if not exporting:
            real = grid[:, self.self_channel].detach().flatten(1).amax(1) > 0
            if not bool(real.all()):
                out = grid.new_zeros(grid.shape[0], self.out_size)
                if bool(real.any()):
                    out[real] = self._plan(grid[real], exporting)
                return out
        return self._plan(grid, exporting)

    def _plan(self, grid, exporting: bool):
        maps = torch.sigmoid(self.maps(grid))
        goal, passable = maps[:, :self.GOALS], maps[:, self.GOALS:] * self.GAMMA
        here = grid[:, self.self_channel:self.self_channel + 1]
        v = self._values(goal, passable, exporting)
        steps = torch.log(v.clamp(min=1e-6)) / math.log(1.0 / self.GAMMA)  # -(steps to the goal)
        at = (steps * here).sum(dim=(2, 3))
        moves = [((n * here).sum(dim=(2, 3)) - at).neg().clamp(-1.0, 1.0) for n in self._neighbours(steps)]
        return torch.stack([*moves, (-at / self.SCALE).clamp(0.0, 1.0)], dim=2).flatten(1)  # per goal: 4 moves, distance


class _Encoder(nn.Module):
    """Conv layers over the (H, W, C) window that starts the features (`window`: shape and widths), and/or over
    the (B, B, C') memory map that ends them (`map`), each flattened, or a planner over that map (`planner`: its
    read-out); whatever lies between (the vector, the plan, the part given no convolutions) joins them as it is."""

    def __init__(self, feat_size: int, activation: str, window: Optional[tuple] = None, map: Optional[tuple] = None,
                 planner: Optional[tuple] = None):
        super().__init__()
        self.window_shape = tuple(window[0]) if window else None
        self.window_size = int(np.prod(self.window_shape)) if window else 0
        self.map_shape = tuple(map[0]) if map else None
        self.map_size = int(np.prod(self.map_shape)) if map else 0
        self.out_size = feat_size - self.window_size - self.map_size
        if window:  # named `convs` as before the memory map existed: checkpoints keep their keys
            self.convs, out_c = _convs(self.window_shape[2], list(window[1]), activation)
            self.out_size += out_c * self.window_shape[0] * self.window_shape[1]
        if map and planner:
            from spade_rllib.envs.cell_memory import C_SELF

            self.planner = _ValueIteration(self.map_shape[2], planner[1], planner[0], C_SELF)
            self.out_size += self.planner.out_size
        elif map:
            self.map_convs, out_c = _convs(self.map_shape[2], list(map[1]), activation)
            self.out_size += out_c * self.map_shape[0] * self.map_shape[1]

    @staticmethod
    def _conv(convs: nn.Module, flat, shape: tuple):
        h, w, c = shape
        return convs(flat.reshape(-1, h, w, c).permute(0, 3, 1, 2)).flatten(1)

    def forward(self, x):
        end = x.shape[1] - self.map_size
        parts = [x[:, self.window_size:end]]
        if self.window_shape:
            parts.insert(0, self._conv(self.convs, x[:, : self.window_size], self.window_shape))
        if self.map_shape:
            h, w, c = self.map_shape
            if hasattr(self, "planner"):
                parts.append(self.planner(x[:, end:].reshape(-1, h, w, c).permute(0, 3, 1, 2)))
            else:
                parts.append(self._conv(self.map_convs, x[:, end:], self.map_shape))
        return torch.cat(parts, dim=1)


def _to_float32(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_float32(v) for k, v in tree.items()}
    return tree.float() if torch.is_tensor(tree) and tree.is_floating_point() else tree


class SpadeModule(TorchRLModule, ValueFunctionAPI):
    """Policy logits and value from a flat observation, with optional trailing action mask."""

    def setup(self):
        mc: Dict[str, Any] = dict(self.model_config or {})
        self.mask_size = int(mc.get("mask_size", 0))
        obs_size = int(np.prod(self.observation_space.shape))
        feat_size = obs_size - self.mask_size
        self.feat_size = feat_size
        hidden = list(mc.get("hidden", [128, 128]))
        act = mc.get("activation", "tanh")
        self.vf_share_layers = bool(mc.get("vf_share_layers", False))
        self.continuous = isinstance(self.action_space, gym.spaces.Box)
        num_actions = int(np.prod(self.action_space.shape)) if self.continuous else int(self.action_space.n)
        if self.continuous and self.mask_size:
            raise ValueError("an action mask (mask_size > 0) needs a Discrete action space")
        # Box: the Gaussian's log standard deviation, one state-independent parameter per action dim.
        self.log_std = (nn.Parameter(torch.full((num_actions,), float(mc.get("log_std_init", 0.0))))
                        if self.continuous else None)

        def trunk() -> tuple[nn.Module, int]:
            window = (mc["window_shape"], mc.get("cnn_channels", [16, 32])) if mc.get("kind", "mlp") == "cnn" else None
            planner = ((int(mc.get("planner_iterations", 40)), int(mc.get("planner_channels", 16)))
                       if mc.get("planner", "none") == "vin" and mc.get("map_shape") else None)
            seen = ((mc["map_shape"], mc.get("map_channels") or [])
                    if mc.get("map_shape") and (mc.get("map_channels") or planner) else None)
            if window or seen:
                enc = _Encoder(feat_size, act, window=window, map=seen, planner=planner)
                head, size = _mlp(enc.out_size, hidden, act)
                return nn.Sequential(enc, head), size
            return _mlp(feat_size, hidden, act)

        self.num_actions = num_actions
        self.train_bf16 = bool(mc.get("train_bf16", False))
        self.use_lstm = bool(mc.get("use_lstm", False))
        self.pi_trunk, size = trunk()
        if self.use_lstm:
            self.cell_size = int(mc.get("lstm_cell_size", 256))
            self.max_seq_len = int(mc.get("max_seq_len", 20))
            self.use_prev_action = bool(mc.get("lstm_use_prev_action", False))
            self.use_prev_reward = bool(mc.get("lstm_use_prev_reward", False))
            extra = (num_actions if self.use_prev_action else 0) + (1 if self.use_prev_reward else 0)
            self.lstm = nn.LSTM(size + extra, self.cell_size, batch_first=True)
            self.pi_head = nn.Linear(self.cell_size, num_actions)
            self.vf_trunk = None
            self.vf_head = nn.Linear(self.cell_size, 1)
            nn.init.orthogonal_(self.pi_head.weight, gain=0.01)
            nn.init.zeros_(self.pi_head.bias)
            return
        self.pi_head = nn.Linear(size, num_actions)
        if self.vf_share_layers:
            self.vf_trunk = None
            self.vf_head = nn.Linear(size, 1)
        else:
            self.vf_trunk, vsize = trunk()
            self.vf_head = nn.Linear(vsize, 1)
        # Small initial policy logits: near-uniform start (as in cleanrl / RLlib's default).
        nn.init.orthogonal_(self.pi_head.weight, gain=0.01)
        nn.init.zeros_(self.pi_head.bias)

    # ---- recurrent state ----
    def is_stateful(self) -> bool:
        return self.use_lstm

    def get_initial_state(self) -> Dict[str, Any]:
        if not self.use_lstm:
            return {}
        return {"h": torch.zeros(self.cell_size), "c": torch.zeros(self.cell_size)}

    def _lstm_inputs(self, feats, batch_or_prev: Dict[str, Any]):
        """Encoder features joined with the previous action (one-hot) / reward when configured."""
        parts = [feats]
        if self.use_prev_action and self.continuous:
            prev = batch_or_prev.get(PREV_ACTIONS)
            shape = (*feats.shape[:-1], self.num_actions)
            parts.append(torch.zeros(shape, dtype=feats.dtype, device=feats.device) if prev is None
                         else prev.to(feats.dtype).reshape(shape))
        elif self.use_prev_action:
            prev = batch_or_prev.get(PREV_ACTIONS)
            prev = torch.zeros(feats.shape[:-1], dtype=torch.long, device=feats.device) if prev is None else prev.long()
            parts.append(nn.functional.one_hot(prev.clamp(min=0), self.num_actions).to(feats.dtype))
        if self.use_prev_reward:
            prev = batch_or_prev.get(PREV_REWARDS)
            prev = torch.zeros(feats.shape[:-1], device=feats.device) if prev is None else prev
            parts.append(prev.to(feats.dtype).unsqueeze(-1))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def _recurrent(self, batch: Dict[str, Any]):
        """(masked logits, LSTM output, new state) for a (B, D) or (B, T, D) obs batch."""
        obs = batch[Columns.OBS].float()
        timed = obs.dim() == 3
        b, t = (obs.shape[0], obs.shape[1]) if timed else (obs.shape[0], 1)
        flat = obs.reshape(b * t, obs.shape[-1])
        feats = self._trunk_rows(flat, batch.get(Columns.SEQ_LENS) if timed else None, t).reshape(b, t, -1)
        prev = {k: (v if timed else v.unsqueeze(1)) for k, v in batch.items()
                if k in (PREV_ACTIONS, PREV_REWARDS) and v is not None}
        state = batch.get(Columns.STATE_IN)
        if state is None:
            h0 = torch.zeros(1, b, self.cell_size, device=obs.device)
            c0 = h0
        else:
            h0, c0 = state["h"].float().unsqueeze(0), state["c"].float().unsqueeze(0)
        out, (h, c) = self.lstm(self._lstm_inputs(feats, prev), (h0, c0))
        logits = self._mask(self.pi_head(out.reshape(b * t, -1)), flat).reshape(b, t, -1)
        if not timed:
            logits, out = logits[:, 0], out[:, 0]
        return logits, out, {"h": h[0], "c": c[0]}

    def _trunk_rows(self, flat, seq_lens, t: int):
        """The encoder on (B*T, D) rows; with `seq_lens` (zero-padded training sequences) only on the rows inside
        a sequence, padding rows getting zero features: padding sits at the end of each sequence, so the LSTM
        outputs of real rows are the same, and the loss masks padding out (a third of the rows in the quickstart's
        batches, whose chunks are cut into 32-row sequences)."""
        x = flat[:, : self.feat_size] if self.mask_size else flat
        if seq_lens is None:
            return self.pi_trunk(x)
        valid = (torch.arange(t, device=flat.device).unsqueeze(0) < seq_lens.to(flat.device).unsqueeze(1)).reshape(-1)
        rows = valid.nonzero().squeeze(1)
        if rows.shape[0] == flat.shape[0]:
            return self.pi_trunk(x)
        feats = self.pi_trunk(x.index_select(0, rows))
        return feats.new_zeros(flat.shape[0], feats.shape[1]).index_copy(0, rows, feats)

    def step(self, obs, state: Dict[str, Any], prev_actions=None, prev_rewards=None):
        """One acting step of a recurrent module: (masked logits (B, A) or Box [mean, log_std] (B, 2d),
        new state) for (B, D) obs and the state {"h", "c"} of (B, cell); previous actions (B,) or
        (B, d) / rewards (B,) when configured."""
        batch = {Columns.OBS: obs, Columns.STATE_IN: state,
                 PREV_ACTIONS: prev_actions, PREV_REWARDS: prev_rewards}
        logits, _, new_state = self._recurrent(batch)
        return logits, new_state

    # ---- pieces used by the env runner directly (no RLlib connectors on the hot path) ----
    def logits(self, obs):
        """Masked action logits (Box: [mean, log_std]) for a (B, obs_size) float tensor (feed-forward
        modules; recurrent: `step`)."""
        if self.use_lstm:
            raise TypeError("a recurrent SpadeModule (use_lstm) acts with step(obs, state), not logits(obs)")
        feats = obs[:, : self.feat_size] if self.mask_size else obs
        return self._mask(self.pi_head(self.pi_trunk(feats)), obs)

    def fast_logits(self, obs):
        """`logits` for acting: the MLP as plain `addmm`/activation calls on the parameters (no
        `nn.Module` dispatch; `bench/` measures the gain). The tensors are views of the parameters, so in-place weight loads (`set_state`) show at once."""
        layers = self.__dict__.get("_fast_layers")
        if layers is None:
            if self.use_lstm:
                raise TypeError("a recurrent SpadeModule (use_lstm) acts with step(obs, state), not fast_logits(obs)")
            layers = self.__dict__["_fast_layers"] = self._plain_layers()
        if not layers:
            return self.logits(obs)
        act, linears = layers
        h = obs[:, : self.feat_size] if self.mask_size else obs
        for weight, bias in linears[:-1]:
            h = act(torch.addmm(bias, h, weight.t()))
        weight, bias = linears[-1]
        return self._mask(torch.addmm(bias, h, weight.t()), obs)

    def _plain_layers(self):
        """(activation, [(W, b), ...]) of an MLP policy (trunk then head); () for the CNN."""
        trunk = list(self.pi_trunk) if isinstance(self.pi_trunk, nn.Sequential) else []
        if not trunk or not all(isinstance(m, (nn.Linear, nn.Tanh, nn.ReLU)) for m in trunk):
            return ()
        acts = {type(m) for m in trunk if not isinstance(m, nn.Linear)}
        if len(acts) != 1:
            return ()
        act = torch.tanh if acts == {nn.Tanh} else torch.relu
        linears = [m for m in trunk if isinstance(m, nn.Linear)] + [self.pi_head]
        return act, [(m.weight.detach(), m.bias.detach()) for m in linears]

    def _mask(self, logits, obs):
        """The action-distribution inputs from the policy head's output: masked logits (Discrete),
        or [mean, log_std] (Box)."""
        if self.continuous:
            return torch.cat([logits, self.log_std.to(logits.dtype).expand_as(logits)], dim=-1)
        if not self.mask_size:
            return logits
        mask = obs[:, self.feat_size :]
        if logits.dtype != torch.float32:  # bf16 autocast: FLOAT_MIN needs float32
            logits = logits.float()
        return torch.where(mask > 0.5, logits, torch.full_like(logits, FLOAT_MIN))

    def _forward(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        if self.use_lstm:
            logits, _, state = self._recurrent(batch)
            return {Columns.ACTION_DIST_INPUTS: logits, Columns.STATE_OUT: state}
        return {Columns.ACTION_DIST_INPUTS: self.logits(batch[Columns.OBS].float())}

    def _forward_train(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        if not self.train_bf16:
            return self._forward_train_f32(batch)
        with torch.autocast(device_type=next(self.parameters()).device.type, dtype=torch.bfloat16):
            out = self._forward_train_f32(batch)
        return _to_float32(out)

    def _forward_train_f32(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        if self.use_lstm:
            logits, emb, state = self._recurrent(batch)
            return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: emb, Columns.STATE_OUT: state}
        obs = batch[Columns.OBS].float()
        if not self.vf_share_layers:
            return {Columns.ACTION_DIST_INPUTS: self.logits(obs)}
        feats = obs[:, : self.feat_size] if self.mask_size else obs
        emb = self.pi_trunk(feats)  # computed once: policy head here, value head in compute_values
        return {Columns.ACTION_DIST_INPUTS: self._mask(self.pi_head(emb), obs), Columns.EMBEDDINGS: emb}

    def compute_values(self, batch: Dict[str, Any], embeddings=None):
        if embeddings is not None and embeddings.dtype != torch.float32:
            embeddings = embeddings.float()
        if self.use_lstm:
            if embeddings is None:
                embeddings = self._recurrent(batch)[1]
            return self.vf_head(embeddings).squeeze(-1)
        if embeddings is None:
            obs = batch[Columns.OBS].float()
            feats = obs[:, : self.feat_size] if self.mask_size else obs
            embeddings = self.pi_trunk(feats) if self.vf_share_layers else self.vf_trunk(feats)
        return self.vf_head(embeddings).squeeze(-1)
