"""Rules of the truck model (ecu_sim.vehicle.model), checked against closed-form solutions."""

from __future__ import annotations

import ast
import itertools
import math
import random
from pathlib import Path

import pytest

import ecu_sim
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.road import grade_pct_of

DT = 0.1
P = TruckParams()
TRUCK = TruckModel(P)
J = P.inertia_factor * P.mass_kg
A = P.road_load_a_n
C_SI = P.road_load_c_n_per_kph2 * 3.6**2  # N per (m/s)^2
V0_MPS = 80.0 / 3.6


def closed_form_coastdown_mps(t: float) -> float:
    """v(t) = sqrt(A/C) tan(atan(v0 sqrt(C/A)) - sqrt(A C) t / J), zero once stopped."""
    angle = math.atan(V0_MPS * math.sqrt(C_SI / A)) - math.sqrt(A * C_SI) * t / J
    return max(0.0, math.sqrt(A / C_SI) * math.tan(angle))


def closed_form_stop_time_s() -> float:
    return J / math.sqrt(A * C_SI) * math.atan(V0_MPS * math.sqrt(C_SI / A))


def closed_form_stop_distance_m() -> float:
    return J / (2.0 * C_SI) * math.log((A + C_SI * V0_MPS**2) / A)


def coastdown() -> list[TruckState]:
    """States after each tick of a flat coastdown from 80 km/h, up to and including the first at 0."""
    state = TruckState.from_kph(80.0)
    states = []
    for _ in range(10_000):
        state = TRUCK.step(state, 0.0, 0.0, DT)
        states.append(state)
        if state.speed_mps == 0.0:
            return states
    raise AssertionError("the coastdown never reached standstill")


# -- coastdown against the closed form ------------------------------------------------------------------


def test_coastdown_matches_closed_form_within_0_01_kph_at_every_tick_to_standstill() -> None:
    states = coastdown()
    worst = max(
        abs(s.speed_kph - 3.6 * closed_form_coastdown_mps((k + 1) * DT)) for k, s in enumerate(states)
    )
    assert worst < 0.01


@pytest.mark.parametrize(
    ("t_s", "published_kph"),
    [(10, 74.0417), (30, 63.8276), (60, 51.5666), (120, 33.5700), (200, 16.2603)],
)
def test_coastdown_hits_the_published_speeds(t_s: int, published_kph: float) -> None:
    states = coastdown()
    assert states[t_s * 10 - 1].speed_kph == pytest.approx(published_kph, abs=1e-3)


def test_coastdown_stops_within_one_tick_of_291_49_s() -> None:
    assert closed_form_stop_time_s() == pytest.approx(291.49, abs=0.005)
    stop_time = len(coastdown()) * DT
    assert abs(stop_time - closed_form_stop_time_s()) <= DT


def test_coastdown_covers_2522_6_m_to_standstill() -> None:
    assert closed_form_stop_distance_m() == pytest.approx(2522.6, abs=0.05)
    assert coastdown()[-1].distance_m == pytest.approx(closed_form_stop_distance_m(), abs=1.0)


# -- forces ---------------------------------------------------------------------------------------------


def test_tractive_force_is_app_share_of_rated_power_over_speed() -> None:
    # Acceleration at 80 km/h with half pedal is (0.5 P / v - A - C v^2) / J; a 1 ms step measures it.
    state = TruckState.from_kph(80.0)
    dt = 0.001
    after = TRUCK.step(state, 50.0, 0.0, dt)
    expected = (0.5 * P.rated_power_kw * 1000.0 / V0_MPS - A - C_SI * V0_MPS**2) / J
    assert (after.speed_mps - state.speed_mps) / dt == pytest.approx(expected, rel=1e-4)


def test_full_pedal_on_the_flat_reaches_the_speed_where_power_balances_road_load() -> None:
    power_w = P.rated_power_kw * 1000.0
    lo, hi = 1.0, 100.0  # solve P / v = A + C v^2 by bisection
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if power_w / mid > A + C_SI * mid * mid else (lo, mid)
    state = TruckState.from_kph(80.0)
    for _ in range(6000):
        state = TRUCK.step(state, 100.0, 0.0, DT)
    assert state.speed_mps == pytest.approx(lo, abs=0.01)


