"""Env ids: the one parser of every spelling the package accepts, and the one resolver behind it.

Forms (`EnvRef.form`), tried in this order:

- ``"catalog"``: a game of the catalog, its id or an alias (``MazeRace-v0``, ``CaptureTheFlag-v0``,
  ``connect_four_v3``, ``pettingzoo.classic:connect_four_v3``).
- ``"registry"``: a PettingZoo 1.27 registry id ``namespace/name-vN`` (``classic/tictactoe-v3``;
  ``pettingzoo.make`` / ``pettingzoo.register``); the AEC registry is preferred when both hold it.
- ``"module"``: ``"pkg.module:env_name"`` or ``"pkg.module.env_name"``, a module with ``env()`` /
  ``parallel_env()``; a submodule is imported when the package does not import it itself
  (``mpe2:simple_tag_v3``).
- ``"factory"``: ``"pkg.mod:Name"``, a class (AEC, Parallel or Gymnasium env) or a function
  ``(**kwargs) -> env`` (``myenv:Matching``, ``myenv:make_env``).
- ``"gymnasium"``: anything else, a Gymnasium registry id (``CartPole-v1``, ``ALE/Pong-v5``).

`parse_env_id` is syntactic (plus the catalog) and imports nothing. `resolve_env` imports what an id
names and returns an `EnvEntry` whose `make(**kwargs)` builds the raw env; a bad id raises `EnvIdError`,
one line naming what is wrong, a "did you mean" and the allowed forms. `env_kind` says the family
("level" | "pettingzoo" | "gymnasium"). Modules are imported from `sys.path` as it is, with the
working directory moved last (a stray ``pettingzoo.py`` cannot shadow the installed package; a user's
``myenv.py`` there is still found).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Literal, NamedTuple, Optional

from spade_rllib.games.catalog import find_game, level_game_ids
from spade_rllib.core.validation import did_you_mean

LEVEL_KIND = "level"
EnvKind = Literal["level", "pettingzoo", "gymnasium"]
EnvForm = Literal["catalog", "registry", "module", "factory", "gymnasium"]
PZ_KINDS = ("aec", "parallel")

ALLOWED_FORMS = ("a level game ({levels}), a PettingZoo registry id ('classic/tictactoe-v3'), a module "
                 "'pkg.module:env_name' or 'pkg.module.env_name' (e.g. 'pettingzoo.classic:connect_four_v3', "
                 "'mpe2:simple_tag_v3'), a class or factory 'pkg.mod:Class' / 'pkg.mod:make_env', or a Gymnasium id "
                 "(e.g. 'CartPole-v1')")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_REGISTRY_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


class EnvIdError(ValueError):
    """A bad env id; the message is one line (without the config key) with the allowed forms."""


def allowed_forms() -> str:
    return ALLOWED_FORMS.format(levels=" or ".join(repr(i) for i in level_game_ids()))


class EnvPath(NamedTuple):
    """A PettingZoo import path ``"module:attribute"`` split in two."""

    module: str
    attr: str


@dataclass(frozen=True)
class EnvRef:
    """What an id says, before anything is imported."""

    text: str
    form: EnvForm
    module: str = ""
    """The module to import ("module" / "factory" forms)."""
    attr: str = ""
    """The attribute of `module` ("module:attr" spelling; "" for "pkg.module")."""


@dataclass(frozen=True)
class EnvEntry:
    """A resolved env id: its family and how to build it."""

    ref: EnvRef
    kind: EnvKind
    make: Callable[..., Any]
    """`(**kwargs) -> raw env` (a PettingZoo AEC / Parallel env or a Gymnasium env)."""
    signature_of: Optional[Callable[..., Any]] = None
    """The callable whose parameters are the env's keyword arguments (for checking `env.kwargs`)."""
    api: str = ""
    """"aec", "parallel", "gymnasium" or "" (a factory function: known once it has built an env)."""


def parse_env_path(env_id: str) -> EnvPath:
    """``"pettingzoo.classic:connect_four_v3"`` -> ``EnvPath("pettingzoo.classic", "connect_four_v3")``;
    `EnvIdError` (one line) when either side is empty."""
    module, sep, attr = str(env_id).partition(":")
    if not sep or not module or not attr or ":" in attr:
        raise EnvIdError("expected 'pkg.module:name' with one ':' and both sides non-empty, e.g. "
                         "'pettingzoo.classic:connect_four_v3' or 'mymodule:MyEnv'")
    return EnvPath(module, attr)


