"""Every `from spade_rllib.<module> import <name>` in the package, the benches, the examples and the tests
names something that exists, lazy imports inside functions included: a module split or a rename cannot
leave a bench or an example importing a name that moved (the benches and most lazy imports run in no test).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("spade_rllib", "bench", "examples", "tests")


def package_imports() -> dict[tuple[str, str], str]:
    """(module, name) -> first place it is imported, over every .py file of FOLDERS."""
    found: dict[tuple[str, str], str] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("spade_rllib"):
                    for alias in node.names:
                        found.setdefault((node.module, alias.name), f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def missing(module: str, name: str) -> str | None:
    """Why `from module import name` fails, None when it works."""
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        return f"module {module} does not import ({e})"
    if hasattr(mod, name):
        return None
    try:
        importlib.import_module(f"{module}.{name}")  # a submodule
    except ImportError:
        return f"{module} has no {name}"
    return None


def test_every_imported_package_name_exists():
    found = package_imports()
    assert len(found) > 300  # the scan sees the lazy imports too
    problems = [f"{where}: {why}" for (module, name), where in sorted(found.items(), key=lambda kv: kv[1])
                if (why := missing(module, name))]
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_name_that_moved():
    assert missing("spade_rllib.rllib.algorithm", "build_algo_config") == "spade_rllib.rllib.algorithm has no build_algo_config"
    assert missing("spade_rllib.no_such_module", "x").startswith("module spade_rllib.no_such_module does not import")
    assert missing("spade_rllib.rllib", "algo_config") is None
