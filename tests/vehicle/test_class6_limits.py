"""The class6 engine's limits from its calibration: the road speed governor and the torque limit;
at their defaults (infinite) they never act."""

from __future__ import annotations

import dataclasses
import math

from ecu_sim.vehicle.class6 import ROAD_SPEED_DROOP_KPH, Class6Model, Class6Params


def drive(params: Class6Params, seconds: float, app: float = 100.0, speed_kph: float = 60.0) -> list[float]:
    model = Class6Model(params)
    state, speeds = model.initial(speed_kph), []
    for _ in range(int(seconds * 10)):
        state = model.step(state, app, 0.0, 0.0, 0.1)
        speeds.append(state.speed_mps * 3.6)
    return speeds


def test_the_road_speed_governor_holds_a_full_pedal_at_the_limit() -> None:
    speeds = drive(dataclasses.replace(Class6Params(), road_speed_limit_kph=75.0), 120)
    assert max(speeds) <= 75.0 and min(speeds[-100:]) >= 75.0 - ROAD_SPEED_DROOP_KPH - 0.5


def test_infinite_limits_drive_exactly_as_the_parameters_without_them() -> None:
    explicit = dataclasses.replace(Class6Params(), road_speed_limit_kph=math.inf, torque_limit_nm=math.inf)
    assert drive(explicit, 60) == drive(Class6Params(), 60)


def test_a_torque_limit_below_the_full_load_peak_slows_the_climb_to_speed() -> None:
    limited = drive(dataclasses.replace(Class6Params(), torque_limit_nm=500.0), 30, speed_kph=30.0)
    free = drive(Class6Params(), 30, speed_kph=30.0)
    assert limited[-1] < free[-1] - 5.0


def test_a_torque_limit_at_the_full_load_peak_never_acts() -> None:
    assert drive(dataclasses.replace(Class6Params(), torque_limit_nm=1050.0), 30) == drive(Class6Params(), 30)


def test_a_limit_that_is_not_positive_is_refused() -> None:
    assert "road_speed_limit_kph must be > 0" in " ".join(
        dataclasses.replace(Class6Params(), road_speed_limit_kph=0.0).problems())
