"""Driver components: state the driver owns (league, curriculum, self-play plan), one protocol.

A driver component lives in the `SpadePPO` algorithm on the driver. Each training iteration:

  1. `SpadePPO` drains the `EpisodeOutcome` records (spade_rllib/core/outcome.py) of every env runner
     (`foreach_env_runner(lambda r: r.pop_episode_outcomes())`).
  2. It calls `component.update(outcomes, ctx)` on every component, in registry order; each returns
     a flat dict of metrics with path keys ("league/size", "curriculum/difficulty"), which land in
     the iteration's result (so in progress.csv / TensorBoard) and on the console line.
  3. It merges `component.runner_update(full=False)` of all components (later components win) and
     broadcasts the resulting `DriverUpdate` to every env runner (`runner.apply_driver_update`).
     After an env runner restart, and after a restore, it sends `runner_update(full=True)`.
  4. `state_dict()` of every component goes into the algorithm checkpoint (state key
     "spade_components"); `load_state_dict()` brings it back on `--resume` and
     `Algorithm.from_checkpoint`.

To add one: write a class with these methods (no Ray import needed), and a factory
`make(run_config, env_info) -> component | None`; list the factory in
`spade_rllib.rllib.component_registry.COMPONENT_FACTORIES` under the config section name (imported
by name, so an import scan sees every edge). A section's factory returns None when the section is off. Metrics a component reports should also be reported (e.g. as NaN or initial
values) from the first iteration on, so their columns exist in progress.csv.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, runtime_checkable


from spade_rllib.config.run_config import RunConfig
from spade_rllib.core.outcome import BOT_PREFIX
from spade_rllib.core.outcome import MAIN
from spade_rllib.rllib.plan import MIRROR, RANDOM, DriverUpdate, OpponentPlan

COPLAYER_PRIORITY = "coplayer_priority"
"""`DriverContext.extra` key: (the joint curriculum's {co-player id: probability}, maestro.coplayer_mix),
set by the curriculum's update before the league's (registry order); the league mixes it into main's plan."""


@dataclass
class EnvInfo:
    """What components may need to know about the env: what one built copy reports (`describe_env`, once on the
    driver).

    Not merged into `spade_rllib.games.resolved_env.ResolvedEnv`, which it overlaps in `env_id` and `kind` only
    (both copied from it by `describe_env`): a `ResolvedEnv` is what an id names, read without building the env
    (pure, before Ray, so the config checks can refuse a bad id in one line, and it pickles as its id), while
    everything else here (teams, spaces, mask and window sizes, roles) exists only once an env copy is built,
    which may import optional packages and fail. One record holding both would be half empty before the build.
    """

    env_id: str
    kind: str  # "level" | "pettingzoo" | "gymnasium" (spade_rllib.games.EnvKind)
    teams: tuple  # agent ids per team, index 0 = team A
    num_actions: int
    obs_size: int
    mask_size: int
    window_shape: Optional[tuple] = None  # level games only
    map_shape: Optional[tuple] = None  # (B, B, C) of a memory map ending the observation (level games with one)
    action_space: Any = None  # the game's flat action space (Discrete, or a float32 Box); None: Discrete(num_actions)
    roles: dict = field(default_factory=dict)  # agent -> role (role games; empty: one "main" plays every agent)
    role_shapes: dict = field(default_factory=dict)  # role -> (obs size, mask size, number of actions)

    def role_modules(self) -> tuple[str, ...]:
        """The trained module of each role, ``main_<role>``, in role order (empty without roles)."""
        from spade_rllib.games.roles import role_module_id

        return tuple(role_module_id(r) for r in self.role_shapes)

    def module_shape(self, module_id: str) -> tuple[int, int, int]:
        """(obs size, mask size, number of actions) of a trained module: its role's, else the env's."""
        from spade_rllib.games.roles import role_of_module

        role = role_of_module(module_id)
        if role in self.role_shapes:
            return tuple(self.role_shapes[role])
        return (self.obs_size, self.mask_size, self.num_actions)


@dataclass
class DriverContext:
    """Handed to `DriverComponent.update` each iteration."""

    iteration: int  # training iteration just finished (1-based)
    env_steps_lifetime: int
    main_weights: Callable[[], dict]  # numpy state dict of main's RLModule (learner copy), computed lazily
    num_runners: int
    extra: dict = field(default_factory=dict)
    module_weights: Optional[Callable[[str], dict]] = None  # the same for any trained module id
    reset_module: Optional[Callable[[str, int], None]] = None  # re-initialise a trained module (seed)
    # level_id -> (sum of max(GAE, 0), steps) of main's experience this iteration, from the GAE
    # connector (local learner only; empty otherwise): PLR's positive value loss per level
    level_value_loss: dict = field(default_factory=dict)

    def weights_of(self, module_id: str) -> dict:
        """Numpy state dict of a trained module (main through `main_weights` when that is all there is)."""
        if self.module_weights is not None:
            return self.module_weights(module_id)
        if module_id == MAIN:
            return self.main_weights()
        raise KeyError(f"no weights getter for module {module_id!r} in this DriverContext")


@runtime_checkable
class DriverComponent(Protocol):
    """The hook API the league and curriculum implement (see module docstring)."""

    name: str

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...

    def update(self, outcomes: list, ctx: DriverContext) -> dict: ...

    def runner_update(self, full: bool) -> Optional[DriverUpdate]: ...


class SelfPlayComponent:
    """Built-in: publishes the opponent plan for `self_play.mode` and `self_play.opponent_mix`."""

    name = "self_play"

    def __init__(self, mode: str, opponent_mix: dict, seed: int):
        mix = {str(k): float(v) for k, v in (opponent_mix or {}).items() if float(v) > 0}
        rest = max(0.0, 1.0 - sum(mix.values()))
        base = {"mirror": MIRROR, "vs_random": RANDOM, "none": MIRROR}[mode]
        if rest > 0:
            mix[base] = mix.get(base, 0.0) + rest
        total = sum(mix.values())
        self.plan = OpponentPlan(entries=tuple((k, v / total) for k, v in mix.items()), seed=seed, version=0)
        self._sent = False

    def state_dict(self) -> dict:
        return {"plan": {"entries": [list(e) for e in self.plan.entries], "seed": self.plan.seed, "version": self.plan.version}}

    def load_state_dict(self, state: dict) -> None:
        p = state["plan"]
        self.plan = OpponentPlan(entries=tuple(tuple(e) for e in p["entries"]), seed=p["seed"], version=p["version"])
        self._sent = False

    def update(self, outcomes: list, ctx: DriverContext) -> dict:
        return {}

    def runner_update(self, full: bool) -> Optional[DriverUpdate]:
        if self._sent and not full:
            return None
        self._sent = True
        return DriverUpdate(opponent_plan=self.plan)


def make_self_play_component(cfg: RunConfig, info: EnvInfo) -> Optional[SelfPlayComponent]:
    if len(info.teams) < 2 and not info.roles:
        return None
    return SelfPlayComponent(cfg.self_play.mode, cfg.self_play.opponent_mix, seed=cfg.experiment.seed)


__all__ = [
    "BOT_PREFIX",
    "DriverComponent",
    "DriverContext",
    "DriverUpdate",
    "EnvInfo",
    "SelfPlayComponent",
    "make_self_play_component",
]
