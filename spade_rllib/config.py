"""The typed run configuration: YAML schema, validation with one-line errors, `--set` overrides.

A config is a tree of dataclasses (`RunConfig` at the root). Every field carries a one-line help
text and, where it matters, an allowed range or a set of choices in its `metadata`. `load_config`
reads YAML, applies `--set a.b=value` overrides (values parsed as YAML), then `parse_config` checks
every key and value before anything starts Ray. Each problem raises `ConfigError` whose message is
one line naming the key path, the value and what is allowed, with a "did you mean" for typos:

    >>> parse_config({"agent": {"lrr": 1e-4}})
    ConfigError: agent.lrr: unknown key; did you mean 'lr'? (allowed: algorithm, lr, gamma, ...)

Sections: experiment, env, agent (+ agent.model), self_play, league, curriculum, training
(+ training.stop), resources, evaluation. `league` and `curriculum` are owned by the league and
curriculum code; they start with an on/off field each and reject unknown keys already.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
import pkgutil
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml

MAZERACE_ID = "MazeRace-v0"


class ConfigError(ValueError):
    """A config problem, described in one line (key path, value, what is allowed)."""


def _f(default: Any = dataclasses.MISSING, *, help: str, factory: Any = None, **constraints: Any) -> Any:
    """A dataclass field with a help line and optional constraints (`min`, `max`, `gt`, `lt`, `choices`, `path`)."""
    md = {"help": help, **constraints}
    if factory is not None:
        return field(default_factory=factory, metadata=md)
    return field(default=default, metadata=md)


# ----------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------


@dataclass
class ExperimentConfig:
    name: str = _f("spade", help="Experiment name; the Tune experiment directory under storage_path.")
    seed: int = _f(0, help="Master seed: env runners, matchmaking, levels and torch derive from it.", min=0)
    storage_path: str = _f("results", help="Where Tune writes results and checkpoints (relative to cwd or absolute).")


@dataclass
class EnvConfig:
    id: str = _f(MAZERACE_ID, help="'MazeRace-v0', a Gymnasium id (CartPole-v1) or a PettingZoo path 'pkg.mod:env_name'.")
    kwargs: dict = _f(help="Keyword arguments for the env constructor (MazeRace: agents_per_team, view_radius, ...).", factory=dict)
    level_file: Optional[str] = _f(None, help="MazeRace only: an ASCII level file to play on every episode.", path=True)
    difficulty: Optional[float] = _f(None, help="MazeRace only: fixed difficulty in [1, 10] when no curriculum runs.", min=1.0, max=10.0)
    level_pool: int = _f(512, help="MazeRace without curriculum/level_file: each env runner pre-generates this many levels at the difficulty and draws one per training episode (0 = a fresh level every reset; evaluation always uses fresh levels).", min=0, max=100_000)


@dataclass
class ModelConfig:
    kind: str = _f("mlp", help="'mlp' over the flat observation, or 'cnn' over MazeRace's window plus an MLP head.", choices=("mlp", "cnn"))
    hidden: list[int] = _f(help="Hidden layer widths of the MLP (policy and value nets each).", factory=lambda: [128, 128], min=1)
    activation: str = _f("tanh", help="Hidden activation.", choices=("tanh", "relu"))
    vf_share_layers: bool = _f(False, help="Share the hidden layers between policy and value heads.")
    cnn_channels: list[int] = _f(help="CNN only: output channels of each 3x3 conv layer.", factory=lambda: [16, 32], min=1)


@dataclass
class AgentConfig:
    algorithm: str = _f("PPO", help="Training algorithm.", choices=("PPO",))
    lr: float = _f(3e-4, help="Adam learning rate.", gt=0.0, max=1.0)
    gamma: float = _f(0.99, help="Discount factor.", min=0.0, max=1.0)
    lambda_: float = _f(0.95, help="GAE lambda (YAML key: lambda_).", min=0.0, max=1.0)
    clip: float = _f(0.2, help="PPO policy clip parameter.", gt=0.0, max=1.0)
    vf_clip: float = _f(10.0, help="PPO value-function clip parameter.", gt=0.0)
    entropy: float = _f(0.01, help="Entropy bonus coefficient.", min=0.0)
    vf_coeff: float = _f(0.5, help="Value loss coefficient.", min=0.0)
    kl_coeff: float = _f(0.0, help="Initial KL penalty coefficient; 0 turns the KL loss off.", min=0.0)
    grad_clip: Optional[float] = _f(0.5, help="Global gradient-norm clip; null for none.", gt=0.0)
    epochs: int = _f(4, help="Passes over each train batch.", min=1, max=100)
    minibatch_size: int = _f(2048, help="SGD minibatch size (agent steps of the trained policy).", min=1)
    train_batch_size: int = _f(8192, help="Env steps sampled per training iteration.", min=1)
    model: ModelConfig = _f(help="Network architecture.", factory=ModelConfig)


@dataclass
class SelfPlayConfig:
    mode: str = _f("mirror", help="'mirror': main vs main (both seats learn); 'vs_random': main vs a random-action player; 'none' for single-agent envs.", choices=("mirror", "vs_random", "none"))
    opponent_mix: dict = _f(help="Optional extra opponents with weights, e.g. {random: 0.2, 'bot:rusher': 0.1}; the rest follows `mode`.", factory=dict)


def _core_values(section: Any) -> dict:
    """A run-config section's values for its pure core's config (`enabled` belongs to the run config)."""
    return {f.name: getattr(section, f.name) for f in dataclasses.fields(section) if f.name != "enabled"}


def _core_config(core_cls: type, values: dict) -> Any:
    """`core_cls.from_dict(values)`, with the core's one-line error re-raised as `ConfigError`."""
    try:
        return core_cls.from_dict(values)
    except (TypeError, ValueError) as e:
        raise ConfigError(str(e)) from e


