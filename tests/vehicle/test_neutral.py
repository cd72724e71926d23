"""Neutral on request (TC1, eco-roll) in the class6 truck: the wheels roll free, the engine idles,
and a gear comes back only once the engine turns at its speed."""

from __future__ import annotations

import math

from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from ecu_sim.vehicle.drive import Class6Vehicle
from ecu_sim.vehicle.road import Road

DT = 0.1
MODEL = Class6Model(Class6Params())
FLAT = Road.from_elevation([(0.0, 0.0), (100000.0, 0.0)])


def run(state: Class6State, ticks: int, neutral: bool, sin_g: float = 0.0) -> Class6State:
    for _ in range(ticks):
        state = MODEL.step(state, 0.0, 0.0, sin_g, DT, neutral=neutral)
    return state


def test_a_truck_in_neutral_loses_less_speed_than_one_coasting_in_gear() -> None:
    start = MODEL.initial(85.0)
    in_gear, in_neutral = run(start, 300, False), run(start, 300, True)
    assert in_neutral.speed_mps > in_gear.speed_mps + 1.0


def test_in_neutral_the_engine_idles_on_the_maps_idle_fuel() -> None:
    state = run(MODEL.initial(85.0), 10, True)
    assert state.engine_rpm == MODEL.params.idle_rpm
    assert state.engine_nm == 0.0
    assert state.fuel_rate_lph == MODEL.fuel.rate_lph(MODEL.params.idle_rpm, 0.0) > 0.0


def test_coasting_in_gear_cuts_the_fuel_where_neutral_burns_idle_fuel() -> None:
    assert run(MODEL.initial(85.0), 10, False).fuel_rate_lph == 0.0


def test_the_speed_in_neutral_follows_the_road_load_alone() -> None:
    p = MODEL.params
    start = MODEL.initial(85.0)
    after = MODEL.step(start, 0.0, 0.0, 0.0, DT, neutral=True)
    v = start.speed_mps
    resistance = p.crr * p.mass_kg * p.gravity_mps2 + 0.5 * p.air_density_kg_m3 * p.cda_m2 * v * v
    expected = -resistance / (p.mass_kg + p.rotating_mass_kg)
    assert math.isclose(after.accel_mps2, expected, rel_tol=0.01)


def test_the_pedal_does_not_drive_a_truck_in_neutral() -> None:
    start = run(MODEL.initial(85.0), 1, True)
    pressed = MODEL.step(start, 100.0, 0.0, 0.0, DT, neutral=True)
    released = MODEL.step(start, 0.0, 0.0, 0.0, DT, neutral=True)
    assert pressed == released


def test_after_neutral_the_driveline_stays_open_one_shift_time_with_the_engine_at_the_gears_speed() -> None:
    coasting = run(MODEL.initial(85.0), 50, True)
    ticks_open = 0
    state = MODEL.step(coasting, 0.0, 0.0, 0.0, DT)
    while state.neutral:
        ticks_open += 1
        assert state.engine_nm == 0.0
        assert math.isclose(state.engine_rpm, MODEL.rpm_in(state.gear, state.speed_mps))
        state = MODEL.step(state, 0.0, 0.0, 0.0, DT)
    assert ticks_open == round(MODEL.params.shift_time_s / DT)


def test_the_gear_engaged_after_neutral_is_the_one_the_schedule_keeps() -> None:
    state = MODEL.step(run(MODEL.initial(85.0), 50, True), 0.0, 0.0, 0.0, DT)
    gear = state.gear
    for _ in range(100):
        state = MODEL.step(state, 0.0, 0.0, 0.0, DT)
    assert not state.neutral
    assert state.gear == gear == len(MODEL.params.gear_ratios)


def test_the_clutch_closes_without_a_torque_step_beyond_the_pedals_demand() -> None:
    state = MODEL.step(run(MODEL.initial(85.0), 50, True), 30.0, 0.0, 0.0, DT)
    while state.neutral:
        state = MODEL.step(state, 30.0, 0.0, 0.0, DT)
    engaged = MODEL.step(state, 30.0, 0.0, 0.0, DT)
    assert engaged.engine_nm <= MODEL.engine.demand_nm(30.0, engaged.engine_rpm) + 1e-9


def test_the_vehicle_reports_neutral_as_gear_0_and_the_gear_being_engaged_as_selected() -> None:
    vehicle = Class6Vehicle(MODEL, FLAT, 5.0, 85.0, DT)
    vehicle.step(0.0, 0.0, neutral=True)
    driveline = vehicle.driveline()
    assert (driveline.gear, driveline.selected) == (0, 0)
    vehicle.step(0.0, 0.0)
    driveline = vehicle.driveline()
    assert (driveline.gear, driveline.selected) == (0, len(MODEL.params.gear_ratios))


def test_a_prepared_step_for_neutral_is_not_taken_for_a_step_in_gear() -> None:
    prepared = Class6Vehicle(MODEL, FLAT, 5.0, 85.0, DT)
    fresh = Class6Vehicle(MODEL, FLAT, 5.0, 85.0, DT)
    prepared.prepare(0.0, 0.0, neutral=True)
    prepared.step(0.0, 0.0)
    fresh.step(0.0, 0.0)
    assert prepared.state == fresh.state
