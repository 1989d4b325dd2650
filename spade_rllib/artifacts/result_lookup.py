"""Reading a Tune/RLlib result dict by metric path, pure Python.

A result holds its metrics flat ("eval/random/win_rate") or nested (result["eval"]["random"]
["win_rate"]) depending on who wrote it (Tune flattens for `progress.csv`, RLlib nests);
`result_value` reads both.
"""
from __future__ import annotations

import math
from typing import Any, Mapping


def result_value(result: Mapping, key: str, default: Any = math.nan) -> Any:
    """`result[key]` for a flat "a/b/c" key, else the nested result["a"]["b"]["c"]; `default` when absent."""
    if key in result:
        return result[key]
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def flatten(result: Mapping, prefix: str = "") -> dict:
    """A nested result as flat "a/b/c" keys (Tune's own flattening of a result dict)."""
    out: dict = {}
    for key, value in result.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out
