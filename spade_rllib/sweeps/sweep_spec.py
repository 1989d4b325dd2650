"""Sweep definitions: `tune_configs/sweeps/<name>.yaml`, parsed and validated without Ray.

A sweep names a base training config, what to vary, how to schedule trials, what to optimize and
how much to spend. Every key and value is checked before Ray starts; a problem raises
`ConfigError` with one line naming the key path, the value and what is allowed (with a
"did you mean" for typos), exactly like the training config.

    description: one line shown by --list
    base: ../quickstart.yaml           # training config, relative to this file (or absolute)
    overrides: {training.stop.time_s: 170}   # dotted base-config keys, like --set
    space:                             # dotted base-config keys -> a distribution
      agent.lr: {grid: [1.0e-4, 3.0e-4]}       # grid | choice | uniform [lo, hi] | loguniform [lo, hi]
      experiment.seed: {grid: [0, 1]}
    search: optuna                     # none | optuna | hyperopt ({type, max_concurrent, seed}); no grids
    scheduler:                         # type: none | pbt | asha
      type: pbt
      perturbation_interval: 4         # iterations between exploit/explore steps
      quantile_fraction: 0.25
      resample_probability: 0.25
      mutations: {agent.lr: {loguniform: [1.0e-5, 1.0e-3]}}
    metric: {name: auto, mode: max}    # auto: held-out score vs rusher_tagger, else eval win rate
    budget: {num_samples: 1, max_concurrent: null, stop: {time_s: 170}}   # stop: training.stop keys
    report: {heatmap: [agent.lr, agent.gamma], confidence: 0.95}
    smoke: {...}                       # a partial sweep merged over this one by --smoke

Merge order for a trial's training config: base YAML -> `overrides` -> `budget.stop` (into
`training.stop`) -> `--smoke` defaults and the sweep's `smoke` section -> `--set` -> the trial's
sampled `space` values. The file and `--set` values are read like a training config
(`config.read_yaml`), and errors use the one wording of `spade_rllib.core.validation`.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from spade_rllib.config.run_config import (OLD_SPELLINGS, ConfigError, RunConfig, apply_overrides, current_spelling, load_raw, parse_config,
                                read_yaml)
from spade_rllib.core.validation import check_number, config_path, did_you_mean, setting, validate_fields

SWEEPS_DIR = Path(__file__).resolve().parent.parent.parent / "tune_configs" / "sweeps"
"""Where `--sweep NAME` looks for `NAME.yaml` (the repository's `tune_configs/sweeps/`)."""

DIST_KINDS = ("grid", "choice", "uniform", "loguniform")
SCHEDULERS = ("none", "pbt", "asha")
SEARCHERS = ("none", "optuna", "hyperopt")
MODES = ("max", "min")
AUTO_METRIC = "auto"
SEED_KEY = "experiment.seed"

# Metric keys tried, in order, by `metric.name: auto` (the first one the algorithm reports wins).
# First the held-out ladder score: main's score (win + draw/2) on the held-out maps, averaged over
# the scripted bots (`rllib/periodic_heldout_eval.py`); it needs `evaluation.heldout_levels`, which the
# shipped sweeps turn on. The eval win rate against `random` saturates within minutes and cannot
# rank trials; the score (not the win rate) because two perfect racers draw on MazeRace's fair maps.
HELDOUT_CANDIDATES = (
    "heldout/ladder/score",
    "heldout/rusher_tagger/score",
    "heldout/rusher_tagger/win_rate",
)

# Base-config overrides every `--smoke` run gets before the sweep's own `smoke` section: a tiny
# batch, one epoch, evaluation and a checkpoint every iteration (2 iterations per trial: SMOKE_STOP).
SMOKE_DEFAULTS: dict[str, Any] = {
    "agent.train_batch_size": 512,
    "agent.minibatch_size": 256,
    "agent.epochs": 1,
    "training.num_env_runners": 0,
    "training.num_envs_per_runner": 8,
    "training.checkpoint_every": 1,
    "evaluation.interval": 1,
    "evaluation.games": 4,
}


SMOKE_STOP = {"iterations": 2}
"""`budget.stop` of every `--smoke` run (the sweep's `smoke.budget.stop` may change it)."""


# ----------------------------------------------------------------------------------------------
# Pieces
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dist:
    """One searched hyperparameter: `grid`/`choice` over `values`, or `uniform`/`loguniform` in [lo, hi]."""

    kind: str
    values: tuple = setting((), help='grid/choice: the candidate values (YAML scalars).')
    low: float = math.nan
    high: float = math.nan

    def to_tune(self):
        """The Ray Tune search-space object (`tune.grid_search`, `tune.choice`, ...)."""
        from ray import tune

        if self.kind == "grid":
            return tune.grid_search(list(self.values))
        if self.kind == "choice":
            return tune.choice(list(self.values))
        if self.kind == "uniform":
            return tune.uniform(self.low, self.high)
        return tune.loguniform(self.low, self.high)

    def examples(self) -> list:
        """Values to validate against the training config (each grid value, or both ends)."""
        return list(self.values) if self.values else [self.low, self.high]

    def describe(self) -> str:
        if self.values:
            return f"{self.kind} {list(self.values)}"
        return f"{self.kind} [{self.low:g}, {self.high:g}]"


def parse_dist(raw: Any, key: str) -> Dist:
    """`{grid: [...]}`, `{choice: [...]}`, `{uniform: [lo, hi]}` or `{loguniform: [lo, hi]}`."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ConfigError(f"{key} = {raw!r}: expected one of {{grid: [..]}}, {{choice: [..]}}, {{uniform: [lo, hi]}}, {{loguniform: [lo, hi]}}")
    (kind, arg), = raw.items()
    if kind not in DIST_KINDS:
        raise ConfigError(f"{key}.{kind}: unknown distribution{did_you_mean(kind, DIST_KINDS)} (allowed: {', '.join(DIST_KINDS)})")
    if kind in ("grid", "choice"):
        if not isinstance(arg, list) or not arg:
            raise ConfigError(f"{key}.{kind} = {arg!r}: expected a non-empty list of values")
        return Dist(kind, values=tuple(arg))
    if not isinstance(arg, list) or len(arg) != 2:
        raise ConfigError(f"{key}.{kind} = {arg!r}: expected [low, high]")
    lo, hi = check_number(f"{key}.{kind}[0]", arg[0]), check_number(f"{key}.{kind}[1]", arg[1])
    if not lo < hi:
        raise ConfigError(f"{key}.{kind} = {arg!r}: out of range, low must be < high")
    if kind == "loguniform" and lo <= 0:
        raise ConfigError(f"{key}.{kind} = {arg!r}: out of range, loguniform needs low > 0")
    return Dist(kind, low=lo, high=hi)


@dataclass
class SchedulerSpec:
    type: str = setting("none", help='none (all trials run to the stop criteria), pbt or asha.', choices=SCHEDULERS)
    perturbation_interval: int = setting(4, help='pbt: training iterations between exploit/explore steps (checkpoints are taken as needed).', min=1)
    quantile_fraction: float = setting(0.25, help='pbt: bottom fraction of trials that copy a top-fraction trial (0 < q <= 0.5).', gt=0.0, max=0.5)
    resample_probability: float = setting(0.25, help='pbt: chance a mutated value is resampled from its distribution instead of scaled by 0.8/1.2.', min=0.0, max=1.0)
    synch: bool = setting(False, help="pbt: wait until every trial reaches the perturbation point before ranking (Tune's synch mode).")
    mutations: dict = setting(help='pbt: dotted key -> distribution for explore; keys missing from `space` start from it too.', factory=dict)
    grace_period: int = setting(2, help='asha: iterations every trial gets before it can be stopped.', min=1)
    reduction_factor: float = setting(3.0, help='asha: 1/reduction_factor of the trials go on at each rung.', gt=1.0)
    max_t: Optional[int] = setting(None, help='asha: the last rung in iterations; default budget.stop.iterations (else 100).', min=1)


@dataclass
class SearchSpec:
    type: str = setting("none", help="How trials get their values: none (Tune's grid / random variants), optuna (OptunaSearch, TPE) or hyperopt (HyperOptSearch); `search: optuna` is short for `search: {type: optuna}`.", choices=SEARCHERS)
    max_concurrent: int = setting(2, help="optuna/hyperopt: trials suggested at once (a ConcurrencyLimiter), so later suggestions learn from finished trials.", min=1)
    seed: Optional[int] = setting(None, help="optuna/hyperopt: the searcher's seed; null: the base config's experiment.seed.", min=0)


@dataclass
class MetricSpec:
    name: str = setting(AUTO_METRIC, help='A result key ("eval/random/win_rate", "env_runners/episode_return_mean") or \'auto\'.')
    mode: str = setting("max", help='max or min.', choices=MODES)


@dataclass
class BudgetSpec:
    num_samples: int = setting(1, help='Samples of the search space (repeats of the whole grid when the space is a grid).', min=1)
    max_concurrent: Optional[int] = setting(None, help="Trials running at once; null: as many as the cluster's CPUs allow.", min=1)
    stop: dict = setting(help='`training.stop` keys for every trial (time_s, env_steps, iterations, metric, target).', factory=dict)


@dataclass
class ReportSpec:
    heatmap: Optional[list] = setting(None, help='Two `space` keys: plot the final metric (mean over the other keys) on their grid.')
    confidence: float = setting(0.95, help='Two-sided confidence level of the across-seed interval in the summary.', gt=0.0, lt=1.0)


@dataclass
class SweepSpec:
    """A validated sweep; `space`/`overrides` keys are dotted training-config keys."""

    name: str
    path: str
    base: str
    description: str = ""
    overrides: dict = field(default_factory=dict)
    space: dict = field(default_factory=dict)  # dotted key -> Dist
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    search: SearchSpec = field(default_factory=SearchSpec)
    metric: MetricSpec = field(default_factory=MetricSpec)
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    report: ReportSpec = field(default_factory=ReportSpec)
    smoke: bool = setting(False, help='True when `--smoke` was applied.')

    @property
    def experiment_name(self) -> str:
        return f"sweep-{self.name}" + ("-smoke" if self.smoke else "")

    def mutations(self) -> dict:
        return {k: parse_dist(v, f"scheduler.mutations.{k}") if not isinstance(v, Dist) else v
                for k, v in self.scheduler.mutations.items()}

    def num_trials(self) -> int:
        """Trials Tune will create: grid size x num_samples."""
        n = 1
        for d in self.space.values():
            if d.kind == "grid":
                n *= len(d.values)
        return n * self.budget.num_samples

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["space"] = {k: {d.kind: list(d.values) if d.values else [d.low, d.high]} for k, d in self.space.items()}
        return out


# ----------------------------------------------------------------------------------------------
# Loading and validation
# ----------------------------------------------------------------------------------------------

TOP_KEYS = ("description", "base", "overrides", "space", "scheduler", "search", "metric", "budget", "report", "smoke")


def available_sweeps(directory: Path = SWEEPS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(directory).glob("*.yaml"))


def sweep_path(name: str, directory: Path = SWEEPS_DIR) -> Path:
    """The YAML file for `name` (a sweep name or a path to a .yaml file); ConfigError lists the sweeps."""
    p = Path(os.path.expanduser(name))
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p.resolve()
    cand = Path(directory) / f"{name}.yaml"
    if cand.is_file():
        return cand
    names = available_sweeps(directory)
    raise ConfigError(f"--sweep {name!r}: unknown sweep{did_you_mean(name, names)}; available: {', '.join(names) or '(none)'}"
                      f" (files in {directory}) or a path to a sweep .yaml")


def deep_merge(base: dict, over: dict) -> dict:
    """Recursive dict merge (a fresh copy); `over` wins; lists and scalars are replaced. The benches use it too."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _section(raw: Any, cls: type, key: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{key} = {raw!r}: wrong type, expected a mapping of {', '.join(f.name for f in dataclasses.fields(cls))}")
    names = [f.name for f in dataclasses.fields(cls)]
    for k in raw:
        if k not in names:
            raise ConfigError(f"{key}.{k}: unknown key{did_you_mean(k, names)} (allowed: {', '.join(names)})")
    obj = cls(**raw)
    validate_fields(obj, key)
    return obj


