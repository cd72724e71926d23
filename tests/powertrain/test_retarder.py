"""The engine retarder at 0x0F: its map, TSC1 to the retarder, the brakes' endurance share, ERC1."""

from __future__ import annotations

import pytest

from ecu_sim.powertrain.engine_control import Override, TorqueMode, Tsc1Command
from ecu_sim.powertrain.retarder import RETARDER_MAP, Retarder

TICK_S = 0.01
ACC = 0x2A


def braking(pct: float, source: int = ACC) -> Tsc1Command:
    return Tsc1Command(source, Override.TORQUE, 3, None, pct)


def test_the_reference_torque_is_the_peak_of_the_map() -> None:
    assert Retarder(TICK_S).reference_nm == max(t for _, t in RETARDER_MAP)


def test_the_map_gives_about_200_kw_at_rated_speed() -> None:
    power_kw = Retarder(TICK_S).available_nm(2400.0) * 2400.0 * 2.0 * 3.141592653589793 / 60.0 / 1000.0
    assert power_kw == pytest.approx(200.0, rel=0.05)


def test_the_retarder_gives_nothing_at_idle() -> None:
    assert Retarder(TICK_S).available_nm(700.0) == 0.0


def test_without_a_request_the_retarder_is_off() -> None:
    out = Retarder(TICK_S).step(0, 1800.0, TICK_S)
    assert (out.torque_nm, out.mode, out.controller) == (0.0, TorqueMode.NO_REQUEST, 0x0F)


def test_tsc1_to_the_retarder_brakes_with_the_requested_percent_of_the_reference() -> None:
    retarder = Retarder(TICK_S)
    retarder.admit(0, braking(-50.0))
    out = retarder.step(0, 2400.0, TICK_S)
    assert out.torque_nm == pytest.approx(-0.5 * retarder.reference_nm)
    assert out.actual_pct == pytest.approx(-50.0)
    assert (out.intended_pct, out.controller) == (-50.0, ACC)


def test_the_retarder_brakes_within_its_map() -> None:
    retarder = Retarder(TICK_S)
    retarder.admit(0, braking(-100.0))
    out = retarder.step(0, 1000.0, TICK_S)
    assert out.torque_nm == -retarder.available_nm(1000.0)
    assert out.actual_pct == out.max_available_pct > out.intended_pct


def test_a_positive_torque_request_does_not_drive_the_engine() -> None:
    retarder = Retarder(TICK_S)
    retarder.admit(0, braking(30.0))
    assert retarder.step(0, 1800.0, TICK_S).torque_nm == 0.0


def test_the_brakes_endurance_share_is_a_share_of_what_the_map_gives_now() -> None:
    retarder = Retarder(TICK_S)
    out = retarder.step(0, 1600.0, TICK_S, selection_pct=50.0, brakes_address=0x0B)
    assert out.torque_nm == pytest.approx(-0.5 * retarder.available_nm(1600.0))
    assert (out.mode, out.controller) == (TorqueMode.BRAKING_SYSTEM, 0x0B)


def test_the_stronger_of_tsc1_and_the_brakes_share_brakes() -> None:
    retarder = Retarder(TICK_S)
    retarder.admit(0, braking(-20.0))
    out = retarder.step(0, 2400.0, TICK_S, selection_pct=80.0, brakes_address=0x0B)
    assert out.torque_nm == pytest.approx(-0.8 * retarder.available_nm(2400.0))


def test_tsc1_to_the_retarder_times_out_after_five_periods_of_50_ms() -> None:
    retarder = Retarder(TICK_S)
    retarder.admit(0, braking(-50.0))  # the standard rate to a retarder: 50 ms
    assert retarder.step(25, 2000.0, TICK_S).torque_nm < 0.0
    lost = retarder.step(26, 2000.0, TICK_S)
    assert lost.torque_nm == 0.0 and lost.dtcs
