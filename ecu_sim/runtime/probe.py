"""Where a real-time tick's time goes, and which step made a late tick late: an opt-in instrument.

A late frame on the wire can come from the wake-up (the kernel woke the thread late), from
frames taken before the deadline that ran past it, from frames taken at the deadline, from the
step, from the send system call, or from a garbage collection in any of these. The probe tells
them apart by labelling every stretch of the loop's thread with the step it belongs to, on the
clock the deadlines are on and in the thread's CPU time.

It is built up front and never swapped in: a run with the probe constructs ``ProbedClock``,
``ProbedNode`` and ``ProbedBus`` around the real clock, node and bus, and adds the probe as the
first tick observer. A run without it constructs none of them, so the instrument costs nothing
when it is off. When on, each label switch reads two clocks (about two system calls), which the
bench shows as the probed ECU's extra CPU beside an unprobed one.
"""

from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import Callable
from typing import Any

from ecu_sim.runtime.clock import Inputs, MonotonicClock

#: the steps of a tick, in the order they run
SLEEP_TO_DRAIN = "sleep to drain"
RECEIVE_BEFORE = "receive before deadline"
DRAIN_BEFORE = "decode before deadline"
STEP_AHEAD = "step ahead"
SPIN_TO_DEADLINE = "spin to deadline"
RECEIVE_AT = "receive at deadline"
DRAIN_AT = "decode at deadline"
STEP = "step"
SEND = "send"
OBSERVERS = "observers"
LABELS = (SLEEP_TO_DRAIN, RECEIVE_BEFORE, DRAIN_BEFORE, STEP_AHEAD, SPIN_TO_DEADLINE, RECEIVE_AT, DRAIN_AT,
          STEP, SEND, OBSERVERS)
#: the steps between the deadline and the send, whose time delays the frame
_AFTER_DEADLINE = (RECEIVE_AT, DRAIN_AT, STEP, SEND, OBSERVERS)
#: what a late tick is blamed on (see ``TickProbe.causes``)
CAUSES = ("wake-up", "drain before deadline overran", "receive at deadline", "decode at deadline",
          "step", "send", "gc")
#: upper edges of the lateness histogram, in microseconds (the last bin is open)
LATENESS_BINS_US = (25, 50, 100, 200, 500, 1000, 2000, 5000)
#: a send later than this after its deadline is a late tick whose cause is recorded
LATE_US = 200.0