def _set_path(raw: dict, dotted: str, value: Any) -> dict:
    """A copy of nested dict `raw` with `dotted` key set to `value` (sections created as needed); an old key
    (`config.OLD_SPELLINGS`) sets its new one and drops itself, as `--set` does."""
    old_leaf = dotted.rpartition(".")[2] if dotted in OLD_SPELLINGS else None
    dotted, value = current_spelling(dotted, value)
    out = copy.deepcopy(raw)
    node = out
    parts = dotted.split(".")
    for p in parts[:-1]:
        child = node.get(p)
        node[p] = dict(child) if isinstance(child, dict) else {}
        node = node[p]
    node[parts[-1]] = copy.deepcopy(value)
    if old_leaf:
        node.pop(old_leaf, None)
    return out


def _is_section(dotted: str) -> bool:
    """True when `dotted` names a config section (a dataclass, e.g. 'agent.model'), not a value."""
    tp: Any = RunConfig
    for part in dotted.split("."):
        if not dataclasses.is_dataclass(tp):
            return False
        hints = typing.get_type_hints(tp)
        if part not in hints:
            return False
        tp = hints[part]
    return dataclasses.is_dataclass(tp)


def apply_dotted(raw: dict, values: dict) -> dict:
    """Apply {dotted key: value} to a nested training-config dict; a mapping given for a section
    (e.g. `agent.model: {hidden: [64]}`) sets its keys one by one, any other value replaces."""
    for k, v in values.items():
        if isinstance(v, dict) and _is_section(k):
            for sub, sv in v.items():
                raw = apply_dotted(raw, {f"{k}.{sub}": sv})
        else:
            raw = _set_path(raw, k, v)
    return raw


