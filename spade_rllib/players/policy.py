"""Ray-free policy loading: a trained RLModule (or a league snapshot) behind `act()`.

    from spade_rllib.players.policy import load_policy
    policy = load_policy("runs/quickstart/PPO_.../checkpoint_000003")   # module "main"
    action = policy.act(obs, action_mask=None, deterministic=True)

Continuous policies (a `Box` action space; `policy.continuous` is True): `act()` returns a float32
array of the env's flat action size, clipped to the Box's bounds; `deterministic=True` gives the
Gaussian's mean, otherwise a sample with the learned standard deviation (`action_dist_batch` gives
both, unclipped). They take no action mask.

Recurrent policies (trained with `agent.model.memory: lstm`; `policy.recurrent` is True) keep state:
`act()` advances one internal state, so call `policy.reset()` at every episode start (one stream of
observations per policy object); `step(obs, state)` is the explicit form, pure in `state`
(`policy.initial_state()`), for several games or agents at once. Feed-forward policies ignore both.

What a *checkpoint* may be (resolved by `resolve_checkpoint`):
- an RLlib algorithm checkpoint directory, i.e. one holding `learner_group/learner/rl_module/<module_id>`;
- a Tune trial directory holding `checkpoint_*` folders (the newest, by number, is used);
- a single RLModule directory (holding `class_and_ctor_args.pkl` and `module_state.*`).

Nothing here starts Ray: `RLModule.from_checkpoint(<ckpt>/learner_group/learner/rl_module/<id>)`
reads the module's pickled constructor arguments and its state and runs on torch alone.

Where everything lives inside a checkpoint is `spade_rllib.artifacts.checkpoint_layout`'s business
(`resolve_checkpoint`, `league_member_states`, `checkpoint_env_id`; re-exported here). League
snapshots are numpy state dicts of main's architecture; a snapshot is built as main's module class
with its weights. The env a checkpoint was trained on comes from run metadata or, when that names no
supported env, from the module's spaces (`infer_env_id`); `load_policy(..., env_id=...)` refuses a
checkpoint of another env.

Every bad input raises `PolicyLoadError` with a one-line message; CLIs print it and exit 2.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from spade_rllib.artifacts.checkpoint_layout import (  # noqa: F401 - re-exported: the loader's users import them from here
    RL_MODULE_SUBPATH,
    CheckpointInfo,
    PolicyLoadError,
    checkpoint_env_id,
    checkpoint_env_setup,
    member_module,
    league_member_states,
    natural_key,
    resolve_checkpoint,
)
from spade_rllib.games import canonical_env_id, game_ids, resolve_env
from spade_rllib.core.outcome import MAIN
from spade_rllib.core.validation import did_you_mean

DEFAULT_MODULE_ID = MAIN
MASKED_OBS_KEY = "observations"
MASK_KEY = "action_mask"
DEPRECATION_LOGGER = "ray._common.deprecation"
PZ_OBS_KEY = "observation"  # PettingZoo classic envs' dict key for the board


# --------------------------------------------------------------------------------------------
# Module loading
# --------------------------------------------------------------------------------------------
def _unknown_module_error(module_id: str, info: CheckpointInfo) -> PolicyLoadError:
    available = ", ".join(info.all_ids) or "none"
    hint = did_you_mean(module_id, info.all_ids)
    return PolicyLoadError(
        f"module id {module_id!r} is not in checkpoint {info.path}{hint}; available: {available}"
    )


@contextlib.contextmanager
def _quiet_deprecations():
    """Silence RLlib's "RLModule(config=...) is deprecated" warning, logged for every module built."""
    quiet = logging.getLogger(DEPRECATION_LOGGER)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quiet.setLevel(level)


def load_module(info: CheckpointInfo, module_id: str = DEFAULT_MODULE_ID):
    """Build the torch RLModule `module_id` from `info` (league members from main's architecture).
    The saved weights must fit the module exactly and be finite (`checkpoint_guard.state_problem`)."""
    with _quiet_deprecations():
        return _load_module(info, module_id)


VALUE_KEY_PREFIX = "vf_"
"""State keys of the value function: a league snapshot may leave them out (acting never uses them)."""


