"""Structured league member ids.

A member is named by a frozen :class:`MemberId` (role, generation, index, name), never by parsing
strings. ``str(member)`` is a stable, human-readable form for metric keys, CSV files and
checkpoint keys; :meth:`MemberId.parse` turns it back and is used only when loading.

================================  =============================  =========================
member                            ``MemberId``                   ``str``
================================  =============================  =========================
trainable main                    ``MemberId.main()``            ``main``
frozen snapshot 3 of main         ``MemberId.snapshot(3)``       ``main_v3``
uniform random opponent           ``MemberId.random()``          ``random``
scripted bot                      ``MemberId.bot("rusher")``     ``rusher``
main exploiter 0 (trainable)      ``MemberId.main_exploiter(0)``  ``main_exploiter_0``
its frozen snapshot 2             ``...main_exploiter(0, 2)``    ``main_exploiter_0_v2``
league exploiter 1 (trainable)    ``MemberId.league_exploiter(1)`` ``league_exploiter_1``
================================  =============================  =========================

``generation`` is 0 for trainable learners, ``random`` and bots, and 1, 2, ... for frozen
snapshots (counted per learner).
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from spade_rllib.core.outcome import MAIN as MAIN_MODULE_ID

SNAPSHOT_SUFFIX = "_v"


class Role(str, enum.Enum):
    """What a league member is."""

    MAIN = "main"
    SNAPSHOT = "snapshot"  # frozen copy of main
    RANDOM = "random"
    BOT = "bot"
    MAIN_EXPLOITER = "main_exploiter"
    LEAGUE_EXPLOITER = "league_exploiter"


EXPLOITER_ROLES = (Role.MAIN_EXPLOITER, Role.LEAGUE_EXPLOITER)
_RESERVED_NAMES = ("main", "random", "snapshot", Role.MAIN_EXPLOITER.value, Role.LEAGUE_EXPLOITER.value)
_BOT_NAME = re.compile(r"[a-z][a-z0-9_]*")
_PATTERNS = (
    (re.compile(re.escape(MAIN_MODULE_ID)), lambda m: MemberId.main()),
    (re.compile(r"main_v(\d+)"), lambda m: MemberId.snapshot(int(m.group(1)))),
    (re.compile(r"random"), lambda m: MemberId.random()),
    (re.compile(r"(main_exploiter|league_exploiter)_(\d+)(?:_v(\d+))?"),
     lambda m: MemberId(Role(m.group(1)), int(m.group(3) or 0), int(m.group(2)))),
)


@dataclass(frozen=True, order=True, repr=False)
class MemberId:
    """Identity of a league member. Hashable, ordered, picklable; equal ids are the same member."""

    role: Role
    generation: int = 0
    """0 for trainable learners, random and bots; 1, 2, ... for frozen snapshots."""
    index: int = 0
    """Which exploiter (0-based) for the exploiter roles; 0 otherwise."""
    name: str = ""
    """The bot's name for ``Role.BOT``; empty otherwise."""

    def __post_init__(self):
        object.__setattr__(self, "role", Role(self.role))
        if not isinstance(self.generation, int) or self.generation < 0:
            raise ValueError(f"MemberId.generation = {self.generation!r} is out of range; allowed: int >= 0")
        if not isinstance(self.index, int) or self.index < 0:
            raise ValueError(f"MemberId.index = {self.index!r} is out of range; allowed: int >= 0")
        if self.role is Role.SNAPSHOT and self.generation < 1:
            raise ValueError("a snapshot needs generation >= 1")
        if self.role in (Role.MAIN, Role.RANDOM, Role.BOT) and self.generation != 0:
            raise ValueError(f"role {self.role.value!r} takes no generation (got {self.generation})")
        if self.role not in EXPLOITER_ROLES and self.index != 0:
            raise ValueError(f"role {self.role.value!r} takes no index (got {self.index})")
        if self.role is Role.BOT:
            if not _BOT_NAME.fullmatch(self.name) or self.name.startswith(_RESERVED_NAMES):
                raise ValueError(f"bot name {self.name!r} must be lower_snake_case and must not start with "
                                 f"any of {', '.join(_RESERVED_NAMES)}")
        elif self.name:
            raise ValueError(f"role {self.role.value!r} takes no name (got {self.name!r})")

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def main(cls) -> "MemberId":
        return cls(Role.MAIN)

    @classmethod
    def snapshot(cls, generation: int) -> "MemberId":
        return cls(Role.SNAPSHOT, generation)

    @classmethod
    def random(cls) -> "MemberId":
        return cls(Role.RANDOM)

    @classmethod
    def bot(cls, name: str) -> "MemberId":
        return cls(Role.BOT, name=name)

    @classmethod
    def main_exploiter(cls, index: int, generation: int = 0) -> "MemberId":
        return cls(Role.MAIN_EXPLOITER, generation, index)

    @classmethod
    def league_exploiter(cls, index: int, generation: int = 0) -> "MemberId":
        return cls(Role.LEAGUE_EXPLOITER, generation, index)

    # -- properties -----------------------------------------------------------------------------
    @property
    def is_learner(self) -> bool:
        """Trained by a Learner (main or a live exploiter)."""
        return self.role is Role.MAIN or (self.role in EXPLOITER_ROLES and self.generation == 0)

    @property
    def is_frozen(self) -> bool:
        """A fixed opponent: a snapshot, an exploiter snapshot, random or a bot."""
        return not self.is_learner

    @property
    def has_weights(self) -> bool:
        """Needs network weights (a frozen snapshot); random and bots do not."""
        return self.is_frozen and self.generation > 0

    @property
    def learner(self) -> "MemberId":
        """The trainable learner this is a snapshot of (itself for learners)."""
        if self.role is Role.SNAPSHOT:
            return MemberId.main()
        if self.role in EXPLOITER_ROLES:
            return MemberId(self.role, 0, self.index)
        return self

    def snapshot_of(self, generation: int) -> "MemberId":
        """Id of this learner's frozen snapshot number ``generation``."""
        if not self.is_learner:
            raise ValueError(f"{self} is not a learner; only learners have snapshots")
        if self.role is Role.MAIN:
            return MemberId.snapshot(generation)
        return MemberId(self.role, generation, self.index)

    # -- string form ----------------------------------------------------------------------------
    def __str__(self) -> str:
        if self.role is Role.MAIN:
            return MAIN_MODULE_ID
        if self.role is Role.SNAPSHOT:
            return f"main{SNAPSHOT_SUFFIX}{self.generation}"
        if self.role is Role.RANDOM:
            return "random"
        if self.role is Role.BOT:
            return self.name
        base = f"{self.role.value}_{self.index}"
        return base if self.generation == 0 else f"{base}{SNAPSHOT_SUFFIX}{self.generation}"

    def __repr__(self) -> str:
        return f"MemberId({str(self)!r})"

    @classmethod
    def parse(cls, text: "str | MemberId") -> "MemberId":
        """Inverse of ``str()``; for loading checkpoints and outcome records only. Other names are bots."""
        if isinstance(text, MemberId):
            return text
        for pattern, build in _PATTERNS:
            match = pattern.fullmatch(text)
            if match:
                return build(match)
        return cls.bot(text)


MAIN = MemberId.main()
RANDOM = MemberId.random()


def learner_ids(main_exploiters: int = 0, league_exploiters: int = 0) -> list[MemberId]:
    """Trainable members in their fixed order: main, then main exploiters, then league exploiters."""
    return ([MAIN] + [MemberId.main_exploiter(i) for i in range(main_exploiters)]
            + [MemberId.league_exploiter(i) for i in range(league_exploiters)])