def _merge_smoke(raw: dict, smoke: dict) -> dict:
    """Merge a sweep's `smoke` section over it; each `space`/`scheduler.mutations` entry is replaced whole."""
    smoke = copy.deepcopy(smoke)
    out = copy.deepcopy(raw)
    for key in ("space",):
        if isinstance(smoke.get(key), dict) and isinstance(out.get(key), dict):
            out[key].update(smoke.pop(key))
    sched = smoke.get("scheduler")
    if isinstance(sched, dict) and isinstance(sched.get("mutations"), dict) and isinstance(out.get("scheduler"), dict):
        out["scheduler"].setdefault("mutations", {}).update(sched.pop("mutations"))
    return deep_merge(out, smoke)


def load_sweep(name: str, smoke: bool = False, sets: tuple = (), directory: Path = SWEEPS_DIR) -> tuple[SweepSpec, dict]:
    """(validated spec, base training config as a raw dict with overrides, budget, smoke and --set applied)."""
    path = sweep_path(name, directory)
    try:
        raw = read_yaml(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"--sweep {str(path)!r}: not valid YAML ({' '.join(str(e).split())})") from e
    if not isinstance(raw, dict):
        raise ConfigError(f"--sweep {str(path)!r}: expected a mapping ({', '.join(TOP_KEYS)}) at the top level")
    for k in raw:
        if k not in TOP_KEYS:
            raise ConfigError(f"{k}: unknown key{did_you_mean(k, TOP_KEYS)} (allowed: {', '.join(TOP_KEYS)})")
    for section in (raw, raw.get("smoke") if isinstance(raw.get("smoke"), dict) else {}):
        if isinstance(section.get("search"), str):  # `search: optuna` -> {type: optuna}, so smoke merges into it
            section["search"] = {"type": section["search"]}
    smoke_raw = raw.pop("smoke", None) or {}
    if not isinstance(smoke_raw, dict):
        raise ConfigError(f"smoke = {smoke_raw!r}: wrong type, expected a partial sweep (a mapping)")
    for k in smoke_raw:
        if k not in TOP_KEYS or k in ("smoke", "base"):
            allowed = [t for t in TOP_KEYS if t not in ("smoke", "base")]
            raise ConfigError(f"smoke.{k}: unknown key{did_you_mean(k, allowed)} (allowed: {', '.join(allowed)})")
    if smoke:
        raw = deep_merge(raw, {"overrides": SMOKE_DEFAULTS, "budget": {"num_samples": 1}})
        raw.setdefault("budget", {})
        if isinstance(raw["budget"], dict):
            raw["budget"]["stop"] = dict(SMOKE_STOP)  # replaces the sweep's stop rule
        raw = _merge_smoke(raw, smoke_raw)
    spec = parse_spec(raw, name=path.stem, path=str(path), smoke=smoke)
    base = base_raw_config(spec, sets)
    validate_against_base(spec, base)
    return spec, base


