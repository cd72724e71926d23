"""Sample and hold, counted in ticks rather than seconds.

Time is the tick index, never seconds, so real and virtual time follow the same rule and a
replay only needs to know which tick a frame fell before.
"""

from __future__ import annotations


class HeldInput:
    """A value taken before tick ``k`` is used by ticks ``k .. k + hold_ticks - 1``.

    ``received_at`` is that tick and ``source`` the sender's address (None where the message has
    none).
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

    def clear(self) -> None:
        """The sender says it has no value: missing from now on, not only after the hold."""
        self.value = None

    def get(self, tick: int) -> float | None:
        """The value for ``tick``, or None when none was taken within the last ``hold_ticks`` ticks."""
        if self.value is None or tick - self.received_at >= self.hold_ticks:
            return None
        return self.value