def parse_env_id(env_id: Any) -> EnvRef:
    """The form of `env_id` (syntactic plus the catalog; imports nothing). `EnvIdError` for a value that
    is no id at all (empty, not a string, a malformed ``a:b:c``)."""
    if not isinstance(env_id, str) or not env_id.strip():
        raise EnvIdError(f"must be a non-empty string; allowed: {allowed_forms()}")
    text = env_id
    if text != text.strip():
        raise EnvIdError(f"surrounding spaces are not allowed{did_you_mean(text.strip(), [text.strip()])}")
    if _catalog_spec(text) is not None:
        return EnvRef(text, "catalog")
    if ":" in text:
        if text.startswith("gymnasium"):
            return EnvRef(text, "gymnasium")
        module, attr = parse_env_path(text)
        form: EnvForm = "module" if _looks_like_module_name(attr) else "factory"
        return EnvRef(text, form, module, attr)
    if _DOTTED.match(text):
        return EnvRef(text, "module", text, "")
    if _REGISTRY_ID.match(text) and _pz_registry_has(text):
        return EnvRef(text, "registry")
    return EnvRef(text, "gymnasium")


def _looks_like_module_name(attr: str) -> bool:
    """PettingZoo env modules are lower-case versioned names (``tictactoe_v3``); classes are CamelCase.
    Only a first guess: `resolve_env` goes by what the attribute is."""
    return attr == attr.lower()


def _catalog_spec(text: str):
    return find_game(text)


def _pz_registry_has(text: str) -> bool:
    return _pz_registry_spec(text) is not None


def _pz_registry_spec(text: str):
    """(env type, EnvSpec) of a PettingZoo registry id, AEC first; None when neither registry has it."""
    try:
        import pettingzoo
        from pettingzoo.env_registry.exceptions import PettingZooRegistryError
    except ImportError:
        return None
    for env_type in PZ_KINDS:
        try:
            return env_type, pettingzoo.spec(env_type, text)
        except (PettingZooRegistryError, KeyError, ValueError):
            continue
    return None


def _pz_registry_ids() -> list[str]:
    try:
        import pettingzoo
    except ImportError:
        return []
    return sorted({*pettingzoo.aec_registry, *pettingzoo.parallel_registry})


def import_module(name: str) -> Any:
    """`importlib.import_module(name)` with the working directory, which ``python -m`` puts first on
    `sys.path`, moved last for this import: a stray ``pettingzoo.py`` in it cannot shadow the
    installed package."""
    saved = list(sys.path)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[:] = sys.path[1:] + sys.path[:1]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def import_env_module(env_id: str) -> Any:
    """The object a path ``"module:attr"`` names (an env module, class or factory; also a Gymnasium entry
    point): the attribute of the module, or its submodule when the package does not import it."""
    path = parse_env_path(env_id)
    return _attribute(import_module(path.module), path.module, path.attr)


def module_object(module: str, attr: str = "") -> Any:
    """The module ``module``, or what ``module:attr`` names in it (its submodule ``module.attr`` where the
    package does not import it)."""
    mod = import_module(module)
    return _attribute(mod, module, attr) if attr else mod


def _attribute(mod: Any, mod_name: str, attr: str) -> Any:
    """`mod.attr`, importing the submodule ``mod_name.attr`` when there is one (`import_module` caches
    it; PettingZoo's own `__getattr__` would build a fresh module object on every access)."""
    if hasattr(mod, "__path__"):
        try:
            found = importlib.util.find_spec(f"{mod_name}.{attr}") is not None
        except (ImportError, ValueError):
            found = False
        if found:
            return import_module(f"{mod_name}.{attr}")
    return getattr(mod, attr)


def _env_modules(mod: Any) -> list[str]:
    """The env modules of a package (versioned names like ``tictactoe_v3`` when it has them)."""
    names = sorted(m.name for m in pkgutil.iter_modules(getattr(mod, "__path__", []) or []) if not m.ispkg)
    versioned = [n for n in names if re.search(r"_v\d+$", n)]
    return versioned or names


def _env_attributes(mod: Any) -> list[str]:
    """What a module offers that could build an env: its env modules, else its public callables."""
    return _env_modules(mod) or sorted(n for n, v in vars(mod).items() if not n.startswith("_") and callable(v)
                                       and getattr(v, "__module__", None) == mod.__name__)


def _api_of_class(cls: type) -> str:
    """"aec" | "parallel" | "gymnasium" | "" for a class."""
    try:
        from pettingzoo.utils.env import AECEnv, ParallelEnv
    except ImportError:  # pragma: no cover - pettingzoo is a dependency
        AECEnv = ParallelEnv = ()  # type: ignore[assignment]
    import gymnasium as gym

    if AECEnv and issubclass(cls, AECEnv):
        return "aec"
    if ParallelEnv and issubclass(cls, ParallelEnv):
        return "parallel"
    if issubclass(cls, gym.Env):
        return "gymnasium"
    return ""


