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
import re

#: relative slack of the division, far below any period a person sets
_TOLERANCE = 1e-9


def ticks_in(seconds: float, period_s: float) -> int:
    """How many whole periods of ``period_s`` fit into ``seconds`` (``seconds`` >= 0)."""
    return math.floor(seconds / period_s + _TOLERANCE)


def is_whole(seconds: float, period_s: float) -> bool:
    """Whether ``seconds`` is a whole number of periods, as a transport delay must be."""
    return abs(seconds / period_s - round(seconds / period_s)) <= 1e-6


#: a time window as faults, attacks and controls write it after their ``@``
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_WINDOW = re.compile(rf"^(?P<start>{_NUMBER})(?:(?P<sep>[-+])(?P<end>{_NUMBER}))?$")
#: what a window may look like, for the messages of its users
WINDOW_FORMS = "@FROM, @FROM-TO or @FROM+DURATION in seconds"


class WindowError(ValueError):
    """A window that is not one of :data:`WINDOW_FORMS` (``malformed``), or that ends before it
    starts."""

    def __init__(self, reason: str, malformed: bool) -> None:
        super().__init__(reason)
        self.malformed = malformed


def parse_window(text: str | None) -> tuple[float, float | None]:
    """``FROM``, ``FROM-TO`` or ``FROM+DURATION`` (seconds from the start of the run, FROM
    included, TO excluded) as ``(start, end)``; no window is ``(0, None)``, the whole run. One
    grammar for faults, attacks and controls, so a window means the same ticks in each."""
    if text is None:
        return 0.0, None
    found = _WINDOW.match(text)
    if found is None:
        raise WindowError(f"the window must be {WINDOW_FORMS}", malformed=True)
    start = float(found["start"])
    if found["end"] is None:
        return start, None
    end = float(found["end"]) + (start if found["sep"] == "+" else 0.0)
    if end <= start:
        raise WindowError("the window ends before it starts", malformed=False)
    return start, end
