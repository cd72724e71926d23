"""What the transmission obeys: TC1's requested gear, from a controller that is not the transmission.

A controller asks the transmission for a gear with TC1 (PGN 256) as it asks the engine for torque
with TSC1; a predictive cruise asks for neutral to roll (eco-roll). This transmission takes one
request, neutral (SPN 525 requested gear 0), and leaves every other value, "not available" (FFh)
included, to its own shift schedule: a request for a forward or reverse gear is refused and
counted, since the schedule alone chooses the driving gears.

Arbitration with the shift schedule: while a neutral request stands it overrides the schedule; the
schedule has the gears again when the sender asks for anything else or falls silent. Between
senders, the first whose neutral request stands keeps control until it lets go; another's neutral
request meanwhile is refused.

The timeout rule, as for TSC1 (ecu_sim.powertrain.engine_control): a sender loses control when no
TC1 of it arrived for :data:`MISSED_PERIODS` of TC1's standard period (:data:`TC1_PERIOD_S`),
counted in ticks by the project's one seconds-to-ticks rule; the schedule then engages a gear (the
model's synchronised engagement) and DTC SPN 525 FMI 9 (abnormal update rate) is active in the
transmission's DM1 until that sender sends again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecu_sim.j1939.dm import Dtc
from ecu_sim.powertrain.engine_control import MISSED_PERIODS
from ecu_sim.runtime.ticks import ticks_in

#: TC1's standard period, s (J1939-71: 50 ms)
TC1_PERIOD_S: Final = 0.05
#: SPN 525 (transmission requested gear), FMI 9 (abnormal update rate)
TIMEOUT_DTC: Final = Dtc(525, 9)
_NO_DTCS: Final[frozenset[Dtc]] = frozenset()


@dataclass(frozen=True, slots=True)
class Tc1Request:
    """A checked TC1: its sender and requested gear (0 neutral; None: not available, no request)."""

    source: int
    gear: float | None


@dataclass(frozen=True, slots=True)
class GearOutput:
    """The transmission's tick: whether it is held in neutral, by whom, and its DTCs."""

    neutral: bool
    controller: int | None
    dtcs: frozenset[Dtc]


class GearRequests:
    """TC1's requests to one transmission, arbitrated against its shift schedule (see the module)."""

    def __init__(self, period_s: float, missed_periods: int = MISSED_PERIODS) -> None:
        self.timeout_ticks = max(1, ticks_in(missed_periods * TC1_PERIOD_S, period_s))
        self._holder: int | None = None
        self._last = -1
        self._lost: int | None = None
        self.refused = 0

    def admit(self, tick: int, request: Tc1Request) -> bool:
        """Take one TC1 heard in ``tick``; False when it is refused (a gear other than neutral, or
        neutral while another sender holds the transmission)."""
        if request.source == self._lost:
            self._lost = None  # it sends again: its DTC goes inactive
        if request.gear is not None and request.gear != 0.0:
            self.refused += 1
            return False
        if self._holder is not None and self._holder != request.source:
            if request.gear is None:
                return True  # another sender's "no request" asks nothing
            self.refused += 1
            return False
        self._holder = request.source if request.gear == 0.0 else None
        self._last = tick
        return True

    def step(self, tick: int) -> GearOutput:
        """This tick's arbitration: neutral while its holder's request stands."""
        if self._holder is not None and tick - self._last > self.timeout_ticks:
            self._lost, self._holder = self._holder, None
        dtcs = _NO_DTCS if self._lost is None else frozenset({TIMEOUT_DTC})
        return GearOutput(self._holder is not None, self._holder, dtcs)