@dataclass
class LeagueConfig:
    """`enabled` plus every field of the league core's `spade_rllib.league.LeagueConfig` (docs/league.md).

    Types are checked here; values are checked by the core (`to_core()`), whose one-line errors
    ("league.window = 0 is out of range; allowed: ...") are re-raised as `ConfigError`.
    """

    enabled: bool = _f(False, help="Turn league self-play on: main plays frozen snapshots of itself (replaces self_play's plan).")
    win_rate_threshold: Optional[float] = _f(0.7, help="Snapshot main when its score over the last `window` games reaches this (draws = 0.5); null = off.")
    window: int = _f(100, help="Games the win-rate threshold looks at (cleared at each snapshot).")
    every_n_iterations: Optional[int] = _f(None, help="Also snapshot every N iterations; null = off.")
    min_iterations_between: int = _f(1, help="Never two snapshots closer than this many iterations.")
    latest_ratio: float = _f(0.5, help="Share of main's games against its newest snapshot.")
    sampling: str = _f("pfsp", help="How the other games pick from the pool: 'uniform' or 'pfsp'.")
    pfsp_weighting: str = _f("hard", help="PFSP weight of main's win rate p: 'hard' (1-p)^2, 'variance' p(1-p), 'linear' 1-p, 'linear_capped' min(0.5, 1-p).")
    exploiter_pfsp_weighting: str = _f("variance", help="PFSP weighting of league exploiters (same choices as pfsp_weighting).")
    reference_floor: float = _f(0.0, help="Least share of main's games against the fixed references (random, bots) together, whatever PFSP says; 0 = off.")
    pfsp_window: int = _f(200, help="Recent games per member that estimate p for PFSP.")
    pfsp_prior_games: float = _f(1.0, help="Pseudo-games at p = 0.5 added to every member's PFSP record.")
    max_size: int = _f(20, help="Most frozen snapshots kept (random does not count).")
    eviction: str = _f("oldest", help="Which snapshot leaves a full pool: 'oldest' or 'lowest_rated'.")
    keep_first: bool = _f(True, help="Never evict main's first snapshot.")
    include_random: bool = _f(True, help="The uniform-random player is a pool member.")
    bots: list[str] = _f(help="Scripted bots of the env (e.g. [tactical, lookahead] for connect four) in the pool as fixed references.", factory=list)
    num_opponent_slots: int = _f(4, help="K: opponent weight slots per env runner (memory does not grow with the league).")
    main_exploiters: int = _f(0, help="AlphaStar main exploiters: trained modules that play only live main; reset after each snapshot.")
    league_exploiters: int = _f(0, help="AlphaStar league exploiters: trained modules that play the whole pool (PFSP).")
    rating: str = _f("elo", help="Reported rating: 'elo' or 'openskill' (mu); Elo is always tracked.")
    elo_k: float = _f(16.0, help="Elo K factor.")
    elo_initial: float = _f(1200.0, help="Starting Elo of main and random (snapshots start at main's rating).")
    openskill_model: str = _f("plackett_luce", help="OpenSkill model when rating is 'openskill'.")

    def to_core(self):
        """The league core's `LeagueConfig` (raises `ConfigError` with the core's message)."""
        from spade_rllib.league.config import LeagueConfig as CoreLeagueConfig  # noqa: PLC0415

        return _core_config(CoreLeagueConfig, _core_values(self))


