"""Time for the loop, behind one small interface so the same loop runs in real and in virtual time.

Waiting is the clock's job, not the loop's. A real clock sleeps to the deadline and takes the
frames that arrived meanwhile shortly before it, so only the step stands between the deadline
and the send; a virtual clock jumps to the deadline. The loop then drains and ticks every node
the same way in both. The nodes read no time at all (they count ticks). Outside the clocks the
time is read for plumbing only: the port's reconnect backoff and the kernel-timed transmitter
(``time.monotonic``), a recording's wall-clock timestamps, and ``simulate``'s speed report.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol

#: How long before each deadline, as a fraction of the period, a real clock takes the frames of
#: the period. Receiving and decoding them costs a varying amount of time (none, one frame,
#: several); done before the deadline, it never delays the send.
DRAIN_LEAD_FRACTION = 0.01
#: A period in which receiving took more than this fraction of the period in CPU time marks the
#: bus as busy: the clock then receives frame by frame while it waits, as long as it stays busy.
#: A quiet bus costs two wake-ups per tick (the drain, the deadline); a busy one is drained as it
#: fills, so the kernel's queue does not overflow.
BUSY_RECEIVE_FRACTION = 0.01
#: the timer slack a real clock asks for instead of Linux's default (see ``set_timer_slack``)
TIMER_SLACK_NS = 1000


class Inputs(Protocol):
    """What a clock may feed while it waits: the loop's nodes."""

    def poll(self, timeout_s: float) -> None:
        """Receive and handle at most one frame, waiting no longer than ``timeout_s``."""

    def drain(self) -> None:
        """Handle every frame that has already arrived, without waiting."""


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a clock that never jumps backwards; only differences are meaningful."""

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        """Return at ``deadline``; a clock that really waits hands ``inputs`` what arrives meanwhile."""


class MonotonicClock:
    """Wall time from ``time.monotonic``: immune to NTP steps and to the date being set.

    Two ways to wait for a deadline, both on the same absolute grid:

    - ``receive_while_waiting=False`` (the default): sleep to ``DRAIN_LEAD_FRACTION`` of a period
      before the deadline, drain what arrived, then sleep to the deadline. The sleep is relative
      (``time.sleep`` of the time remaining, read just before), and deadlines are computed from
      the start, not from the last wake-up, so a late wake-up never carries over. While the bus
      is busy (see ``BUSY_RECEIVE_FRACTION``) the first part receives frame by frame instead.
    - ``True``: always block in the bus receive and handle every frame the moment it arrives.
    """

    def __init__(self, period_s: float, receive_while_waiting: bool = False, spin_s: float = 0.0,
                 timer_slack_ns: int = TIMER_SLACK_NS) -> None:
        """``spin_s``: the last stretch before a deadline is spent reading the clock instead of
        asleep, so a late wake-up of the kernel's timer cannot delay the tick (at the price of
        that stretch in CPU time every tick). ``timer_slack_ns``: see ``set_timer_slack``."""
        self.receive_while_waiting = receive_while_waiting
        self._lead_s = DRAIN_LEAD_FRACTION * period_s
        self._busy_cpu_s = BUSY_RECEIVE_FRACTION * period_s
        self._busy = False
        self._spin_s = spin_s
        #: True while the clock waits (and drains before the deadline), False from the deadline on
        self.waiting = False
        set_timer_slack(timer_slack_ns)

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        self.waiting = True
        try:
            self._wait(deadline, inputs)
        finally:
            self.waiting = False

    def _wait(self, deadline: float, inputs: Inputs) -> None:
        if self.receive_while_waiting:
            self.receive_until(deadline, inputs)
            return
        mark = self.cpu_time()
        ready = deadline - self._lead_s
        if self._busy:
            self.receive_until(ready, inputs)
        else:
            self.sleep_until(ready)
        inputs.drain()
        self._busy = self.cpu_time() - mark > self._busy_cpu_s
        if self._spin_s > 0.0:
            self.spin_until(deadline)
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

    def spin_until(self, deadline: float) -> None:
        """Sleep to ``spin_s`` before ``deadline``, then read the clock until it is there."""
        self.sleep_until(deadline - self._spin_s)
        monotonic = time.monotonic
        while monotonic() < deadline:
            pass

    def receive_until(self, deadline: float, inputs: Inputs) -> None:
        """Handle frames as they arrive until ``deadline``."""
        monotonic, poll = time.monotonic, inputs.poll
        remaining = deadline - monotonic()
        while remaining > 0.0:
            poll(remaining)
            remaining = deadline - monotonic()


#: prctl(2) option
_PR_SET_TIMERSLACK = 29


def set_timer_slack(slack_ns: int) -> None:
    """Ask Linux to wake this thread within ``slack_ns`` of a deadline, not Linux's default slack.

    The default slack lets the kernel coalesce wake-ups, which shows as jitter on every tick; at
    a few wake-ups a tick nothing is saved by it. Real-time threads have no slack anyway;
    elsewhere, or without libc, this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, slack_ns, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class VirtualClock:
    """Simulated time: waiting costs nothing, so a simulation runs as fast as the CPU allows.

    With every node ticked by the same loop in a fixed order, a run is fully deterministic.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        if deadline > self._now:
            self._now = deadline