class TickProbe:
    """Labelled stretches of each tick, the send's lateness and the GC pauses; summed on close."""

    def __init__(self, now: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], float] = time.thread_time) -> None:
        self._now, self._cpu = now, cpu
        self._label = SLEEP_TO_DRAIN
        self._t, self._c = now(), cpu()
        self._deadline: float | None = None
        self._wall: dict[str, float] = dict.fromkeys(LABELS, 0.0)
        self._cpu_in: dict[str, float] = dict.fromkeys(LABELS, 0.0)
        self._sent_at: float | None = None
        self._woke_at: float | None = None
        self._drained_at: float | None = None
        self._gc_at: float | None = None
        self._gc_s = 0.0
        self._gc_after_deadline_s = 0.0
        self._gc_in: dict[str, float] = dict.fromkeys(_AFTER_DEADLINE, 0.0)
        #: one dict per finished tick
        self.ticks: list[dict[str, float]] = []
        self.gc_pauses: list[tuple[str, float]] = []

    # -- marks, called by the wrappers ------------------------------------------------------------

    @property
    def label(self) -> str:
        """The step the loop's thread is in now."""
        return self._label

    def switch(self, label: str) -> str:
        """Charge the time since the last switch to the current label; return that label."""
        t, c = self._now(), self._cpu()
        previous = self._label
        self._wall[previous] += t - self._t
        self._cpu_in[previous] += c - self._c
        self._label, self._t, self._c = label, t, c
        return previous

    def begin(self, deadline: float) -> None:
        """A new wait starts: the previous tick is over."""
        self.switch(SLEEP_TO_DRAIN)
        if self._deadline is not None:
            self._finish()
        else:  # what ran before the first wait is the start-up, not a tick
            self._wall = dict.fromkeys(LABELS, 0.0)
            self._cpu_in = dict.fromkeys(LABELS, 0.0)
        self._deadline = deadline

    def drained(self) -> None:
        """The drain before the deadline is done; if past the deadline, it overran."""
        self._drained_at = self._now()

    def woke(self) -> None:
        """The clock returned at (or after) the deadline."""
        self._woke_at = self._now()

    def sent(self) -> None:
        """A frame left through the bus: the first one of a tick is its lateness on the wire."""
        if self._sent_at is None:
            self._sent_at = self._now()

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        """As the loop's first observer: the nodes are done, the observers' turn starts."""
        self.switch(OBSERVERS)

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        """``gc.callbacks`` entry: a collection's pause, charged to the step it interrupted."""
        if phase == "start":
            self._gc_at = self._now()
        elif self._gc_at is not None:
            pause = self._now() - self._gc_at
            self._gc_at = None
            self._gc_s += pause
            if self._label in _AFTER_DEADLINE:
                self._gc_after_deadline_s += pause
                self._gc_in[self._label] += pause
            self.gc_pauses.append((self._label, pause))

    def _finish(self) -> None:
        deadline = self._deadline
        assert deadline is not None
        record = {label: self._wall[label] for label in LABELS}
        record.update({f"cpu {label}": self._cpu_in[label] for label in LABELS})
        woke = deadline if self._woke_at is None else self._woke_at
        drained = deadline if self._drained_at is None else self._drained_at
        record["overrun"] = max(0.0, drained - deadline)
        record["wake"] = max(0.0, woke - deadline - record["overrun"])
        record["lateness"] = math.nan if self._sent_at is None else self._sent_at - deadline
        record["gc"] = self._gc_s
        record["gc after deadline"] = self._gc_after_deadline_s
        # what each step took by itself: a collection inside it is the collector's, not the step's
        record.update({f"net {label}": record[label] - self._gc_in[label] for label in _AFTER_DEADLINE})
        self.ticks.append(record)
        self._gc_in = dict.fromkeys(_AFTER_DEADLINE, 0.0)
        self._wall = dict.fromkeys(LABELS, 0.0)
        self._cpu_in = dict.fromkeys(LABELS, 0.0)
        self._sent_at = self._woke_at = self._drained_at = None
        self._gc_s = self._gc_after_deadline_s = 0.0

    # -- results ----------------------------------------------------------------------------------

    @staticmethod
    def cause(record: dict[str, float]) -> str:
        """The step that contributed most to a tick's lateness; GC is blamed for its own pause."""
        parts = {
            "wake-up": record["wake"],
            "drain before deadline overran": record["overrun"],
            "receive at deadline": record[f"net {RECEIVE_AT}"],
            "decode at deadline": record[f"net {DRAIN_AT}"],
            "step": record[f"net {STEP}"],
            "send": record[f"net {SEND}"],
            "gc": record["gc after deadline"],
        }
        return max(parts, key=lambda name: parts[name])

    def summary(self) -> dict[str, Any]:
        """Per step the mean wall and CPU time a tick, the lateness histogram, late ticks by cause."""
        ticks = self.ticks
        n = len(ticks)
        late = [t for t in ticks if t["lateness"] * 1e6 > LATE_US]
        causes = dict.fromkeys(CAUSES, 0)
        for record in late:
            causes[self.cause(record)] += 1
        edges = [*LATENESS_BINS_US, None]
        histogram = dict.fromkeys((_bin_name(e, i, edges) for i, e in enumerate(edges)), 0)
        for record in ticks:
            us = record["lateness"] * 1e6
            if not math.isnan(us):  # a tick that sent nothing has no lateness
                histogram[_bin_name(*_bin_of(us, edges), edges)] += 1
        return {
            "ticks": n,
            "late_threshold_us": LATE_US,
            "late": len(late),
            "late_by_cause": causes,
            "lateness_histogram_us": histogram,
            "mean_wall_us": {label: _mean_us(ticks, label) for label in LABELS},
            "mean_cpu_us": {label: _mean_us(ticks, f"cpu {label}") for label in LABELS},
            "worst_us": {name: max((1e6 * t[key] for t in ticks), default=0.0) for name, key in
                         (("lateness", "lateness"), ("wake-up", "wake"), ("overrun", "overrun"),
                          (RECEIVE_AT, RECEIVE_AT), (DRAIN_AT, DRAIN_AT), (STEP, STEP), (SEND, SEND),
                          ("gc", "gc"))},
            "gc": {"pauses": len(self.gc_pauses), "total_us": 1e6 * sum(p for _, p in self.gc_pauses),
                   "max_us": 1e6 * max((p for _, p in self.gc_pauses), default=0.0),
                   "by_step": _count(label for label, _ in self.gc_pauses)},
        }

    def start(self) -> None:
        """Hear of garbage collections from now on."""
        gc.callbacks.append(self.on_gc)

    def write(self, path: str) -> None:
        """Stop hearing of collections and write the summary as JSON."""
        if self.on_gc in gc.callbacks:
            gc.callbacks.remove(self.on_gc)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.summary(), f, indent=1)