def _api_of_env(env: Any) -> str:
    return _api_of_class(type(env)) or ("aec" if hasattr(env, "agent_selection") else
                                       "parallel" if hasattr(env, "possible_agents") else "")


def _return_api(fn: Callable) -> str:
    """The env API a factory's return annotation names ("" when it has none that says)."""
    try:
        hint = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return ""
    if isinstance(hint, type):
        return _api_of_class(hint)
    if isinstance(hint, str):
        low = hint.lower()
        return next((a for a, k in (("aec", "aecenv"), ("parallel", "parallelenv"), ("gymnasium", "gym"))
                     if k in low), "")
    return ""


@functools.lru_cache(maxsize=64)
def resolve_env(env_id: str) -> EnvEntry:
    """What `env_id` names, imported: an `EnvEntry` whose `make(**kwargs)` builds the raw env.
    `EnvIdError` (one line, with a "did you mean" and the allowed forms) when it names nothing."""
    ref = parse_env_id(env_id)
    if ref.form == "catalog":
        spec = _catalog_spec(ref.text)
        if spec.check is not None:
            try:
                spec.check()
            except ValueError as e:  # a missing optional dependency, an unsupported OpenSpiel game
                raise EnvIdError(" ".join(str(e).split())) from e
        kind: EnvKind = LEVEL_KIND if spec.is_level_game else "pettingzoo"
        api = "parallel" if spec.turns == "simultaneous" else "aec"
        return EnvEntry(ref, kind, spec.make_env, spec.make_env if spec.is_level_game else None, api)
    if ref.form == "registry":
        return _resolve_registry(ref)
    if ref.form in ("module", "factory"):
        return _resolve_path(ref)
    return _resolve_gymnasium(ref)


def _resolve_registry(ref: EnvRef) -> EnvEntry:
    import pettingzoo
    from pettingzoo.env_registry.spec import _load_env_creator

    env_type, spec = _pz_registry_spec(ref.text)

    def make(**kwargs: Any) -> Any:
        return pettingzoo.make(env_type, spec.id, **kwargs)

    try:
        creator = _load_env_creator(spec.entry_point)
    except Exception as e:
        raise EnvIdError(f"PettingZoo's registry names {spec.entry_point!r}, which cannot be imported "
                         f"({e.__class__.__name__}: {' '.join(str(e).split())})") from e
    return EnvEntry(ref, "pettingzoo", make, creator, env_type)


def _resolve_path(ref: EnvRef) -> EnvEntry:
    mod_name, attr = ref.module, ref.attr
    try:
        mod = import_module(mod_name)
    except ImportError as e:
        raise EnvIdError(f"cannot import module {mod_name!r} ({e.__class__.__name__}: {' '.join(str(e).split())}); "
                         f"allowed: {allowed_forms()}") from e
    if not attr:  # "pkg.module": the module itself
        return _module_entry(ref, mod, mod_name)
    try:
        target = _attribute(mod, mod_name, attr)
    except ImportError as e:  # a submodule that exists but fails to import
        if "deprecated" in str(e).lower():
            target = None
        else:
            raise EnvIdError(f"cannot import it ({e.__class__.__name__}: {' '.join(str(e).split())})") from e
    except AttributeError:
        target = None
    except Exception as e:
        raise EnvIdError(f"cannot import it ({e.__class__.__name__}: {' '.join(str(e).split())})") from e
    if target is None or type(target).__name__ == "DeprecatedModule":
        names = _env_attributes(mod)
        what = "no env" if target is None else "an outdated (deprecated) entry"
        raise EnvIdError(f"module {mod_name!r} has {what} named {attr!r}{did_you_mean(attr, names)}; "
                         f"allowed: {', '.join(names[:12]) or 'an env module, class or factory'}")
    if inspect.ismodule(target) or (not inspect.isclass(target) and any(
            callable(getattr(target, n, None)) for n in ("env", "parallel_env"))):
        return _module_entry(EnvRef(ref.text, "module", ref.module, ref.attr), target, f"{mod_name}.{attr}")
    if inspect.isclass(target):
        api = _api_of_class(target)
        if not api:
            raise EnvIdError(f"{mod_name}.{attr} is a class but not an env (need a PettingZoo AECEnv or "
                             f"ParallelEnv, or a gymnasium.Env subclass); allowed: {allowed_forms()}")
        kind: EnvKind = "gymnasium" if api == "gymnasium" else "pettingzoo"
        return EnvEntry(EnvRef(ref.text, "factory", ref.module, ref.attr), kind, target, target, api)
    if callable(target):
        api = _return_api(target)
        kind = "gymnasium" if api == "gymnasium" else "pettingzoo"
        return EnvEntry(EnvRef(ref.text, "factory", ref.module, ref.attr), kind, target, target, api)
    raise EnvIdError(f"{mod_name}.{attr} is a {type(target).__name__}, not an env module, class or factory; "
                     f"allowed: {allowed_forms()}")