@dataclass
class CurriculumConfig:
    """`enabled` plus every field of the curriculum core's `spade_rllib.curriculum.CurriculumConfig`
    (docs/curriculum.md). Top-level types are checked here; the sub-sections and every value are
    checked by the core (`to_core()`), whose one-line errors ("curriculum.threshold.up_factor = 0.5 is
    invalid; allowed: ...", "curriculum.plr.capasity is not a known setting (did you mean
    'capacity'?)") are re-raised as `ConfigError`. After parsing, the sub-sections hold every setting."""

    enabled: bool = _f(False, help="Turn the adaptive curriculum on (MazeRace only): the driver picks every training level.")
    strategy: str = _f("none", help="threshold (difficulty follows performance) | plr (prioritized level replay) | uniform (domain randomization) | fixed (one difficulty: no curriculum).", choices=("none", "threshold", "plr", "uniform", "fixed"))
    families: Optional[list[str]] = _f(None, help="threshold/fixed: generator families (open, maze, rooms); null = the env's choice per difficulty.")
    agents_per_team: int = _f(1, help="Team size of generated levels (the env's team size wins when they differ).")
    metrics_window: int = _f(200, help="Recent episodes behind the curriculum/*_mean and completion-rate metrics.")
    threshold: dict = _f(help="threshold: signal, initial, min, max, window, min_episodes, up_threshold, down_threshold, up_factor, down_factor.", factory=dict)
    plr: dict = _f(help="plr: capacity, replay_prob, temperature, staleness_coeff, min_fill, score, learnability_p, prior, level_window.", factory=dict)
    uniform: dict = _f(help="uniform (and PLR's new levels): families, size, wall_density, braid, flag_distance_frac ranges.", factory=dict)
    fixed: dict = _f(help="fixed: difficulty (default 10, the hardest).", factory=dict)

    def to_core(self):
        """The curriculum core's `CurriculumConfig` (raises `ConfigError` with the core's message)."""
        from spade_rllib.curriculum.config import CurriculumConfig as CoreCurriculumConfig  # noqa: PLC0415

        values = _core_values(self)
        if values["strategy"] == "none":
            values.pop("strategy")
        return _core_config(CoreCurriculumConfig, values)


@dataclass
class StopConfig:
    time_s: Optional[float] = _f(None, help="Stop after this many seconds of training.", gt=0.0)
    env_steps: Optional[int] = _f(None, help="Stop after this many sampled env steps.", min=1)
    iterations: Optional[int] = _f(None, help="Stop after this many training iterations.", min=1)
    metric: Optional[str] = _f(None, help="Stop when this result key (Tune path, e.g. env_runners/episode_return_mean) reaches `target`.")
    target: Optional[float] = _f(None, help="Target value for `metric`.")


@dataclass
class TrainingConfig:
    stop: StopConfig = _f(help="Stop conditions; the first one reached stops the run.", factory=StopConfig)
    num_env_runners: int = _f(0, help="Remote env runner processes; 0 samples in the trainer process itself.", min=0, max=1024)
    num_envs_per_runner: int = _f(64, help="Env copies stepped together (one batched forward pass) in each runner.", min=1, max=4096)
    checkpoint_every: int = _f(10, help="Checkpoint every N iterations; 0 only at the end.", min=0)
    checkpoint_keep: int = _f(3, help="How many recent checkpoints to keep.", min=1)
    torch_threads: int = _f(1, help="Torch threads of the local learner; 0 = min(4, CPUs). Runners act on 1 thread. >1 only pays on an idle machine.", min=0, max=64)
    sample_ahead: bool = _f(True, help="With remote env runners: sample the next batch while the learner updates (policy lag of 1 iteration).")


