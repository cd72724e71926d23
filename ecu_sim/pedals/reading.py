"""What the driver does with the pedals and buttons, as numbers the driver node sends: pedal, brake, buttons.

A source turns a device into :class:`PedalReading` when the node asks, once a tick, without waiting:
the device's I/O stays at this edge, the node needs no thread, and a test gives the node a
scripted source and runs it in virtual time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class PedalReading:
    """The pedals and buttons at one tick; a button is True while held and at the tick after a short tap."""

    app_pct: float = 0.0
    brake_pct: float = 0.0
    resume: bool = False
    cancel: bool = False


class PedalSource(Protocol):
    """A device the driver node reads once a tick."""

    def read(self) -> PedalReading:
        """The pedals and buttons now; never blocks, so a silent device cannot hold up the tick."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Raw axis values of a released and of a fully pressed pedal; many pedals count downwards."""

    released: int
    pressed: int

    def percent(self, raw: int) -> float:
        """Pedal travel in percent, clamped: a worn pedal past its calibrated end still reads 0 or 100."""
        span = self.pressed - self.released
        if span == 0:
            return 0.0
        return min(100.0, max(0.0, 100.0 * (raw - self.released) / span))
