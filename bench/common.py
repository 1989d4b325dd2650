"""Pieces the benches share: the checkout root, the small league + curriculum config that the fault
and soak benches start from, one local Ray for the length of a bench, and `check_bench_args`, the one
check of a bench's command line before Ray starts (bad input: one line, exit 2). Not a bench itself.

A bench runs from a checkout without installing: it puts the checkout root first on `sys.path`
and imports this module as `bench.common`.
"""
from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NoReturn, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tune_configs"


def league_curriculum_config(name: str, seed: int, *, storage_path: str, window: int, hidden: list[int],
                             train_batch_size: int, minibatch_size: int, league: Mapping,
                             training: Mapping, lstm: Optional[Mapping] = None) -> dict:
    """`tune_configs/league.yaml` (CTF, league on) with `tune_configs/curriculum.yaml`'s threshold curriculum
    (its `window` and `min_episodes` set to `window`; no fixed difficulty), one epoch per batch, a small
    tanh MLP of `hidden` widths (`lstm`: extra model keys, e.g. memory: lstm), no evaluation during training.
    `league` updates the league section, `training` replaces the training section."""
    from spade_rllib.config.run_config import read_yaml

    raw = read_yaml((CONFIGS / "league.yaml").read_text())
    cur = read_yaml((CONFIGS / "curriculum.yaml").read_text())["curriculum"]
    cur["threshold"].update({"window": window, "min_episodes": window})
    raw["curriculum"] = cur
    raw["env"].pop("difficulty", None)
    raw["experiment"] = {"name": name, "seed": seed, "storage_path": storage_path}
    raw["agent"].update({"epochs": 1, "minibatch_size": minibatch_size, "train_batch_size": train_batch_size,
                         "model": {"encoder": "mlp", "hidden": list(hidden), "activation": "tanh", **(lstm or {})}})
    raw["league"].update(league)
    raw["training"] = dict(training)
    raw["evaluation"] = {"interval": 0}
    return raw


@contextlib.contextmanager
def local_ray(cpus: int = 2, quiet: bool = False, address: Optional[str] = None) -> Iterator[None]:
    """A local Ray with `cpus` CPUs and no dashboard while the block runs (`quiet`: errors only, repeated
    worker logs folded); with `address` ("auto" inside `ray job submit`), the running cluster instead."""
    import ray

    extra = {}
    if quiet:
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        extra["logging_level"] = "ERROR"
    if address:
        ray.init(address=address, log_to_driver=False, **extra)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, **extra)
    try:
        yield
    finally:
        ray.shutdown()


# ----------------------------------------------------------------------------------------------
# Command lines: checked before Ray starts, as the CLIs are
# ----------------------------------------------------------------------------------------------

NUMBERS = {  # attribute -> (least value, integer?); None values are "the bench's default"
    "cpus": (1, True), "seeds": (1, True), "games": (1, True), "env_steps": (1, True), "exploit_env_steps": (1, True),
    "iterations": (1, True), "outcomes": (1, True), "snapshots": (0, True), "payoff_games": (1, True),
    "max_map_size": (0, True), "max_units": (0, True), "lstm_cell": (1, True),
    "minutes": (0.0, False), "exploit_minutes": (0.0, False), "seconds": (0.0, False),
}
"""What a bench's common options allow; floats must be finite and above their least value, ints at least it."""


def refuse(message: str) -> NoReturn:
    """One line on stderr, exit 2 (the CLIs' rule for bad input)."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_counts(name: str, text: Any, least: int = 1) -> list[int]:
    """`--name 1,2,4`: a non-empty comma list of integers >= `least`; one line otherwise."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    try:
        values = [int(t) for t in items]
    except ValueError:
        refuse(f"{_option(name)} {text!r}: expected comma-separated integers >= {least}, e.g. 1,2,4")
    if not values or min(values) < least:
        refuse(f"{_option(name)} {text!r}: expected comma-separated integers >= {least}, e.g. 1,2,4")
    return values


