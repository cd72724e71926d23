"""Time for the loop, behind one small interface so the same loop runs in real and in virtual time.

Waiting is the clock's job, not the loop's. A real clock wakes shortly before the deadline,
takes the frames that arrived meanwhile and waits out the rest awake, so only the step stands
between the deadline and the send; a virtual clock jumps to the deadline. The loop then drains
and ticks every node the same way in both. The nodes read no time at all (they count ticks).
Outside the clocks the time is read for plumbing only: the port's reconnect backoff and the
kernel-timed transmitter (``time.monotonic``), a recording's wall-clock timestamps, and
``simulate``'s speed report.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol

#: The quantile of "how long after waking the period's frames were taken" the clock's lead
#: converges to: in that share of ticks the send does not wait for the wake-up or the drain.
#: Higher costs more spinning every tick (about the distance between this quantile and the
#: usual value), lower lets more ticks' wake-up jitter through to the send.
LEAD_QUANTILE = 0.98
#: How far one tick moves the lead: up by ``LEAD_STEP_S * LEAD_QUANTILE`` when it was too short,
#: down by ``LEAD_STEP_S * (1 - LEAD_QUANTILE)`` when it was long enough. A single stall of the
#: machine only nudges it; a lasting change is followed within a few seconds.
LEAD_STEP_S = 50e-6
#: Receiving a period's frames for longer than this fraction of the period marks the bus as busy:
#: the clock then receives frame by frame while it waits, as long as it stays busy, so the
#: kernel's queue does not overflow and the drain before the deadline stays short.
BUSY_RECEIVE_FRACTION = 0.01
#: Frames received one by one while waiting, above which a busy bus still counts as busy.
BUSY_FRAMES = 20
#: the timer slack a real clock asks for instead of Linux's default (see ``set_timer_slack``)
TIMER_SLACK_NS = 1000


class WakeLead:
    """How long before a deadline the clock must wake so the period's frames are taken by then.

    What that takes (the wake-up's own lateness plus receiving and decoding) differs from machine
    to machine and from minute to minute, so it is learned: a stochastic quantile estimate of the
    time from the planned wake-up to the end of the drain, kept between zero and ``cap_s``.
    """

    def __init__(self, cap_s: float, quantile: float = LEAD_QUANTILE, step_s: float = LEAD_STEP_S) -> None:
        self.cap_s = cap_s
        self.lead_s = 0.0
        self._up = step_s * quantile
        self._down = step_s * (1.0 - quantile)

    def learn(self, needed_s: float) -> None:
        """The last drain and step ahead ended ``needed_s`` after the planned wake-up."""
        if needed_s > self.lead_s:
            self.lead_s = min(self.cap_s, self.lead_s + self._up)
        else:
            self.lead_s = max(0.0, self.lead_s - self._down)


class Inputs(Protocol):
    """What a clock may feed while it waits: the loop's nodes."""

    def poll(self, timeout_s: float) -> None:
        """Receive and handle at most one frame, waiting no longer than ``timeout_s``."""

    def drain(self) -> None:
        """Handle every frame that has already arrived, without waiting."""

    def prepare(self) -> None:
        """Do ahead what of the coming tick the frames so far allow, committing nothing."""


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a clock that never jumps backwards; only differences are meaningful."""

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        """Return at ``deadline``; a clock that really waits hands ``inputs`` what arrives meanwhile."""


class MonotonicClock:
    """Wall time from ``time.monotonic``: immune to NTP steps and to the date being set.

    Deadlines are computed from the start, not from the last wake-up, so a late wake-up never
    carries over. Two ways to wait for a deadline:

    - ``receive_while_waiting=False`` (the default): one wake-up a period. The clock sleeps to
      the learned lead before the deadline (``WakeLead``), takes the frames that arrived, lets
      the nodes prepare their step from them, and spends what is left until the deadline awake,
      reading the clock; the loop's own drain at the deadline then finds at most the frames of
      the last moments. So neither the wake-up's lateness nor the decoding stands between the
      deadline and the send, at the price of the spin in CPU time, bounded by ``spin_s``. While
      the bus is busy (``BUSY_RECEIVE_FRACTION``, ``BUSY_FRAMES``) the clock receives frame by
      frame until the lead instead of sleeping.
    - ``True``: always block in the bus receive and handle every frame the moment it arrives.
    """

    def __init__(self, period_s: float, receive_while_waiting: bool = False, spin_s: float = 0.0,
                 timer_slack_ns: int = TIMER_SLACK_NS) -> None:
        """``spin_s``: the most the clock wakes before a deadline (0: it wakes at the deadline,
        and the wake-up and the drain delay the send). ``timer_slack_ns``: see ``set_timer_slack``."""
        self.receive_while_waiting = receive_while_waiting
        self.lead = WakeLead(spin_s)
        self._busy_s = BUSY_RECEIVE_FRACTION * period_s
        self._busy = False
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
        lead = self.lead
        wake = deadline - lead.lead_s
        received = 0
        if self._busy:
            received = self.receive_until(wake, inputs)
        else:
            self.sleep_until(wake)
        began = self.now()
        inputs.drain()
        drained = self.now()
        inputs.prepare()
        prepared = self.now()
        self._busy = drained - began > self._busy_s or received > BUSY_FRAMES
        lead.learn(prepared - wake)
        if prepared < deadline:
            self.spin_until(deadline)

    def sleep_until(self, deadline: float) -> None:
        """Sleep, receiving nothing, until ``deadline``: ``time.sleep`` of the time remaining."""
        remaining = deadline - time.monotonic()
        if remaining > 0.0:
            time.sleep(remaining)

    def spin_until(self, deadline: float) -> None:
        """Read the clock until it is at ``deadline``."""
        monotonic = time.monotonic
        while monotonic() < deadline:
            pass

    def receive_until(self, deadline: float, inputs: Inputs) -> int:
        """Handle frames as they arrive until ``deadline``; how many waits ended before it."""
        monotonic, poll = time.monotonic, inputs.poll
        remaining = deadline - monotonic()
        polls = 0
        while remaining > 0.0:
            poll(remaining)
            remaining = deadline - monotonic()
            polls += 1
        return max(0, polls - 1)


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
