"""The fixed-rate schedule every node runs on, in real and in virtual time alike.

Ticks fall on absolute deadlines ``t0 + k * period`` of the injected clock, never on "sleep for
what is left of the period", so scheduling jitter does not accumulate into drift. A tick that
starts so late that later slots have passed too does not produce a burst of frames: the overdue
ticks still advance the node (so model time stays locked to the clock) but only the newest one
transmits. The node always sees a fixed step; the measured interval never reaches the model.

There is one code path: the clock waits (a real one also takes the period's frames just before
the deadline and lets the nodes prepare their step), then each node drains what is queued and
ticks, then the observers hear of the tick. Several nodes share a loop only in virtual time,
where node order makes a run repeatable: a node drains right before its own tick, so it sees
what the nodes before it sent this tick.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ecu_sim.runtime.clock import Clock

#: Fraction of the period after its deadline beyond which a tick counts as late.
LATE_FRACTION = 0.1


class Node(Protocol):
    """One participant of the loop: an ECU, a CCM, a pedal."""

    def poll(self, timeout_s: float) -> None:
        """Receive and handle at most one frame, waiting no longer than ``timeout_s``."""

    def drain(self) -> None:
        """Handle every frame that has already arrived, without waiting."""

    def prepare(self) -> None:
        """Do ahead what of the coming tick the frames so far allow, committing nothing."""

    def tick(self, deadline: float, transmit: bool) -> None:
        """Advance one fixed step with the latest inputs; send the result when ``transmit``."""


class TickObserver(Protocol):
    """Hears of every tick once all nodes ran it: status lines, recorders, traces, replay."""

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        """Tick ``tick`` ran at ``now`` on the loop's clock; ``transmitted`` is False when overdue."""


@dataclass
class LoopStats:
    ticks: int = 0
    #: ticks that started more than LATE_FRACTION of a period after their deadline
    late: int = 0
    #: overdue ticks that advanced the node without transmitting (never sent as a burst)
    skipped: int = 0
    max_lateness_s: float = 0.0


class _Inputs:
    """The nodes as a clock sees them: poll the first (the only one in real time), drain all."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.poll = nodes[0].poll
        self._drains = [node.drain for node in nodes]
        self._prepares = [node.prepare for node in nodes]

    def drain(self) -> None:
        for drain in self._drains:
            drain()

    def prepare(self) -> None:
        for prepare in self._prepares:
            prepare()


class TickLoop:
    """Runs nodes on absolute deadlines and tells the observers after each tick."""

    def __init__(self, clock: Clock, period_s: float, nodes: Sequence[Node],
                 observers: Sequence[TickObserver] = (), stats: LoopStats | None = None) -> None:
        """``stats`` is where the loop counts, given when an observer reports it (a status line)."""
        if period_s <= 0:
            raise ValueError(f"period must be > 0 s (got {period_s})")
        if not nodes:
            raise ValueError("a loop needs at least one node")
        self.clock = clock
        self.period_s = period_s
        self.nodes = tuple(nodes)
        self.observers = tuple(observers)
        self.stats = LoopStats() if stats is None else stats
        # Bound methods looked up once, not per tick or per run: in virtual time this loop is the
        # simulation's inner loop, and a co-simulation runs it for one tick per request.
        self._steps = tuple((node.drain, node.tick) for node in self.nodes)
        self._told = tuple(observer.on_tick for observer in self.observers)
        self._inputs = _Inputs(self.nodes)
        self._stop = threading.Event()
        self._start: float | None = None
        self._k = 0

    def stop(self) -> None:
        """Ask the loop to end after the current tick; safe from a signal handler or thread."""
        self._stop.set()

    def resume(self) -> None:
        """Let a stopped loop run again: a node's last tick after the stop (the CCM's release)."""
        self._stop.clear()

    def run(self, max_ticks: int | None = None) -> LoopStats:
        """Tick until stopped or until ``max_ticks`` more ticks (transmitted or skipped) have run.

        A second call continues on the same grid of deadlines where the first one stopped.
        """
        clock, period, stats = self.clock, self.period_s, self.stats
        steps, told, inputs = self._steps, self._told, self._inputs
        wait_until, clock_now, stopped = clock.wait_until, clock.now, self._stop.is_set
        tolerance = LATE_FRACTION * period
        if self._start is None:
            self._start = clock_now()
        start, k = self._start, self._k
        end = None if max_ticks is None else k + max_ticks
        while not stopped() and (end is None or k < end):
            deadline = start + k * period
            wait_until(deadline, inputs)
            now = clock_now()
            lateness = now - deadline
            if lateness > tolerance:
                stats.late += 1
                stats.max_lateness_s = max(stats.max_lateness_s, lateness)
                if lateness >= period:
                    overdue = int(lateness // period)
                    if end is not None:
                        overdue = min(overdue, end - k - 1)
                    for _ in range(overdue):
                        self._run_tick(k, start + k * period, now, False)
                        k += 1
                    stats.skipped += overdue
                    deadline = start + k * period
            for drain, tick in steps:
                drain()
                tick(deadline, True)
            for on_tick in told:
                on_tick(k, now, True)
            k += 1
            stats.ticks = k
        self._k = k
        return stats

    def _run_tick(self, k: int, deadline: float, now: float, transmit: bool) -> None:
        for node in self.nodes:
            node.drain()
            node.tick(deadline, transmit)
        for observer in self.observers:
            observer.on_tick(k, now, transmit)
