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
    # 0: records, rules and helpers that import nothing of the package
    "spade_rllib.core": 0, "spade_rllib.cli": 0, "spade_rllib.config.yaml_reader": 0,
    "spade_rllib.artifacts.atomic_io": 0, "spade_rllib.artifacts.result_lookup": 0,
    "spade_rllib.training.phases": 0, "spade_rllib.training.signal_schedule": 0, "spade_rllib.training.targets": 0,
    # 1-4: the games and the pure core
    "spade_rllib.envs": 1, "spade_rllib.core.ratings": 1, "spade_rllib.training.draw_watch": 1,
    "spade_rllib.bots": 2,
    "spade_rllib.games": 3,
    "spade_rllib.curriculum": 4, "spade_rllib.league": 4,
    # 5: the config and its checks, checkpoints and run output, the Ray-free players
    "spade_rllib.config": 5, "spade_rllib.artifacts": 5, "spade_rllib.players": 5,
    # 6: the RLlib glue
    "spade_rllib.rllib": 6,
    # 7: the commands and what they run
    "spade_rllib.train": 7, "spade_rllib.tune": 7, "spade_rllib.evaluate": 7, "spade_rllib.export": 7,
    "spade_rllib.play": 7, "spade_rllib.report": 7,
    "spade_rllib.training": 7, "spade_rllib.evaluation": 7, "spade_rllib.sweeps": 7, "spade_rllib.reporting": 7,
    "spade_rllib.testing": 7,
}
"""Module (or package) -> floor, the longest listed prefix deciding (`core` is floor 0 but `core.ratings` 1).
0-4 are the pure core (3: the game catalog, ids and game-loop adapter); 5 the config and its checks before
Ray, checkpoints and run output, the Ray-free players; 6 the RLlib glue; 7 the commands, what they run
(`training`, `evaluation`, `sweeps`, `reporting`) and the helpers for tests and benches (`testing`).
docs/architecture.md has one line per subpackage."""
COMMANDS = ("train", "tune", "evaluate", "export", "play", "report")
"""The modules users run as `python -m spade_rllib.<command>`: they stay at the top level, with `cli.py`
(their one exit path) and nothing else."""
PURE_FLOOR = 4
FORBIDDEN_IN_PURE = ("ray", "torch", "spade_rllib.rllib", "spade_rllib.config", "spade_rllib.players")


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


def test_top_level_holds_the_commands_only():
    """The supporting modules live in subpackages named for their concept; the top level keeps what users
    type (`python -m spade_rllib.<command>`) and `cli.py`."""
    top = {p.stem for p in (ROOT / PACKAGE).glob("*.py")} - {"__init__"}
    assert top == set(COMMANDS) | {"cli"}, (
        f"top-level modules besides the commands: {sorted(top - set(COMMANDS) - {'cli'})}; put each in the "
        "subpackage of its concept (docs/architecture.md) and give it a floor in FLOORS")


def test_every_subpackage_says_what_it_owns_and_may_import():
    packages = sorted(p.parent for p in (ROOT / PACKAGE).glob("*/__init__.py"))
    assert len(packages) >= 10
    for init in packages:
        doc = ast.get_docstring(ast.parse((init / "__init__.py").read_text())) or ""
        assert "May import" in doc, f"{init.name}/__init__.py: its docstring names no 'May import' line"
        assert floor_of(f"{PACKAGE}.{init.name}") is not None, f"{init.name}: no floor"


