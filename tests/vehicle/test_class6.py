"""Rules of the class6 truck (ecu_sim.vehicle.class6): the GEM equation, shifts, engine speed, brakes."""

from __future__ import annotations

import math

import pytest

from ecu_sim.cruise import pi
from ecu_sim.vehicle import appendix_d
from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from ecu_sim.vehicle.road import Road

DT = 0.1
MODEL = Class6Model(Class6Params())


def sin_of_grade(grade_pct: float) -> float:
    g = grade_pct / 100.0
    return g / math.sqrt(1.0 + g * g)


def test_one_step_reproduces_the_worked_example_of_40_cfr_1036_545_f_4() -> None:
    # The example's vehicle (vocational Medium HDV, axle input torque 500 N m, at 20 m/s on 0.39 %)
    # as a truck whose engine gives 500 N m at any speed through a direct top gear, with no
    # transmission loss and no engine inertia, stepped once at the example's 100 Hz. The example
    # evaluates F_grade with g = 9.81 (its constants list 9.80665), so this test does too.
    params = Class6Params(gravity_mps2=9.81, gear_ratios=(1.5, 1.0), transmission_efficiency=1.0,
                          engine_inertia_kg_m2=0.0, full_load=((600.0, 500.0), (2600.0, 500.0)),
                          substeps=1)
    model = Class6Model(params)
    grade = 0.0039
    state = Class6State(20.0, 0.0, gear=2, selected=2)

    after = model.step(state, 100.0, 0.0, grade / math.sqrt(1.0 + grade * grade), 0.0100)

    f_grade = 11408 * 9.81 * math.sin(math.atan(grade))
    assert f_grade == pytest.approx(436.5, abs=0.05)  # the value the example prints
    drive = 500.0 * 4.0 * 0.955 / 0.399
    rolling = 7.7e-3 * 11408 * 9.81 * math.cos(math.atan(grade))
    aero = 1.1845 * 5.4 * 20.0**2 / 2
    expected = 20.0 + (drive - rolling - aero - 0.0 - f_grade) * 0.0100 / (11408 + 340)
    assert after.speed_mps == pytest.approx(expected, rel=1e-12)
    assert after.speed_mps == pytest.approx(20.00188, abs=5e-6)


def cruise(sin_g: float, seconds: float, set_kph: float = 90.0) -> list[Class6State]:
    """The truck under the PI controller on a constant slope, one state per tick."""
    params = pi.PiParams()
    state, pi_state = MODEL.initial(set_kph), pi.PiState()
    states = []
    for _ in range(round(seconds / DT)):
        app, pi_state = pi.step(params, pi_state, set_kph, state.speed_kph, DT)
        state = MODEL.step(state, app, 0.0, sin_g, DT)
        states.append(state)
    return states


@pytest.mark.parametrize("grade_pct", sorted({g for _, g in appendix_d.POINTS}))
def test_at_constant_set_speed_the_gear_settles_and_stays_on_every_grade_of_appendix_d(
        grade_pct: float) -> None:
    states = cruise(sin_of_grade(grade_pct), 300.0)
    settled = {s.gear for s in states[1200:]} | {s.selected for s in states[1200:]}
    assert len(settled) == 1


def test_a_climb_the_top_gear_cannot_hold_makes_it_downshift_and_the_flat_after_it_upshift() -> None:
    climb = cruise(sin_of_grade(5.0), 120.0)
    assert climb[-1].gear < climb[0].gear
    state, pi_state = climb[-1], pi.PiState(100.0)
    gears = []
    for _ in range(1200):
        app, pi_state = pi.step(pi.PiParams(), pi_state, 90.0, state.speed_kph, DT)
        state = MODEL.step(state, app, 0.0, 0.0, DT)
        gears.append(state.gear)
    assert gears[-1] > climb[-1].gear


def test_engine_speed_stays_within_idle_and_governed_speed_from_standstill_to_full_speed_and_back() -> None:
    p = MODEL.params
    state = MODEL.initial(0.0)
    rpms = []
    for app, brake, ticks in ((100.0, 0.0, 900), (0.0, 0.0, 600), (0.0, 40.0, 600), (60.0, 0.0, 300)):
        for _ in range(ticks):
            state = MODEL.step(state, app, brake, 0.0, DT)
            rpms.append(state.engine_rpm)
    assert p.idle_rpm <= min(rpms) and max(rpms) <= p.governed_rpm


def test_full_throttle_from_standstill_upshifts_one_gear_at_a_time_never_back() -> None:
    state = MODEL.initial(0.0)
    gears = [state.gear]
    for _ in range(1200):
        state = MODEL.step(state, 100.0, 0.0, 0.0, DT)
        if state.gear != gears[-1]:
            gears.append(state.gear)
    assert gears == list(range(1, len(gears) + 1)) and len(gears) >= 5


def test_the_service_brake_stops_the_truck_on_a_5_pct_descent_and_holds_it() -> None:
    state = MODEL.initial(60.0)
    stopped_at = None
    for tick in range(600):
        state = MODEL.step(state, 0.0, 100.0, sin_of_grade(-5.0), DT)
        if stopped_at is None and state.speed_mps == 0.0:
            stopped_at = tick
    assert stopped_at is not None
    assert state.speed_mps == 0.0


def test_without_the_brake_a_5_pct_descent_speeds_the_truck_up_against_engine_braking() -> None:
    state = MODEL.initial(60.0)
    for _ in range(300):
        state = MODEL.step(state, 0.0, 0.0, sin_of_grade(-5.0), DT)
    assert state.speed_kph > 60.0


def test_the_same_inputs_give_the_same_states_bit_for_bit() -> None:
    road = Road.from_grades(appendix_d.POINTS, linear=True)

    def run() -> list[Class6State]:
        state, out = MODEL.initial(80.0), []
        for tick in range(3000):
            state = MODEL.step(state, (tick * 7) % 101, 0.0, road.sin_under_axles(state.distance_m, 5.0), DT)
            out.append(state)
        return out

    assert run() == run()


def test_a_shift_interrupts_the_engine_torque_for_the_shift_time() -> None:
    state = MODEL.initial(0.0)
    interrupted = 0
    while state.gear == 1:
        state = MODEL.step(state, 100.0, 0.0, 0.0, DT)
        interrupted += state.selected != state.gear and state.engine_nm == 0.0
    assert interrupted * DT == pytest.approx(MODEL.params.shift_time_s)
