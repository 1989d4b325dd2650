"""One typed-field helper and one wording for every configuration error (run config, league and
curriculum cores, sweeps).

A config section is a dataclass whose fields are written with `setting(default, help=..., **constraints)`:
the help line and the constraints live in the field's metadata, so `--help-config` reads them
(`field_help`) and `check_value` / `validate_fields` check every value the same way. Constraints:
`min`, `max` (inclusive), `gt`, `lt` (exclusive), `choices` (with `choice_notes`: {refused value: why}), `pair` (a `[low, high]` pair, each end in
the range, low <= high), `path` (an existing file), and for the run config `embedded` / `derived` / `required` (no default: the value must be given).
The field's type says integer / number / string / bool / list / optional (`X | None`).

Every problem is one line that names the key path, the value and what is allowed:

    agent.lr = 'fast': wrong type, expected a number
    league.window = 0: out of range, allowed an integer >= 1
    curriculum.plr.score = 'regret': not allowed; allowed: 'learnability', 'positive_value_loss'
    league.windw: unknown key (did you mean 'window'?) (allowed: enabled, win_rate_threshold, ...)

Ground floor: imports nothing from the package, so the pure cores raise the same `ConfigError`
(a `ValueError`) as the run config.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import types
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping, Union


class ConfigError(ValueError):
    """A config problem, described in one line (key path, value, what is allowed). Line breaks that
    reach the message from the input (a key holding a newline) are shown escaped, as `\\n`."""

    def __init__(self, message: Any = "", *args: Any):
        text = str(message)
        if "\n" in text or "\r" in text:
            text = text.replace("\r", "\\r").replace("\n", "\\n")
        super().__init__(text, *args)


def did_you_mean(word: Any, options: Iterable[Any]) -> str:
    """' (did you mean 'x'?)' for the closest option, or ''."""
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key(key: str, allowed: Iterable[str]) -> ConfigError:
    allowed = list(allowed)
    return ConfigError(f"{key}: unknown key{did_you_mean(key.rpartition('.')[2], allowed)} (allowed: {', '.join(allowed)})")


def wrong_type(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{key} = {value!r}: wrong type, expected {expected}")


def out_of_range(key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{key} = {value!r}: out of range, allowed {allowed}")


def not_allowed(key: str, value: Any, choices: Iterable[Any], note: str = "") -> ConfigError:
    choices = list(choices)
    return ConfigError(f"{key} = {value!r}: not allowed{did_you_mean(value, choices)}; allowed: "
                       f"{', '.join(repr(c) for c in choices)}{f' ({note})' if note else ''}")


def not_finite(key: str, value: Any, allowed: str = "any finite number") -> ConfigError:
    return ConfigError(f"{key} = {value!r}: not a finite number, allowed {allowed}")


# ----------------------------------------------------------------------------------------------- fields
def setting(default: Any = dataclasses.MISSING, *, help: str, factory: Any = None, **constraints: Any) -> Any:
    """A dataclass field with its help line and constraints (see the module docstring) in its metadata."""
    md = {"help": " ".join(help.split()), **constraints}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=md)
    return dataclasses.field(default=default, metadata=md)


def field_help(cls: type) -> dict[str, str]:
    """{field name: help line} of a dataclass written with `setting`."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}


def allowed_range(md: Mapping[str, Any], integer: bool = False) -> str:
    """The range constraints as text: 'an integer >= 1', 'a number in (0.0, 1.0]'; '' when there are none."""
    kind = "an integer" if integer else "a number"
    lo, lo_open = (md["gt"], True) if md.get("gt") is not None else (md.get("min"), False)
    hi, hi_open = (md["lt"], True) if md.get("lt") is not None else (md.get("max"), False)
    if lo is not None and hi is not None:
        return f"{kind} in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{kind} {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f"{kind} {'<' if hi_open else '<='} {hi}"
    return ""


