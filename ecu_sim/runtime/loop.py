"""The fixed-rate schedule shared by the ECU and the CCM.

Ticks fall on absolute deadlines ``t0 + k * period`` of the injected clock, never on "sleep for
what is left of the period", so scheduling jitter does not accumulate into drift. A tick that
starts so late that later slots have passed too does not produce a burst of frames: the overdue
ticks still advance the node (so model time stays locked to the clock) but only the newest one
transmits. The node always sees a fixed step; the measured interval never reaches the model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ecu_sim.runtime.clock import Clock, MonotonicClock

#: Fraction of the period after its deadline beyond which a tick counts as late.
LATE_FRACTION = 0.1
#: With a clock that sleeps to the deadline, how long before each deadline (as a fraction of the
#: period: 1 ms at 10 Hz) the frames of the period are taken. Receiving and decoding them costs a
#: varying amount of time (none, one frame, several); done before the deadline, it never delays
#: the send. A frame arriving in that last millisecond is used one tick later.
DRAIN_LEAD_FRACTION = 0.01
#: With a clock that sleeps to the deadline (``drains_at_deadline``), a period in which receiving
#: took more than this fraction of the period in CPU time marks the bus as busy: the loop then
#: receives frame by frame while it waits, as long as it stays busy. A quiet bus costs two wake-ups
#: per tick (the drain, the deadline); a busy one is drained as it fills, so the kernel's queue
#: does not overflow.
BUSY_RECEIVE_FRACTION = 0.01


class Node(Protocol):
    """One participant of the loop: an ECU or a CCM."""

    def poll(self, timeout_s: float) -> None:
        """Receive and handle at most one frame, waiting no longer than ``timeout_s``."""

    def drain(self) -> None:
        """Handle every frame that has already arrived, without waiting."""

    def tick(self, now: float, transmit: bool) -> None:
        """Advance one fixed step with the latest inputs; send the result when ``transmit``."""


@dataclass
class LoopStats:
    ticks: int = 0
    #: ticks that started more than LATE_FRACTION of a period after their deadline
    late: int = 0
    #: overdue ticks that advanced the node without transmitting (never sent as a burst)
    skipped: int = 0
    max_lateness_s: float = 0.0


@dataclass
class _Periodic:
    every_n: int
    due: int
    callback: Callable[[float], None]


class HeldInput:
    """Sample and hold in ticks: a value taken before tick ``k`` is used by ticks ``k .. k + hold_ticks - 1``.

    Time is the tick index, never seconds, so real and virtual time follow the same rule and a
    replay only needs to know which tick a frame fell before. ``received_at`` is that tick and
    ``source`` the sender's address (None where the message has none).
    """

    __slots__ = ("hold_ticks", "received_at", "source", "value")

    def __init__(self, hold_ticks: int) -> None:
        if hold_ticks < 1:
            raise ValueError(f"a value must be held for at least one tick (got {hold_ticks})")
        self.hold_ticks = hold_ticks
        self.value: float | None = None
        self.received_at = 0
        self.source: int | None = None

    def update(self, value: float, tick: int, source: int | None = None) -> None:
        """Take ``value``, handled before ``tick``: that tick is the first to use it."""
        self.value = value
        self.received_at = tick
        self.source = source

    def get(self, tick: int) -> float | None:
        """The value for ``tick``, or None when none was taken within the last ``hold_ticks`` ticks."""
        if self.value is None or tick - self.received_at >= self.hold_ticks:
            return None
        return self.value


class TickLoop:
    """Runs nodes on absolute deadlines; several nodes share one loop only in virtual time."""

    def __init__(self, clock: Clock, period_s: float, nodes: Sequence[Node]) -> None:
        if period_s <= 0:
            raise ValueError(f"period must be > 0 s (got {period_s})")
        if not nodes:
            raise ValueError("a loop needs at least one node")
        self.clock = clock
        self.period_s = period_s
        self.nodes = tuple(nodes)
        self.stats = LoopStats()
        self._stop = threading.Event()
        self._start: float | None = None
        self._k = 0
        #: deadline of the tick being run (or last run): the grid a kernel timer locks to
        self.deadline = 0.0
        self._periodic: list[_Periodic] = []

    def every(self, seconds: float, callback: Callable[[float], None]) -> None:
        """Call ``callback(now)`` after every tick whose count is a multiple of ``seconds``."""
        every_n = max(1, round(seconds / self.period_s))
        self._periodic.append(_Periodic(every_n, every_n, callback))

    def stop(self) -> None:
        """Ask the loop to end after the current tick; safe from a signal handler or thread."""
        self._stop.set()

    def run(self, max_ticks: int | None = None) -> LoopStats:
        """Tick until stopped or until ``max_ticks`` more ticks (transmitted or skipped) have run.

        A second call continues on the same grid of deadlines where the first one stopped.
        """
        clock, period, stats = self.clock, self.period_s, self.stats
        poll = self.nodes[0].poll
        # Bound methods looked up once per run, not per tick: in virtual time this loop is the
        # simulation's inner loop, and attribute lookups are a measurable share of a tick.
        steps = [(node.drain, node.tick) for node in self.nodes]
        wait_until, clock_now, stopped = clock.wait_until, clock.now, self._stop.is_set
        periodics = self._periodic
        tolerance = LATE_FRACTION * period
        if self._start is None:
            self._start = clock_now()
        start, k = self._start, self._k
        end = None if max_ticks is None else k + max_ticks
        real = clock if isinstance(clock, MonotonicClock) and clock.drains_at_deadline else None
        busy_cpu_s = BUSY_RECEIVE_FRACTION * period
        lead = DRAIN_LEAD_FRACTION * period
        busy = False
        while not stopped() and (end is None or k < end):
            deadline = start + k * period
            self.deadline = deadline
            if real is not None:
                # Up to DRAIN_LEAD_FRACTION of a period before the deadline: on a quiet bus sleep,
                # on a busy one take the frames as they arrive (which one it is, the CPU time spent
                # receiving in the previous period says); then drain the rest and sleep again to the
                # deadline, so only the step stands between the deadline and the send.
                mark = real.cpu_time()
                ready = deadline - lead
                if busy:
                    real.receive_until(ready, poll)
                else:
                    real.sleep_until(ready)
                for drain, _ in steps:
                    drain()
                busy = real.cpu_time() - mark > busy_cpu_s
                real.sleep_until(deadline)
                now = clock_now()
            else:
                wait_until(deadline, poll)
                now = clock_now()
            lateness = now - deadline
            if lateness > tolerance:
                stats.late += 1
                stats.max_lateness_s = max(stats.max_lateness_s, lateness)
                if lateness >= period:
                    overdue = int(lateness // period)
                    if end is not None:
                        overdue = min(overdue, end - k - 1)
                    k += self._skip(overdue, now)
            if real is not None:
                for _, tick in steps:
                    tick(now, True)
            else:
                for drain, tick in steps:
                    drain()
                    tick(now, True)
            k += 1
            stats.ticks = k
            if periodics:
                for periodic in periodics:
                    if k >= periodic.due:
                        periodic.due += periodic.every_n * (1 + (k - periodic.due) // periodic.every_n)
                        periodic.callback(now)
        self._k = k
        return stats

    def _skip(self, overdue: int, now: float) -> int:
        for _ in range(overdue):
            for node in self.nodes:
                node.drain()
                node.tick(now, False)
        self.stats.skipped += overdue
        return overdue