@pytest.mark.parametrize("grade_pct", [1.0, -1.0, 8.0, -30.0, 100.0])
def test_grade_changes_acceleration_by_m_g_sin_atan_grade_over_j(grade_pct: float) -> None:
    # With B = C = 0 and no pedal the road load is the constant A, so acceleration is constant and exact.
    params = TruckParams(road_load_b_n_per_kph=0.0, road_load_c_n_per_kph2=0.0)
    state = TruckState.from_kph(80.0)
    flat = TruckModel(params).step(state, 0.0, 0.0, DT).speed_mps
    graded = TruckModel(params).step(state, 0.0, grade_pct, DT).speed_mps
    grade_force = params.mass_kg * params.gravity_mps2 * math.sin(math.atan(grade_pct / 100.0))
    assert (flat - graded) / DT == pytest.approx(grade_force / J, rel=1e-9)


def test_uphill_one_percent_decelerates_by_about_0_095_mps2() -> None:
    # 11793 kg * 9.81 * sin(atan(0.01)) / 12146.79 kg: not 57 times less (atan is already in radians).
    state = TruckState.from_kph(80.0)
    delta = TRUCK.step(state, 0.0, 0.0, DT).speed_mps - TRUCK.step(state, 0.0, 1.0, DT).speed_mps
    assert delta / DT == pytest.approx(0.0952, abs=0.0005)


@pytest.mark.parametrize("sin_g", [0.05, -0.05, 0.2, -0.7, 0.999])
def test_on_a_road_the_grade_force_is_m_g_times_the_sine_under_the_axles(sin_g: float) -> None:
    """On a road the testbed gets the slope between its axles as a grade, and m g sin(atan(grade))
    gives back the sine the road had: the force the class6 truck feels on the same road."""
    weight = P.mass_kg * P.gravity_mps2
    assert TruckModel(P).grade_force_n(grade_pct_of(sin_g)) == pytest.approx(weight * sin_g, rel=1e-14)


@pytest.mark.parametrize("grade_pct", [math.inf, -math.inf, 1e300, -1e300])
def test_an_infinite_grade_is_a_wall_that_takes_the_whole_weight(grade_pct: float) -> None:
    """A road's cliff is a slope of sine one under the axles, an infinite grade: not a NaN force,
    nor, past where the grade's square overflows, no force at all."""
    weight = P.mass_kg * P.gravity_mps2
    assert TruckModel(P).grade_force_n(grade_pct) == math.copysign(weight, grade_pct)
    assert math.isfinite(TruckModel(P).step(TruckState.from_kph(80.0), 100.0, grade_pct, DT).speed_mps)


# -- standstill -----------------------------------------------------------------------------------------


def test_standing_start_at_full_pedal_accelerates_at_the_traction_limit() -> None:
    state = TruckState(0.0, 0.0)
    after = TRUCK.step(state, 100.0, 0.0, DT)
    traction = P.traction_limit_mu * P.mass_kg * P.gravity_mps2
    assert after.speed_mps == pytest.approx((traction - A) / J * DT, rel=1e-3)
    for _ in range(300):
        after = TRUCK.step(after, 100.0, 0.0, DT)
        assert math.isfinite(after.speed_mps)
    assert after.speed_kph > 60.0


@pytest.mark.parametrize("app_pct", [0.4, 1.0, 5.0, 100.0])
def test_any_pedal_starts_a_stopped_truck_on_the_flat(app_pct: float) -> None:
    state = TruckState(0.0, 0.0)
    for _ in range(50):
        state = TRUCK.step(state, app_pct, 0.0, DT)
    assert state.speed_mps > 0.0
    assert state.distance_m > 0.0


def test_no_pedal_at_standstill_stays_at_exactly_zero() -> None:
    state = TruckState(0.0, 12.5)
    for _ in range(1000):
        state = TRUCK.step(state, 0.0, 0.0, DT)
        assert state.speed_mps == 0.0
        assert state.distance_m == 12.5


def test_stopped_truck_does_not_roll_back_uphill() -> None:
    state = TruckState(0.0, 0.0)
    for _ in range(100):
        state = TRUCK.step(state, 0.0, 20.0, DT)
    assert state == TruckState(0.0, 0.0)


