"""The typed run configuration: YAML schema, validation with one-line errors, `--set` overrides.

A config is a tree of dataclasses (`RunConfig` at the root). Every field carries a one-line help
text and, where it matters, an allowed range or a set of choices in its `metadata`. `load_config`
reads YAML, applies `--set a.b=value` overrides (values parsed as YAML), then `parse_config` checks
every key and value before anything starts Ray. Each problem raises `ConfigError` whose message is
one line naming the key path, the value and what is allowed, with a "did you mean" for typos:

    >>> parse_config({"agent": {"lrr": 1e-4}})
    ConfigError: agent.lrr: unknown key (did you mean 'lr'?) (allowed: lr, gamma, lambda_, ...)

Sections: experiment, env, agent (+ agent.model), self_play, league, curriculum, training
(+ training.stop), resources, evaluation. `league` and `curriculum` embed the cores' own configs
(`spade_rllib.league.LeagueConfig`, `spade_rllib.curriculum.CurriculumConfig`): an on/off field
plus the core's fields, defaults and checks, so there is one schema and one wording of errors
(`spade_rllib.core.validation`) for the whole file. YAML values, `--set` values and sweep files are
read by one reader (`read_yaml`); NaN and +-inf are refused for every number.
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from spade_rllib.curriculum.curriculum_config import STRATEGIES as CURRICULUM_STRATEGIES
from spade_rllib.curriculum.curriculum_config import CurriculumConfig as CoreCurriculumConfig
from spade_rllib.games import LEVEL_KIND, EnvIdError, allowed_forms, bot_names, game_ids, spade_env_ids
from spade_rllib.games.resolved_env import ResolvedEnv, read_env_id
from spade_rllib.league.league_config import LeagueConfig as CoreLeagueConfig
from spade_rllib.core.outcome import BOT_PREFIX, MIRROR, RANDOM
from spade_rllib.core.validation import ConfigError, allowed_range, check_bool, check_choice, check_value, config_path, did_you_mean, setting, type_name
from spade_rllib.config.yaml_reader import MAX_BYTES as _MAX_YAML_BYTES
from spade_rllib.config.yaml_reader import dump_yaml as _dump_yaml
from spade_rllib.config.yaml_reader import read_yaml as _read_yaml


# ----------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------

ENCODERS = ("mlp", "cnn")
"""`agent.model.encoder`: what reads the observation."""
PLANNER_NONE, PLANNER_VIN = "none", "vin"
PLANNERS = (PLANNER_NONE, PLANNER_VIN)
"""`agent.model.planner`: a learned planner over the cell memory ('vin': value iteration networks)."""
MEMORY_NONE, MEMORY_LSTM = "none", "lstm"
MEMORIES = (MEMORY_NONE, MEMORY_LSTM)
"""`agent.model.memory`: what follows the encoder ('none': nothing, a feed-forward policy)."""


@dataclass
class ExperimentConfig:
    name: str = setting("spade", help="Experiment name; the Tune experiment directory under storage_path.")
    seed: int = setting(0, help="Master seed: env runners, matchmaking, levels and torch derive from it.", min=0,
                       max=2**32 - 1)
    storage_path: str = setting("results", help="Where Tune writes results and checkpoints (relative to cwd or absolute).")
    loggers: list[str] = setting(help="Experiment trackers fed by Tune's own callbacks (also `train --logger NAME`): 'mlflow' (MLflowLoggerCallback), 'wandb' (WandbLoggerCallback; WANDB_MODE=offline works without an account). Needs the `trackers` extra.", factory=list, choices=("mlflow", "wandb"))
    mlflow_tracking_uri: Optional[str] = setting(None, help="MLflow store for `loggers: [mlflow]`; null: $MLFLOW_TRACKING_URI, else sqlite:///<storage_path>/mlflow.db.")
    wandb_project: Optional[str] = setting(None, help="W&B project for `loggers: [wandb]`; null: $WANDB_PROJECT, else the experiment name.")


@dataclass
class EnvConfig:
    id: Optional[str] = setting(None, required=True, help="The game, no default: a level game ('CaptureTheFlag-v0', 'MazeRace-v0'), a PettingZoo registry id ('classic/tictactoe-v3'), a module 'pkg.mod:env_name' or 'pkg.mod.env_name', a class or factory 'pkg.mod:Class', or a Gymnasium id ('CartPole-v1').")
    kwargs: dict = setting(help="Keyword arguments for the env constructor (level games: agents_per_team, view_radius, ...; CTF also trail, captures_to_win, ...).", factory=dict)
    signal_schedule: dict = setting(help="Training-only signals of the game (CaptureTheFlag: tag_reward, new_cell_reward) over lifetime env steps, {name: [[0, v0], [steps, v1], ...]}, linear between points and the last value after (RLlib's schedule format), e.g. {new_cell_reward: [[0, 0.005], [2000000, 0]]}; the training envs start at v0 and take each iteration's value, evaluation never has them; a name set here is not also set in env.kwargs.", factory=dict)
    level_file: Optional[str] = setting(None, help="Level games only: an ASCII level file (of that game) to play on every episode.", path=True)
    difficulty: Optional[float] = setting(None, help="Level games only: fixed difficulty in [1, 10] when no curriculum runs.", min=1.0, max=10.0)
    level_pool: int = setting(512, help="Level games without curriculum/level_file: each env runner pre-generates this many levels at the difficulty and draws one per training episode (0 = a fresh level every reset; evaluation always uses fresh levels).", min=0, max=100_000)
    roles: Any = setting(None, help="Role games (predator/prey, attacker/defender): one trained module main_<role> per role, each with its own league and evaluation. A mapping {agent_or_prefix: role} (prefix: the agent name minus its trailing _<n>) or a 'pkg.module:function' path (agent -> role); None: inferred from the agent names (adversary_0 -> adversary) when the agents' spaces differ, else one 'main' plays every agent.")
    random_opening_plies: int = setting(0, help="Turn-based PettingZoo games (AEC, e.g. connect_four_v3) only: every training episode starts after k ~ U{0..N} uniformly random legal moves, so main also trains on positions its own openings never reach (0 = off).", min=0, max=100)
    teams: Any = setting(None, help="Multi-agent envs: who plays with whom, a mapping {team name: [agent ids]} covering every agent once, or a function path 'pkg.mod:fn' (agent id -> team); null = the env's team_of, else every agent its own team.")
    mode: str = setting("auto", help="'auto': teams from env.teams / the env; 'free_for_all': every agent its own team; 'cooperative': all agents one team (main plays them all; reported as team return, no win/draw/loss).", choices=("auto", "free_for_all", "cooperative"))
    api: str = setting("auto", help="PettingZoo modules with both: 'aec' builds env() (turn by turn), 'parallel' builds parallel_env() (all agents act at once, one forward pass for all); 'auto' = env() when there is one.", choices=("auto", "aec", "parallel"))


@dataclass
class ModelConfig:
    encoder: str = setting("mlp", help="What reads the observation: 'mlp' over the flat observation, or 'cnn' over the level game's window plus an MLP head (old spelling: kind).", choices=ENCODERS)
    hidden: list[int] = setting(help="Hidden layer widths of the MLP (policy and value nets each).", factory=lambda: [128, 128], min=1, max=65_536)
    activation: str = setting("tanh", help="Hidden activation.", choices=("tanh", "relu"))
    vf_share_layers: bool = setting(False, help="Share the hidden layers between policy and value heads.")
    cnn_channels: list[int] = setting(help="CNN only: output channels of each 3x3 conv layer.", factory=lambda: [16, 32], min=1, max=4096)
    map_channels: list[int] = setting(help="Output channels of 3x3 conv layers over the memory map that ends a level game's observation (CaptureTheFlag env.kwargs.seen_map), for either encoder; [] (default): the map enters the MLP flat.", factory=list, min=1, max=4096)
    planner: str = setting(PLANNER_NONE, help="A learned planner over the cell memory that ends a level game's observation (CaptureTheFlag env.kwargs.cell_memory): 'vin' (value iteration networks, Tamar et al. 2016, in max-product form: two conv layers give a goal map and a passability map for each of two goals, value iteration over the grid, read out at the agent's cell and joined to the other features); 'none' (default): the map enters the MLP flat, or through map_channels.", choices=PLANNERS)
    planner_iterations: int = setting(0, help="planner: vin only: 0 (default): the exact fixed point of value iteration, any path length (Dijkstra on CPU); k > 0: k unrolled rounds (a value travels one cell a round: paths longer than k are not planned; about 6x slower to train on CPU than 0).", min=0, max=1000)
    planner_channels: int = setting(16, help="planner: vin only: hidden channels of the first conv layer of the goal and passability maps.", min=1, max=1024)
    memory: str = setting(MEMORY_NONE, help="What the policy remembers between steps: 'none' (a feed-forward policy) or 'lstm' (a recurrent policy: an LSTM after the encoder; policy and value heads share encoder and LSTM, one hidden state per agent, vf_share_layers is then not used). Old spelling: use_lstm: true/false.", choices=MEMORIES)
    lstm_cell_size: int = setting(256, help="memory: lstm only: LSTM hidden size.", min=1, max=8192)
    max_seq_len: int = setting(20, help="memory: lstm only: training sequence length (agent steps; backprop through time over at most this many steps, zero padded, loss masked).", min=1, max=100_000)
    lstm_use_prev_action: bool = setting(False, help="memory: lstm only: feed the agent's previous action to the LSTM (one-hot; Box actions: the action vector).")
    lstm_use_prev_reward: bool = setting(False, help="memory: lstm only: feed the agent's previous reward to the LSTM.")
    log_std_init: float = setting(0.0, help="Box (continuous) actions only: initial log standard deviation of the Gaussian policy (one learned, state-independent value per action dimension); -1.0 starts at std 0.37.", min=-20.0, max=2.0)
    train_bf16: bool = setting(False, help="The learner's forward and backward pass under torch.autocast bfloat16 (CPUs with AVX512-BF16/AMX; acting and inference stay float32).")


@dataclass
class AgentConfig:
    lr: float = setting(3e-4, help="Adam learning rate.", gt=0.0, max=1.0)
    gamma: float = setting(0.99, help="Discount factor.", min=0.0, max=1.0)
    lambda_: float = setting(0.95, help="GAE lambda (YAML key: lambda_).", min=0.0, max=1.0)
    clip: float = setting(0.2, help="PPO policy clip parameter.", gt=0.0, max=1.0)
    vf_clip: float = setting(10.0, help="PPO value-function clip parameter.", gt=0.0)
    entropy: float = setting(0.01, help="Entropy bonus coefficient.", min=0.0)
    entropy_schedule: Optional[list] = setting(None, help="Entropy coefficient over lifetime env steps, "
                                               "[[0, c0], [steps, c1], ...], linear between points and c_last after "
                                               "(RLlib's schedule format); replaces `entropy` when set.")
    teacher: Optional[str] = setting(None, help="Kickstarting: a scripted bot of the game (e.g. raider) whose action at each "
                                     "of the learners' own steps is a label; the loss adds teacher_coeff times the "
                                     "cross-entropy of the policy to it (Schmitt et al. 2018). Training only; null: off.")
    teacher_coeff: float = setting(1.0, help="Weight of the teacher's cross-entropy (agent.teacher set).", min=0.0)
    teacher_max_ms: Optional[float] = setting(None, help="Kickstarting: the most milliseconds the teacher may take per "
                                              "learner step, measured on a few steps before training (the cost is "
                                              "printed either way); past it the run is refused. null: no limit.", gt=0.0)
    teacher_schedule: Optional[list] = setting(None, help="The teacher's weight over lifetime env steps, "
                                               "[[0, c0], [steps, c1], ...] (RLlib's schedule format), e.g. "
                                               "[[0, 1.0], [1500000, 0.0]]; replaces teacher_coeff when set.")
    magnet_coeff: float = setting(0.0, help="Magnetic mirror descent with a moving magnet (Sokota et al. 2023; EMAgnet, "
                                  "Maidment et al. 2026): the loss adds magnet_coeff times KL(policy || magnet), the "
                                  "magnet a copy of the policy whose weights follow it as an exponential moving average "
                                  "(agent.magnet_ema per gradient step). The entropy bonus (KL to the uniform magnet) "
                                  "stays as set. 0: off.", min=0.0, max=100.0)
    magnet_ema: float = setting(0.001, help="agent.magnet_coeff > 0 only: the share of the policy's weights the magnet "
                                "takes at each gradient step (1: the magnet is the policy before the step).",
                                gt=0.0, max=1.0)
    vf_coeff: float = setting(0.5, help="Value loss coefficient.", min=0.0)
    kl_coeff: float = setting(0.0, help="Initial KL penalty coefficient; 0 turns the KL loss off.", min=0.0)
    grad_clip: Optional[float] = setting(0.5, help="Global gradient-norm clip; null for none.", gt=0.0)
    epochs: int = setting(4, help="Passes over each train batch.", min=1, max=100)
    minibatch_size: int = setting(2048, help="SGD minibatch size (agent steps of the trained policy).", min=1, max=10_000_000)
    train_batch_size: int = setting(8192, help="Env steps sampled per training iteration.", min=1, max=10_000_000)
    model: ModelConfig = setting(help="Network architecture.", factory=ModelConfig)


@dataclass
class SelfPlayConfig:
    mode: str = setting("mirror", help="'mirror': main vs main (both seats learn); 'vs_random': main vs a random-action player; 'none' for single-agent envs.", choices=("mirror", "vs_random", "none"))
    opponent_mix: dict = setting(help="Optional extra opponents with weights, e.g. {random: 0.2, 'bot:rusher': 0.1}; the rest follows `mode`.", factory=dict)


@dataclass
class LeagueSection:
    """`league:` = `enabled` plus the league core's `LeagueConfig` (docs/league.md), embedded: the
    core owns the fields, their defaults and their validation; `cfg.league.<field>` reads the core."""

    enabled: bool = setting(False, help="Turn league self-play on: main plays frozen snapshots of itself (replaces self_play's plan).")
    settings: CoreLeagueConfig = setting(help="The league core's settings.", factory=CoreLeagueConfig, embedded=True)

    def to_core(self) -> CoreLeagueConfig:
        return self.settings

    def to_dict(self) -> dict:
        return {"enabled": self.enabled, **self.settings.to_dict()}

    def __getattr__(self, name: str) -> Any:
        if name == "settings":  # not set yet (unpickling): no delegation loop
            raise AttributeError(name)
        return getattr(self.settings, name)

    @classmethod
    def from_raw(cls, raw: dict, key: str) -> "LeagueSection":
        enabled = _convert(raw.pop("enabled", False), bool, f"{key}.enabled", {})
        return cls(enabled=enabled, settings=CoreLeagueConfig.from_dict(raw))


CURRICULUM_OFF = "none"
"""`curriculum.strategy` of a run without curriculum (the core has no such strategy)."""


@dataclass
class CurriculumSection:
    """`curriculum:` = `enabled` plus the curriculum core's `CurriculumConfig` (docs/curriculum.md),
    embedded like `LeagueSection`; `strategy` may also be 'none' (the default: no curriculum)."""

    enabled: bool = setting(False, help="Turn the adaptive curriculum on (level games only): the driver picks every training level.")
    strategy: str = setting(CURRICULUM_OFF, help="threshold (difficulty follows main's score) | plr (prioritized level replay) | accel (plr + fair level edits) | uniform (domain randomization) | fixed (one difficulty: no curriculum) | maestro (one PLR buffer per co-player, co-players by regret) | none.", choices=(CURRICULUM_OFF, *CURRICULUM_STRATEGIES))
    settings: CoreCurriculumConfig = setting(help="The curriculum core's settings.", factory=CoreCurriculumConfig, embedded=True)

    def to_core(self) -> CoreCurriculumConfig:
        return self.settings

    def to_dict(self) -> dict:
        return {"enabled": self.enabled, **self.settings.to_dict(), "strategy": self.strategy}

    def __getattr__(self, name: str) -> Any:
        if name == "settings":
            raise AttributeError(name)
        return getattr(self.settings, name)

    @classmethod
    def from_raw(cls, raw: dict, key: str) -> "CurriculumSection":
        enabled = _convert(raw.pop("enabled", False), bool, f"{key}.enabled", {})
        strategy = _convert(raw.pop("strategy", CURRICULUM_OFF), str, f"{key}.strategy",
                            {"choices": (CURRICULUM_OFF, *CURRICULUM_STRATEGIES)})
        if strategy != CURRICULUM_OFF:
            raw["strategy"] = strategy
        return cls(enabled=enabled, strategy=strategy, settings=CoreCurriculumConfig.from_dict(raw))


EMBEDDED_SECTIONS = (LeagueSection, CurriculumSection)


@dataclass
class StopConfig:
    time_s: Optional[float] = setting(None, help="Stop after this many seconds of training.", gt=0.0)
    env_steps: Optional[int] = setting(None, help="Stop after this many sampled env steps.", min=1)
    iterations: Optional[int] = setting(None, help="Stop after this many training iterations.", min=1)
    metric: Optional[str] = setting(None, help="Stop when this result key (Tune path, e.g. env_runners/episode_return_mean) reaches `target`.")
    target: Optional[float] = setting(None, help="Target value for `metric`.")


@dataclass
class TrainingConfig:
    stop: StopConfig = setting(help="Stop conditions; the first one reached stops the run.", factory=StopConfig)
    num_env_runners: int = setting(0, help="Remote env runner processes; 0 samples in the trainer process itself.", min=0, max=1024)
    num_envs_per_runner: int = setting(64, help="Env copies stepped together (one batched forward pass) in each runner.", min=1, max=4096)
    checkpoint_every: int = setting(10, help="Checkpoint every N iterations; 0 only at the end.", min=0)
    checkpoint_every_s: Optional[float] = setting(None, help="Also checkpoint after the first iteration that ends this many seconds (wall clock) after the last checkpoint, so a fault loses at most about this much work; null = by iterations only.", gt=0.0, max=604_800.0)
    max_failures: Optional[int] = setting(None, help="Tune retries of a failed trial, each from its last checkpoint (a lost node or learner); null = 0 on the embedded local Ray (a failure there is a bug a retry repeats), 3 attached to a cluster.", min=0, max=1000)
    checkpoint_keep: int = setting(3, help="How many recent checkpoints to keep.", min=1, max=10_000)
    torch_threads: int = setting(1, help="Torch threads of the local learner; 0 = min(4, CPUs). Runners act on 1 thread. >1 only pays on an idle machine.", min=0, max=64)
    sample_ahead: bool = setting(True, help="With remote env runners: sample the next batch while the learner updates (policy lag of 1 iteration).")
    lean_learner: bool = setting(True, help="PPO's update through SpadePPOLearner (spade_rllib/rllib/lean_learner.py: RLlib's PPO math, less work per minibatch); false: RLlib's stock PPOTorchLearner.")


@dataclass
class ResourcesConfig:
    num_cpus: Optional[int] = setting(None, help="CPUs for the embedded local Ray; null = all of this machine.", min=1, max=4096)
    num_learners: int = setting(0, help="Remote learner processes; 0 learns in the trainer process.", min=0, max=1024)
    num_gpus_per_learner: float = setting(0.0, help="GPUs per learner; fractions allowed.", min=0.0)
    num_cpus_per_learner: float = setting(1.0, help="CPUs per remote learner.", min=0.0)
    num_cpus_per_env_runner: float = setting(1.0, help="CPUs per remote env runner.", min=0.0)


@dataclass
class EvaluationConfig:
    interval: int = setting(5, help="Evaluate main every N iterations (and at the end); 0 turns evaluation off.", min=0)
    games: int = setting(40, help="Games per opponent per evaluation (seats alternate).", min=1, max=100_000)
    opponents: list[str] = setting(help="Opponents: 'random', 'mirror', or 'bot:<name>' (a scripted bot of the env: spade_rllib.games.bot_names(env_id), e.g. CTF's ladder, MazeRace's racers, connect four's).", factory=lambda: ["random"])
    greedy: bool = setting(False, help="Evaluate with argmax actions instead of sampling.")
    random_opening_plies: int = setting(0, help="Turn-based PettingZoo games only: evaluation games start after k ~ U{0..N} random legal moves (0 = from the empty board).", min=0, max=100)
    target_win_rate: Optional[float] = setting(None, help="Without `targets`: the summary reports whether main reached this win rate vs 'random' (null = no verdict).", min=0.0, max=1.0)
    targets: dict = setting(help="Verdicts of the summary and the report: evaluation opponent -> the least score (win + draw/2) main must reach in the final evaluation, e.g. {random: 0.9, 'bot:rusher': 0.75}; opponents not in `opponents` get no verdict; empty = `target_win_rate` vs random, if set; neither = no verdict.", factory=dict)
    heldout_levels: list[str] = setting(help="Held-out ASCII maps of the game (files or directories of *.txt, e.g. spade_rllib/levels/heldout_ctf for CTF, spade_rllib/levels/heldout for MazeRace): every `interval` iterations main plays each vs the game's held-out opponents (CTF: every ladder bot; MazeRace: rusher, rusher_tagger) and itself, both seats, in a Ray task (heldout/<level>/<opponent>/win_rate); empty = off.", factory=list, path=True)
    heldout_games: int = setting(10, help="Held-out evaluation: games per level and opponent (seats alternate).", min=1, max=10_000)
    final_heldout_levels: list[str] = setting(help="Level games: after training, the summary's held-out line plays main on these ASCII maps (files or directories, e.g. spade_rllib/levels/heldout_ctf) against `final_heldout_opponents`, with verdicts from `final_heldout_targets`; empty = no line.", factory=list, path=True)
    final_heldout_max_size: int = setting(0, help="Held-out line: only maps with at most this many rows and columns (0 = every map).", min=0, max=1000)
    final_heldout_opponents: list[str] = setting(help="Held-out line opponents: 'still' (a team that never moves: main's score is navigation), 'random', 'bot:<name>'.", factory=lambda: ["still", "random"])
    final_heldout_games: int = setting(10, help="Held-out line: games per map, opponent and seat.", min=1, max=10_000)
    final_heldout_targets: dict = setting(help="Held-out line verdicts: opponent -> the least score (win + draw/2) on those maps, e.g. {still: 0.95, random: 0.95, 'bot:rusher': 0.7}.", factory=dict)
    exploitability_interval: int = setting(0, help="OpenSpiel games (kuhn_poker, leduc_poker, openspiel:<name>): every N iterations compute the exact exploitability (NashConv / 2) of main, of the average of main's measured strategies and of the league's mixture (exploitability/main, /average, /mixture; a curve over env steps); 0 = off.", min=0)
    exploitability_mixture: str = setting("uniform", help="The league's mixture whose exploitability is recorded: 'uniform' (main and its snapshots, fictitious play), 'plan' (main's matchmaking distribution) or 'nash' (the Nash equilibrium of the members' payoff matrix).", choices=("uniform", "plan", "nash"),
                                        choice_notes={"average": "league:average, the distilled network, is scored in the run's "
                                                                 "summary and by `evaluate --exploitability`, not during training"})
    final_heldout_navigation_target: Optional[float] = setting(None, help="Held-out line: also play main alone against a still team on every map of `final_heldout_levels`, whatever `final_heldout_max_size` says, and print that navigation score (win + draw/2) with this least score as its verdict; null = not played.", min=0.0, max=1.0)
    final_heldout_size_opponents: list[str] = setting(help="Held-out size lines: main also plays every map of `final_heldout_levels` (whatever `final_heldout_max_size` says) against these opponents ('random', 'bot:<name>'), and the summary prints one line per size class (largest side up to 11, 12-15, 16 and more) with main's score per opponent and its worst map; empty (or no `final_heldout_levels`) = no lines.", factory=list)
    final_heldout_size_games: int = setting(10, help="Held-out size lines: games per map, opponent and seat.", min=1, max=10_000)


@dataclass
class RunConfig:
    experiment: ExperimentConfig = setting(help="Name, seed, storage.", factory=ExperimentConfig)
    env: EnvConfig = setting(help="Environment id and knobs.", factory=EnvConfig)
    agent: AgentConfig = setting(help="Algorithm hyperparameters and model.", factory=AgentConfig)
    self_play: SelfPlayConfig = setting(help="How agents map to policies.", factory=SelfPlayConfig)
    league: LeagueSection = setting(help="League self-play.", factory=LeagueSection)
    curriculum: CurriculumSection = setting(help="Adaptive curriculum.", factory=CurriculumSection)
    training: TrainingConfig = setting(help="Stop condition, sampling, checkpoints.", factory=TrainingConfig)
    resources: ResourcesConfig = setting(help="CPUs and GPUs.", factory=ResourcesConfig)
    evaluation: EvaluationConfig = setting(help="Periodic evaluation of main.", factory=EvaluationConfig)
    # Derived, filled by `parse_config` (not read from YAML):
    source_path: Optional[str] = field(default=None, metadata={"help": "File the config came from.", "derived": True})
    resolved_env: Optional[ResolvedEnv] = field(default=None, compare=False, repr=False, metadata={
        "help": "env.id read once (`resolved_env_of`); the layers take it instead of resolving the id again.", "derived": True})

    def to_dict(self) -> dict:
        """Plain nested dict (derived fields left out), suitable for YAML and `parse_config`."""
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("derived"):
                continue
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if isinstance(value, EMBEDDED_SECTIONS) else dataclasses.asdict(value)
        return out


# ----------------------------------------------------------------------------------------------
# Env ids
# ----------------------------------------------------------------------------------------------

def read_config_env_id(env_id: str, key: str = "env.id", resolve: bool = True) -> ResolvedEnv:
    """Read an env id once (`spade_rllib.games.resolved_env.read_env_id`: its form and family; a "pkg.mod:Name"
    class or factory is imported to tell a Gymnasium env from a PettingZoo one when `resolve`); whether the
    named env exists is checked by `env_checks.resolve_env_id`, which fills in the record's entry."""
    try:
        return read_env_id(env_id, imports=resolve)
    except EnvIdError as e:
        raise ConfigError(f"{key} = {env_id!r}: {e}") from e