def _mean_us(ticks: list[dict[str, float]], key: str) -> float:
    return 1e6 * sum(t[key] for t in ticks) / len(ticks) if ticks else 0.0


def _count(labels: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return counts


def _bin_of(us: float, edges: list[int | None]) -> tuple[int | None, int]:
    for i, edge in enumerate(edges):
        if edge is None or us <= edge:
            return edge, i
    return None, len(edges) - 1


def _bin_name(edge: int | None, index: int, edges: list[int | None]) -> str:
    low = 0 if index == 0 else edges[index - 1]
    return f"> {low}" if edge is None else f"{low}..{edge}"


class ProbedClock(MonotonicClock):
    """The real clock, telling the probe when it waits, drains and wakes."""

    def __init__(self, period_s: float, probe: TickProbe, **options: Any) -> None:
        super().__init__(period_s, **options)
        self.probe = probe
        self._wrapped: tuple[Inputs, _ProbedInputs] | None = None

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        probe = self.probe
        probe.begin(deadline)
        if self._wrapped is None or self._wrapped[0] is not inputs:
            self._wrapped = (inputs, _ProbedInputs(inputs, probe))
        super().wait_until(deadline, self._wrapped[1])
        probe.woke()
        probe.switch(DRAIN_AT)


class _ProbedInputs:
    def __init__(self, inputs: Inputs, probe: TickProbe) -> None:
        self._inputs, self._probe = inputs, probe

    def poll(self, timeout_s: float) -> None:
        self._probe.switch(DRAIN_BEFORE)
        self._inputs.poll(timeout_s)
        self._probe.switch(SLEEP_TO_DRAIN)

    def drain(self) -> None:
        self._probe.switch(DRAIN_BEFORE)
        self._inputs.drain()

    def prepare(self) -> None:
        self._probe.switch(STEP_AHEAD)
        self._inputs.prepare()
        self._probe.drained()
        self._probe.switch(SPIN_TO_DEADLINE)


class ProbedNode:
    """A node whose drain and tick the probe labels; everything else is the node's own."""

    def __init__(self, node: Any, probe: TickProbe) -> None:
        self._node, self._probe = node, probe

    def poll(self, timeout_s: float) -> None:
        self._node.poll(timeout_s)

    def drain(self) -> None:
        """Drains run under the label the caller set (before the deadline, or at it)."""
        self._node.drain()

    def prepare(self) -> None:
        self._node.prepare()

    def tick(self, deadline: float, transmit: bool) -> None:
        self._probe.switch(STEP)
        self._node.tick(deadline, transmit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


class ProbedBus:
    """A python-can bus whose receive and send system calls the probe labels."""

    def __init__(self, bus: Any, probe: TickProbe) -> None:
        self._bus, self._probe = bus, probe

    def recv(self, timeout: float | None = None) -> Any:
        probe = self._probe
        previous = probe.switch(RECEIVE_AT if probe.label == DRAIN_AT else RECEIVE_BEFORE)
        try:
            return self._bus.recv(timeout)
        finally:
            probe.switch(previous)

    def send(self, msg: Any, timeout: float | None = None) -> None:
        probe = self._probe
        previous = probe.switch(SEND)
        try:
            self._bus.send(msg, timeout)
        finally:
            probe.sent()
            probe.switch(previous)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bus, name)