def saved_module_state(directory: Path) -> tuple[Path, Any]:
    """(file, state) of the `module_state.*` RLlib wrote into one RLModule directory."""
    files = sorted(directory.glob("module_state.*"))
    if not files:
        raise PolicyLoadError(f"{directory}: no module_state file")
    file = files[0]
    try:
        if file.suffix in (".msgpack", ".msgpck"):
            from ray.rllib.utils.serialization import try_import_msgpack

            msgpack = try_import_msgpack(error=True)
            with open(file, "rb") as f:
                return file, msgpack.load(f, strict_map_key=False)
        with open(file, "rb") as f:
            import pickle

            return file, pickle.load(f)
    except Exception as e:
        raise PolicyLoadError(f"cannot read {file}: {type(e).__name__}: {e}") from e


def _explain_misfit(directory: Path, saved: Any, where: str) -> None:
    """When RLlib could not load a module, build it from its constructor arguments alone and raise
    the first key that does not fit (RLlib's own message lists every key over many lines)."""
    import pickle

    try:
        with open(directory / "class_and_ctor_args.pkl", "rb") as f:
            ctor = pickle.load(f)
        args, kwargs = ctor["ctor_args_and_kwargs"]
        module = ctor["class"](*args, **kwargs)
    except Exception:
        return
    check_weights_fit(module, saved, where)


def check_weights_fit(module, saved: Any, where: str, snapshot: bool = False) -> None:
    """Raise `PolicyLoadError` naming `where` and the first bad key unless `saved` fits `module`."""
    from spade_rllib.artifacts.checkpoint_guard import state_problem

    optional = (lambda key: key.startswith(VALUE_KEY_PREFIX)) if snapshot else (lambda key: False)
    problem = state_problem(module.get_state(), saved, optional)
    if problem:
        whose = "main's module" if snapshot else "the module"
        raise PolicyLoadError(f"{where}: weights do not fit {whose}: {problem}")