def resolved_env_of(cfg: RunConfig) -> ResolvedEnv:
    """The run's env, resolved once: the record `parse_config` left in `cfg.resolved_env`, or (a config built
    another way, or checked without imports) one resolved now and kept there."""
    record = cfg.resolved_env
    if record is None or record.id != cfg.env.id or not record.imported:
        record = read_env_id(cfg.env.id, strict=False)
        cfg.resolved_env = record
    return record


# ----------------------------------------------------------------------------------------------
# Parsing and validation
# ----------------------------------------------------------------------------------------------


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
        if tp in EMBEDDED_SECTIONS:
            return _build_embedded(tp, dict(value), key)
        return _build(tp, value, key)
    return check_value(key, value, tp, md)


def _refuse_non_finite(value: Any, key: str) -> None:
    """NaN and +-inf anywhere in a raw config (free-form mappings included) are refused, one line."""
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_non_finite(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_non_finite(v, f"{key}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{key} = {value!r}: not a finite number, allowed any finite number")


def _field_names(cls: type) -> list[str]:
    """YAML keys of a section: its fields, an embedded core's fields in place of the core."""
    names = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("embedded"):
            names += [c.name for c in dataclasses.fields(f.type if isinstance(f.type, type) else typing.get_type_hints(cls)[f.name]) if c.name not in names]
        elif not f.metadata.get("derived"):
            names.append(f.name)
    return names


def _keys(cls: type) -> str:
    return ", ".join(_field_names(cls))


def _build_embedded(cls: type, raw: dict, key: str) -> Any:
    """A section embedding a core config: unknown keys here, every value checked by the core."""
    names = _field_names(cls)
    for k in raw:
        if k not in names:
            raise ConfigError(f"{key}.{k}: unknown key{did_you_mean(k, names)} (allowed: {', '.join(names)})")
    return cls.from_raw(raw, key)


def _build(cls: type, raw: dict, prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("derived")}
    kwargs = {}
    for k, v in raw.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            raise ConfigError(f"{key}: unknown key{did_you_mean(k, fields)} (allowed: {_keys(cls)})")
        kwargs[k] = _convert(v, hints[k], key, dict(fields[k].metadata))
    obj = cls(**kwargs)
    return obj


RETIRED_KEYS: dict[tuple[str, str], Any] = {("agent", "algorithm"): "PPO"}
"""(section, key) -> the only value it ever held: keys dropped from the schema that configs saved by earlier
runs (a trial's config.yaml, read by --resume and evaluate) still carry. With that value the key is ignored;
with any other it is an unknown key. `agent.algorithm` was validated and never read: the trainer is PPO."""


def _without_retired(raw: dict) -> dict:
    out = dict(raw)
    for (section, key), value in RETIRED_KEYS.items():
        sub = out.get(section)
        if isinstance(sub, dict) and key in sub and sub[key] == value:
            out[section] = {k: v for k, v in sub.items() if k != key}
    return out


OLD_SPELLINGS: dict[str, str] = {"agent.model.kind": "agent.model.encoder", "agent.model.use_lstm": "agent.model.memory"}
"""Old config key -> its current spelling. Configs saved by earlier runs (a trial's config.yaml, read by --resume and
evaluate), old YAML files and old `--set` commands still use them: an old key is checked under its own name and read
as the new one, with a one-line warning (once per key and process); both spellings in one mapping are refused."""
_warned: set[str] = set()


def current_spelling(key: str, value: Any) -> tuple[str, Any]:
    """(`key`, `value`) in today's schema: an old key (`OLD_SPELLINGS`) translated, any other key as it is."""
    new = OLD_SPELLINGS.get(key)
    if new is None:
        return key, value
    if key == "agent.model.use_lstm":
        new_value = MEMORY_LSTM if check_bool(key, value) else MEMORY_NONE
    else:
        new_value = check_choice(key, value, ENCODERS)
    if key not in _warned:
        _warned.add(key)
        shown = str(value).lower() if isinstance(value, bool) else value
        print(f"warning: {key} is the old spelling of {new}: read {key.rpartition('.')[2]}: {shown} as "
              f"{new.rpartition('.')[2]}: {new_value}", file=sys.stderr)
    return new, new_value


def _with_current_spellings(raw: dict) -> dict:
    """`raw` with every old key (`OLD_SPELLINGS`) in today's spelling; an old key beside its new one is refused."""
    out = raw
    for old, new in OLD_SPELLINGS.items():
        *path, leaf = old.split(".")
        node: Any = out
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or leaf not in node:
            continue
        new_leaf = new.rpartition(".")[2]
        if new_leaf in node:
            raise ConfigError(f"{old}: given beside {new}, its new spelling; keep {new} only")
        _, value = current_spelling(old, node[leaf])
        out = _replace_at(out, path, {**{k: v for k, v in node.items() if k != leaf}, new_leaf: value})
    model = (out.get("agent") or {}).get("model") if isinstance(out.get("agent"), dict) else None
    if isinstance(model, dict) and isinstance(model.get("memory"), bool):  # the old use_lstm's true/false
        raise ConfigError(f"agent.model.memory = {str(model['memory']).lower()}: not allowed (did you mean "
                          f"{MEMORY_LSTM if model['memory'] else MEMORY_NONE!r}?); allowed: {', '.join(map(repr, MEMORIES))}")
    return out


def _replace_at(raw: dict, path: list[str], section: dict) -> dict:
    """A copy of `raw` with the section at `path` replaced (the caller's dict is not changed)."""
    if not path:
        return section
    return {**raw, path[0]: _replace_at(raw[path[0]], path[1:], section)}


def parse_config(raw: Optional[dict], source_path: Optional[str] = None, resolve: bool = True) -> RunConfig:
    """Validate a nested dict and return a `RunConfig`, raising `ConfigError` on the first problem.
    `resolve=False` checks the file alone (schema and cross-field rules) and imports nothing: no env
    id is resolved, no map or env is built (`--print-config`)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"<root> = {raw!r}: wrong type, expected a mapping of sections ({_keys(RunConfig)})")
    raw = _with_current_spellings(_without_retired(raw))
    cfg = _build(RunConfig, raw, "")
    _refuse_non_finite(raw, "")  # after the typed pass, whose messages also name the allowed range
    cfg.source_path = source_path
    _cross_check(cfg, resolve)
    return cfg


def _cross_check(cfg: RunConfig, resolve: bool = True) -> None:
    """Rules that involve more than one field."""
    from spade_rllib.config.trackers import check_trackers

    check_trackers(cfg.experiment.loggers)
    from spade_rllib.games.roles import check_spec

    check_spec(cfg.env.roles)
    if cfg.env.id is None:
        raise ConfigError(f"env.id: missing; a run names its game (allowed: {allowed_forms()})")
    cfg.resolved_env = read_config_env_id(cfg.env.id, resolve=resolve)
    kind = cfg.resolved_env.kind
    if kind != LEVEL_KIND:
        for name in ("level_file", "difficulty"):
            if getattr(cfg.env, name) is not None:
                raise ConfigError(f"env.{name} = {getattr(cfg.env, name)!r}: only allowed with env.id {_level_ids()} (env.id is {cfg.env.id!r})")
    teams = cfg.env.teams
    if teams is not None:
        if kind == "gymnasium":
            raise ConfigError(f"env.teams = {teams!r}: only allowed with a multi-agent env (env.id is {cfg.env.id!r})")
        if cfg.env.mode != "auto":
            raise ConfigError(f"env.teams = {teams!r}: only with env.mode 'auto' (env.mode is {cfg.env.mode!r}, which sets the teams itself)")
        if isinstance(teams, dict):
            for name, group in teams.items():
                if isinstance(group, str) or not isinstance(group, list) or not all(isinstance(a, str) for a in group):
                    raise ConfigError(f"env.teams.{name} = {group!r}: wrong type, expected a list of agent ids")
        elif not isinstance(teams, str) or not teams:
            raise ConfigError(f"env.teams = {teams!r}: wrong type, expected a mapping {{team: [agent ids]}} or a function path 'pkg.mod:fn'")
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
    for opp, t in cfg.evaluation.targets.items():  # a target whose opponent is not evaluated gets no verdict
        _check_opponent_id(opp, f"evaluation.targets.{opp}", cfg.env.id)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= 1.0:
            raise ConfigError(f"evaluation.targets.{opp} = {t!r}: out of range, allowed a score in [0, 1]")
    for i, name in enumerate(cfg.league.bots):
        _check_opponent_id(f"{BOT_PREFIX}{name}", f"league.bots[{i}]", cfg.env.id)
    _check_teacher(cfg)
    _check_magnet(cfg)
    if cfg.agent.minibatch_size > cfg.agent.train_batch_size * 2:
        raise ConfigError(
            f"agent.minibatch_size = {cfg.agent.minibatch_size}: out of range, allowed <= 2 * agent.train_batch_size ({2 * cfg.agent.train_batch_size})"
        )
    model = cfg.agent.model
    if model.memory == MEMORY_LSTM and model.max_seq_len > cfg.agent.train_batch_size:
        raise ConfigError(f"agent.model.max_seq_len = {model.max_seq_len}: out of range, allowed <= agent.train_batch_size "
                          f"({cfg.agent.train_batch_size}) with memory: lstm (a training sequence must fit in one batch)")
    if model.memory == MEMORY_LSTM and (model.lstm_use_prev_action or model.lstm_use_prev_reward) and cfg.resources.num_learners > 0:
        key = "lstm_use_prev_action" if model.lstm_use_prev_action else "lstm_use_prev_reward"
        raise ConfigError(f"agent.model.{key} = true: only allowed with resources.num_learners = 0 (the local "
                          f"learner's packed path; RLlib's stock learner pipeline has no previous-action input)")
    learners = cfg.resources.num_learners
    if learners > 1 and cfg.agent.train_batch_size % learners:
        fits = cfg.agent.train_batch_size - cfg.agent.train_batch_size % learners
        raise ConfigError(f"agent.train_batch_size = {cfg.agent.train_batch_size}: not divisible by resources.num_learners "
                          f"= {learners} (each learner takes an equal share); did you mean {fits} or {fits + learners}?")
    stop = cfg.training.stop
    if (stop.metric is None) != (stop.target is None):
        raise ConfigError(f"training.stop.metric = {stop.metric!r}: metric and target must be given together (target = {stop.target!r})")
    if cfg.agent.model.encoder == "cnn" and kind != LEVEL_KIND:
        raise ConfigError(f"agent.model.encoder = 'cnn': only allowed with env.id {_level_ids()} (env.id is {cfg.env.id!r})")
    if cfg.agent.model.map_channels and not _has_memory_map(cfg, kind):
        raise ConfigError(f"agent.model.map_channels = {list(cfg.agent.model.map_channels)}: convolutions over a memory map, "
                          f"but this observation has none; turn it on (CaptureTheFlag-v0: env.kwargs.seen_map, e.g. 7) or "
                          f"set map_channels to []")
    if cfg.agent.model.planner != PLANNER_NONE:
        _check_planner(cfg, kind)
    if cfg.league.enabled:
        if kind == "gymnasium":
            raise ConfigError(f"league.enabled = true: single-agent env {cfg.env.id!r} has no opponent; turn the league off")
    if cfg.curriculum.enabled and cfg.curriculum.strategy == "none":
        raise ConfigError("curriculum.strategy = 'none': choose a strategy when curriculum.enabled is true")
    if cfg.curriculum.enabled and kind != LEVEL_KIND:
        raise ConfigError(f"curriculum.enabled = true: only allowed with env.id {_level_ids()} (env.id is {cfg.env.id!r})")
    if (cfg.curriculum.enabled and cfg.curriculum.strategy in ("plr", "accel", "maestro")
            and cfg.curriculum.plr.score == "positive_value_loss" and cfg.resources.num_learners > 0):
        raise ConfigError(f"curriculum.plr.score = 'positive_value_loss': only allowed with resources.num_learners = 0 "
                          f"(is {cfg.resources.num_learners}; remote learners run RLlib's default connectors, which compute "
                          "no per-level value loss); use score 'learnability' or resources.num_learners = 0")
    for key, plies in (("env.random_opening_plies", cfg.env.random_opening_plies),
                       ("evaluation.random_opening_plies", cfg.evaluation.random_opening_plies)):
        if plies and kind != "pettingzoo":
            raise ConfigError(f"{key} = {plies}: only allowed with a turn-based PettingZoo env such as "
                              f"'pettingzoo.classic:connect_four_v3' (env.id is {cfg.env.id!r})")
    if cfg.evaluation.heldout_levels and kind != LEVEL_KIND:
        raise ConfigError(f"evaluation.heldout_levels: only allowed with env.id {_level_ids()} (env.id is {cfg.env.id!r})")
    # Absolute paths: Tune runs the trainable in the trial directory.
    cfg.evaluation.heldout_levels = [str(config_path(p).resolve()) for p in cfg.evaluation.heldout_levels]
    if cfg.evaluation.final_heldout_levels and kind != LEVEL_KIND:
        raise ConfigError(f"evaluation.final_heldout_levels: only allowed with env.id {_level_ids()} (env.id is {cfg.env.id!r})")
    cfg.evaluation.final_heldout_levels = [str(config_path(p).resolve()) for p in cfg.evaluation.final_heldout_levels]
    for i, opp in enumerate(cfg.evaluation.final_heldout_opponents):
        if opp != "still":
            _check_opponent_id(opp, f"evaluation.final_heldout_opponents[{i}]", cfg.env.id)
    for opp, t in cfg.evaluation.final_heldout_targets.items():
        if opp not in cfg.evaluation.final_heldout_opponents:
            raise ConfigError(f"evaluation.final_heldout_targets.{opp}: not one of evaluation.final_heldout_opponents "
                              f"({', '.join(map(repr, cfg.evaluation.final_heldout_opponents))})")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= 1.0:
            raise ConfigError(f"evaluation.final_heldout_targets.{opp} = {t!r}: out of range, allowed a score in [0, 1]")
    for i, opp in enumerate(cfg.evaluation.final_heldout_size_opponents):
        _check_opponent_id(opp, f"evaluation.final_heldout_size_opponents[{i}]", cfg.env.id)
    if cfg.evaluation.final_heldout_navigation_target is not None and not cfg.evaluation.final_heldout_levels:
        raise ConfigError(f"evaluation.final_heldout_navigation_target = {cfg.evaluation.final_heldout_navigation_target!r}: "
                          "needs the held-out maps in evaluation.final_heldout_levels (empty)")
    if resolve:
        from spade_rllib.config.preflight import check_config

        check_config(cfg)


BUILTIN_OPPONENTS = (RANDOM, MIRROR)


def _has_memory_map(cfg: RunConfig, kind: str) -> bool:
    """Whether the run's observation ends with a memory map (a level game whose env.kwargs turn one on)."""
    if kind != LEVEL_KIND:
        return False
    try:
        return resolved_env_of(cfg).spec.level_class.map_layout(**dict(cfg.env.kwargs)) is not None
    except (TypeError, ValueError):
        return False


def _check_planner(cfg: RunConfig, kind: str) -> None:
    """`agent.model.planner` reads a cell memory (CaptureTheFlag env.kwargs.cell_memory), alone."""
    model = cfg.agent.model
    kwargs = dict(cfg.env.kwargs) if isinstance(cfg.env.kwargs, dict) else {}
    if kind != LEVEL_KIND or not kwargs.get("cell_memory"):
        raise ConfigError(f"agent.model.planner = {model.planner!r}: plans on a cell memory, but this observation has "
                          f"none; turn it on (CaptureTheFlag-v0: env.kwargs.cell_memory, e.g. 21) or set planner: none")
    if model.map_channels:
        raise ConfigError(f"agent.model.map_channels = {list(model.map_channels)}: the planner ({model.planner!r}) reads "
                          f"the memory map; pick one (did you mean map_channels: []?)")


def _level_ids() -> str:
    """"'MazeRace-v0' or 'CaptureTheFlag-v0'": the level games, for messages."""
    return " or ".join(repr(i) for i in spade_env_ids())


def _agent_default(name: str):
    """The default of `agent.<name>` (a setting left at its default counts as not set)."""
    return next(f.default for f in dataclasses.fields(AgentConfig) if f.name == name)


def _check_magnet(cfg) -> None:
    """`agent.magnet_coeff`: a term of the lean learner's loss (RLlib's stock learner has none); its EMA rate only with
    a magnet (it would be ignored)."""
    a = cfg.agent
    if a.magnet_coeff == 0:
        default = _agent_default("magnet_ema")
        if a.magnet_ema != default:
            raise ConfigError(f"agent.magnet_ema = {a.magnet_ema!r}: set but agent.magnet_coeff is 0, so it would be "
                              "ignored; set agent.magnet_coeff > 0 or drop magnet_ema")
        return
    if not cfg.training.lean_learner:
        raise ConfigError("agent.magnet_coeff: needs training.lean_learner = true (SpadePPOLearner adds the magnet's "
                          "KL term; RLlib's stock PPOTorchLearner has no such term)")


def _check_teacher(cfg) -> None:
    """`agent.teacher`: a scripted bot of the game (`_check_opponent_id`), learned through the lean learner (which
    adds its loss); its weight, schedule and cost limit only with a teacher (they would be ignored)."""
    a = cfg.agent
    if a.teacher is None:
        if a.teacher_schedule is not None:
            raise ConfigError("agent.teacher_schedule is set but agent.teacher is null; name a teacher bot or drop the schedule")
        default = _agent_default("teacher_coeff")
        if a.teacher_coeff != default:
            raise ConfigError(f"agent.teacher_coeff = {a.teacher_coeff!r}: set but agent.teacher is null, so it would be "
                              "ignored; name a teacher bot or drop teacher_coeff")
        if a.teacher_max_ms is not None:
            raise ConfigError(f"agent.teacher_max_ms = {a.teacher_max_ms!r}: set but agent.teacher is null, so it would "
                              "be ignored; name a teacher bot or drop teacher_max_ms")
        return
    a.teacher = _check_opponent_id(a.teacher, "agent.teacher", cfg.env.id, teacher=True)  # 'bot:raider' -> 'raider'
    if not cfg.training.lean_learner:
        raise ConfigError("agent.teacher: needs training.lean_learner = true (SpadePPOLearner adds the teacher's "
                          "loss; RLlib's stock PPOTorchLearner has no such term)")


def _check_opponent_id(opp: Any, key: str, env_id: str, teacher: bool = False) -> str:
    """`opp` names an opponent of `env_id`: a built-in one or one of the game's scripted bots (``bot:<name>``); with
    `teacher`, a scripted bot only, by its name or ``bot:<name>``. Returns `opp` (a teacher: the bot's bare name);
    else a one-line `ConfigError` with the key, "did you mean" and what is allowed."""
    if not teacher and opp in BUILTIN_OPPONENTS:
        return opp
    names = list(bot_names(env_id))
    is_bot_id = isinstance(opp, str) and opp.startswith(BOT_PREFIX)
    bare = opp[len(BOT_PREFIX):] if is_bot_id else opp if teacher else None
    if bare is not None and not names:
        with_bots = [g for g in game_ids() if bot_names(g)]
        raise ConfigError(f"{key} = {opp!r}: {env_id} has no scripted bots; scripted bots only exist for "
                          f"{', '.join(map(repr, with_bots))}")
    if bare is not None and bare in names:
        return bare if teacher else opp
    allowed = names if teacher else [*BUILTIN_OPPONENTS, *(BOT_PREFIX + n for n in names)]
    raise ConfigError(f"{key} = {opp!r}: unknown {'bot' if teacher else 'opponent'}{did_you_mean(str(opp), allowed)}; "
                      f"allowed: {', '.join(map(repr, allowed))}")


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
            value = read_yaml(text) if text.strip() else None
        except yaml.YAMLError as e:
            raise ConfigError(f"--set {item!r}: value is not valid YAML ({str(e).splitlines()[0]})") from e
        old_leaf = path.rpartition(".")[2] if path in OLD_SPELLINGS else None
        path, value = current_spelling(path, value)
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
        if old_leaf:  # the override replaces the old spelling too (an old config.yaml under a new --set)
            node.pop(old_leaf, None)
    return raw


def read_yaml(text: str) -> Any:
    """The one YAML reader for configs, sweep files and `--set` values (`spade_rllib.config.yaml_reader`:
    duplicate keys refused, aliases bounded before any walk, a plain `1e-4` a float, a quoted one a string)."""
    return _read_yaml(text)


def load_raw(path: Optional[str]) -> dict:
    """Read a YAML file into a dict, raising `ConfigError` for a missing or malformed file."""
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config = {str(path)!r}: file not found (cwd: {os.getcwd()})")
    if p.stat().st_size > _MAX_YAML_BYTES:
        raise ConfigError(f"--config = {str(path)!r}: {p.stat().st_size:,d} bytes; a config is at most {_MAX_YAML_BYTES:,d}")
    try:
        raw = read_yaml(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"--config = {str(path)!r}: not valid YAML ({' '.join(str(e).split())})") from e
    except UnicodeDecodeError as e:  # binary junk
        raise ConfigError(f"--config = {str(path)!r}: not a UTF-8 text file (byte {e.start}: {e.reason})") from e
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"--config = {str(path)!r}: expected a mapping of sections at the top level")
    return raw


