"""Tiny checkpoints for tests and benches, built without Ray or training (synthetic, unlike the real
old checkpoint the tests keep under `tests/fixtures/`).

`save_tiny_checkpoint(root, env_id)` writes the same layout a training run leaves:

    root/                         the Tune trial directory
      params.json                 {"env": env_id}, as Tune writes the algorithm config
      progress.csv                synthetic learning curves (optional)
      checkpoint_000000/
        rllib_checkpoint.json
        learner_group/learner/rl_module/        a MultiRLModule
          main/                                 a `SpadeModule` (random init from `seed`)
        algorithm_state.pkl                     with optional league snapshots, where SpadePPO stores them
                                                (`spade_rllib.artifacts.checkpoint_layout`): spade_components ->
                                                league -> league -> League.state_dict()-like members

The modules are random MLPs: useful for plumbing (loading, export, schedules, CSVs), not strength.
"""
from __future__ import annotations

import csv
import json
import pickle
from pathlib import Path
from typing import Sequence

import numpy as np

from spade_rllib.artifacts.checkpoint_layout import (
    ALGORITHM_STATE_FILE,
    COMPONENTS_STATE_KEY,
    LEAGUE_COMPONENT,
    LEAGUE_CORE_KEY,
    RL_MODULE_SUBPATH,
    TUNE_PARAMS_FILE,
)
from spade_rllib.players.policy import _quiet_deprecations


def env_spaces(env_id: str):
    """(flat observation space, action space, mask size) as the trainer feeds them to `SpadeModule`."""
    import gymnasium as gym

    if env_id == "connect_four_v3":
        from pettingzoo.classic import connect_four_v3

        env = connect_four_v3.env()
        space = env.observation_space(env.possible_agents[0])
        n_actions = int(env.action_space(env.possible_agents[0]).n)
        size = int(np.prod(space["observation"].shape)) + n_actions
        return gym.spaces.Box(0.0, 1.0, (size,), np.float32), gym.spaces.Discrete(n_actions), n_actions
    from spade_rllib.games import find_game, make_env

    if find_game(env_id) is None:  # any other env: what the game-loop adapter feeds the trainer
        from spade_rllib.games.adapter import make_game_factory

        game = make_game_factory(env_id)()
        return game.observation_space(), game.action_space(), game.mask_size
    env = make_env(env_id)
    agent = env.possible_agents[0]
    return env.observation_space(agent), env.action_space(agent), 0


def build_module(env_id: str, hidden: Sequence[int] = (16,), seed: int = 0, model: dict | None = None,
                 spaces: tuple | None = None):
    """A randomly initialised `SpadeModule` for `env_id` (torch seeded with `seed`); `model`: extra
    model config keys (e.g. {"use_lstm": True, "lstm_cell_size": 8}); `spaces`: (observation space,
    action space, mask size) instead of `env_spaces(env_id)` (one role's, in a role game)."""
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from spade_rllib.rllib.module import SpadeModule

    obs_space, act_space, mask_size = spaces if spaces is not None else env_spaces(env_id)
    torch.manual_seed(seed)
    spec = RLModuleSpec(module_class=SpadeModule, observation_space=obs_space, action_space=act_space,
                        model_config={"kind": "mlp", "hidden": list(hidden), "activation": "tanh",
                                      "mask_size": mask_size, **(model or {})})
    with _quiet_deprecations():
        module = spec.build()
    # Larger policy-head weights than the trainer's near-uniform init, so argmax varies with the obs.
    with torch.no_grad():
        module.pi_head.weight.normal_(0.0, 1.0)
    return spec, module


