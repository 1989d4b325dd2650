"""`torch.use_deterministic_algorithms` without importing TorchInductor at startup.

RLlib seeds every process it builds (the algorithm, each env runner, each learner) through
`ray.rllib.utils.torch_utils.set_torch_seed`, which calls `torch.use_deterministic_algorithms(True)`. In torch
2.13 that call begins with `import torch._inductor.config`, which imports TorchDynamo and sympy: 1.5-2.6 s of CPU
per process on this project's 2-core machines (measured with `python -c "import torch;
torch.use_deterministic_algorithms(False)"`), spent by every actor a run starts, though nothing here compiles.

`install()` replaces the function with one that sets the same flag (`torch._C._set_deterministic_algorithms`)
and hands Inductor the mode the way Inductor itself reads it when it is imported later
(`TORCHINDUCTOR_DETERMINISTIC`, its config's default); when Inductor is already imported, its config is set
directly, as torch does. So the determinism a seed asks for is the same, only the import is deferred to the
first use of `torch.compile`. RLlib has no hook for how it seeds torch, hence the replacement; it is installed
by the modules every Ray process of a run imports (`algorithm`, `runner`, `lean_learner`), and does nothing
when torch's function is not the one it expects to replace.
"""
from __future__ import annotations

import os
import sys

_INDUCTOR_CONFIG = "torch._inductor.config"


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """`torch.use_deterministic_algorithms`, the Inductor config deferred to Inductor's own import."""
    import torch

    config = sys.modules.get(_INDUCTOR_CONFIG)
    if config is not None:
        config.deterministic = bool(mode)
    else:
        os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1" if mode else "0"
    torch._C._set_deterministic_algorithms(bool(mode), warn_only=bool(warn_only))


def install() -> bool:
    """Put `use_deterministic_algorithms` in torch's place; True when it is (now or already) there."""
    try:
        import torch
    except ImportError:  # RLlib without torch: nothing to seed
        return False
    current = getattr(torch, "use_deterministic_algorithms", None)
    if current is use_deterministic_algorithms:
        return True
    if getattr(current, "__module__", None) != "torch" or not hasattr(torch._C, "_set_deterministic_algorithms"):
        return False  # not the function this replacement was written against
    torch.use_deterministic_algorithms = use_deterministic_algorithms
    return True
