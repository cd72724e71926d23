"""XBR in the brake controller (0x0B): the demanded acceleration, realised by a closed loop.

An XBR asks for an acceleration over the road, not for a brake pressure, so the brakes close a
loop on the truck's measured acceleration. Each tick they estimate what the truck would do
without their own braking (the measured acceleration plus the deceleration their last command
gave: the road's grade, the air, the engine's drag), and brake by the difference to the demand
(the feed-forward), plus a PI term on the remaining error, which absorbs what the estimate gets
wrong (the brakes' real effect per percent depends on the load and the gear's inertia).

How the braking is shared (SPN 2914 EBI mode): 00 the foundation brakes alone, 01 the endurance
brake (the engine retarder) alone, 10 the retarder first, up to what it can give now, and the
foundation brakes for the rest. How it combines with the driver's brake pedal (SPN 2916 control
mode): 01 adds the XBR's braking to the driver's, 10 brakes with the larger of the two, 00 takes
no part and releases the sender. Of several senders the highest XBR priority (SPN 2915) wins, the
first at equal priority. An XBR asking for more acceleration than the truck has brakes nothing:
XBR does not command the engine (that is TSC1's job). Urgency (SPN 4818) is not acted on.

The timeout rule: XBR comes every 20 ms while active (J1939-71 gives no timeout). A sender with
an active request (mode 01 or 10) that sends nothing for :data:`MISSED_PERIODS` periods of 20 ms
(in ticks by the project's one seconds-to-ticks rule, at least one tick) has lost its stream: its
request is dropped, DTC SPN 2920 FMI 9 (abnormal update rate) goes active until an XBR is
accepted again, and EBC5's XBR system state (SPN 2917) says "no external brake demand will be
accepted" (2) for :data:`HOLD_OFF_S`, during which XBR frames are refused (counted), so a
controller that dropped out re-establishes its stream deliberately. Frames whose counter or
checksum fail are refused by the node (it has the frame); a repeated counter is refused here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from ecu_sim.j1939.checksum import XBR_COUNTER_MODULUS, CounterWatch, Step
from ecu_sim.j1939.dm import Dtc
from ecu_sim.powertrain.engine_control import MISSED_PERIODS
from ecu_sim.runtime.ticks import ticks_in

#: XBR's period while active (J1939-71); :data:`MISSED_PERIODS` of them missed lose the stream
ACTIVE_PERIOD_S: Final = 0.02
#: how long EBC5 refuses external demands after a lost stream
HOLD_OFF_S: Final = 1.0
#: DTC of a lost XBR stream: SPN 2920 external acceleration demand, FMI 9 abnormal update rate
TIMEOUT_DTC: Final = Dtc(2920, 9)
#: the lowest acceleration SPN 2921 can carry (0.1 m/s^2 per bit, offset -12.5)
_LIMIT_FLOOR_MPS2: Final = -12.5


class XbrMode(enum.IntEnum):
    """SPN 2916 XBR control mode."""

    DISABLED = 0
    ADDITION = 1
    MAXIMUM = 2


class Ebi(enum.IntEnum):
    """SPN 2914 XBR EBI mode: which brakes may realise the demand."""

    FOUNDATION_ONLY = 0
    ENDURANCE_ONLY = 1
    INTEGRATED = 2


class SystemState(enum.IntEnum):
    """SPN 2917 XBR system state (EBC5)."""

    ANY_ACCEPTED = 0
    HIGHEST_PRIORITY_ONLY = 1
    NONE_ACCEPTED = 2
    NOT_AVAILABLE = 3


class ActiveMode(enum.IntEnum):
    """SPN 2918 XBR active control mode (EBC5)."""

    NO_DEMAND = 0
    DRIVER = 1
    ADDITION = 2
    MAXIMUM = 3


@dataclass(frozen=True, slots=True)
class XbrCommand:
    """One received XBR, decoded (its checksum already verified by the node)."""

    source: int
    accel_mps2: float
    ebi: Ebi = Ebi.INTEGRATED
    priority: int = 3
    mode: XbrMode = XbrMode.MAXIMUM
    counter: int | None = None


class XbrAdmission(enum.Enum):
    ACCEPTED = "accepted"
    REFUSED_STATE = "refused: EBC5 says no external brake demand is accepted"
    UNACCEPTED_SOURCE = "sender not accepted"
    REPEATED = "repeated counter: ignored"


class BrakeOutput(NamedTuple):
    """The brakes' tick: the demands for the model and what EBC1/EBC5 report."""

    foundation_pct: float  # the model's brake demand, 0..100 % of the foundation brakes' maximum
    retarder_selection_pct: float  # EBC1 SPN 973: 0..100 % of what the retarder gives now
    state: SystemState  # SPN 2917
    active: ActiveMode  # SPN 2918
    accel_limit_mps2: float  # SPN 2921: the lowest acceleration the brakes can realise now
    controller: int  # EBC1 SPN 1481: the XBR sender in control, or the brakes' own address
    dtcs: frozenset[Dtc]


@dataclass(frozen=True, slots=True)
class LoopGains:
    """The PI on the acceleration error, in percent of the foundation brakes per m/s^2."""

    kp_pct: float = 5.0
    ki_pct_per_s: float = 40.0


@dataclass(slots=True)
class _Stream:
    command: XbrCommand
    since: int
    last: int
    watch: CounterWatch = field(default_factory=lambda: CounterWatch(XBR_COUNTER_MODULUS))