def _module_entry(ref: EnvRef, mod: Any, name: str) -> EnvEntry:
    """An env module: ``env()`` (AEC) when it has one, else ``parallel_env()``."""
    fn = getattr(mod, "env", None)
    api = "aec"
    if not callable(fn) or (not hasattr(mod, "env") and hasattr(mod, "parallel_env")):
        fn, api = getattr(mod, "parallel_env", None), "parallel"
    if not callable(fn):
        names = _env_modules(mod)
        hint = f"; its env modules: {', '.join(names[:12])}" if names else ""
        raise EnvIdError(f"module {name!r} has no env() or parallel_env(){hint}; allowed: {allowed_forms()}")
    return EnvEntry(ref, "pettingzoo", fn, getattr(mod, "parallel_env", None) or fn, api)


def _resolve_gymnasium(ref: EnvRef) -> EnvEntry:
    import gymnasium as gym

    text = ref.text
    if ":" not in text:
        try:
            entry_point = gym.spec(text).entry_point
        except Exception as e:
            known = [*level_game_ids(), *gym.registry.keys(), *_pz_registry_ids()]
            raise EnvIdError(f"unknown env id{did_you_mean(text, known)}; allowed: {allowed_forms()}") from e
    else:
        entry_point = None

    def make(**kwargs: Any) -> Any:
        return gym.make(text, **kwargs)

    sig = None
    try:
        sig = import_env_module(entry_point) if isinstance(entry_point, str) else entry_point
    except Exception:
        sig = None
    return EnvEntry(ref, "gymnasium", make, sig, "gymnasium")


def make_raw_env(env_id: str, kwargs: Optional[dict] = None) -> Any:
    """A fresh raw env of `env_id` (what `resolve_env(env_id).make(**kwargs)` builds)."""
    return resolve_env(env_id).make(**dict(kwargs or {}))


def env_api(env: Any) -> str:
    """"aec" | "parallel" | "gymnasium" of a built env."""
    return _api_of_env(env)


def spade_env_ids() -> tuple[str, ...]:
    """The level games of the catalog (MazeRace-v0, CaptureTheFlag-v0, ...)."""
    return level_game_ids()


def env_kind(env_id: str, resolve: bool = True) -> EnvKind:
    """The family of `env_id`. Catalog and registry ids are told apart without importing the env; a
    ``"pkg.mod:name"`` path is imported (`resolve`) to see whether it builds a Gymnasium env. An id that
    does not resolve gets its syntactic family (the error comes from `resolve_env`)."""
    try:
        ref = parse_env_id(env_id)
    except EnvIdError:
        return "gymnasium"
    if ref.form == "catalog":
        return LEVEL_KIND if _catalog_spec(ref.text).is_level_game else "pettingzoo"
    if ref.form == "registry":
        return "pettingzoo"
    if ref.form in ("module", "factory"):
        if not resolve:
            return "pettingzoo"
        try:
            return resolve_env(env_id).kind
        except EnvIdError:
            return "pettingzoo"
    return "gymnasium"


def is_level_game(env_id: Optional[str]) -> bool:
    """True for the level games of the catalog."""
    return env_id is not None and env_kind(str(env_id), resolve=False) == LEVEL_KIND


def canonical_env_id(env_id: Optional[str]) -> Optional[str]:
    """The catalog id of `env_id` (itself, an alias such as ``"pettingzoo.classic:connect_four_v3"``, or an
    id behind a wrapper prefix or import path: ``"spade/MazeRace-v0"``, ``"pkg:MazeRace-v0"``); any other
    id comes back as given (it is what builds the env)."""
    if env_id is None:
        return None
    text = str(env_id)
    spec = find_game(text) or find_game(text.rpartition(":")[2].rpartition("/")[2])
    return spec.id if spec is not None else text


__all__ = ["ALLOWED_FORMS", "LEVEL_KIND", "EnvEntry", "EnvForm", "EnvIdError", "EnvKind", "EnvPath", "EnvRef",
           "allowed_forms", "canonical_env_id", "env_api", "env_kind", "import_env_module", "import_module",
           "is_level_game", "make_raw_env", "module_object", "parse_env_id", "parse_env_path", "resolve_env", "spade_env_ids"]