def test_packages_of_several_floors_import_nothing_on_import():
    """`core`, `config`, `artifacts` and `training` hold modules of several floors: their `__init__` imports
    nothing, so importing a low module (`training.phases`) never runs a high one."""
    for init in sorted((ROOT / PACKAGE).glob("*/__init__.py")):
        name = f"{PACKAGE}.{init.parent.name}"
        floors = {floor_of(module_name(p)) for p in init.parent.rglob("*.py")}
        if len(floors) > 1:
            imports = [n for n in ast.walk(ast.parse(init.read_text())) if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not imports, f"{name}/__init__.py imports at line {imports[0].lineno}; its modules span floors {sorted(floors)}"


def test_every_module_a_committed_pickle_names_still_imports():
    """A checkpoint pickles its classes by module path (`class_and_ctor_args.pkl`): a module that moves breaks
    every old checkpoint, so the modules the fixtures under tests/fixtures/ name must still import."""
    import importlib
    import re

    named = set()
    for pkl in (ROOT / "tests" / "fixtures").rglob("*.pkl"):
        named |= {m.decode() for m in re.findall(rb"spade_rllib(?:\.[A-Za-z_]+)+", pkl.read_bytes())}
    assert {"spade_rllib.rllib.algorithm", "spade_rllib.rllib.module"} <= named, sorted(named)
    for name in sorted(named):
        importlib.import_module(name)


def test_pure_floors_are_scanned():
    scanned = {module_name(p) for p in package_modules() if (floor_of(module_name(p)) or 0) <= PURE_FLOOR}
    for must in ("spade_rllib.core.outcome", "spade_rllib.core.ratings", "spade_rllib.envs.maze_race", "spade_rllib.bots",
                 "spade_rllib.bots.race_bots", "spade_rllib.league.league", "spade_rllib.league.sampling",
                 "spade_rllib.curriculum.strategies", "spade_rllib.curriculum.wrapper", "spade_rllib.games.catalog",
                 "spade_rllib.games.env_ids", "spade_rllib.games.adapter"):
        assert must in scanned


@pytest.mark.parametrize("source, module, expect", [
    ("import ray\n", "spade_rllib.league.league", "imports ray (pure floor 4)"),
    ("def f():\n    import torch.nn as nn\n", "spade_rllib.curriculum.plr", "imports torch.nn"),
    ("from spade_rllib.rllib.plan import DriverUpdate\n", "spade_rllib.curriculum.source", "imports spade_rllib.rllib.plan"),
    ("from spade_rllib.config import run_config\n", "spade_rllib.bots.race_bots", "imports spade_rllib.config"),
    ("from spade_rllib.players.policy import load_policy\n", "spade_rllib.league.mixture", "imports spade_rllib.players"),
    ("from spade_rllib.training.tuner_inputs import make_tuner\n", "spade_rllib.rllib.algorithm", "floor 6 -> floor 7"),
    ("from spade_rllib.artifacts.output_paths import check_storage_path\n", "spade_rllib.core.ratings", "floor 1 -> floor 5"),
    ("from spade_rllib.artifacts.checkpoint_layout import module_dir\n", "spade_rllib.artifacts.atomic_io", "floor 0 -> floor 5"),
    ("from ..rllib import plan\n", "spade_rllib.league.sampling", "imports spade_rllib.rllib"),
    ("from spade_rllib.league import League\n", "spade_rllib.envs.level", "floor 1 -> floor 4"),
    ("from spade_rllib.games import make_bot\n", "spade_rllib.bots.race_bots", "floor 2 -> floor 3"),
    ("from spade_rllib.rllib.plan import RANDOM\n", "spade_rllib.config.run_config", "floor 5 -> floor 6"),
    ("from spade_rllib.rllib.runner import SpadeEnvRunner\n", "spade_rllib.config.preflight", "floor 5 -> floor 6"),
    ("import torch\n", "spade_rllib.games.adapter", "imports torch (pure floor 3)"),
    ("from spade_rllib.train import main\n", "spade_rllib.rllib.algorithm", "floor 6 -> floor 7"),
    ("from spade_rllib.envs import make_env\n", "spade_rllib.core.outcome", "floor 0 -> floor 1"),
])
def test_checker_catches_forbidden_imports(source, module, expect):
    found = violations(source, module)
    assert found and expect in found[0], found


def test_checker_allows_imports_that_go_down():
    source = "import numpy as np\nfrom spade_rllib.core.outcome import MAIN\nfrom spade_rllib.envs import make_env\n"
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