def load_config(path: Optional[str], overrides: typing.Sequence[str] = (), resolve: bool = True) -> RunConfig:
    """Load YAML `path` (or defaults when None), apply `--set` overrides, validate (`parse_config`)."""
    raw = apply_overrides(load_raw(path), overrides)
    return parse_config(raw, source_path=str(path) if path else None, resolve=resolve)


def dump_config(cfg: RunConfig) -> str:
    """The resolved config as YAML text."""
    return _dump_yaml(cfg.to_dict())


def describe() -> str:
    """All keys with their default, type, allowed values and help line (for `--help-config`), read from
    the fields' metadata (`spade_rllib.core.validation.setting`); an embedded core's keys in its section."""
    lines: list[str] = []
    seen: set[str] = set()

    def walk(cls: type, prefix: str, instance: Any) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("derived"):
                continue
            tp, key = hints[f.name], f"{prefix}{f.name}"
            value = getattr(instance, f.name)
            if f.metadata.get("embedded"):
                walk(tp, prefix, value)
                continue
            if key in seen:
                continue
            seen.add(key)
            if dataclasses.is_dataclass(tp):
                lines.append(f"{key}:  {f.metadata.get('help', '')}")
                walk(tp, key + ".", value)
                continue
            args = [a for a in typing.get_args(tp) if a is not type(None)] if typing.get_origin(tp) in (Union, types.UnionType) else [tp]
            what = allowed_range(f.metadata, integer=args[0] is int)
            if "choices" in f.metadata:
                what = "one of " + ", ".join(repr(c) for c in f.metadata["choices"])
            what = (what + (" or null" if len(args) == 1 and tp is not args[0] else "")) if what else type_name(tp)
            shown = f"{key} = {value!r}"
            if f.metadata.get("required"):
                shown, what = key, f"required: {type_name(args[0])}"
            lines.append(f"  {shown}  ({what}) {f.metadata.get('help', '')}")

    walk(RunConfig, "", RunConfig())
    return "\n".join(lines)