def parse_spec(raw: dict, name: str, path: str, smoke: bool = False) -> SweepSpec:
    base = raw.get("base")
    if not isinstance(base, str) or not base:
        raise ConfigError(f"base = {base!r}: missing; name the training config, e.g. base: ../quickstart.yaml")
    base_path = Path(os.path.expanduser(base))
    if not base_path.is_absolute():
        base_path = (Path(path).parent / base_path)
    if not base_path.is_file():
        raise ConfigError(f"base = {base!r}: file not found (looked at {base_path.resolve()})")
    desc = raw.get("description", "")
    if not isinstance(desc, str):
        raise ConfigError(f"description = {desc!r}: wrong type, expected a string")
    overrides = raw.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"overrides = {overrides!r}: wrong type, expected a mapping of dotted training-config keys")
    space_raw = raw.get("space") or {}
    if not isinstance(space_raw, dict):
        raise ConfigError(f"space = {space_raw!r}: wrong type, expected a mapping of dotted training-config keys to distributions")
    space = {str(k): parse_dist(v, f"space.{k}") for k, v in space_raw.items()}

    sched = _section(raw.get("scheduler"), SchedulerSpec, "scheduler")
    if not isinstance(sched.mutations, dict):
        raise ConfigError(f"scheduler.mutations = {sched.mutations!r}: wrong type, expected a mapping of dotted keys to distributions")
    sched.mutations = {str(k): parse_dist(v, f"scheduler.mutations.{k}") for k, v in sched.mutations.items()}
    if sched.type == "pbt":
        if not sched.mutations:
            raise ConfigError("scheduler.mutations: missing; pbt needs at least one hyperparameter to mutate")
        for k, d in sched.mutations.items():
            if d.kind == "grid":
                raise ConfigError(f"scheduler.mutations.{k} = {{grid: ..}}: not allowed with pbt; use choice, uniform or loguniform")
            space.setdefault(k, d)
        for k, d in space.items():
            if d.kind == "grid" and k != SEED_KEY:
                raise ConfigError(f"space.{k} = {{grid: ..}}: with pbt only {SEED_KEY} may be a grid; sample the others")
    elif sched.mutations:
        raise ConfigError(f"scheduler.mutations: only allowed with scheduler.type 'pbt' (type is {sched.type!r})")

    search_raw = raw.get("search")
    search = _section({"type": search_raw} if isinstance(search_raw, str) else search_raw, SearchSpec, "search")
    if search.type != "none":
        grids = [k for k, d in space.items() if d.kind == "grid"]
        if grids:
            raise ConfigError(f"space.{grids[0]} = {{grid: ..}}: not allowed with search {search.type!r}; "
                              "use choice, uniform or loguniform (the searcher picks the values)")
        if not space:
            raise ConfigError(f"space: missing; search {search.type!r} needs at least one hyperparameter to search")
        if sched.type == "pbt":
            raise ConfigError(f"search = {search.type!r}: not allowed with scheduler.type 'pbt' (PBT mutates values itself)")
        import importlib.util

        if importlib.util.find_spec(search.type) is None:
            raise ConfigError(f"search = {search.type!r}: the {search.type!r} package is not installed; pip install -e '.[search]'")

    metric = _section(raw.get("metric"), MetricSpec, "metric")
    if not isinstance(metric.name, str) or not metric.name:
        raise ConfigError(f"metric.name = {metric.name!r}: expected 'auto' or a result key like 'eval/random/win_rate'")

    budget = _section(raw.get("budget"), BudgetSpec, "budget")
    if not isinstance(budget.stop, dict):
        raise ConfigError(f"budget.stop = {budget.stop!r}: wrong type, expected a mapping of training.stop keys")

    report = _section(raw.get("report"), ReportSpec, "report")
    if report.heatmap is not None:
        if not isinstance(report.heatmap, list) or len(report.heatmap) != 2:
            raise ConfigError(f"report.heatmap = {report.heatmap!r}: expected two space keys, e.g. [agent.lr, agent.gamma]")
        for i, k in enumerate(report.heatmap):
            if k not in space:
                raise ConfigError(f"report.heatmap[{i}] = {k!r}: not a space key{did_you_mean(k, space)} (space: {', '.join(space)})")
    return SweepSpec(name=name, path=path, base=str(base_path.resolve()), description=desc, overrides=overrides, space=space,
                     scheduler=sched, search=search, metric=metric, budget=budget, report=report, smoke=smoke)


