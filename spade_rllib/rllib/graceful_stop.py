"""SIGINT and SIGTERM end a training run gracefully, the same way.

`GracefulStop` is both the signal handler and the Tune `Stopper` of a run:

* the first SIGINT or SIGTERM prints one `note:` line and stops the trial after its current iteration,
  as a stop condition would: the trial ends TERMINATED, so `checkpoint_at_end` writes its final
  checkpoint and the summary runs as usual;
* a second signal asks Tune to end the experiment at once (Tune's own interrupt, `SIGUSR1`), which
  still saves the experiment state; a third raises `KeyboardInterrupt`.

`exit_code` is 128 + the first signal's number (130 for SIGINT, 143 for SIGTERM), None when no
signal came. The handlers are installed after `ray.init` (which installs native handlers that would
dump a stack on SIGTERM) and restored by `uninstall`. The dict stop criteria of the config are
checked here too (Tune takes either a dict or a `Stopper`), with Tune's rule: a value at or above
its target stops the trial.
"""
from __future__ import annotations

import math
import os
import signal
import sys
import threading
from typing import Any, Callable, Mapping, Optional

from ray.tune import Stopper

from spade_rllib.artifacts.result_lookup import result_value

TUNE_INTERRUPT = getattr(signal, "SIGUSR1", None)
"""The signal Tune always listens to for "end the experiment now" (it saves its state first)."""


def _lookup(result: Mapping, key: str) -> Any:
    return result_value(result, key, None)


class GracefulStop(Stopper):
    """Tune stopper for `criteria` ({result key: target}) plus the signal flag; see the module docstring."""

    def __init__(self, criteria: Optional[Mapping[str, float]] = None, printer: Callable[[str], None] | None = None):
        self.criteria = dict(criteria or {})
        self.requested = False
        self.signum: Optional[int] = None
        self.count = 0
        self.last_iteration = 0
        self._printer = printer or (lambda text: print(text, file=sys.stderr, flush=True))
        self._previous: dict[int, Any] = {}

    # -- Tune --------------------------------------------------------------------------------
    def __call__(self, trial_id: str, result: dict) -> bool:
        self.last_iteration = int(result.get("training_iteration", self.last_iteration) or 0)
        if self.requested:
            return True
        for key, target in self.criteria.items():
            value = _lookup(result, key)
            if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)) and value >= target:
                return True
        return False

    def stop_all(self) -> bool:
        return False

    def __getstate__(self) -> dict:
        """Tune saves its stopper with the experiment state: the criteria and the flag, no handlers."""
        return {"criteria": self.criteria, "requested": self.requested, "signum": self.signum, "count": self.count,
                "last_iteration": self.last_iteration}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._printer = lambda text: print(text, file=sys.stderr, flush=True)
        self._previous = {}

    # -- signals -----------------------------------------------------------------------------
    @property
    def exit_code(self) -> Optional[int]:
        return None if self.signum is None else 128 + int(self.signum)

    def handle(self, signum: int, frame) -> None:
        self.count += 1
        name = signal.Signals(signum).name
        if self.count == 1:
            self.signum = signum
            self.requested = True
            self._printer(f"note: {name} received: stopping after iteration {self.last_iteration + 1} "
                          "(a final checkpoint follows); send it again to stop at once")
            return
        if self.count == 2 and TUNE_INTERRUPT is not None and signal.getsignal(TUNE_INTERRUPT) not in (
                signal.SIG_DFL, signal.SIG_IGN, None):
            self._printer(f"note: {name} received again: ending the run now (the last checkpoint stands)")
            os.kill(os.getpid(), TUNE_INTERRUPT)
            return
        raise KeyboardInterrupt

    def install(self) -> "GracefulStop":
        """Take SIGINT and SIGTERM (main thread only); Tune's own SIGINT handler is kept out."""
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.getsignal(sig)
                signal.signal(sig, self.handle)
        return self

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()


__all__ = ["GracefulStop"]