def check_number(key: str, value: Any, *, integer: bool = False, **md: Any) -> Any:
    """`value` as an int (`integer`) or float within the range in `md`; NaN and +-inf are refused."""
    allowed = allowed_range(md, integer) or ("an integer" if integer else "a number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type(key, value, allowed)
    if not math.isfinite(value):
        raise not_finite(key, value, allowed_range(md, integer) or "any finite number")
    written = value  # errors show the value as the user wrote it (11, not 11.0)
    if integer:
        if not float(value).is_integer():
            raise wrong_type(key, value, allowed)
        value = int(value)
    else:
        value = float(value)
    lo, hi, gt, lt = md.get("min"), md.get("max"), md.get("gt"), md.get("lt")
    if (lo is not None and value < lo) or (hi is not None and value > hi) or (gt is not None and value <= gt) \
            or (lt is not None and value >= lt):
        raise out_of_range(key, written, allowed)
    return value


def check_choice(key: str, value: Any, choices: Iterable[Any], notes: Mapping[Any, str] | None = None) -> Any:
    """`value` if it is one of `choices`; else the one-line error, with `notes[value]` where a refused value has one."""
    choices = tuple(choices)
    if isinstance(value, (dict, list)) or value not in choices:
        note = (notes or {}).get(value, "") if isinstance(value, str) else ""
        raise not_allowed(key, value, choices, note)
    return value


def check_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise wrong_type(key, value, "true/false")
    return value


def check_pair(key: str, value: Any, *, integer: bool = False, **md: Any) -> tuple:
    """A `[low, high]` pair, each end checked by `check_number`, low <= high."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or len(value) != 2:
        raise out_of_range(key, value, f"a [low, high] pair of {allowed_range(md, integer) or 'numbers'}")
    a = check_number(f"{key}[0]", value[0], integer=integer, **md)
    b = check_number(f"{key}[1]", value[1], integer=integer, **md)
    if a > b:
        raise out_of_range(key, value, "low <= high")
    return (a, b) if integer else (float(a), float(b))


def type_name(tp: Any) -> str:
    """'an integer', 'a list of strings', 'a number or null', ... for messages and `--help-config`."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(type_name(a) for a in args) + " or null"
    if origin in (list, tuple):
        inner = (typing.get_args(tp) or (Any,))[0]
        plural = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}.get(inner, type_name(inner))
        return f"a list of {plural}"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false", dict: "a mapping"}.get(tp, str(tp))


def check_value(key: str, value: Any, tp: Any, md: Mapping[str, Any]) -> Any:
    """Check `value` against the type `tp` of a field and the constraints `md`; return it converted
    (ints and floats as the type says, lists of a `tuple[...]` field as tuples)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return check_value(key, value, args[0], md)
    if md.get("pair"):
        inner = (typing.get_args(tp) or (float,))[0]
        return check_pair(key, value, integer=inner is int, **_ranges(md))
    if origin in (list, tuple):
        inner = (typing.get_args(tp) or (Any,))[0]
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise wrong_type(key, value, type_name(tp))
        items = [check_value(f"{key}[{i}]", v, inner, md) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if tp is bool:
        return check_bool(key, value)
    if tp is int or tp is float:
        value = check_number(key, value, integer=tp is int, **_ranges(md))
        value = float(value) if tp is float else value
    elif tp is str:
        if not isinstance(value, str):
            raise wrong_type(key, value, "a string")
    elif tp is dict:
        if not isinstance(value, dict):
            raise wrong_type(key, value, "a mapping")
        return dict(value)
    if "choices" in md:
        check_choice(key, value, md["choices"], md.get("choice_notes"))
    if md.get("path") and isinstance(value, str) and not config_path(value).exists():
        raise ConfigError(f"{key} = {value!r}: file not found (cwd: {os.getcwd()})")
    return value


def config_path(value: str) -> Path:
    """A path a config names: `~` expanded; a relative `spade_rllib/...` path that the working
    directory does not hold names the installed package's own data (e.g. the shipped held-out maps),
    so shipped configs run from any directory."""
    path = Path(os.path.expanduser(value))
    if not path.is_absolute() and not path.exists() and path.parts[:1] == ("spade_rllib",):
        shipped = Path(__file__).resolve().parents[2] / path  # the directory holding the spade_rllib package
        if shipped.exists():
            return shipped
    return path


def _ranges(md: Mapping[str, Any]) -> dict[str, Any]:
    return {k: md[k] for k in ("min", "max", "gt", "lt") if md.get(k) is not None}


def validate_fields(obj: Any, prefix: str) -> None:
    """Check every field of the dataclass instance `obj` by its type and constraints and store the
    converted value (frozen dataclasses too); nested dataclass fields check themselves."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        tp = hints[f.name]
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(tp) or f.metadata.get("embedded") or f.metadata.get("derived"):
            continue
        object.__setattr__(obj, f.name, check_value(f"{prefix}.{f.name}" if prefix else f.name, value, tp, f.metadata))


__all__ = ["ConfigError", "allowed_range", "check_bool", "check_choice", "check_number", "check_pair", "check_value",
           "did_you_mean", "field_help", "not_allowed", "not_finite", "out_of_range", "setting", "type_name",
           "unknown_key", "validate_fields", "wrong_type"]
