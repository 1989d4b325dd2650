"""pyproject.toml declares what the package and the benches import, each distribution once (no Ray)."""

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.match(r"^\s*([A-Za-z0-9_.-]+)", requirement).group(1).lower().replace("_", "-")


def _declared() -> list[str]:
    reqs = list(PROJECT["dependencies"])
    for extra in PROJECT["optional-dependencies"].values():
        reqs += extra
    return [_name(r) for r in reqs]


def _top_level_imports(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_each_distribution_is_declared_once_with_a_bound():
    names = _declared()
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"declared more than once in pyproject.toml: {twice}"
    for req in PROJECT["dependencies"]:
        assert re.search(r"[<=~]=|<", req), f"{req!r} has no upper bound or pin"


def test_what_the_package_and_benches_import_is_declared():
    local = {p.stem for p in (ROOT / "bench").rglob("*.py")} | {"spade_rllib", "bench", "cluster", "tests", "conftest"}
    dists = packages_distributions()
    declared = {n.split("[")[0] for n in _declared()}
    missing = {}
    for module in _top_level_imports(ROOT / "spade_rllib") | _top_level_imports(ROOT / "bench"):
        if module in sys.stdlib_module_names or module in local or module.startswith("_"):
            continue
        owners = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not owners & declared:
            missing[module] = sorted(owners)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
