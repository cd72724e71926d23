"""A node of a longer period in a loop of a shorter one: it runs on every k-th base tick only.

``simulate --network powertrain`` runs the ECU at a 10 ms base tick, and the CCM (or any node
of the DBC's 100 ms) shares that one virtual-time loop. Wrapped here, the CCM drains and ticks
on base ticks 0, k, 2k, ... with the deadline of that base tick, so it sees the bus and steps
exactly as in a loop of its own period whose ticks fall on the same instants; its own tick
count, timeouts and rates stay in its own period. Everything stays on tick counts, so a run is
as repeatable as with one period.
"""

from __future__ import annotations

from ecu_sim.runtime.loop import Node
from ecu_sim.runtime.ticks import is_whole, ticks_in


def every_base_ticks(period_s: float, base_period_s: float) -> int:
    """How many base ticks one period holds; ValueError unless it is a whole number of them."""
    if not is_whole(period_s, base_period_s) or period_s < base_period_s:
        raise ValueError(f"a period of {period_s:g} s is not a whole number of the {base_period_s:g} s "
                         "base tick")
    return ticks_in(period_s, base_period_s)


class EveryKTicks:
    """``node`` run on every ``every``-th tick of the loop it is in (drain and tick alike)."""

    def __init__(self, node: Node, every: int) -> None:
        self.node = node
        self.every = every
        self._k = 0

    def poll(self, timeout_s: float) -> None:
        self.node.poll(timeout_s)

    def drain(self) -> None:
        if self._k % self.every == 0:
            self.node.drain()

    def prepare(self) -> None:
        if self._k % self.every == 0:
            self.node.prepare()

    def tick(self, deadline: float, transmit: bool) -> None:
        if self._k % self.every == 0:
            self.node.tick(deadline, transmit)
        self._k += 1
