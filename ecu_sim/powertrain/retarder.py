"""The engine retarder (compression release brake) at 0x0F: its torque map, its commands, ERC1.

The map is the torque the brake absorbs at the crank over engine speed. It is sized to the
figure Jacobs Vehicle Systems gives for compression release brakes on medium and heavy engines
(retarding power of about 200 kW, "Introduction to engine braking"), reached at the rated speed
of the class6 engine, where such a brake works best (drivers' manuals ask for 1800 rpm up to the
rated speed); it fades to nothing at idle, where the brake is switched off so the engine keeps
running. The map's peak is the retarder's reference torque (RC, SPN 556), the 100 % of every
retarder percent torque.

Two things ask the retarder for torque: a TSC1 to 0x0F (torque control, negative percent of the
reference torque; arbitrated by the same rules as the engine's, :mod:`ecu_sim.powertrain.engine_control`)
and the brakes' endurance brake share of an XBR (a selection in percent of what the map gives
now, EBC1 SPN 973). The retarder brakes with the stronger of the two, within its map, and only
while the driveline is locked (the model applies it only then). A TSC1 limit or speed command
to the retarder is not acted on: only torque control is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from ecu_sim.j1939.dm import Dtc
from ecu_sim.powertrain.engine_control import TorqueMode, Tsc1Admission, Tsc1Arbiter, Tsc1Command
from ecu_sim.vehicle.engine import TorqueCurve

#: (rpm, N m absorbed at the crank): about 200 kW at 2400 rpm, nothing at idle
RETARDER_MAP: Final = ((700.0, 0.0), (1000.0, 350.0), (1600.0, 620.0), (2400.0, 800.0), (2600.0, 800.0))
#: J1939-71: a TSC1 to a retarder comes every 50 ms at the standard rate
RETARDER_TSC1_PERIOD_S: Final = 0.05


class RetarderOutput(NamedTuple):
    """The retarder's tick: the torque for the model and what ERC1 reports."""

    torque_nm: float  # at the crank, negative (EngineCommand.retarder_nm)
    actual_pct: float  # SPN 520, of the reference torque
    intended_pct: float  # SPN 1085: what was asked, before the map's limit
    max_available_pct: float  # SPN 1717
    mode: TorqueMode  # SPN 900
    controller: int  # SPN 1480
    dtcs: frozenset[Dtc]


class Retarder:
    """The compression brake: call :meth:`receive` with each TSC1 to 0x0F, :meth:`step` each tick."""

    def __init__(self, period_s: float, *, own_address: int = 0x0F, accepted: frozenset[int] | None = None,
                 points: Sequence[tuple[float, float]] = RETARDER_MAP) -> None:
        self.points = tuple(points)
        self._map = TorqueCurve(self.points)
        self.reference_nm = max(t for _, t in self.points)
        self.own_address = own_address
        self.arbiter = Tsc1Arbiter(period_s, own_address=own_address, accepted=accepted,
                                   standard_period_s=RETARDER_TSC1_PERIOD_S)

    def available_nm(self, rpm: float) -> float:
        """What the map absorbs at ``rpm`` (positive), linear between its points, flat beyond."""
        return self._map.at(rpm)

    def admit(self, tick: int, command: Tsc1Command) -> Tsc1Admission:
        """A TSC1 to the retarder (its rate field's standard is 50 ms), and the arbiter's verdict."""
        return self.arbiter.admit(tick, command)

    def step(self, tick: int, engine_rpm: float, dt_s: float, selection_pct: float = 0.0,
             brakes_address: int | None = None) -> RetarderOutput:
        """The tick's torque at ``engine_rpm``; ``selection_pct`` is the brakes' endurance share
        (0..100 % of what the map gives now), ``brakes_address`` who asked for it."""
        request = self.arbiter.arbitrate(tick, engine_rpm, dt_s, driver_mode=TorqueMode.NO_REQUEST)
        available = self.available_nm(engine_rpm)
        scale = 100.0 / self.reference_nm
        tsc1_pct = request.torque_pct if request.torque_pct is not None and request.torque_pct < 0.0 else 0.0
        share = min(max(selection_pct, 0.0), 100.0)
        xbr_pct = -share * 0.01 * available * scale
        if xbr_pct < tsc1_pct:
            intended, mode = xbr_pct, TorqueMode.BRAKING_SYSTEM
            controller = brakes_address if brakes_address is not None else self.own_address
        elif tsc1_pct < 0.0:
            intended, mode, controller = tsc1_pct, request.mode, request.controller
        else:
            intended, mode, controller = 0.0, TorqueMode.NO_REQUEST, self.own_address
        torque = max(intended / scale, -available)
        return RetarderOutput(torque, torque * scale, intended, -available * scale, mode, controller,
                              request.dtcs)

