"""Rules of the PI cruise controller (ecu_sim.cruise.pi), alone and in closed loop with the truck model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from ecu_sim.cruise import pi as controller
from ecu_sim.cruise.pi import PiParams, PiState
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.route import GradeSchedule

DT = 0.1
AMP_APP_LSB = 1.0  # the default wire profile carries APP at 1 %/bit
J1939_APP_LSB = 0.4  # SPN 91: 0.4 %/bit
SPEED_LSB_KPH = 1.0 / 256.0


# -- the controller alone -------------------------------------------------------------------------------


def test_default_parameters_have_no_problems() -> None:
    assert PiParams().problems() == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kp": -1.0}, "kp"),
        ({"ki": -0.5}, "ki"),
        ({"kp": math.nan}, "kp"),
        ({"ki": math.inf}, "ki"),
        ({"app_min_pct": -5.0}, "app_min_pct"),
        ({"app_max_pct": 120.0}, "app_max_pct"),
    ],
)
def test_problems_reports_each_unusable_value(kwargs: dict[str, float], field: str) -> None:
    problems = PiParams(**kwargs).problems()
    assert len(problems) == 1
    assert problems[0].startswith(field)


def test_problems_reports_limits_in_the_wrong_order() -> None:
    assert PiParams(app_min_pct=60.0, app_max_pct=40.0).problems() == [
        "app_min_pct must be below app_max_pct (got 60 >= 40)"
    ]


def test_problems_reports_a_controller_with_no_gain_at_all() -> None:
    assert len(PiParams(kp=0.0, ki=0.0).problems()) == 1


def test_proportional_action_is_kp_times_speed_error() -> None:
    app, _ = controller.step(PiParams(kp=7.0, ki=0.0), PiState(), 90.0, 88.0, DT)
    assert app == pytest.approx(14.0)


def test_integral_grows_by_ki_times_error_times_dt_when_not_saturated() -> None:
    params = PiParams(kp=2.0, ki=3.0)
    _, state = controller.step(params, PiState(20.0), 90.0, 89.0, DT)
    assert state.integral == pytest.approx(20.0 + 3.0 * 1.0 * DT)
    app, _ = controller.step(params, state, 90.0, 90.0, DT)
    assert app == pytest.approx(state.integral)  # no error: the pedal stays where the integral holds it


@pytest.mark.parametrize(("speed_kph", "limit"), [(0.0, 100.0), (250.0, 0.0)])
def test_output_stays_within_0_and_100_percent(speed_kph: float, limit: float) -> None:
    state = PiState()
    for _ in range(100):
        app, state = controller.step(PiParams(), state, 90.0, speed_kph, DT)
        assert app == limit


def test_output_stays_within_configured_limits() -> None:
    params = PiParams(app_min_pct=10.0, app_max_pct=80.0)
    high, _ = controller.step(params, PiState(50.0), 90.0, 0.0, DT)
    low, _ = controller.step(params, PiState(50.0), 90.0, 200.0, DT)
    assert (low, high) == (10.0, 80.0)


def test_integral_does_not_wind_up_while_saturated_high_and_too_slow() -> None:
    params = PiParams(kp=5.0, ki=1.0)
    state = PiState(40.0)
    for _ in range(600):  # a minute at full pedal, 20 km/h too slow
        app, state = controller.step(params, state, 90.0, 70.0, DT)
        assert app == 100.0
    assert state.integral == 40.0


def test_integral_does_not_wind_down_while_saturated_low_and_too_fast() -> None:
    params = PiParams(kp=5.0, ki=1.0)
    state = PiState(40.0)
    for _ in range(600):  # a minute with the pedal released, 20 km/h too fast
        app, state = controller.step(params, state, 90.0, 110.0, DT)
        assert app == 0.0
    assert state.integral == 40.0


def test_integral_unwinds_while_saturated_high_once_the_error_turns_negative() -> None:
    # Saturated high only because of a large integral, but already too fast: integrating is what helps.
    params = PiParams(kp=5.0, ki=1.0)
    _, state = controller.step(params, PiState(100.0), 90.0, 90.5, DT)
    assert state.integral < 100.0


def test_integral_stays_within_the_output_limits() -> None:
    params = PiParams(kp=0.0, ki=10.0)
    state = PiState()
    for _ in range(1000):
        _, state = controller.step(params, state, 90.0, 80.0, DT)
    assert state.integral == 100.0


def test_non_finite_speed_holds_the_pedal_at_the_integral_term() -> None:
    state = PiState(35.0)
    app, after = controller.step(PiParams(), state, 90.0, math.nan, DT)
    assert app == 35.0
    assert after == state


@pytest.mark.parametrize("dt_s", [0.0, -0.1, math.nan])
def test_step_rejects_a_dt_that_is_not_positive(dt_s: float) -> None:
    with pytest.raises(ValueError, match="dt_s"):
        controller.step(PiParams(), PiState(), 90.0, 80.0, dt_s)


# -- closed loop with the truck model -------------------------------------------------------------------


def on_the_wire(app_pct: float, lsb_pct: float) -> float:
    """APP as the ECU decodes it: rounded half up to the profile's resolution."""
    return math.floor(app_pct / lsb_pct + 0.5) * lsb_pct