@dataclass
class ResourcesConfig:
    num_cpus: Optional[int] = _f(None, help="CPUs for the embedded local Ray; null = all of this machine.", min=1)
    num_learners: int = _f(0, help="Remote learner processes; 0 learns in the trainer process.", min=0)
    num_gpus_per_learner: float = _f(0.0, help="GPUs per learner; fractions allowed.", min=0.0)
    num_cpus_per_learner: float = _f(1.0, help="CPUs per remote learner.", min=0.0)
    num_cpus_per_env_runner: float = _f(1.0, help="CPUs per remote env runner.", min=0.0)


@dataclass
class EvaluationConfig:
    interval: int = _f(5, help="Evaluate main every N iterations (and at the end); 0 turns evaluation off.", min=0)
    games: int = _f(40, help="Games per opponent per evaluation (seats alternate).", min=1)
    opponents: list[str] = _f(help="Opponents: 'random', 'mirror', or 'bot:<name>' (MazeRace, connect four).", factory=lambda: ["random"])
    greedy: bool = _f(False, help="Evaluate with argmax actions instead of sampling.")
    target_win_rate: float = _f(0.9, help="The summary reports whether main reached this win rate vs 'random'.", min=0.0, max=1.0)
    heldout_levels: list[str] = _f(help="Held-out ASCII maps (files or directories of *.txt, e.g. spade_rllib/levels/heldout): every `interval` iterations main plays each vs rusher, rusher_tagger and itself, both seats, in a Ray task (heldout/<level>/<opponent>/win_rate); empty = off.", factory=list, path=True)
    heldout_games: int = _f(10, help="Held-out evaluation: games per level and opponent (seats alternate).", min=1)


@dataclass
class RunConfig:
    experiment: ExperimentConfig = _f(help="Name, seed, storage.", factory=ExperimentConfig)
    env: EnvConfig = _f(help="Environment id and knobs.", factory=EnvConfig)
    agent: AgentConfig = _f(help="Algorithm hyperparameters and model.", factory=AgentConfig)
    self_play: SelfPlayConfig = _f(help="How agents map to policies.", factory=SelfPlayConfig)
    league: LeagueConfig = _f(help="League self-play.", factory=LeagueConfig)
    curriculum: CurriculumConfig = _f(help="Adaptive curriculum.", factory=CurriculumConfig)
    training: TrainingConfig = _f(help="Stop condition, sampling, checkpoints.", factory=TrainingConfig)
    resources: ResourcesConfig = _f(help="CPUs and GPUs.", factory=ResourcesConfig)
    evaluation: EvaluationConfig = _f(help="Periodic evaluation of main.", factory=EvaluationConfig)
    # Derived, filled by `parse_config` (not read from YAML):
    source_path: Optional[str] = field(default=None, metadata={"help": "File the config came from.", "derived": True})

    def to_dict(self) -> dict:
        """Plain nested dict (derived fields left out), suitable for YAML and `parse_config`."""
        out = dataclasses.asdict(self)
        out.pop("source_path", None)
        return out


# ----------------------------------------------------------------------------------------------
# Env ids
# ----------------------------------------------------------------------------------------------

EnvKind = Literal["mazerace", "gymnasium", "pettingzoo"]