def _load_module(info: CheckpointInfo, module_id: str):
    from ray.rllib.core.rl_module.rl_module import RLModule  # heavy import, kept local

    if module_id in info.module_ids:
        file, saved = saved_module_state(info.module_dir(module_id))
        try:
            module = RLModule.from_checkpoint(str(info.module_dir(module_id)))
        except Exception as e:
            _explain_misfit(info.module_dir(module_id), saved, str(file))  # a shape mismatch, named by key
            raise PolicyLoadError(
                f"cannot load module {module_id!r} from {info.module_dir(module_id)}: "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from e
        check_weights_fit(module, saved, str(file))
    elif module_id in info.league_ids:
        arch = member_module(module_id)  # main, or the role main a role snapshot was taken of
        if arch not in info.module_ids:
            raise PolicyLoadError(
                f"league member {module_id!r} needs {arch}'s architecture, but {info.path} has no {arch!r} module"
            )
        module = RLModule.from_checkpoint(str(info.module_dir(arch)))
        weights = league_member_states(info)[module_id]
        # Snapshots may be inference-only (no value head); every other key must be there and fit.
        check_weights_fit(module, weights, f"{info.path} league member {module_id!r}", snapshot=True)
        try:
            module.set_state(weights)
        except Exception as e:
            raise PolicyLoadError(f"league member {module_id!r} weights do not fit main's module: {e}") from e
    else:
        raise _unknown_module_error(module_id, info)
    if hasattr(module, "eval"):
        module.eval()
    return module


def _is_torch_rl_module(module) -> bool:
    try:
        from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
    except ImportError:
        return False
    return isinstance(module, TorchRLModule) and hasattr(module, "_forward_inference")


class Policy:
    """A loaded RLModule that maps observations to actions; torch only, no Ray.

    `obs` may be the env's own observation: a flat array (MazeRace), a PettingZoo dict with
    `observation` and `action_mask` (connect_four), or the flat vector the trainer feeds (features
    then the trailing mask). An explicit `action_mask` is applied on top and replaces the mask in
    the observation. Three module input styles are handled (see `input_style`):
    - "flat": one flat float vector;
    - "trailing_mask": features then `mask_size` mask entries (`SpadeModule` with `mask_size` > 0);
    - "dict_mask": `{"observations": ..., "action_mask": ...}` (RLlib's action-masking example).
    """

    def __init__(self, module, module_id: str, checkpoint: Path | None = None, env_id: str | None = None):
        import gymnasium as gym

        self.module = module
        self.module_id = module_id
        self.checkpoint = checkpoint
        self.env_id = env_id
        self.observation_space = module.observation_space
        self.action_space = module.action_space
        self.continuous = isinstance(self.action_space, gym.spaces.Box)
        if not self.continuous and not isinstance(self.action_space, gym.spaces.Discrete):
            raise PolicyLoadError(
                f"module {module_id!r} has action space {self.action_space}; only Discrete and Box are supported"
            )
        # Discrete: the number of actions; Box: the size of the flat action vector.
        self.num_actions = int(np.prod(self.action_space.shape)) if self.continuous else int(self.action_space.n)
        if self.continuous:
            self.action_low = np.asarray(self.action_space.low, np.float32).reshape(-1)
            self.action_high = np.asarray(self.action_space.high, np.float32).reshape(-1)
        model_config = getattr(module, "model_config", None) or {}
        mask_size = int(model_config.get("mask_size", 0)) if isinstance(model_config, Mapping) else 0
        if isinstance(self.observation_space, gym.spaces.Dict) and MASK_KEY in self.observation_space.spaces:
            self.input_style = "dict_mask"
            self.feature_size = int(np.prod(self.observation_space[MASKED_OBS_KEY].shape))
            self._obs_shape = tuple(self.observation_space[MASKED_OBS_KEY].shape)
        else:
            total = int(np.prod(self.observation_space.shape or ()))
            self.input_style = "trailing_mask" if mask_size else "flat"
            self.feature_size = total - mask_size
            self._obs_shape = (total,) if mask_size else tuple(self.observation_space.shape or ())
        self.masked = self.input_style != "flat"
        if hasattr(module, "eval"):
            module.eval()
        self._direct = _is_torch_rl_module(module)
        self.recurrent = bool(getattr(module, "use_lstm", False)) and hasattr(module, "step")
        self.uses_prev_reward = self.recurrent and bool(getattr(module, "use_prev_reward", False))
        self.state = self.initial_state()

    # -- recurrent state ---------------------------------------------------------------------
    def initial_state(self) -> dict:
        """The state at an episode start: {"h", "c"} zeros of the LSTM size and the previous action
        (0); {} for a feed-forward policy."""
        if not self.recurrent:
            return {}
        cell = int(self.module.cell_size)
        prev = np.zeros(self.num_actions, np.float32) if self.continuous else 0
        return {"h": np.zeros(cell, np.float32), "c": np.zeros(cell, np.float32), "prev_action": prev}

    def reset(self) -> None:
        """Start a new episode for `act()` (zero the internal recurrent state)."""
        self.state = self.initial_state()

    @property
    def input_size(self) -> int:
        """Length of the flat vector the module's forward pass takes (features + trailing mask)."""
        return self.feature_size + (self.num_actions if self.input_style == "trailing_mask" else 0)

    # -- batching -----------------------------------------------------------------------------
    def _split(self, obs: Any, action_mask: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """One observation -> (flat features, mask or None)."""
        if isinstance(obs, Mapping):
            if action_mask is None and MASK_KEY in obs:
                action_mask = obs[MASK_KEY]
            for key in (MASKED_OBS_KEY, PZ_OBS_KEY, "obs"):
                if key in obs:
                    obs = obs[key]
                    break
            else:
                raise ValueError(f"observation dict has keys {sorted(obs)}; expected 'observation(s)'")
        flat = np.asarray(obs, dtype=np.float32).reshape(-1)
        if self.input_style == "trailing_mask" and flat.size == self.input_size:
            if action_mask is None:
                action_mask = flat[self.feature_size:]
            flat = flat[: self.feature_size]
        if flat.size != self.feature_size:
            raise ValueError(
                f"observation has {flat.size} entries; module {self.module_id!r} expects {self.feature_size}"
            )
        mask = None if action_mask is None else np.asarray(action_mask, dtype=np.float32).reshape(-1)
        if mask is not None and self.continuous:
            raise ValueError(f"module {self.module_id!r} has Box actions ({self.action_space}): it takes no action_mask")
        if mask is not None and mask.size != self.num_actions:
            raise ValueError(f"action_mask has {mask.size} entries; the action space has {self.num_actions}")
        return flat, mask

    def module_inputs(self, obs_batch: Sequence[Any], action_masks: Sequence[Any] | None = None):
        """(torch input for `forward_inference({"obs": ...})`, mask array [B, A], which rows had a mask)."""
        import torch

        masks_in = list(action_masks) if action_masks is not None else [None] * len(obs_batch)
        if len(masks_in) != len(obs_batch):
            raise ValueError(f"action_masks has {len(masks_in)} entries for {len(obs_batch)} observations")
        pairs = [self._split(o, m) for o, m in zip(obs_batch, masks_in)]
        feats = pairs[0][0][None] if len(pairs) == 1 else np.stack([p[0] for p in pairs])
        have_mask = np.array([p[1] is not None for p in pairs])
        if have_mask.any():
            mask = np.stack([p[1] if p[1] is not None else np.ones(self.num_actions, np.float32) for p in pairs])
        else:
            mask = np.ones((len(pairs), self.num_actions), np.float32)
        if self.input_style == "dict_mask":
            shaped = torch.from_numpy(feats.reshape((len(pairs),) + self._obs_shape))
            obs_in: Any = {MASKED_OBS_KEY: shaped, MASK_KEY: torch.from_numpy(mask)}
        elif self.input_style == "trailing_mask":
            obs_in = torch.from_numpy(np.concatenate([feats, mask], axis=1))
        else:
            obs_in = torch.from_numpy(feats.reshape((len(pairs),) + self._obs_shape))
        return obs_in, mask, have_mask

    def logits_batch(self, obs_batch: Sequence[Any], action_masks: Sequence[Any] | None = None,
                     states: list | None = None, rewards: Sequence[float] | None = None) -> np.ndarray:
        """Action logits [B, num_actions] of the inference forward pass; masked entries are -inf.

        Recurrent policies need `states` (one state per row, see `initial_state`); each is replaced
        in the list by the state after this step (its `prev_action` is set by `_advance`)."""
        import torch

        obs_in, mask, have_mask = self.module_inputs(obs_batch, action_masks)
        with torch.no_grad():
            if self.recurrent:
                if states is None or len(states) != len(obs_batch):
                    raise ValueError(f"recurrent policy {self.module_id!r}: pass one state per observation "
                                     "(policy.initial_state()), or use act() with reset()")
                if self.uses_prev_reward and rewards is None:
                    raise ValueError(f"recurrent policy {self.module_id!r} reads the previous reward: pass reward=")
                h = torch.from_numpy(np.stack([np.asarray(st["h"], np.float32) for st in states]))
                c = torch.from_numpy(np.stack([np.asarray(st["c"], np.float32) for st in states]))
                if self.continuous:
                    prev_a = torch.from_numpy(np.stack([np.asarray(st.get("prev_action", 0.0), np.float32)
                                                        * np.ones(self.num_actions, np.float32) for st in states]))
                else:
                    prev_a = torch.tensor([int(st.get("prev_action", 0)) for st in states])
                prev_r = torch.tensor(list(rewards) if rewards is not None else [0.0] * len(states), dtype=torch.float32)
                logits_t, new = self.module.step(obs_in, {"h": h, "c": c}, prev_a, prev_r)
                for j in range(len(states)):
                    states[j] = {"h": new["h"][j].numpy(), "c": new["c"][j].numpy(),
                                 "prev_action": states[j].get("prev_action", 0)}
                out = {"action_dist_inputs": logits_t}
            elif self._direct:
                # Same as TorchRLModule.forward_inference (eval() + _forward_inference) minus the
                # per-call eval()/train() toggling, which costs more than an MLP forward pass.
                out = self.module._forward_inference({"obs": obs_in})
            else:
                out = self.module.forward_inference({"obs": obs_in})
        logits = out["action_dist_inputs"].detach().cpu().numpy().astype(np.float64)
        if self.continuous:
            return logits
        if have_mask.any():
            if np.any(mask.sum(axis=1) <= 0):
                raise ValueError("an action mask allows no action")
            logits = np.where(mask > 0, logits, -np.inf)
        return logits

    def act_batch(
        self,
        obs_batch: Sequence[Any],
        action_masks: Sequence[Any] | None = None,
        deterministic: bool = True,
        rng: np.random.Generator | None = None,
        states: list | None = None,
        rewards: Sequence[float] | None = None,
    ) -> np.ndarray:
        """Actions for a batch: argmax of the logits, or a sample from their softmax with `rng`
        (Box: float32 [B, d], the Gaussian's mean or a sample, clipped to the bounds).
        Recurrent: `states` (one per row) are replaced in the list by the states after this step."""
        logits = self.logits_batch(obs_batch, action_masks, states=states, rewards=rewards)
        if self.continuous:
            d = self.num_actions
            actions = logits[:, :d]
            if not deterministic:
                rng = rng if rng is not None else np.random.default_rng()
                actions = actions + np.exp(logits[:, d:]) * rng.standard_normal(actions.shape)
            # The clipped action is what the env gets and what the policy acted on: a recurrent
            # policy's previous action is the clipped one (training records the unclipped sample).
            actions = np.clip(actions, self.action_low, self.action_high).astype(np.float32)
            if states is not None and self.recurrent:
                for j in range(len(actions)):
                    states[j]["prev_action"] = actions[j].copy()
            return actions
        if deterministic:
            actions = np.argmax(logits, axis=1).astype(np.int64)
        else:
            rng = rng if rng is not None else np.random.default_rng()
            shifted = logits - logits.max(axis=1, keepdims=True)
            probs = np.exp(shifted)
            probs /= probs.sum(axis=1, keepdims=True)
            actions = np.array([rng.choice(self.num_actions, p=p) for p in probs], dtype=np.int64)
        if states is not None and self.recurrent:
            for j, a in enumerate(actions.tolist()):
                states[j]["prev_action"] = int(a)
        return actions

    def act(
        self,
        obs: Any,
        action_mask: Any = None,
        deterministic: bool = True,
        rng: np.random.Generator | None = None,
        reward: float | None = None,
    ) -> Any:
        """One action for one observation (an int; Box: a float32 array); see the class docstring for accepted forms. A recurrent
        policy advances its internal state (`reset()` at each episode start); `reward`: the reward
        since the previous action, for policies trained with `lstm_use_prev_reward`."""
        masks = None if action_mask is None else [action_mask]
        if not self.recurrent:
            return self._one(self.act_batch([obs], masks, deterministic=deterministic, rng=rng)[0])
        states = [self.state]
        action = self._one(self.act_batch([obs], masks, deterministic=deterministic, rng=rng, states=states,
                                          rewards=None if reward is None else [float(reward)])[0])
        self.state = states[0]
        return action

    def _one(self, row):
        """One row of `act_batch` as `act` returns it: an int, or a float32 array (Box)."""
        return row if self.continuous else int(row)

    def step(self, obs: Any, state: dict, action_mask: Any = None, deterministic: bool = True,
             rng: np.random.Generator | None = None, reward: float | None = None) -> tuple[Any, dict]:
        """(action, next state) from an explicit state (`initial_state()` at an episode start); the
        policy's internal state is untouched. Feed-forward policies return `state` unchanged."""
        masks = None if action_mask is None else [action_mask]
        if not self.recurrent:
            return self._one(self.act_batch([obs], masks, deterministic=deterministic, rng=rng)[0]), state
        states = [dict(state)]
        action = self._one(self.act_batch([obs], masks, deterministic=deterministic, rng=rng, states=states,
                                          rewards=None if reward is None else [float(reward)])[0])
        return action, states[0]

    def __repr__(self) -> str:
        return f"Policy(module_id={self.module_id!r}, env_id={self.env_id!r}, checkpoint={str(self.checkpoint)!r})"


def _env_sizes(env_id: str, setup: Mapping | None = None) -> tuple[int, int]:
    """(observation features without the action mask, number of actions) of `env_id`, as the trainer
    sees them (the game-loop adapter's `Game`, built with the run's `setup`: `checkpoint_env_setup`), for
    compatibility checks."""
    from spade_rllib.games import find_game
    from spade_rllib.games.adapter import make_game_factory

    if find_game(env_id) is not None:  # the catalog's games: their defaults, with the run's rules and observation
        from spade_rllib.games.catalog import recorded_game_kwargs

        setup = {"kwargs": recorded_game_kwargs(setup)}
    setup = dict(setup or {})
    game = make_game_factory(env_id, setup.pop("kwargs", None), **setup)()
    try:
        return int(game.obs_size - game.mask_size), int(game.num_actions)
    finally:
        close = getattr(game.raw_env, "close", None)
        if callable(close):
            close()


def known_env_id(env_id: str | None) -> str | None:
    """`env_id` when it names an env this package can build (a game of the catalog, or an id the env-id
    resolver resolves: `spade_rllib.games.resolve_env`), else None (e.g. a private `register_env` name,
    which says nothing about the game: then the module's spaces decide)."""
    if env_id is None:
        return None
    if env_id in game_ids():
        return env_id
    try:
        resolve_env(env_id)
    except Exception:
        return None
    return env_id


def infer_env_id(policy: Policy) -> str | None:
    """The game of the catalog whose spaces fit the policy's module, when no run metadata names it."""
    for env_id in game_ids():
        try:
            features, actions = _env_sizes(env_id)
        except Exception:
            continue
        if actions == policy.num_actions and features == policy.feature_size:
            return env_id
    return None


def _check_env(policy: Policy, info: CheckpointInfo, env_id: str) -> None:
    wanted = canonical_env_id(env_id)
    recorded = known_env_id(checkpoint_env_id(info))
    if recorded is not None and canonical_env_id(recorded) != wanted:
        raise PolicyLoadError(f"checkpoint {info.path} was trained on {recorded}, not on {wanted}")
    try:
        setup = checkpoint_env_setup(info) if recorded is not None and canonical_env_id(recorded) == wanted else {}
        features, env_n = _env_sizes(wanted, setup)
    except ImportError:
        return
    except Exception as e:
        raise PolicyLoadError(f"unknown env id {env_id!r}: {type(e).__name__}: {' '.join(str(e).split())}") from e
    if env_n != policy.num_actions:
        raise PolicyLoadError(
            f"checkpoint {info.path} is not for {wanted}: its module has {policy.num_actions} actions, "
            f"{wanted} has {env_n}"
        )
    if features != policy.feature_size:
        raise PolicyLoadError(
            f"checkpoint {info.path} is not for {wanted}: its module observes {policy.feature_size} features, "
            f"{wanted} observes {features}"
        )


def load_policy(
    checkpoint: str | Path,
    module_id: str = DEFAULT_MODULE_ID,
    env_id: str | None = None,
    *,
    role: str | None = None,
) -> Policy:
    """Load `module_id` (an RLModule or a league snapshot) from `checkpoint` without starting Ray.

    `role` (a role game): that role's main, `main_<role>` (same as `module_id="main_<role>"`).
    `module_id` "league:uniform" | "league:plan" | "league:nash": the league as one player
    (`spade_rllib.players.league_player.MixturePolicy`); "league:average": the league distilled into one network
    (`spade_rllib.players.league_average.AveragePolicy`, a `Policy`).
    With `env_id`, refuse a checkpoint trained on another env (recorded id or incompatible spaces).
    Raises `PolicyLoadError` (one-line message) on any bad input.
    """
    info = resolve_checkpoint(checkpoint)
    if role is not None:
        if module_id != DEFAULT_MODULE_ID:
            raise PolicyLoadError(f"load_policy: pass role={role!r} or module_id={module_id!r}, not both")
        module_id = f"main_{role}"
        if module_id not in info.all_ids:
            roles = [m[len("main_"):] for m in info.module_ids if m.startswith("main_") and "exploiter" not in m]
            raise PolicyLoadError(f"role {role!r} is not in checkpoint {info.path}{did_you_mean(role, roles)}; roles: "
                                  f"{', '.join(roles) or 'none (a symmetric game: its module is main)'}")
    from spade_rllib.players.league_player import league_mode, load_league_policy

    mode = league_mode(module_id)
    if mode == "average":  # "league:average": the league distilled into one network (an AveragePolicy)
        from spade_rllib.players.league_average import load_average_policy

        return load_average_policy(info.path, load_policy, env_id=env_id)
    if mode is not None:  # "league:uniform|plan|nash": the league's mixture (a MixturePolicy)
        return load_league_policy(info.path, mode, load_policy, env_id=env_id)
    if module_id not in info.all_ids:
        raise _unknown_module_error(module_id, info)
    module = load_module(info, module_id)
    recorded_env = known_env_id(checkpoint_env_id(info))
    policy = Policy(module, module_id, checkpoint=info.path, env_id=canonical_env_id(env_id) or recorded_env)
    if env_id is not None:
        _check_env(policy, info, env_id)
    return policy