class BrakeController:
    """The brakes' XBR handling: :meth:`admit` for each command, :meth:`step` each tick."""

    def __init__(self, period_s: float, max_decel_mps2: float, *, own_address: int = 0x0B,
                 accepted: frozenset[int] | None = None, gains: LoopGains | None = None) -> None:
        """``max_decel_mps2``: what the foundation brakes give at 100 % on a level road (positive)."""
        self.period_s = period_s
        self.max_decel = max_decel_mps2
        self.own_address = own_address
        self.accepted = accepted
        self.gains = gains or LoopGains()
        self.timeout_ticks = max(1, ticks_in(MISSED_PERIODS * ACTIVE_PERIOD_S, period_s))
        self.hold_off_ticks = max(1, ticks_in(HOLD_OFF_S, period_s))
        self._streams: dict[int, _Stream] = {}
        self._refuse_until = -1
        self._lost = False
        self._integral = 0.0
        self._last_decel = 0.0  # what the brakes' own command gave last tick (m/s^2, >= 0)
        self.refused = 0
        self.repeated = 0
        self.unaccepted = 0

    def admit(self, tick: int, command: XbrCommand) -> XbrAdmission:
        if self.accepted is not None and command.source not in self.accepted:
            self.unaccepted += 1
            return XbrAdmission.UNACCEPTED_SOURCE
        if tick < self._refuse_until:
            self.refused += 1
            return XbrAdmission.REFUSED_STATE
        if command.mode is XbrMode.DISABLED:
            self._streams.pop(command.source, None)
            return XbrAdmission.ACCEPTED
        stream = self._streams.get(command.source)
        if stream is None:
            stream = self._streams[command.source] = _Stream(command, tick, tick)
        if command.counter is not None and stream.watch.observe(command.counter) is Step.REPEATED:
            self.repeated += 1
            return XbrAdmission.REPEATED
        if command.priority != stream.command.priority:
            stream.since = tick
        stream.command, stream.last = command, tick
        self._lost = False
        return XbrAdmission.ACCEPTED

    def step(self, tick: int, accel_mps2: float, driver_brake_pct: float, dt_s: float,
             endurance_decel_mps2: float = 0.0) -> BrakeOutput:
        """The tick's brake demands from the truck's measured acceleration over the last tick,
        the driver's brake pedal and what the retarder could give now at 100 % (m/s^2, >= 0)."""
        for source, stream in list(self._streams.items()):
            if tick - stream.last > self.timeout_ticks:
                del self._streams[source]
                self._lost = True
                self._refuse_until = tick + self.hold_off_ticks
        driver = min(max(driver_brake_pct, 0.0), 100.0)
        free = accel_mps2 + self._last_decel  # what the truck would do without the brakes' own command
        winner = min(self._streams.values(), key=lambda s: (s.command.priority, s.since), default=None)
        state = SystemState.NONE_ACCEPTED if tick < self._refuse_until else SystemState.ANY_ACCEPTED
        dtcs = frozenset({TIMEOUT_DTC}) if self._lost else frozenset()
        limit = max(free - self.max_decel - endurance_decel_mps2, _LIMIT_FLOOR_MPS2)
        if winner is None:
            self._integral, self._last_decel = 0.0, driver * 0.01 * self.max_decel
            active = ActiveMode.DRIVER if driver > 0.0 else ActiveMode.NO_DEMAND
            return BrakeOutput(driver, 0.0, state, active, limit, self.own_address, dtcs)
        command = winner.command
        driver_decel = driver * 0.01 * self.max_decel
        # addition: the truck should do the XBR's demand less what the driver's pedal brakes
        target = command.accel_mps2 - (driver_decel if command.mode is XbrMode.ADDITION else 0.0)
        needed = self._loop(free, accel_mps2, target, dt_s, driver_decel)  # m/s^2 of braking, >= 0
        ebi = command.ebi
        endurance = 0.0 if ebi is Ebi.FOUNDATION_ONLY else min(needed, endurance_decel_mps2)
        foundation = 0.0 if ebi is Ebi.ENDURANCE_ONLY else needed - endurance
        total = min(max(foundation / self.max_decel * 100.0, driver), 100.0)
        active = ActiveMode.ADDITION if command.mode is XbrMode.ADDITION else ActiveMode.MAXIMUM
        selection = endurance / endurance_decel_mps2 * 100.0 if endurance_decel_mps2 > 0.0 else 0.0
        self._last_decel = total * 0.01 * self.max_decel + endurance
        return BrakeOutput(total, min(selection, 100.0), state, active, limit, command.source, dtcs)

    def _loop(self, free: float, measured: float, target: float, dt_s: float, floor: float) -> float:
        """The braking deceleration to command: feed-forward to the target plus a PI on the error.
        The integral holds while the loop does not decide the braking: released (the target above
        what the truck does unbraked) or below the driver's own braking (``floor``)."""
        g = self.gains
        error = measured - target  # > 0: not decelerating enough
        integral = self._integral + g.ki_pct_per_s * 0.01 * self.max_decel * error * dt_s
        integral = min(max(integral, -self.max_decel), self.max_decel)  # a stopped truck cannot wind it up
        needed = free - target + g.kp_pct * 0.01 * self.max_decel * error + integral
        if needed > 0.0 and needed >= floor:
            self._integral = integral
        return needed if needed > 0.0 else 0.0

    def counters_text(self) -> str:
        return f"xbr refused {self.refused} repeated {self.repeated} unaccepted {self.unaccepted}"