def check_bench_args(args: Any, *, lists: Mapping[str, int] = {}, base: Optional[dict] = None,
                     overrides: Sequence[str] = (), env_id: Optional[str] = None, out_dir: str = "out_dir",
                     config: Optional[str] = None, floors: Mapping[str, Any] = {},
                     configs: Sequence[tuple[str, Callable[[], dict]]] = ()) -> None:
    """Every option of a bench's parsed `args` that this knows, before Ray starts (exit 2, one line):
    the counts and durations of `NUMBERS` (NaN and inf refused, `--cpus 0` too: its tasks would wait for ever;
    `floors` lowers a count's floor for a bench that gives it a meaning, an int or (int, meaning), e.g.
    league_claim's `--exploit-env-steps 0`, "0: no best response"), the comma lists named in `lists` (attribute -> least value), `--out-dir` (a
    directory that can be written, not a file), `--set` `overrides` applied to the `base` config (or the YAML
    file `config`; the whole config validated, as `train` does), each of `configs` ((label, a function making
    the whole raw config of one unit, e.g. one arm's): made and validated, a refusal prefixed by its label), and
    `--max-map-size` against `env_id`'s shipped held-out maps (at least one map left), and the unit
    JSON files a resumable bench reuses from `--out-dir` (`check_unit_files`). The one check every bench path
    goes through (`ablation_common.parse_ablation_args` calls it for the ablation benches)."""
    from spade_rllib.core.validation import ConfigError

    for name, (floor, integer) in NUMBERS.items():
        floor, meaning = floors.get(name, floor), ""
        if isinstance(floor, tuple):  # (floor, what the floor value means)
            floor, meaning = floor[0], f" ({floor[1]})"
        value = getattr(args, name, None)
        if value is None or isinstance(value, (list, str)):
            continue
        ok = (isinstance(value, int) and not isinstance(value, bool) and value >= floor) if integer else \
             (isinstance(value, (int, float)) and math.isfinite(value) and (value > floor if floor == 0.0 else value >= floor))
        if not ok:
            allowed = f">= {floor}" if integer else f"a finite number > {floor:g}"
            refuse(f"{_option(name)} {value!r}: out of range, allowed {allowed}{meaning}")
    for name, least in lists.items():
        parse_counts(name, getattr(args, name), least)
    try:
        directory = getattr(args, out_dir, None)
        if directory is not None:
            from spade_rllib.artifacts.output_paths import check_output_path

            check_output_path(str(directory), _option(out_dir), directory=True)
            check_unit_files(Path(directory))
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        if base is None and config is not None:
            from spade_rllib.config.run_config import load_raw

            base = load_raw(config)
        if base is not None:
            from spade_rllib.config.run_config import apply_overrides, parse_config

            parse_config(apply_overrides(copy.deepcopy(base), list(overrides)))
        for label, make in configs:
            from spade_rllib.config.run_config import parse_config

            try:  # the label names the unit whose config is refused
                parse_config(make())
            except ConfigError as e:
                raise ConfigError(f"{label}: {e}") from e
        max_size = getattr(args, "max_map_size", 0)
        if env_id is not None and max_size:
            from spade_rllib.curriculum.heldout_maps import heldout_dir
            from spade_rllib.config.map_checks import check_heldout_levels

            check_heldout_levels([str(heldout_dir(env_id))], env_id, key=f"the held-out maps of {env_id}",
                                 max_size=max_size, size_key="--max-map-size")
    except ConfigError as e:
        refuse(str(e))


def read_json(path: Path) -> Any:
    """A JSON file a bench wrote (a unit, a manifest); one line naming the file when it is damaged
    (a merge conflict, a write cut short), never a traceback."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        refuse(f"{path}: damaged JSON ({type(e).__name__}: {e}); restore it, or delete it to redo that unit")


def check_unit_files(out_dir: Path, pattern: str = "**/*.json") -> None:
    """Every JSON file under `out_dir` (units, manifest) parses; `read_json` refuses the first that does not."""
    out_dir = Path(out_dir)
    if out_dir.is_dir():
        for path in sorted(out_dir.glob(pattern)):
            if path.is_file():
                read_json(path)