def test_stopped_truck_is_held_by_road_load_a_on_a_gentle_downhill_and_rolls_on_a_steeper_one() -> None:
    hold_limit_pct = 100.0 * math.tan(math.asin(A / (P.mass_kg * P.gravity_mps2)))  # about 0.5 %
    held = rolling = TruckState(0.0, 0.0)
    for _ in range(100):
        held = TRUCK.step(held, 0.0, -0.9 * hold_limit_pct, DT)
        rolling = TRUCK.step(rolling, 0.0, -1.1 * hold_limit_pct, DT)
    assert held.speed_mps == 0.0
    assert rolling.speed_mps > 0.0


def test_truck_coasting_to_a_stop_uphill_stays_stopped_without_chatter() -> None:
    state = TruckState.from_kph(20.0)
    speeds = []
    for _ in range(600):
        state = TRUCK.step(state, 0.0, 3.0, DT)
        speeds.append(state.speed_mps)
    first_stop = speeds.index(0.0)
    assert all(v == 0.0 for v in speeds[first_stop:])


@pytest.mark.parametrize("grade_pct", [0.0, 1.0, 10.0])
@pytest.mark.parametrize("app_pct", [1e-5, 1e-3, 0.01, 0.4])
@pytest.mark.parametrize("start_mps", [0.0, 3.0])
def test_a_light_pedal_settles_to_a_steady_crawl_or_standstill_without_oscillating(
    grade_pct: float, app_pct: float, start_mps: float
) -> None:
    state = TruckState(start_mps, 0.0)
    speeds = []
    for _ in range(3000):
        state = TRUCK.step(state, app_pct, grade_pct, DT)
        speeds.append(state.speed_mps)
    tail = speeds[-1000:]
    changes = [b - a for a, b in itertools.pairwise(tail)]
    reversals = sum(1 for d1, d2 in itertools.pairwise(changes) if d1 * d2 < 0.0)
    assert reversals == 0
    assert all(v == 0.0 for v in tail) or all(v > 0.0 for v in tail)


def test_speed_never_goes_negative_and_distance_never_shrinks_with_random_inputs() -> None:
    rng = random.Random(1939)
    apps = [0.0, 100.0, math.nan, math.inf, -math.inf, -5.0, 1e300]
    state = TruckState.from_kph(80.0)
    for tick in range(20_000):
        if tick % 500 == 0:
            state = TruckState.from_kph(rng.uniform(0.0, 130.0), state.distance_m)
        app = rng.choice(apps) if rng.random() < 0.1 else rng.uniform(-50.0, 150.0)
        grade = rng.choice([-100.0, 100.0]) if rng.random() < 0.05 else rng.uniform(-40.0, 40.0)
        after = TRUCK.step(state, app, grade, DT)
        assert math.isfinite(after.speed_mps)
        assert after.speed_mps >= 0.0
        assert after.distance_m >= state.distance_m
        state = after


# -- inputs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("app_pct", "same_as_pct"),
    [(150.0, 100.0), (math.inf, 100.0), (-20.0, 0.0), (-math.inf, 0.0), (math.nan, 0.0)],
)
def test_pedal_position_is_clamped_to_0_100_and_nan_counts_as_released(
    app_pct: float, same_as_pct: float
) -> None:
    for start in (TruckState(0.0, 0.0), TruckState.from_kph(50.0)):
        assert TRUCK.step(start, app_pct, 0.0, DT) == TRUCK.step(start, same_as_pct, 0.0, DT)


@pytest.mark.parametrize("dt_s", [0.0, -0.1, math.nan])
def test_step_rejects_a_dt_that_is_not_positive(dt_s: float) -> None:
    with pytest.raises(ValueError, match="dt_s"):
        TRUCK.step(TruckState.from_kph(80.0), 0.0, 0.0, dt_s)


def test_a_model_refuses_parameters_that_problems_rejects() -> None:
    with pytest.raises(ValueError, match="mass_kg"):
        TruckModel(TruckParams(mass_kg=0.0))