def base_raw_config(spec: SweepSpec, sets: tuple = ()) -> dict:
    """The base training config (raw dict) with the sweep's overrides, budget.stop and --set applied."""
    raw = load_raw(spec.base)
    try:
        raw = apply_dotted(raw, {k: v for k, v in spec.overrides.items() if k != "training.stop"})
        stop = dict(spec.overrides.get("training.stop") or {})
        stop.update(spec.budget.stop)
        if stop:
            raw = _set_path(raw, "training.stop", stop)  # replace: a sweep's stop is the whole stop rule
    except (AttributeError, TypeError) as e:
        raise ConfigError(f"overrides: cannot apply ({e})") from e
    return absolute_paths(apply_overrides(raw, list(sets)))


def absolute_paths(raw: Any, cls: type = RunConfig) -> Any:
    """A copy of a raw training config whose file-path fields (`path=True`: env.level_file,
    evaluation.heldout_levels) are absolute: trials run in their own working directory (Tune
    changes into the trial dir), possibly on another node."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in out or f.metadata.get("derived"):
            continue
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out[f.name] = absolute_paths(out[f.name], tp)
        elif f.metadata.get("path"):
            fix = lambda v: str(config_path(v).resolve()) if isinstance(v, str) and v else v  # noqa: E731 - shipped maps from any cwd
            out[f.name] = [fix(v) for v in out[f.name]] if isinstance(out[f.name], list) else fix(out[f.name])
    return out


MAX_COMBINATIONS = 10_000
"""Most trial combinations `trial_combinations` lists (a sweep plans at most as many trials)."""
FULL_CHECK_COMBINATIONS = 64
"""Up to this many combinations each gets the full check (maps, the env built); beyond it the schema and
cross-field rules only (each value alone always gets the full check)."""


def trial_combinations(spec: SweepSpec) -> list[dict]:
    """Every combination of the values the trials can take: each grid/choice value of every `space` key
    (and of the PBT `scheduler.mutations` keys not in the space), both ends of a range; at most
    `MAX_COMBINATIONS`, in Tune's grid order."""
    dists = dict(spec.space)
    for key, dist in spec.mutations().items():
        dists.setdefault(key, dist)
    keys = list(dists)
    out: list[dict] = [{}]
    for key in keys:
        out = [{**combo, key: value} for combo in out for value in dists[key].examples()][:MAX_COMBINATIONS]
    return out