def classify_env_id(env_id: str, key: str = "env.id") -> EnvKind:
    """Say which family an env id belongs to, or raise `ConfigError` with a did-you-mean."""
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"{key} = {env_id!r}: must be a non-empty string")
    if env_id == MAZERACE_ID or env_id in _spade_env_ids():
        return "mazerace"
    if ":" in env_id:
        mod_name, _, attr = env_id.partition(":")
        if not mod_name.startswith("gymnasium"):
            try:
                mod = importlib.import_module(mod_name)
            except ImportError as e:
                raise ConfigError(
                    f"{key} = {env_id!r}: cannot import module {mod_name!r} ({e.__class__.__name__}: {e}); "
                    "expected a PettingZoo path like 'pettingzoo.classic:connect_four_v3'"
                ) from e
            try:
                target = getattr(mod, attr, None)
            except Exception as e:  # PettingZoo raises for deprecated, unknown or broken names
                if attr in {m.name for m in pkgutil.iter_modules(getattr(mod, "__path__", []))}:
                    raise ConfigError(f"{key} = {env_id!r}: cannot import it ({e.__class__.__name__}: {' '.join(str(e).split())})") from e
                target = None
            if type(target).__name__ == "DeprecatedModule" or not any(hasattr(target, n) for n in ("env", "parallel_env")):
                names = sorted(m.name for m in pkgutil.iter_modules(getattr(mod, "__path__", [])) if not m.ispkg)
                what = "no env" if target is None else "an outdated (deprecated) or non-env entry"
                raise ConfigError(
                    f"{key} = {env_id!r}: module {mod_name!r} has {what} named {attr!r}{_did_you_mean(attr, names)}; "
                    f"allowed: {', '.join(names[:12]) or 'PettingZoo env modules'}"
                )
            return "pettingzoo"
    import gymnasium as gym

    if env_id in gym.registry:
        return "gymnasium"
    known = [MAZERACE_ID, *gym.registry.keys()]
    raise ConfigError(
        f"{key} = {env_id!r}: unknown env id{_did_you_mean(env_id, known)}; allowed: {MAZERACE_ID!r}, "
        "a Gymnasium id (e.g. 'CartPole-v1') or a PettingZoo path 'pkg.module:env_name' "
        "(e.g. 'pettingzoo.classic:connect_four_v3')"
    )


def _spade_env_ids() -> tuple[str, ...]:
    try:
        from spade_rllib.envs import ENV_IDS  # noqa: PLC0415 (optional until the env lands)
    except Exception:  # pragma: no cover - env package not present yet
        return (MAZERACE_ID,)
    return tuple(ENV_IDS)


# ----------------------------------------------------------------------------------------------
# Parsing and validation
# ----------------------------------------------------------------------------------------------


def _did_you_mean(word: str, options: typing.Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args) + " or null"
    if origin is list:
        (inner,) = typing.get_args(tp) or (Any,)
        plural = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}.get(inner, _type_name(inner))
        return f"a list of {plural}"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false", dict: "a mapping"}.get(tp, str(tp))


def _convert(value: Any, tp: Any, key: str, md: dict) -> Any:
    """Check `value` against type `tp` and constraints `md`; return the converted value."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(value, args[0], key, md)
    if dataclasses.is_dataclass(tp):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected a mapping of {_keys(tp)}")
        return _build(tp, value, key)
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected {_type_name(tp)}")
        return [_convert(v, inner, f"{key}[{i}]", md) for i, v in enumerate(value)]
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected true/false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ConfigError(f"{key} = {value!r}: wrong type, expected an integer")
    elif tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected a number")
        value = float(value)
    elif tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected a string")
    elif tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key} = {value!r}: wrong type, expected a mapping")
        return dict(value)
    _check_constraints(value, key, md)
    return value


def _check_constraints(value: Any, key: str, md: dict) -> None:
    if "choices" in md and value not in md["choices"]:
        choices = ", ".join(repr(c) for c in md["choices"])
        raise ConfigError(f"{key} = {value!r}: not allowed{_did_you_mean(value, md['choices'])}; allowed: {choices}")
    lo, hi, gt, lt = md.get("min"), md.get("max"), md.get("gt"), md.get("lt")
    if isinstance(value, (int, float)):
        bad = (lo is not None and value < lo) or (hi is not None and value > hi) or (gt is not None and value <= gt) or (lt is not None and value >= lt)
        if bad:
            parts = []
            if gt is not None:
                parts.append(f"> {gt}")
            if lo is not None:
                parts.append(f">= {lo}")
            if lt is not None:
                parts.append(f"< {lt}")
            if hi is not None:
                parts.append(f"<= {hi}")
            raise ConfigError(f"{key} = {value!r}: out of range, allowed {' and '.join(parts)}")
    if md.get("path") and isinstance(value, str):
        if not Path(os.path.expanduser(value)).exists():
            raise ConfigError(f"{key} = {value!r}: file not found (cwd: {os.getcwd()})")


def _keys(cls: type) -> str:
    return ", ".join(f.name for f in dataclasses.fields(cls) if not f.metadata.get("derived"))


def _build(cls: type, raw: dict, prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("derived")}
    kwargs = {}
    for k, v in raw.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            raise ConfigError(f"{key}: unknown key{_did_you_mean(k, fields)} (allowed: {_keys(cls)})")
        kwargs[k] = _convert(v, hints[k], key, dict(fields[k].metadata))
    obj = cls(**kwargs)
    return obj


def parse_config(raw: Optional[dict], source_path: Optional[str] = None) -> RunConfig:
    """Validate a nested dict and return a `RunConfig`, raising `ConfigError` on the first problem."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"<root> = {raw!r}: wrong type, expected a mapping of sections ({_keys(RunConfig)})")
    cfg = _build(RunConfig, raw, "")
    cfg.source_path = source_path
    _cross_check(cfg)
    return cfg