def _write_modules(root: Path, ckpt: Path, env_id: str, modules: dict) -> None:
    """Save `modules` ({module_id: RLModule}) as the checkpoint's MultiRLModule, with the files a Tune trial has."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    specs = {module_id: RLModuleSpec(module_class=type(m), observation_space=m.observation_space,
                                     action_space=m.action_space, model_config=dict(m.model_config))
             for module_id, m in modules.items()}
    with _quiet_deprecations():
        multi = MultiRLModuleSpec(rl_module_specs=specs).build()
    for module_id, module in modules.items():
        multi[module_id].set_state(module.get_state())
    multi.save_to_path(str(ckpt / RL_MODULE_SUBPATH))
    (ckpt / "rllib_checkpoint.json").write_text(json.dumps({"checkpoint_version": "2.1", "format": "cloudpickle"}))
    (root / TUNE_PARAMS_FILE).write_text(json.dumps({"env": env_id}))


def save_tiny_checkpoint(root: str | Path, env_id: str, module_ids: Sequence[str] = ("main",),
                         hidden: Sequence[int] = (16,), seed: int = 0, snapshots: int = 0,
                         progress_rows: int = 0, checkpoint_name: str = "checkpoint_000000",
                         model: dict | None = None, env_kwargs: dict | None = None) -> Path:
    """Write a tiny checkpoint under `root` (the trial dir) and return the checkpoint directory. `env_kwargs`
    (a catalog game): the run's env.kwargs, recorded in its config.yaml; the modules observe what that env
    observes (e.g. CaptureTheFlag's `view_radius` or `seen_map`)."""
    root = Path(root)
    ckpt = root / checkpoint_name
    spaces = None
    if env_kwargs:
        import yaml

        from spade_rllib.artifacts.checkpoint_layout import RUN_CONFIG_FILE
        from spade_rllib.games import make_env

        env = make_env(env_id, **env_kwargs)
        agent = env.possible_agents[0]
        spaces = (env.observation_space(agent), env.action_space(agent), 0)
        (root / RUN_CONFIG_FILE).parent.mkdir(parents=True, exist_ok=True)
        (root / RUN_CONFIG_FILE).write_text(yaml.safe_dump({"env": {"id": env_id, "kwargs": dict(env_kwargs)}}))
    modules = {}
    for k, module_id in enumerate(module_ids):
        _, modules[module_id] = build_module(env_id, hidden, seed=seed * 1000 + k, model=model, spaces=spaces)
    _write_modules(root, ckpt, env_id, modules)
    components: dict = {}
    if snapshots:
        members = []
        for generation in range(1, snapshots + 1):
            _, snap = build_module(env_id, hidden, seed=seed * 1000 + 100 + generation, model=model)
            weights = {k: np.asarray(v) for k, v in snap.get_state().items()}
            members.append({"id": f"main_v{generation}", "created_at": generation, "weights": weights})
        members.append({"id": "random", "created_at": 0, "weights": None})
        league = {"version": 1, "members": members}  # the part of League.state_dict() loaders read
        components[LEAGUE_COMPONENT] = {LEAGUE_CORE_KEY: league}
    with open(ckpt / ALGORITHM_STATE_FILE, "wb") as f:  # a training run always writes it
        pickle.dump({COMPONENTS_STATE_KEY: components}, f)
    if progress_rows:
        write_progress_csv(root / "progress.csv", progress_rows, seed=seed)
    return ckpt


def save_tiny_role_checkpoint(root: str | Path, env_id: str, kwargs: dict | None = None, roles=None,
                              hidden: Sequence[int] = (16,), seed: int = 0, snapshots: int = 0,
                              checkpoint_name: str = "checkpoint_000000") -> Path:
    """A tiny checkpoint of a role game: one random module ``main_<role>`` per role (each with its role's
    spaces, `spade_rllib.games.roles`), `snapshots` frozen snapshots per role main in the role leagues
    (role r's league holds the other role's), and the run's ``config.yaml`` env section (id, kwargs,
    roles) as a training run writes it. Returns the checkpoint directory."""
    import gymnasium as gym
    import yaml

    from spade_rllib.artifacts.checkpoint_layout import RUN_CONFIG_FILE, ROLE_LEAGUES_KEY
    from spade_rllib.games.adapter import make_game_factory
    from spade_rllib.games.roles import game_roles, role_module_id, role_names

    root, kwargs = Path(root), dict(kwargs or {})
    ckpt = root / checkpoint_name
    game = make_game_factory(env_id, kwargs)()
    agent_roles = game_roles(game, roles, env_id)
    if not agent_roles:
        raise ValueError(f"{env_id} has no roles with env.roles = {roles!r}; use save_tiny_checkpoint")
    names = role_names(agent_roles)
    spaces = {}
    for role in names:
        agent = next(a for a in game.agents if agent_roles[a] == role)
        obs, mask, actions = game.agent_shape(agent)
        spaces[role] = (gym.spaces.Box(-np.inf, np.inf, (obs,), np.float32), gym.spaces.Discrete(actions), mask)
    modules = {}
    for k, role in enumerate(names):
        _, modules[role_module_id(role)] = build_module(env_id, hidden, seed=seed * 1000 + k, spaces=spaces[role])
    _write_modules(root, ckpt, env_id, modules)
    env_section = {"id": env_id, "kwargs": kwargs, "roles": roles}
    (root / RUN_CONFIG_FILE).write_text(yaml.safe_dump({"env": env_section}))
    components: dict = {}
    if snapshots:
        leagues = {}
        for k, role in enumerate(names):
            other = names[1 - k] if len(names) == 2 else role
            members = [{"id": "main", "created_at": 0, "weights": None}]
            for generation in range(1, snapshots + 1):  # snapshots of the other role's main
                _, snap = build_module(env_id, hidden, seed=seed * 1000 + 100 * (k + 1) + generation,
                                       spaces=spaces[other])
                members.append({"id": f"main_v{generation}", "created_at": generation,
                                "weights": {key: np.asarray(v) for key, v in snap.get_state().items()}})
            members.append({"id": "random", "created_at": 0, "weights": None})
            leagues[role] = {LEAGUE_CORE_KEY: {"version": 1, "members": members}}
        components[LEAGUE_COMPONENT] = {ROLE_LEAGUES_KEY: leagues}
    with open(ckpt / ALGORITHM_STATE_FILE, "wb") as f:
        pickle.dump({COMPONENTS_STATE_KEY: components}, f)
    return ckpt


def write_progress_csv(path: Path, rows: int, seed: int = 0) -> None:
    """Synthetic `progress.csv` with the columns a spade run logs (namespaced as Tune flattens them)."""
    rng = np.random.default_rng(seed)
    columns = ["training_iteration", "time_total_s", "num_env_steps_sampled_lifetime",
               "env_runners/episode_return_mean", "env_runners/league/main_win_rate",
               "env_runners/num_env_steps_sampled_lifetime_throughput",
               "curriculum/difficulty", "league/size", "league/main_rating"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for i in range(1, rows + 1):
            writer.writerow([i, 10.0 * i, 4000 * i, float(np.tanh(i / rows * 2) + rng.normal(0, 0.05)),
                             min(1.0, 0.4 + 0.5 * i / rows), 400.0 + rng.normal(0, 20),
                             1.0 + 4.0 * i / rows, 1 + i // 3, 1000.0 + 25.0 * i])