def describe_trial(params: dict) -> str:
    """`a.b=1, c.d=0.5`: a trial by its sampled values."""
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def validate_against_base(spec: SweepSpec, base: dict) -> RunConfig:
    """Parse the base config, then each space value in turn, then every combination the trials make
    (`trial_combinations`: a combination can break a rule no value breaks alone, e.g. a batch size not
    divisible by a number of learners); ConfigError names the sweep key or the trial."""
    try:
        cfg = parse_config(copy.deepcopy(base), source_path=spec.base)
    except ConfigError as e:
        raise ConfigError(f"{e} (in the base config {spec.base} with the sweep's overrides, budget.stop and --set)") from e
    for key, dist in spec.space.items():
        for value in dist.examples():
            try:
                parse_config(_set_path(base, key, value))
            except ConfigError as e:
                raise ConfigError(f"space.{key} = {value!r}: {e}") from e
    _refuse_shadowed_keys(spec, cfg)
    combos = trial_combinations(spec)
    if len(spec.space) + len(spec.mutations()) > 1:
        full = len(combos) <= FULL_CHECK_COMBINATIONS
        for params in combos:
            try:
                trial_run_config(base, params, resolve=full)
            except ConfigError as e:
                raise ConfigError(f"space: the trial with {describe_trial(params)} is invalid: {e}") from e
    return cfg


