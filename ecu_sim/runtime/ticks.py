"""Seconds to ticks: the one rule every part of ecu-sim uses to turn a time into a tick count.

A run's ticks fall at ``k * period`` (k = 0, 1, ...), and a time span holds the whole periods
that fit into it: ``floor(seconds / period)``. So ``--duration 10`` at 10 Hz is ticks 0..99 (the
last at 9.9 s); a fault window from 60 to 70 s acts on ticks 600..699; an input timeout of 0.25 s
holds a value for 2 ticks, which is what keeps a value from being used once it is older than the
timeout; a status line every second comes after every 10th tick. A small tolerance keeps float
division from losing a period (``0.3 / 0.1`` is 2.9999999999999996).
"""

from __future__ import annotations

import math

#: relative slack of the division, far below any period a person sets
_TOLERANCE = 1e-9


def ticks_in(seconds: float, period_s: float) -> int:
    """How many whole periods of ``period_s`` fit into ``seconds`` (``seconds`` >= 0)."""
    return math.floor(seconds / period_s + _TOLERANCE)


def is_whole(seconds: float, period_s: float) -> bool:
    """Whether ``seconds`` is a whole number of periods, as a transport delay must be."""
    return abs(seconds / period_s - round(seconds / period_s)) <= 1e-6
