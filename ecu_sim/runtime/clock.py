"""Time for the loop, behind one small interface so the same loop runs in real and in virtual time.

Waiting is the clock's job, not the loop's: a real clock sleeps until the deadline (or receives
frames while it waits), while a virtual clock only jumps to the deadline; the loop drains what is
queued at every tick. The nodes' logic reads time only through a Clock, so it runs the same in
virtual time. Outside it the time is read for plumbing only: the bus port's reconnect backoff
and the kernel-timed transmitter (``time.monotonic``, ecu_sim.bus.port and ecu_sim.bus.transmit), the
wall-clock timestamps of a recording (ecu_sim.io.recorder), and ``simulate``'s speed report.
"""

from __future__ import annotations

import sys
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
    """Wall time from ``time.monotonic``: immune to NTP steps and to the date being set.

    Two ways to wait for a deadline, both on the same absolute grid:

    - ``receive_while_waiting=False`` (the default): sleep and leave the frames that arrive
      meanwhile queued for the tick's drain, which the loop does just before the deadline: two
      wake-ups per tick on a quiet bus instead of one per frame. The sleep is relative:
      ``time.sleep`` of the time remaining to the deadline, read from ``time.monotonic`` just
      before. Deadlines stay on the grid (each is computed from the start, not from the last
      wake-up), so a late wake-up never carries over; a preemption between reading the clock and
      sleeping delays that one wake-up. The loop switches to receiving frame by frame
      (``receive_until``) while the bus is busy.
    - ``True``: always block in the bus receive and handle every frame the moment it arrives.

    Either way a frame received before the tick's drain is used by that tick.
    """

    def __init__(self, receive_while_waiting: bool = False) -> None:
        self.receive_while_waiting = receive_while_waiting
        _tighten_timer_slack()

    @property
    def drains_at_deadline(self) -> bool:
        """True when frames wait queued for the tick (the loop then watches how busy the bus is)."""
        return not self.receive_while_waiting

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, deadline: float, poll: Poll) -> None:
        if self.receive_while_waiting:
            self.receive_until(deadline, poll)
        else:
            self.sleep_until(deadline)

    def cpu_time(self) -> float:
        """CPU seconds this thread has used: how busy receiving keeps the loop."""
        return time.thread_time()

    def sleep_until(self, deadline: float) -> None:
        """Sleep, receiving nothing, until ``deadline``: ``time.sleep`` of the time remaining."""
        remaining = deadline - time.monotonic()
        if remaining > 0.0:
            time.sleep(remaining)

    def receive_until(self, deadline: float, poll: Poll) -> None:
        """Handle frames as they arrive until ``deadline``."""
        monotonic = time.monotonic
        remaining = deadline - monotonic()
        while remaining > 0.0:
            poll(remaining)
            remaining = deadline - monotonic()


#: prctl(2) option, and the slack asked for: 1 us instead of Linux's default 50 us
_PR_SET_TIMERSLACK = 29
_TIMER_SLACK_NS = 1000


def _tighten_timer_slack() -> None:
    """Ask Linux to wake this thread within 1 us of a deadline rather than within 50 us.

    The default slack lets the kernel coalesce wake-ups, which shows as up to 50 us of jitter on
    every tick; at ten wake-ups a second nothing is saved by it. Real-time threads have no slack
    anyway; elsewhere, or without libc, this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, _TIMER_SLACK_NS, 0, 0, 0)
    except (OSError, AttributeError):
        pass


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