def _cross_check(cfg: RunConfig) -> None:
    """Rules that involve more than one field."""
    kind = classify_env_id(cfg.env.id)
    if kind != "mazerace":
        for name in ("level_file", "difficulty"):
            if getattr(cfg.env, name) is not None:
                raise ConfigError(f"env.{name} = {getattr(cfg.env, name)!r}: only allowed with env.id {MAZERACE_ID!r} (env.id is {cfg.env.id!r})")
    if kind == "gymnasium" and cfg.self_play.mode != "none":
        # Single-agent envs have no opponent; quietly accept 'mirror' default but make it explicit.
        cfg.self_play.mode = "none"
    if kind != "gymnasium" and cfg.self_play.mode == "none":
        raise ConfigError(f"self_play.mode = 'none': multi-agent env {cfg.env.id!r} needs 'mirror' or 'vs_random'")
    for opp, w in cfg.self_play.opponent_mix.items():
        _check_opponent_id(opp, f"self_play.opponent_mix.{opp}", cfg.env.id)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            raise ConfigError(f"self_play.opponent_mix.{opp} = {w!r}: out of range, allowed a number >= 0")
    if sum(cfg.self_play.opponent_mix.values()) > 1.0 + 1e-9:
        raise ConfigError(f"self_play.opponent_mix = {cfg.self_play.opponent_mix!r}: out of range, the weights must sum to <= 1")
    for i, opp in enumerate(cfg.evaluation.opponents):
        _check_opponent_id(opp, f"evaluation.opponents[{i}]", cfg.env.id)
    for i, name in enumerate(cfg.league.bots):
        _check_opponent_id(f"{BOT_PREFIX}{name}", f"league.bots[{i}]", cfg.env.id)
    if cfg.agent.minibatch_size > cfg.agent.train_batch_size * 2:
        raise ConfigError(
            f"agent.minibatch_size = {cfg.agent.minibatch_size}: out of range, allowed <= 2 * agent.train_batch_size ({2 * cfg.agent.train_batch_size})"
        )
    stop = cfg.training.stop
    if (stop.metric is None) != (stop.target is None):
        raise ConfigError(f"training.stop.metric = {stop.metric!r}: metric and target must be given together (target = {stop.target!r})")
    if cfg.agent.model.kind == "cnn" and kind != "mazerace":
        raise ConfigError(f"agent.model.kind = 'cnn': only allowed with env.id {MAZERACE_ID!r} (env.id is {cfg.env.id!r})")
    cfg.league.to_core()  # validates every league value, enabled or not
    if cfg.league.enabled:
        if kind == "gymnasium":
            raise ConfigError(f"league.enabled = true: single-agent env {cfg.env.id!r} has no opponent; turn the league off")
    if cfg.curriculum.enabled and cfg.curriculum.strategy == "none":
        raise ConfigError("curriculum.strategy = 'none': choose a strategy when curriculum.enabled is true")
    if cfg.curriculum.enabled and kind != "mazerace":
        raise ConfigError(f"curriculum.enabled = true: only allowed with env.id {MAZERACE_ID!r} (env.id is {cfg.env.id!r})")
    core = cfg.curriculum.to_core().to_dict()  # validates every curriculum value, enabled or not
    for name in ("threshold", "plr", "uniform", "fixed"):
        setattr(cfg.curriculum, name, core[name])  # every setting, so config.yaml records them
    if cfg.evaluation.heldout_levels and kind != "mazerace":
        raise ConfigError(f"evaluation.heldout_levels: only allowed with env.id {MAZERACE_ID!r} (env.id is {cfg.env.id!r})")
    # Absolute paths: Tune runs the trainable in the trial directory.
    cfg.evaluation.heldout_levels = [str(Path(os.path.expanduser(p)).resolve()) for p in cfg.evaluation.heldout_levels]


