"""Time for the loop, behind one small interface so the same loop runs in real and in virtual time.

Waiting is the clock's job, not the loop's: a real clock blocks in the receive call until the
deadline (so frames are taken the moment they arrive and the wake-up is as precise as the
kernel's select), while a virtual clock only drains what is already queued and jumps to the
deadline. Nothing else in the package reads the time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

#: Receives at most one frame, waiting no longer than the given number of seconds.
Poll = Callable[[float], None]


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a clock that never jumps backwards; only differences are meaningful."""

    def wait_until(self, deadline: float, poll: Poll) -> None:
        """Return at ``deadline``, calling ``poll`` meanwhile so input is received while waiting."""


class MonotonicClock:
    """Wall time from ``time.monotonic``: immune to NTP steps and to the date being set."""

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, deadline: float, poll: Poll) -> None:
        monotonic = time.monotonic
        remaining = deadline - monotonic()
        while remaining > 0.0:
            poll(remaining)
            remaining = deadline - monotonic()


class VirtualClock:
    """Simulated time: waiting costs nothing, so a simulation runs as fast as the CPU allows.

    The loop drains what is already queued after every wait, so nothing needs polling here; with
    every node ticked by the same loop in a fixed order a run is fully deterministic.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def wait_until(self, deadline: float, poll: Poll) -> None:
        if deadline > self._now:
            self._now = deadline
