"""How the CCM treats a driver on the bus, as a real cruise control does: override, brake, resume.

Real ECU, CCM and driver nodes exchange real frames in virtual time (tests/helpers/driverrig.py); the ECU
listens to the CCM alone (``--app-source``), which passes the driver's demand on. Cruise starts on
at 90 km/h on a flat road and is given a minute to settle before the driver acts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ecu_sim.pedals.reading import PedalReading
from tests.helpers.driverrig import Rig

SET_KPH = 90.0


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    rig = Rig(tmp_path, initial_speed_kph=SET_KPH, set_speed_kph=SET_KPH)
    rig.run(60.0)
    yield rig
    rig.close()


def brake_and_release(rig: Rig) -> None:
    rig.script.now = PedalReading(brake_pct=40.0)
    rig.run(1.0)
    rig.script.now = PedalReading()
    rig.run(1.0)


def test_cruise_holds_the_set_speed_while_the_driver_does_nothing(rig: Rig) -> None:
    assert rig.ccm.cruise_active and not rig.ccm.override
    assert rig.speed == pytest.approx(SET_KPH, abs=0.5)


def test_override_a_pedal_above_the_cruise_demand_wins(rig: Rig) -> None:
    cruise_demand = rig.ccm.app_pct
    rig.script.now = PedalReading(app_pct=80.0)
    rig.run(10.0)

    assert cruise_demand < 80.0
    assert rig.ccm.override and rig.ccm.cruise_active
    assert rig.ccm.app_pct == pytest.approx(80.0)
    assert rig.ecu.app_pct == pytest.approx(80.0), "the ECU gets the driver's demand through the CCM"
    assert rig.speed > SET_KPH + 2.0


def test_override_a_pedal_below_the_cruise_demand_changes_nothing(rig: Rig, tmp_path: Path) -> None:
    untouched = Rig(tmp_path, initial_speed_kph=SET_KPH, set_speed_kph=SET_KPH)
    untouched.run(60.0)
    rig.script.now = PedalReading(app_pct=10.0)
    rig.run(20.0)
    untouched.run(20.0)
    untouched.close()

    assert not rig.ccm.override and rig.ccm.app_pct > 10.0
    assert rig.speed == untouched.speed


def test_override_freezes_the_integral_so_cruise_takes_over_where_it_left_off(rig: Rig) -> None:
    rig.script.now = PedalReading(app_pct=80.0)
    rig.loop.run(1)  # the pedal's frame reaches the CCM at the next tick
    integral = rig.ccm.pi_state.integral
    rig.run(10.0)
    assert rig.ccm.override and rig.ccm.pi_state.integral == integral

    rig.script.now = PedalReading()
    rig.run(60.0)
    assert rig.ccm.cruise_active and not rig.ccm.override
    assert rig.speed == pytest.approx(SET_KPH, abs=0.5)


def test_brake_turns_cruise_off_and_it_stays_off_when_the_brake_is_released(rig: Rig) -> None:
    brake_and_release(rig)
    rig.run(30.0)

    assert not rig.ccm.engaged and not rig.ccm.cruise_active
    assert rig.ccm.app_pct == 0.0, "no pedal, no cruise: nothing to send but 0 %"
    assert rig.speed < SET_KPH - 2.0, "the truck coasts"


def test_brake_cruise_off_passes_the_drivers_pedal_through(rig: Rig) -> None:
    brake_and_release(rig)
    rig.script.now = PedalReading(app_pct=30.0)
    rig.run(2.0)

    assert not rig.ccm.cruise_active
    assert rig.ccm.app_pct == pytest.approx(30.0) and rig.ecu.app_pct == pytest.approx(30.0)


def test_cancel_command_turns_cruise_off(rig: Rig) -> None:
    rig.script.tap("cancel")
    rig.run(5.0)

    assert not rig.ccm.engaged and rig.ccm.app_pct == 0.0


def test_resume_reengages_at_the_same_set_speed(rig: Rig) -> None:
    brake_and_release(rig)
    rig.run(20.0)
    slowed = rig.speed
    rig.script.tap("resume")
    rig.run(90.0)

    assert slowed < SET_KPH - 2.0
    assert rig.ccm.engaged and rig.ccm.cruise_active
    assert rig.speed == pytest.approx(SET_KPH, abs=0.5)


def test_resume_while_braking_does_not_reengage(rig: Rig) -> None:
    rig.script.now = PedalReading(brake_pct=40.0)
    rig.run(1.0)
    rig.script.tap("resume")
    rig.run(1.0)
    rig.script.now = PedalReading()
    rig.run(5.0)

    assert not rig.ccm.engaged


def test_without_a_ccm_the_ecu_takes_the_drivers_pedal(tmp_path: Path) -> None:
    rig = Rig(tmp_path, with_ccm=False, initial_speed_kph=50.0)
    rig.script.now = PedalReading(app_pct=60.0)
    rig.run(20.0)
    rig.close()

    assert rig.ecu.app_pct == pytest.approx(60.0) and rig.speed > 60.0