BOT_PREFIX = "bot:"
BUILTIN_OPPONENTS = ("random", "mirror")


def _check_opponent_id(opp: str, key: str, env_id: str) -> None:
    if opp in BUILTIN_OPPONENTS:
        return
    from spade_rllib.bots import BOTS_BY_ENV, bot_names  # noqa: PLC0415

    bots = [BOT_PREFIX + name for name in bot_names(env_id)]
    if isinstance(opp, str) and opp.startswith(BOT_PREFIX):
        if not bots:
            raise ConfigError(f"{key} = {opp!r}: scripted bots only exist for {', '.join(map(repr, BOTS_BY_ENV))}")
        if opp in bots:
            return
    allowed = [*BUILTIN_OPPONENTS, *bots]
    raise ConfigError(f"{key} = {opp!r}: unknown opponent{_did_you_mean(opp, allowed)}; allowed: {', '.join(map(repr, allowed))}")


# ----------------------------------------------------------------------------------------------
# Loading, overrides
# ----------------------------------------------------------------------------------------------


def apply_overrides(raw: dict, overrides: typing.Sequence[str]) -> dict:
    """Apply `a.b=value` strings (values parsed as YAML) to a nested dict, in order."""
    raw = dict(raw or {})
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. agent.lr=1e-4")
        path, _, text = item.partition("=")
        path = path.strip()
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as e:
            raise ConfigError(f"--set {item!r}: value is not valid YAML ({str(e).splitlines()[0]})") from e
        parts = [p for p in path.split(".") if p]
        if not parts:
            raise ConfigError(f"--set {item!r}: empty key path")
        node = raw
        for i, p in enumerate(parts[:-1]):
            child = node.get(p)
            if child is None:
                child = {}
            elif not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {'.'.join(parts[: i + 1])} is not a section")
            else:
                child = dict(child)
            node[p] = child
            node = child
        node[parts[-1]] = value
    return raw


def _fix_yaml_floats(obj: Any) -> Any:
    """PyYAML reads '1e-4' (no dot) as a string; turn such strings into floats."""
    if isinstance(obj, dict):
        return {k: _fix_yaml_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fix_yaml_floats(v) for v in obj]
    if isinstance(obj, str):
        try:
            if obj.strip() and obj.strip()[0] in "0123456789.-+" and ("e" in obj.lower()):
                return float(obj)
        except ValueError:
            return obj
    return obj


def load_raw(path: Optional[str]) -> dict:
    """Read a YAML file into a dict, raising `ConfigError` for a missing or malformed file."""
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config = {str(path)!r}: file not found (cwd: {os.getcwd()})")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"--config = {str(path)!r}: not valid YAML ({' '.join(str(e).split())})") from e
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"--config = {str(path)!r}: expected a mapping of sections at the top level")
    return _fix_yaml_floats(raw)


def load_config(path: Optional[str], overrides: typing.Sequence[str] = ()) -> RunConfig:
    """Load YAML `path` (or defaults when None), apply `--set` overrides, validate."""
    raw = apply_overrides(load_raw(path), overrides)
    return parse_config(_fix_yaml_floats(raw), source_path=str(path) if path else None)


def dump_config(cfg: RunConfig) -> str:
    """The resolved config as YAML text."""
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def describe() -> str:
    """All keys with their help lines (for `--help-config`)."""
    lines: list[str] = []

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            if f.metadata.get("derived"):
                continue
            tp = typing.get_type_hints(cls)[f.name]
            key = f"{prefix}{f.name}"
            if dataclasses.is_dataclass(tp):
                lines.append(f"{key}:  {f.metadata['help']}")
                walk(tp, key + ".")
            else:
                default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
                lines.append(f"  {key} = {default!r}  ({_type_name(tp)}) {f.metadata['help']}")

    walk(RunConfig, "")
    return "\n".join(lines)
