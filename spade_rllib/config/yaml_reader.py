"""The one YAML reader for configs, sweep files and `--set` values: `read_yaml(text)`.

`yaml.safe_load` (no Python objects, ever) with three changes:

* **No duplicate keys.** A key written twice in one mapping (a section written twice, whose second
  copy would silently replace the first whole) is an error naming the key, line and column.
  Merge keys (`<<: *base`) still override as YAML defines.
* **Bounded aliases.** Anchors and aliases (`&a`, `*a`) are allowed, but the document they expand to
  may hold at most `MAX_NODES` nodes and nest at most `MAX_DEPTH` deep; this is checked on the
  composed node graph before anything walks the data, so a kilobyte "alias bomb" is refused at once
  instead of expanding to 10^8 leaves. A recursive alias is refused too.
* **`1e-4` is a number.** YAML 1.1 (PyYAML) reads an exponent without a dot as a string; a plain
  (unquoted) `1e-4`, `5E3` or `1.0e3` reads as a float here. A quoted `"1e3"` stays a string.

`dump_yaml` writes the other way round (a string that reads as a number here is quoted), so a
resolved config written to a run directory reads back the same. Errors are `yaml.YAMLError`s (`YAMLLimitError` for the bounds), so callers report them as they
report any malformed YAML. Ground floor: PyYAML only.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

MAX_NODES = 100_000
"""Most nodes (scalars, lists, mappings) a document may expand to, aliases counted at each use."""
MAX_DEPTH = 64
"""Deepest nesting of lists and mappings."""
MAX_BYTES = 1 << 20
"""Largest YAML text read (1 MiB); configs and sweep files are a few KB."""

_EXP_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YAMLLimitError(yaml.YAMLError):
    """The text is valid YAML but exceeds a bound of this reader (size, expansion, depth, duplicates)."""


class _Loader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: SafeLoader reports it
                    continue
                if first is not None:
                    mark = key_node.start_mark
                    raise YAMLLimitError(f"duplicate key {key!r} at line {mark.line + 1}, column {mark.column + 1} "
                                         f"(first at line {first.line + 1}); write each key (and section) once")
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXP_FLOAT, list("-+0123456789."))


class _Dumper(yaml.SafeDumper):
    """Quotes every string the reader would take for a number (a string "1e3" is written '1e3')."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _EXP_FLOAT, list("-+0123456789."))


def dump_yaml(data: Any) -> str:
    """YAML text that `read_yaml` reads back as `data` (`yaml.safe_dump`, keys in their order)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes `root` expands to (shared nodes once per use) without expanding anything."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_NODES:
                raise YAMLLimitError(f"the document expands to more than {MAX_NODES:,d} values (aliases counted at "
                                     f"each use, near line {node.start_mark.line + 1}); refused")
            if depth[key] > MAX_DEPTH:
                raise YAMLLimitError(f"nesting deeper than {MAX_DEPTH} levels near line {node.start_mark.line + 1}; refused")
            continue
        if key in size:
            continue
        if key in on_path:
            raise YAMLLimitError(f"recursive alias at line {node.start_mark.line + 1}; refused")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)


def _children(node: yaml.Node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def read_yaml(text: str) -> Any:
    """Parse one YAML document (see the module docstring); None for an empty one."""
    if len(text) > MAX_BYTES:
        raise YAMLLimitError(f"the text is {len(text):,d} characters; at most {MAX_BYTES:,d} are read")
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError as e:
            raise YAMLLimitError(f"nesting deeper than {MAX_DEPTH} levels; refused") from e
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "YAMLLimitError", "dump_yaml", "read_yaml"]
