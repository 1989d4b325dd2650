"""The wall between the pure core and the RLlib glue, checked over the source with `ast`.

Floors (docs/CONTRACTS.md, "Layout"): a module imports only from its own floor or lower ones,
lazy imports inside functions included. The pure floors (0-4) never import Ray or torch. The
checker is tested on synthetic snippets too, so it can fail.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "spade_rllib"
FLOORS: dict[str, int] = {
    "spade_rllib.outcome": 0, "spade_rllib.validation": 0, "spade_rllib.cli": 0,
    "spade_rllib.envs": 1, "spade_rllib.ratings": 1,
    "spade_rllib.bots": 2,
    "spade_rllib.games": 3,
    "spade_rllib.curriculum": 4, "spade_rllib.league": 4,
    "spade_rllib.config": 5, "spade_rllib.policy": 5, "spade_rllib.checkpoint_layout": 5, "spade_rllib.league_player": 5, "spade_rllib.league_export": 5, "spade_rllib.exploitability_report": 5,
    "spade_rllib.league_average": 5,
    "spade_rllib.provenance": 5, "spade_rllib.preflight": 5, "spade_rllib.checkpoint_guard": 5,
    "spade_rllib.output_paths": 5, "spade_rllib.resources": 5, "spade_rllib.model_compat": 5,
    "spade_rllib.rllib": 6,
    "spade_rllib.train": 7, "spade_rllib.run_summary": 7, "spade_rllib.teacher_cost": 7, "spade_rllib.tuner_inputs": 7, "spade_rllib.tune": 7, "spade_rllib.evaluate": 7, "spade_rllib.export": 7,
    "spade_rllib.play": 7, "spade_rllib.evaluation": 7, "spade_rllib.sweeps": 7,
    "spade_rllib.report": 7, "spade_rllib.reporting": 7, "spade_rllib.console": 7, "spade_rllib.targets": 0, "spade_rllib.result_lookup": 0,
    "spade_rllib.draw_watch": 1, "spade_rllib.trackers": 5,
    "spade_rllib.atomic_io": 0, "spade_rllib.keyed_random": 0, "spade_rllib.signal_schedule": 0, "spade_rllib.yaml_reader": 0, "spade_rllib.phases": 0, "spade_rllib.testing": 7,
}
"""Module (or package) -> floor. 0-4 are the pure core (3: the game catalog, ids and game-loop adapter);
5 the config, checks before Ray and the Ray-free loaders; 6 the RLlib glue; 7 entry points (and
the helpers for tests and benches, `testing`)."""
PURE_FLOOR = 4
FORBIDDEN_IN_PURE = ("ray", "torch", "spade_rllib.rllib", "spade_rllib.config")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in `source`, relative ones resolved against `module`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]  # `from pkg import module`
    return found


def floor_of(name: str) -> int | None:
    """The floor of a dotted name inside the package (longest listed prefix), None outside it."""
    while name:
        if name in FLOORS:
            return FLOORS[name]
        name = name.rpartition(".")[0]
    return None


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Imports of `module`'s source that break the floors, as 'module:line imports name (why)'."""
    own = floor_of(module)
    assert own is not None, f"{module} has no floor: add it to FLOORS"
    out = []
    for line, name in imported_names(source, module, is_package):
        if own <= PURE_FLOOR and any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IN_PURE):
            out.append(f"{module}:{line} imports {name} (pure floor {own})")
            continue
        target = floor_of(name) if name.startswith(PACKAGE + ".") else None
        if target is not None and target > own:
            out.append(f"{module}:{line} imports {name} (floor {own} -> floor {target})")
    return out


def package_modules() -> list[Path]:
    return sorted((ROOT / PACKAGE).rglob("*.py"))


def test_every_module_has_a_floor_and_no_import_goes_up():
    problems = []
    for path in package_modules():
        if path.name == "__init__.py" and path.parent == ROOT / PACKAGE:
            continue  # the package root only names its version
        problems += violations(path.read_text(), module_name(path), path.name == "__init__.py")
    assert not problems, "\n".join(problems)


def test_pure_floors_are_scanned():
    scanned = {module_name(p) for p in package_modules() if (floor_of(module_name(p)) or 0) <= PURE_FLOOR}
    for must in ("spade_rllib.outcome", "spade_rllib.ratings", "spade_rllib.envs.maze_race", "spade_rllib.bots",
                 "spade_rllib.bots.race_bots", "spade_rllib.league.league", "spade_rllib.league.sampling",
                 "spade_rllib.curriculum.strategies", "spade_rllib.curriculum.wrapper", "spade_rllib.games.catalog",
                 "spade_rllib.games.env_ids", "spade_rllib.games.adapter"):
        assert must in scanned


@pytest.mark.parametrize("source, module, expect", [
    ("import ray\n", "spade_rllib.league.league", "imports ray (pure floor 4)"),
    ("def f():\n    import torch.nn as nn\n", "spade_rllib.curriculum.plr", "imports torch.nn"),
    ("from spade_rllib.rllib.plan import DriverUpdate\n", "spade_rllib.curriculum.source", "imports spade_rllib.rllib.plan"),
    ("from spade_rllib import config\n", "spade_rllib.bots.race_bots", "imports spade_rllib.config"),
    ("from ..rllib import plan\n", "spade_rllib.league.sampling", "imports spade_rllib.rllib"),
    ("from spade_rllib.league import League\n", "spade_rllib.envs.level", "floor 1 -> floor 4"),
    ("from spade_rllib.games import make_bot\n", "spade_rllib.bots.race_bots", "floor 2 -> floor 3"),
    ("from spade_rllib.rllib.plan import RANDOM\n", "spade_rllib.config", "floor 5 -> floor 6"),
    ("from spade_rllib.rllib.runner import SpadeEnvRunner\n", "spade_rllib.preflight", "floor 5 -> floor 6"),
    ("import torch\n", "spade_rllib.games.adapter", "imports torch (pure floor 3)"),
    ("from spade_rllib.train import main\n", "spade_rllib.rllib.algorithm", "floor 6 -> floor 7"),
    ("from spade_rllib.envs import make_env\n", "spade_rllib.outcome", "floor 0 -> floor 1"),
])
def test_checker_catches_forbidden_imports(source, module, expect):
    found = violations(source, module)
    assert found and expect in found[0], found


def test_checker_allows_imports_that_go_down():
    source = "import numpy as np\nfrom spade_rllib.outcome import MAIN\nfrom spade_rllib.envs import make_env\n"
    assert violations(source, "spade_rllib.league.league") == []
    assert violations("from spade_rllib.league import League\n", "spade_rllib.rllib.league_component") == []


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` (node -> successors) as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_between_modules():
    """Module-level and lazy imports together form no cycle (a package's own __init__ aside)."""
    modules = {module_name(p): p for p in package_modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in imported_names(path.read_text(), name, path.name == "__init__.py"):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):  # parent packages run first anyway
                if not (path.name == "__init__.py" and imported.startswith(name + ".")):
                    targets.add(imported)
        graph[name] = targets
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
