"""A person's hand on the powertrain's and the restbus's messages while they run: stop or restart a
message, change its cycle, fix a signal's value or give it back.

Every message the process sends is an :class:`~ecu_sim.powertrain.engine_frames.EngineMessage`, so
one mechanism serves the hosted nodes and the restbus alike. A stopped message's output is set
aside and a silent one takes its place; its schedule keeps counting, so a restart resumes on
the grid. A new cycle starts its grid at the tick it is applied. A fixed signal that the truck
fills is overridden before encoding; one that carries a start value (or "not available") has
its bits rewritten in the message's base payload. Nothing here runs while nothing is changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.spn import SignalLayout
from ecu_sim.powertrain.engine_frames import EngineMessage, cycle_ticks
from ecu_sim.runtime.schedule import Schedule


class _Silent:
    """A stopped message's output: sends nothing."""

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        return None


class LiveMessages:
    """The process's messages by name, and what a person changed in them."""

    def __init__(self, messages: Sequence[EngineMessage], period_s: float) -> None:
        self._by_name: dict[str, EngineMessage] = {}
        for m in messages:
            self._by_name.setdefault(m.message.name, m)
        self._period_s = period_s
        self._stopped: dict[str, Output] = {}
        self._bases: dict[str, int] = {}

    def find(self, name: str) -> EngineMessage | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def send(self, name: str, on: bool) -> bool:
        """Stop (False) or restart (True) a message; False when it already was so."""
        m = self._by_name[name]
        if on == (name not in self._stopped):
            return False
        if on:
            m.output = self._stopped.pop(name)
        else:
            self._stopped[name] = m.output
            m.output = _Silent()
        return True

    def cycle(self, name: str, cycle_ms: float, tick: int) -> None:
        """The message every ``cycle_ms`` (whole ticks, at least one) from ``tick`` on."""
        m = self._by_name[name]
        every = cycle_ticks(cycle_ms, self._period_s)
        m.every_ticks = every
        m.schedule = Schedule(every, phase=tick)

    def fix(self, name: str, signal: str, value: float | None) -> None:
        """Fix ``signal`` of message ``name`` at ``value`` (physical), or give it back (None)."""
        m = self._by_name[name]
        if signal in m.names:
            index = m.names.index(signal)
            overrides = list(m.overrides or [None] * len(m.names))
            overrides[index] = value
            m.overrides = None if all(o is None for o in overrides) else overrides
            return
        original = self._bases.setdefault(name, m.base)
        layout = SignalLayout.of(m.message.get_signal_by_name(signal))
        if value is None:
            current = layout.raw(original.to_bytes(m.message.length, "little"))
        else:
            current = round((value - layout.offset) / layout.scale)
        m.rebase(layout.with_raw(m.base, m.message.length, current))
