"""XBR in the brakes: the closed loop on the class6 truck at 10 ms ticks, modes, timeouts, EBC5.

The pure brake controller and retarder drive the pure class6 model, as the powertrain network
wires them each tick: the truck's acceleration over the last tick in, the brake demand and the
retarder's torque out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ecu_sim.powertrain.brake_control import (
    TIMEOUT_DTC,
    ActiveMode,
    BrakeController,
    BrakeOutput,
    Ebi,
    SystemState,
    XbrAdmission,
    XbrCommand,
    XbrMode,
)
from ecu_sim.powertrain.retarder import Retarder
from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from ecu_sim.vehicle.engine import EngineCommand

TICK_S = 0.01
ACC = 0x2A
PARAMS = Class6Params()
MAX_DECEL = PARAMS.max_brake_decel_g * PARAMS.gravity_mps2


@dataclass
class Rig:
    """The truck at 80 km/h on the flat, the brakes and the retarder, ticked together."""

    model: Class6Model = field(default_factory=lambda: Class6Model(PARAMS))
    brakes: BrakeController = field(default_factory=lambda: BrakeController(TICK_S, MAX_DECEL))
    retarder: Retarder = field(default_factory=lambda: Retarder(TICK_S))
    state: Class6State | None = None
    tick: int = 0
    accels: list[float] = field(default_factory=list)
    outputs: list[BrakeOutput] = field(default_factory=list)

    def run(self, seconds: float, xbr: XbrCommand | None, driver_brake: float = 0.0) -> None:
        state = self.state or self.model.initial(80.0)
        for _ in range(round(seconds / TICK_S)):
            if xbr is not None:
                self.brakes.admit(self.tick, XbrCommand(xbr.source, xbr.accel_mps2, xbr.ebi, xbr.priority,
                                                          xbr.mode, self.tick % 16))
            per_nm = self.model.retarder_decel_per_nm(state)
            endurance = self.retarder.available_nm(state.engine_rpm) * per_nm
            out = self.brakes.step(self.tick, state.accel_mps2, driver_brake, TICK_S, endurance)
            retard = self.retarder.step(self.tick, state.engine_rpm, TICK_S, out.retarder_selection_pct, 0x0B)
            state = self.model.step(state, 0.0, out.foundation_pct, 0.0, TICK_S,
                                    EngineCommand(retarder_nm=retard.torque_nm))
            self.accels.append(state.accel_mps2)
            self.outputs.append(out)
            self.tick += 1
        self.state = state


def xbr(accel: float, ebi: Ebi = Ebi.FOUNDATION_ONLY, mode: XbrMode = XbrMode.MAXIMUM,
        priority: int = 2) -> XbrCommand:
    return XbrCommand(ACC, accel, ebi, priority, mode)


@pytest.mark.parametrize("ebi", [Ebi.FOUNDATION_ONLY, Ebi.INTEGRATED])
def test_xbr_minus_2_on_the_flat_is_reached_within_a_second(ebi: Ebi) -> None:
    rig = Rig()
    rig.run(3.0, xbr(-2.0, ebi))
    after_a_second = rig.accels[100:]
    assert all(abs(a + 2.0) <= 0.2 for a in after_a_second), (min(after_a_second), max(after_a_second))


def test_with_integration_allowed_the_retarder_takes_its_share() -> None:
    rig = Rig()
    rig.run(1.0, xbr(-1.0, Ebi.INTEGRATED))
    assert rig.outputs[-1].retarder_selection_pct > 0.0
    assert rig.state is not None and rig.state.retarder_nm < 0.0


def test_endurance_only_leaves_the_foundation_brakes_released() -> None:
    rig = Rig()
    rig.run(1.0, xbr(-0.8, Ebi.ENDURANCE_ONLY))
    assert rig.outputs[-1].foundation_pct == 0.0 and rig.outputs[-1].retarder_selection_pct > 0.0


def test_a_demand_above_what_the_truck_does_unbraked_brakes_nothing() -> None:
    rig = Rig()
    rig.run(0.5, xbr(0.5))
    assert rig.outputs[-1].foundation_pct == 0.0


def test_addition_mode_adds_the_xbr_braking_to_the_drivers() -> None:
    alone, added = Rig(), Rig()
    alone.run(1.0, xbr(-1.5, mode=XbrMode.ADDITION))
    added.run(1.0, xbr(-1.5, mode=XbrMode.ADDITION), driver_brake=20.0)
    driver_decel = 0.20 * MAX_DECEL
    assert added.outputs[-1].active is ActiveMode.ADDITION
    assert added.outputs[-1].foundation_pct > alone.outputs[-1].foundation_pct + 19.0
    assert sum(added.accels[50:]) / 50 == pytest.approx(-1.5 - driver_decel, abs=0.2)


def test_maximum_mode_brakes_with_the_larger_of_driver_and_xbr() -> None:
    rig = Rig()
    rig.run(1.0, xbr(-1.0, mode=XbrMode.MAXIMUM), driver_brake=60.0)
    assert rig.outputs[-1].foundation_pct == 60.0 and rig.outputs[-1].active is ActiveMode.MAXIMUM


def test_without_xbr_the_drivers_pedal_brakes() -> None:
    rig = Rig()
    rig.run(0.2, None, driver_brake=30.0)
    out = rig.outputs[-1]
    assert (out.foundation_pct, out.active, out.controller) == (30.0, ActiveMode.DRIVER, 0x0B)


def test_the_xbr_sender_is_named_as_the_controlling_device() -> None:
    rig = Rig()
    rig.run(0.2, xbr(-1.0))
    assert rig.outputs[-1].controller == ACC


def test_override_disabled_releases_the_brakes() -> None:
    rig = Rig()
    rig.run(0.5, xbr(-2.0))
    rig.run(0.2, XbrCommand(ACC, 0.0, mode=XbrMode.DISABLED))
    assert rig.outputs[-1].foundation_pct == 0.0 and not rig.outputs[-1].dtcs


def test_the_higher_priority_sender_wins() -> None:
    brakes = BrakeController(TICK_S, MAX_DECEL)
    brakes.admit(0, XbrCommand(ACC, -1.0, Ebi.FOUNDATION_ONLY, 2))
    brakes.admit(0, XbrCommand(0x27, -3.0, Ebi.FOUNDATION_ONLY, 0))
    assert brakes.step(0, 0.0, 0.0, TICK_S).controller == 0x27


def test_a_repeated_counter_is_refused_and_counted() -> None:
    brakes = BrakeController(TICK_S, MAX_DECEL)
    brakes.admit(0, XbrCommand(ACC, -1.0, counter=4))
    assert brakes.admit(1, XbrCommand(ACC, -3.0, counter=4)) is XbrAdmission.REPEATED
    assert brakes.repeated == 1


def test_a_lost_stream_releases_the_brakes_raises_the_dtc_and_refuses_for_a_while() -> None:
    rig = Rig()
    rig.run(0.5, xbr(-2.0))
    rig.run(0.11, None)  # five periods of 20 ms: 10 ticks; lost on the 11th
    lost = rig.outputs[-1]
    assert (lost.foundation_pct, lost.state) == (0.0, SystemState.NONE_ACCEPTED)
    assert lost.dtcs == frozenset({TIMEOUT_DTC})
    assert rig.brakes.admit(rig.tick, XbrCommand(ACC, -2.0)) is XbrAdmission.REFUSED_STATE


def test_the_stream_survives_five_missed_periods() -> None:
    rig = Rig()
    rig.run(0.5, xbr(-2.0))
    rig.run(0.10, None)
    assert rig.outputs[-1].foundation_pct > 0.0 and not rig.outputs[-1].dtcs


def test_after_the_hold_off_a_new_stream_is_accepted_and_the_dtc_clears() -> None:
    rig = Rig()
    rig.run(0.5, xbr(-2.0))
    rig.run(1.2, None)
    assert rig.outputs[-1].state is SystemState.ANY_ACCEPTED and rig.outputs[-1].dtcs
    rig.run(0.1, xbr(-1.0))
    assert rig.outputs[-1].foundation_pct > 0.0 and not rig.outputs[-1].dtcs


def test_the_acceleration_limit_is_the_unbraked_acceleration_less_the_brakes() -> None:
    rig = Rig()
    rig.run(0.3, None)
    out = rig.outputs[-1]
    assert out.accel_limit_mps2 < -MAX_DECEL and out.accel_limit_mps2 >= -12.5
