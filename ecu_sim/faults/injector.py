"""Applying a fault schedule to the frames a node sends, tick by tick.

Faults act on the payload between the codec and the bus, never on the model, in this order:
freeze, scale, offset, error/not available, delay, then drop and silent; values stay within the
DBC range (the codec clamps). Random drops come from one generator seeded by the schedule that
draws once per transmitted tick and active drop fault, so the same run repeats exactly, and a
recorded run replays exactly. Each fault window is logged when it starts and ends, with its tick;
each frame a fault changes is logged at debug level. How faults are written: ecu_sim.faults.spec.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from collections import Counter, deque
from collections.abc import Sequence

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import WITHHOLDING_STAGE, Fault, FaultSchedule, stage
from ecu_sim.runtime.ticks import is_whole, ticks_in

log = logging.getLogger(__name__)

def not_available_payload(codec: RoleCodec) -> bytes:
    payload = codec.encode(math.nan)
    if codec.decode(payload) is not Invalid.NOT_AVAILABLE:
        raise ConfigError(f"fault not_available: {codec.message_name}.{codec.signal_name} is not a "
                          "J1939 parameter, so it has no not-available value")
    return payload


def error_indicator_payload(codec: RoleCodec) -> bytes:
    """The not-available payload with the one bit cleared that makes it the error indicator.

    In J1939 the error indicator is the not-available value minus one in the top byte (0xFE..
    for 0xFF..) or in a discrete field (10 for 11), so exactly one bit of the signal differs. It
    is found through the codec's own decoder, whatever the signal's position and byte order.
    """
    na = int.from_bytes(not_available_payload(codec), "big")
    nbits = 8 * codec.length
    for bit in range(nbits):
        candidate = (na & ~(1 << bit)).to_bytes(codec.length, "big")
        if codec.decode(candidate) is Invalid.ERROR_INDICATOR:
            return candidate
    raise ConfigError(f"fault error: {codec.message_name}.{codec.signal_name} is not a J1939 "
                      "parameter, so it has no error indicator")


class _Window:
    """A fault with its window in ticks and what it did so far."""

    __slots__ = ("active", "end", "fault", "frozen", "hits", "stage", "start", "ticks", "value")

    def __init__(self, fault: Fault, period_s: float) -> None:
        self.fault = fault
        self.stage = stage(fault.kind)
        # A time falls in the tick whose period holds it: one rule for every seconds-to-ticks.
        self.start = ticks_in(fault.start_s, period_s)
        self.end = math.inf if fault.end_s is None else ticks_in(fault.end_s, period_s)
        self.value = 1.0 if fault.value is None else fault.value
        self.ticks = 0
        if fault.kind == "delay":
            self.ticks = ticks_in(self.value, period_s)
            if self.ticks < 1 or not is_whole(self.value, period_s):
                raise ConfigError(f"fault {fault}: the delay must be a whole number of periods "
                                  f"({period_s:g} s), at least one")
        self.active = False
        self.frozen: bytes | None = None
        self.hits = 0


class FaultInjector:
    """Stands between a node and its transmitter and applies the schedule, tick by tick.

    It is an :class:`~ecu_sim.bus.transmit.Output` in front of another, so a node cannot tell
    whether faults are injected: nothing in the node or the model changes for them.
    """

    def __init__(self, output: Output, codec: RoleCodec, schedule: FaultSchedule,
                 period_s: float, name: str = "") -> None:
        self._output = output
        self._codec = codec
        self._period_s = period_s
        self._name = name or f"{codec.message_name}.{codec.signal_name}"
        self.schedule = schedule
        self._windows = sorted((_Window(fault, period_s) for fault in schedule.faults),
                               key=lambda w: w.stage)
        kinds = {w.fault.kind for w in self._windows}
        self._not_available = not_available_payload(codec) if "not_available" in kinds else b""
        self._error = error_indicator_payload(codec) if "error" in kinds else b""
        delays = [w.ticks for w in self._windows if w.fault.kind == "delay"]
        self._history: deque[tuple[int, bytes]] | None = (
            deque(maxlen=max(delays) + 1) if delays else None)
        self._rng = random.Random(schedule.seed)
        #: frames each kind of fault changed or withheld
        self.injected: Counter[str] = Counter()

    @property
    def codec(self) -> RoleCodec:
        """The signal the faults act on."""
        return self._codec

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        if not self._windows:  # a page's injector before its first switch: every tick, nothing to do
            self._output.send(tick, deadline, data)
            return
        active = self._active(tick)
        payload: bytes | None = data
        if self._history is not None:
            self._history.append((tick, data))  # what the delay sends later, after value faults
        for window in active:  # sorted: value faults first, then the delay, then withholding
            kind = window.fault.kind
            if window.stage == WITHHOLDING_STAGE:
                if payload is None or (kind == "drop" and self._rng.random() >= window.value):
                    continue
                payload = None
            elif kind == "delay":
                payload = self._delayed(tick - window.ticks)
            else:
                assert payload is not None
                payload = self._change(window, payload)
                if self._history is not None:
                    self._history[-1] = (tick, payload)
            self._hit(window, tick)
        if payload is not None:
            self._output.send(tick, deadline, payload)

    def switch(self, fault: Fault, on: bool, tick: int) -> bool:
        """``fault`` (without a window) turned on or off from ``tick`` on while the node runs
        (``--web``): a window from that tick, drawing from the schedule's one generator, so a
        replay that switches it at the same tick repeats it. False: it was not off (on) or not on
        (off), and nothing changed."""
        open_at = [w for w in self._windows if (w.fault.kind, w.fault.value) == (fault.kind, fault.value)
                   and w.end == math.inf and w.start <= tick]
        if on == bool(open_at):
            return False
        if not on:
            open_at[0].end = tick
            return True
        window = _Window(dataclasses.replace(fault, start_s=tick * self._period_s), self._period_s)
        window.start = tick
        if fault.kind == "not_available" and not self._not_available:
            self._not_available = not_available_payload(self._codec)
        if fault.kind == "error" and not self._error:
            self._error = error_indicator_payload(self._codec)
        if fault.kind == "delay":
            longest = max(window.ticks, 0 if self._history is None else (self._history.maxlen or 1) - 1)
            self._history = deque(self._history or (), maxlen=longest + 1)
        self._windows = sorted([*self._windows, window], key=lambda w: w.stage)
        return True

    def acting(self) -> list[str]:
        """The faults acting on the frames now, as written without their windows."""
        return [str(dataclasses.replace(w.fault, start_s=0.0, end_s=None)) for w in self._windows if w.active]

    def _hit(self, window: _Window, tick: int) -> None:
        window.hits += 1
        self.injected[window.fault.kind] += 1
        log.debug("%s: tick %d: %s", self._name, tick, window.fault)

    def _change(self, window: _Window, payload: bytes) -> bytes:
        kind = window.fault.kind
        if kind == "freeze":
            if window.frozen is None:
                window.frozen = payload
            return window.frozen
        if kind == "error":
            return self._error
        if kind == "not_available":
            return self._not_available
        value = self._codec.decode(payload)
        if isinstance(value, Invalid):
            return payload
        return self._codec.encode(value * window.value if kind == "scale" else value + window.value)

    def _active(self, tick: int) -> list[_Window]:
        active = []
        for window in self._windows:
            on = window.start <= tick < window.end
            if on != window.active:
                window.active = on
                window.frozen = None
                t = tick * self._period_s
                if on:
                    log.info("%s: fault %s starts at tick %d (%.1f s)", self._name, window.fault, tick, t)
                else:
                    log.info("%s: fault %s ended at tick %d (%.1f s): %d frames affected",
                             self._name, window.fault, tick, t, window.hits)
            if on:
                active.append(window)
        return active

    def finish(self, tick: int) -> None:
        """Log the windows still open when the run ends at ``tick``: every fault gets its end line."""
        for window in self._windows:
            if window.active:
                window.active = False
                log.info("%s: fault %s still active when the run ended at tick %d (%.1f s): "
                         "%d frames affected", self._name, window.fault, tick, tick * self._period_s,
                         window.hits)

    def _delayed(self, tick: int) -> bytes | None:
        """The newest payload of a tick no later than ``tick``; None before the run had one."""
        assert self._history is not None
        for then, payload in reversed(self._history):
            if then <= tick:
                return payload
        return None

    def summary(self) -> str:
        if not self.injected:
            return "none yet"
        return ", ".join(f"{kind} {n}" for kind, n in sorted(self.injected.items()))


def check(faults: Sequence[Fault], codec: RoleCodec, period_s: float) -> None:
    """Raise ConfigError now, before the bus is opened, for a schedule that cannot be applied."""
    for fault in faults:
        _Window(fault, period_s)
        if fault.kind == "error":
            error_indicator_payload(codec)
        elif fault.kind == "not_available":
            not_available_payload(codec)
