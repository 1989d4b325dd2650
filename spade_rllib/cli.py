"""One exit path for every command-line entry point: one line on stderr, never a traceback.

`@cli_entry` wraps a `main(argv=None, ...) -> int`:

* a bad input (`ValueError` such as `ConfigError` and `LevelError`, `OSError` such as a path under a
  regular file or a read-only directory, a truncated pickle) prints `error: <Type>: <message>` in one
  line and returns 2;
* anything else prints `internal error: <Type>: <message>` in one line and returns 1;
* with `--debug` on the command line (or `SPADE_DEBUG=1`) the exception propagates with its traceback.

Exceptions raised inside Ray keep their cause: `root_cause` unwraps `RayTaskError`/`TuneError`
chains to the exception the user's code raised, and `one_line` reads the user's exception out of the
text of an `ActorDiedError` (which keeps only the formatted traceback of its creation task's error).
`config_error(e)` prints a config error in one line (exit 2), or re-raises it under `--debug`.
Ground floor: imports nothing of the package.
"""
from __future__ import annotations

import functools
import os
import pickle
import re
import sys
from typing import Callable, Optional, Sequence

_WRAPPERS = ("TuneError", "RayTaskError", "TrainingFailedError", "RayActorError", "ActorDiedError")
_TEXT_WRAPPERS = ("RayActorError", "ActorDiedError", "RayTaskError")
"""Wrappers whose message is a formatted traceback; the user's exception is its last `Type: message` line."""
_CAUSE_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Fault|Interrupt)): (\S.*)$")
DEBUG_FLAG = "--debug"
DEBUG_HELP = "show the full traceback of an error instead of one line"
EXIT_USAGE = 2
EXIT_INTERNAL = 1
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, EOFError, pickle.UnpicklingError)
"""Exceptions that mean "the input is bad" (exit 2) rather than "the program is broken" (exit 1)."""


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a wrapper chain (Ray's `RayTaskError.cause`, `__cause__`)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None)  # RayTaskError / RayActorError keep the user's exception here
        name = type(exc).__name__
        if not isinstance(inner, BaseException) and (name in _WRAPPERS or name.startswith("RayTaskError")):
            inner = exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def one_line(exc: BaseException, limit: int = 400) -> str:
    """`<Type>: <first meaningful line of the message>`, at most `limit` characters."""
    exc = root_cause(exc)
    name = type(exc).__name__
    if name.startswith(_TEXT_WRAPPERS):
        cause = _cause_in_text(str(exc))
        if cause:
            return cause if len(cause) <= limit else cause[: limit - 3] + "..."
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    # Ray prefixes the user's message with "ray::Actor.method() (pid=..., ip=...)" lines and a traceback.
    lines = [ln for ln in lines if not ln.startswith(("ray::", "Traceback", "File \"", "^"))] or lines
    text = lines[-1] if lines and type(exc).__name__.startswith("RayTaskError") else (lines[0] if lines else "")
    name = type(exc).__name__
    if type(exc).__module__.startswith("spade_rllib.") and text:
        return text if len(text) <= limit else text[: limit - 3] + "..."  # our own errors are written for users
    msg = f"{name}: {text}" if text else name
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def _cause_in_text(text: str) -> Optional[str]:
    """`Type: message` of the innermost exception in a formatted traceback (Ray's own types skipped)."""
    for line in reversed([ln.strip() for ln in text.splitlines()]):
        m = _CAUSE_LINE.match(line)
        if m and not m.group(1).split(".")[-1].startswith(_TEXT_WRAPPERS + ("TuneError",)):
            kind = m.group(1).split(".")[-1]
            return m.group(2) if m.group(1).startswith("spade_rllib.") else f"{kind}: {m.group(2)}"
    return None


def config_error(exc: BaseException, argv: Optional[Sequence[str]] = None) -> int:
    """Print `config error: <message>` on stderr and return 2; under `--debug`, re-raise `exc`."""
    if debug_requested(argv):
        raise exc
    print(f"config error: {exc}", file=sys.stderr)
    return EXIT_USAGE


def debug_requested(argv: Optional[Sequence[str]]) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return DEBUG_FLAG in list(args) or os.environ.get("SPADE_DEBUG", "") not in ("", "0")


def add_debug_flag(parser) -> None:
    """Declare `--debug` on an argparse parser (so `--help` lists it and parsing accepts it)."""
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)


def cli_entry(user_errors: tuple[type[BaseException], ...] = ()) -> Callable:
    """Decorator for `main(argv=None, ...)`: see the module docstring. `user_errors` adds exception
    types (beyond `USER_ERRORS`) that count as bad input."""
    bad_input = USER_ERRORS + tuple(user_errors)

    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def guarded(argv: Optional[Sequence[str]] = None, *args, **kwargs) -> int:
            if debug_requested(argv):
                return main(argv, *args, **kwargs)
            try:
                return main(argv, *args, **kwargs)
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                return 130
            except SystemExit:
                raise
            except bad_input as e:
                print(f"error: {one_line(e)}  ({DEBUG_FLAG} shows the traceback)", file=sys.stderr)
                return EXIT_USAGE
            except Exception as e:
                print(f"internal error: {one_line(e)}  ({DEBUG_FLAG} shows the traceback)", file=sys.stderr)
                return EXIT_INTERNAL

        return guarded

    return wrap


__all__ = ["DEBUG_FLAG", "EXIT_USAGE", "USER_ERRORS", "add_debug_flag", "cli_entry", "config_error", "debug_requested",
           "one_line", "root_cause"]
