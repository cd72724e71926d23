"""The one schedule of everything periodic a node sends, and its one rule for skipped and late ticks.

A periodic frame goes on a grid of ticks ``phase + k * every``. The schedule is asked only at the
ticks that transmit: an overdue tick of a real-time loop sends nothing, and a sender that may not
send yet (its address claim does not stand) does not ask either. The rule:

- a send that fell due at a tick that was not asked goes once, at the next tick asked: a loaded
  loop delays it by the ticks it skipped but never drops it, and never sends it twice;
- the one after it falls on the grid again, at the first grid tick after the send: one late
  send does not move the instants of the sends that follow;
- a restart makes the schedule due at a given tick and moves the grid to the send that answers
  it, so the next falls ``every`` ticks after that send, however late it went.

So with every tick asked (virtual time) a schedule whose grid starts at the run's first tick
sends exactly when ``tick % every == 0``, which a simulation, a replay and a recording rely on. The tick
count comes from :func:`ecu_sim.runtime.ticks.ticks_in`; the schedule only counts ticks.
"""

from __future__ import annotations


class Schedule:
    """When a periodic send goes out; asking at a tick at or past the due one commits the send."""

    __slots__ = ("_next", "_phase", "_restarted", "every")

    def __init__(self, every: int, phase: int = 0) -> None:
        if every < 1:
            raise ValueError(f"a schedule sends every whole number of ticks, at least one; got {every}")
        self.every = every
        self._phase = phase
        self._next = phase
        self._restarted = False

    @property
    def next_due(self) -> int:
        """The tick from which the schedule is due: a node that has nothing else to do can sleep
        its ticks until then, since no send is owed before it."""
        return self._next

    def due(self, tick: int) -> bool:
        """Whether to send at ``tick``, a tick the sender transmits at (see the module's rule)."""
        if tick < self._next:
            return False
        if self._restarted:
            self._restarted = False
            self._phase = tick
        every = self.every
        self._next = tick + every - (tick - self._phase) % every
        return True

    def restart(self, tick: int) -> None:
        """Make the schedule due at ``tick`` and start its grid at the send that answers it: what
        J1939-73 asks of DM1, which goes at once when a DTC changes and counts its interval from
        the DM1 last sent."""
        self._next = tick
        self._restarted = True
