"""The engine's TSC1 arbitration (J1939-71): override modes, priorities, limits, timeouts, counters.

Ticks are 10 ms, the powertrain network's base tick; torques are indicated percent of the
reference torque.
"""

from __future__ import annotations

import pytest

from ecu_sim.powertrain.engine_control import (
    TIMEOUT_DTC,
    EngineRequest,
    Override,
    TorqueMode,
    Tsc1Admission,
    Tsc1Arbiter,
    Tsc1Command,
)
from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from ecu_sim.vehicle.engine import EngineCommand

TICK_S = 0.01
ACC, TCM, BRAKES = 0x2A, 0x03, 0x0B


def torque(source: int, pct: float, priority: int = 3, counter: int | None = None, purpose: int = 31,
           rate_code: int = 7) -> Tsc1Command:
    return Tsc1Command(source, Override.TORQUE, priority, None, pct, rate_code, purpose, counter)


def limit(source: int, *, pct: float | None = None, rpm: float | None = None,
          priority: int = 3) -> Tsc1Command:
    return Tsc1Command(source, Override.LIMIT, priority, rpm, pct)


def release(source: int) -> Tsc1Command:
    return Tsc1Command(source, Override.DISABLED, 3)


def decide(arbiter: Tsc1Arbiter, tick: int = 0, rpm: float = 1200.0) -> EngineRequest:
    return arbiter.arbitrate(tick, rpm, TICK_S)


def test_without_tsc1_the_driver_drives_and_the_engine_controls_itself() -> None:
    request = decide(Tsc1Arbiter(TICK_S))
    assert request == EngineRequest(None, None, TorqueMode.PEDAL, 0x00, frozenset())


def test_torque_control_replaces_the_drivers_demand_and_names_the_sender() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))
    request = decide(arbiter)
    assert (request.torque_pct, request.controller, request.mode) == (0.0, ACC, TorqueMode.OTHER)


def test_the_cruise_purpose_reports_cruise_control_as_torque_mode() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 30.0, purpose=1))
    assert decide(arbiter).mode is TorqueMode.CRUISE


def test_the_transmission_in_control_reports_transmission_control() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(TCM, 10.0, priority=1))
    assert decide(arbiter).mode is TorqueMode.TRANSMISSION


def test_speed_control_drives_the_engine_towards_the_requested_speed() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, Tsc1Command(ACC, Override.SPEED, 3, 1500.0, None))
    below, above = decide(arbiter, rpm=1300.0), decide(arbiter, rpm=1700.0)
    assert below.torque_pct is not None and below.torque_pct > 50.0
    assert above.torque_pct == 0.0


def test_a_torque_limit_alone_caps_the_drivers_demand() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(ACC, pct=20.0))  # mode 11 with speed FAFFh
    request = decide(arbiter)
    assert (request.torque_pct, request.limit_pct, request.mode) == (None, 20.0, TorqueMode.TORQUE_LIMITING)
    assert request.controller == ACC


def test_a_speed_limit_alone_takes_the_torque_away_above_the_limit() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(ACC, rpm=1800.0))  # mode 11 with torque FAh
    assert decide(arbiter, rpm=1900.0).limit_pct == 0.0
    under = decide(arbiter, rpm=1750.0).limit_pct
    assert under is not None and 0.0 < under <= 125.0


def test_a_torque_limit_with_the_speed_at_faffh_limits_the_torque_only() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(ACC, pct=30.0, rpm=8031.875))
    assert decide(arbiter, rpm=2500.0).limit_pct == 30.0


def test_a_speed_limit_with_the_torque_at_fah_limits_the_speed_only() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(ACC, pct=125.0, rpm=1500.0))
    assert decide(arbiter, rpm=1000.0).limit_pct is None
    assert decide(arbiter, rpm=1600.0).limit_pct == 0.0


def test_a_limit_at_the_top_of_both_ranges_limits_nothing() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(ACC, pct=125.0, rpm=8031.875))
    request = decide(arbiter)
    assert (request.limit_pct, request.mode, request.controller) == (None, TorqueMode.PEDAL, 0x00)


def test_override_disabled_releases_the_senders_control() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))
    arbiter.admit(1, release(ACC))
    assert decide(arbiter, 1).torque_pct is None


def test_override_disabled_takes_no_part_in_the_arbitration() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, Tsc1Command(TCM, Override.DISABLED, 0, None, 0.0))
    arbiter.admit(0, torque(ACC, 40.0, priority=3))
    assert (decide(arbiter).controller, decide(arbiter).torque_pct) == (ACC, 40.0)


def test_the_highest_priority_control_wins() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 40.0, priority=3))
    arbiter.admit(1, torque(TCM, 10.0, priority=1))
    assert decide(arbiter, 1).controller == TCM


def test_at_equal_priority_the_first_sender_keeps_control() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(TCM, 10.0, priority=2))
    arbiter.admit(1, torque(ACC, 40.0, priority=2))
    arbiter.admit(1, torque(TCM, 12.0, priority=2))
    assert (decide(arbiter, 1).controller, decide(arbiter, 1).torque_pct) == (TCM, 12.0)


def test_at_equal_priority_a_control_beats_a_limit() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 60.0, priority=2))
    arbiter.admit(0, limit(TCM, pct=10.0, priority=2))
    request = decide(arbiter)
    assert (request.torque_pct, request.limit_pct) == (60.0, None)


def test_a_limit_of_higher_priority_caps_the_controlling_command() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 60.0, priority=3))
    arbiter.admit(0, limit(BRAKES, pct=10.0, priority=0))
    request = decide(arbiter)
    assert (request.torque_pct, request.limit_pct, request.controller) == (60.0, 10.0, ACC)
    assert request.mode is TorqueMode.TORQUE_LIMITING


