"""A uniform number in [0, 1) that is a pure function of a tuple of integers (SplitMix64's mixer, chained).

Matchmaking draws one number per episode from (seed, runner, env slot, episode number): building a numpy
Generator for that costs ~12 us, this ~1 us, and the draw is the same in every process.
"""
from __future__ import annotations

_MASK = (1 << 64) - 1
_SCALE = 1.0 / (1 << 53)


def keyed_uniform(*keys: int) -> float:
    """Uniform in [0, 1) determined by ``keys`` (any ints; negative ones wrap to 64 bits)."""
    h = 0x9E3779B97F4A7C15
    for k in keys:
        h = ((h ^ (int(k) & _MASK)) + 0x9E3779B97F4A7C15) & _MASK
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
        h ^= h >> 31
    return (h >> 11) * _SCALE