@dataclass
class Run:
    speeds_kph: list[float]  # after each tick

    def worst_error_kph(self, set_kph: float, from_s: float) -> float:
        return max(abs(v - set_kph) for v in self.speeds_kph[round(from_s / DT) :])

    def in_band_after_s(self, set_kph: float, band_kph: float) -> float:
        """Time after which the speed stays within +-band of the set speed for the rest of the run."""
        outside = [k for k, v in enumerate(self.speeds_kph) if abs(v - set_kph) > band_kph]
        return (outside[-1] + 1) * DT if outside else 0.0


def closed_loop(
    route: GradeSchedule, seconds: float, app_lsb_pct: float, start_kph: float = 80.0, set_kph: float = 90.0
) -> Run:
    """ECU and CCM as two processes: the CCM sees the quantised speed the ECU sent after its last tick, and
    the APP it computes reaches the ECU one tick later, rounded to the wire resolution. Before the first
    APP frame arrives the ECU coasts.
    """
    truck = TruckModel(TruckParams())
    pi_params = PiParams()
    state = TruckState.from_kph(start_kph)
    pi_state = PiState()
    app_in_flight = 0.0
    speeds = []
    for _ in range(round(seconds / DT)):
        measured = math.floor(state.speed_kph / SPEED_LSB_KPH + 0.5) * SPEED_LSB_KPH
        app, pi_state = controller.step(pi_params, pi_state, set_kph, measured, DT)
        applied, app_in_flight = app_in_flight, on_the_wire(app, app_lsb_pct)
        state = truck.step(state, applied, route.grade_at(state.distance_m), DT)
        speeds.append(state.speed_kph)
    return Run(speeds)


@pytest.mark.parametrize("app_lsb_pct", [AMP_APP_LSB, J1939_APP_LSB])
def test_default_gains_settle_80_to_90_kph_within_half_a_km_per_h_in_60_s(app_lsb_pct: float) -> None:
    run = closed_loop(GradeSchedule.constant(0.0), 300.0, app_lsb_pct)
    assert run.in_band_after_s(90.0, 0.5) <= 60.0


@pytest.mark.parametrize("app_lsb_pct", [AMP_APP_LSB, J1939_APP_LSB])
def test_default_gains_overshoot_90_kph_by_less_than_1_km_per_h(app_lsb_pct: float) -> None:
    run = closed_loop(GradeSchedule.constant(0.0), 300.0, app_lsb_pct)
    assert max(run.speeds_kph) - 90.0 < 1.0


@pytest.mark.parametrize("app_lsb_pct", [AMP_APP_LSB, J1939_APP_LSB])
def test_default_gains_hold_90_kph_within_1_km_per_h_for_30_min_on_the_testbed_route(
    app_lsb_pct: float,
) -> None:
    settle_s = 120.0
    run = closed_loop(GradeSchedule.testbed(), settle_s + 30 * 60.0, app_lsb_pct)
    assert run.worst_error_kph(90.0, from_s=settle_s) <= 1.0