def test_state_converts_km_per_h_to_m_per_s() -> None:
    state = TruckState.from_kph(90.0, distance_m=5.0)
    assert state.speed_mps == pytest.approx(25.0)
    assert state.speed_kph == pytest.approx(90.0)
    assert state.distance_m == 5.0


# -- parameters -----------------------------------------------------------------------------------------


def test_default_parameters_have_no_problems() -> None:
    assert TruckParams().problems() == []


def test_problems_name_the_field_and_the_bad_value() -> None:
    assert TruckParams(mass_kg=-1.0).problems() == ["mass_kg must be > 0 (got -1)"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mass_kg", 0.0),
        ("inertia_factor", 0.9),
        ("road_load_a_n", -1.0),
        ("road_load_c_n_per_kph2", -0.1),
        ("rated_power_kw", 0.0),
        ("gravity_mps2", 0.0),
        ("traction_limit_mu", 0.0),
        ("mass_kg", math.nan),
        ("rated_power_kw", math.inf),
    ],
)
def test_problems_reports_each_meaningless_value(field: str, value: float) -> None:
    problems = TruckParams(**{field: value}).problems()
    assert len(problems) == 1
    assert problems[0].startswith(field)


def test_negative_b_is_accepted_only_while_road_load_stays_non_negative() -> None:
    # A + B v + C v^2 >= 0 for all v exactly when B^2 <= 4 A C.
    limit = -2.0 * math.sqrt(A * P.road_load_c_n_per_kph2)
    assert TruckParams(road_load_b_n_per_kph=0.99 * limit).problems() == []
    problems = TruckParams(road_load_b_n_per_kph=1.01 * limit).problems()
    assert len(problems) == 1
    assert "negative" in problems[0]


# -- the same bits on every processor --------------------------------------------------------------

#: modules whose code runs every tick of a simulation or a real run (model, route, road, controller, codec,
#: faults, nodes, loop)
PER_TICK = ("vehicle/model.py", "vehicle/route.py", "vehicle/road.py", "vehicle/drive.py", "cruise/pi.py",
            "codec/role.py", "faults/injector.py", "nodes/input.py", "nodes/ecu.py", "nodes/ccm.py",
            "nodes/pedal.py", "runtime/loop.py", "runtime/clock.py", "runtime/held.py", "runtime/ticks.py")
#: functions libm computes to within an ulp or so, differently on another processor or libm
TRANSCENDENTAL = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
                  "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "erf",
                  "erfc", "gamma", "lgamma", "cbrt", "hypot", "dist"}


def transcendental_uses(source: str) -> list[str]:
    """``math.sin(...)``, ``from math import sin``, ``x ** y`` (a float power is libm's pow)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("math", "cmath", "numpy", "np") and node.attr in TRANSCENDENTAL):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("math", "cmath", "numpy"):
            found.extend(f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                         if a.name in TRANSCENDENTAL or a.name == "*")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not all(
                isinstance(side, ast.Constant) and isinstance(side.value, int)
                for side in (node.left, node.right)):
            found.append(f"line {node.lineno}: ** (on floats, libm's pow)")
    return found


@pytest.mark.parametrize("module", PER_TICK)
def test_per_tick_code_uses_only_correctly_rounded_arithmetic(module: str) -> None:
    source = (Path(ecu_sim.__file__).parent / module).read_text(encoding="utf-8")
    assert transcendental_uses(source) == [], f"{module}: libm results differ between processors"


@pytest.mark.parametrize("call", ["math.atan(x)", "math.sin(x)", "x ** 0.5", "x ** 2", "math.exp(-x)"])
def test_the_check_finds_a_transcendental_call(call: str) -> None:
    assert transcendental_uses(f"import math\ndef step(x):\n    return {call}\n")


def test_the_grade_force_is_m_g_sin_atan_grade_within_rounding() -> None:
    for grade_pct in (-9.78, -9.58, -6.89, -5.48, 0.0, 5.48, 6.89, 9.58, 9.78):
        expected = P.mass_kg * P.gravity_mps2 * math.sin(math.atan(grade_pct / 100.0))
        assert TRUCK.grade_force_n(grade_pct) == pytest.approx(expected, rel=1e-15, abs=1e-12)