def test_of_several_torque_limits_the_lowest_wins() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, limit(TCM, pct=50.0, priority=1))
    arbiter.admit(0, limit(BRAKES, pct=15.0, priority=3))
    arbiter.admit(0, limit(ACC, pct=30.0, priority=0))
    request = decide(arbiter)
    assert (request.limit_pct, request.controller) == (15.0, BRAKES)


def test_a_sender_outside_tsc1_sources_is_refused_and_counted() -> None:
    arbiter = Tsc1Arbiter(TICK_S, accepted=frozenset({TCM}))
    assert arbiter.admit(0, torque(ACC, 0.0)) is Tsc1Admission.UNACCEPTED_SOURCE
    assert decide(arbiter).torque_pct is None and arbiter.unaccepted == 1


def test_a_silent_sender_keeps_control_for_five_declared_periods() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))  # the standard rate: 10 ms
    assert decide(arbiter, 5).controller == ACC and not decide(arbiter, 5).dtcs


def test_a_silent_sender_loses_control_after_five_declared_periods_with_a_dtc() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))
    request = decide(arbiter, 6)
    assert (request.torque_pct, request.controller, request.dtcs) == (None, 0x00, frozenset({TIMEOUT_DTC}))


def test_the_timeout_follows_the_declared_rate() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0, rate_code=6))  # 20 ms: lost after 100 ms
    assert decide(arbiter, 10).controller == ACC
    assert decide(arbiter, 11).controller == 0x00


def test_the_timeout_is_at_least_one_tick_at_a_slow_loop() -> None:
    arbiter = Tsc1Arbiter(0.1)
    arbiter.admit(0, torque(ACC, 0.0))
    assert decide(arbiter, 1).controller == ACC and decide(arbiter, 2).controller == 0x00


def test_a_timed_out_sender_regains_control_and_clears_the_dtc_when_it_sends_again() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))
    assert decide(arbiter, 20).dtcs
    arbiter.admit(21, torque(ACC, 5.0))
    request = decide(arbiter, 21)
    assert (request.torque_pct, request.dtcs) == (5.0, frozenset())


def test_a_timed_out_sender_that_releases_clears_the_dtc() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 0.0))
    decide(arbiter, 20)
    arbiter.admit(21, release(ACC))
    assert decide(arbiter, 21).dtcs == frozenset()


def test_a_repeated_counter_is_ignored_and_counted() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 10.0, counter=3))
    assert arbiter.admit(1, torque(ACC, 90.0, counter=3)) is Tsc1Admission.REPEATED
    assert (decide(arbiter, 1).torque_pct, arbiter.repeated) == (10.0, 1)


def test_a_repeated_counter_does_not_refresh_the_timeout() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 10.0, counter=3))
    for tick in range(1, 7):
        arbiter.admit(tick, torque(ACC, 10.0, counter=3))
    assert decide(arbiter, 6).controller == 0x00


def test_skipped_counters_are_accepted_and_counted() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 10.0, counter=1))
    assert arbiter.admit(1, torque(ACC, 20.0, counter=4)) is Tsc1Admission.SKIPPED
    assert (decide(arbiter, 1).torque_pct, arbiter.skipped) == (20.0, 1)


def test_counters_wrap_from_7_to_0() -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, torque(ACC, 10.0, counter=7))
    assert arbiter.admit(1, torque(ACC, 20.0, counter=0)) is Tsc1Admission.ACCEPTED


@pytest.mark.parametrize("mode", list(Override))
def test_every_override_mode_is_understood(mode: Override) -> None:
    arbiter = Tsc1Arbiter(TICK_S)
    arbiter.admit(0, Tsc1Command(ACC, mode, 3, 1000.0 if mode is not Override.LIMIT else None, 20.0))
    request = decide(arbiter, rpm=1000.0)
    expected = {Override.DISABLED: (None, None), Override.SPEED: (0.0, None), Override.TORQUE: (20.0, None),
                Override.LIMIT: (None, 20.0)}[mode]
    assert (request.torque_pct, request.limit_pct) == expected


def test_above_a_speed_limit_the_engine_gets_no_fuel_against_a_full_pedal() -> None:
    model = Class6Model(Class6Params())
    arbiter = Tsc1Arbiter(TICK_S)
    state = model.initial(30.0)
    above = 0
    for tick in range(600):
        arbiter.admit(tick, limit(ACC, pct=125.0, rpm=1500.0))
        request = arbiter.arbitrate(tick, state.engine_rpm, TICK_S)
        rpm = state.engine_rpm
        command = EngineCommand(request.torque_pct, request.limit_pct)
        state = model.step(state, 100.0, 0.0, 0.0, TICK_S, command)
        if rpm > 1500.0 and state.shift_left_s <= 0.0:
            above += 1
            assert model.engine.indicated_pct(state.engine_demand_nm, state.engine_rpm) == pytest.approx(0.0)
    assert above > 0  # the transmission's kick-down took the engine past the limit


def test_tsc1_torque_0_pct_takes_the_drive_from_a_full_pedal_and_eec1_names_the_sender() -> None:
    model = Class6Model(Class6Params())
    arbiter = Tsc1Arbiter(TICK_S)
    start = state = model.initial(60.0)
    for tick in range(200):
        arbiter.admit(tick, torque(ACC, 0.0, counter=tick % 8))
        request = arbiter.arbitrate(tick, state.engine_rpm, TICK_S)
        command = EngineCommand(request.torque_pct, request.limit_pct)
        state = model.step(state, 100.0, 0.0, 0.0, TICK_S, command)
    assert state.speed_mps < start.speed_mps and request.controller == ACC