SHADOWED_BY = {"agent.entropy": "agent.entropy_schedule", "agent.teacher_coeff": "agent.teacher_schedule"}
"""A training-config key that has no effect while another is set (the learner reads the schedule, not the
constant): sampling or mutating it would give trials that differ in name only."""


def _refuse_shadowed_keys(spec: SweepSpec, cfg: RunConfig) -> None:
    """A space or PBT mutation key that the trials' config ignores (SHADOWED_BY) is refused in one line;
    `cfg` is the parsed base config."""
    mutations = spec.mutations()
    for section, keys in (("scheduler.mutations", mutations), ("space", spec.space)):
        for key in keys:
            shadow = SHADOWED_BY.get(key)
            if shadow is None or shadow in spec.space or shadow in mutations:
                continue
            value = functools.reduce(getattr, shadow.split("."), cfg)
            if value is not None:
                raise ConfigError(f"{section}.{key}: has no effect, the base config sets {shadow} = {value!r}, "
                                  f"which replaces it; search {shadow} instead, or set it to null with --set")


def trial_run_config(base: dict, params: dict, resolve: bool = True) -> RunConfig:
    """The validated training config of one trial: base with the trial's sampled `params`."""
    raw = copy.deepcopy(base)
    for k, v in params.items():
        raw = _set_path(raw, k, v)
    return parse_config(raw, resolve=resolve)


def metric_candidates(spec: SweepSpec, cfg: RunConfig) -> list[str]:
    """Result keys the objective is read from, best first (one key unless metric.name is 'auto')."""
    if spec.metric.name != AUTO_METRIC:
        return [spec.metric.name]
    out = list(HELDOUT_CANDIDATES)
    opps = list(cfg.evaluation.opponents) if cfg.evaluation.interval else []
    for opp in sorted(opps, key=lambda o: (o != "random", opps.index(o))):
        out.append(f"eval/{opp}/win_rate")
    out.append("env_runners/episode_return_mean")
    return out
