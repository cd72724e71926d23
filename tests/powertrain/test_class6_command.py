"""The class6 truck under an engine controller's command (TSC1 torque and limit, the retarder)."""

from __future__ import annotations

import pytest

from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from ecu_sim.vehicle.drive import Class6Vehicle
from ecu_sim.vehicle.engine import EngineCommand
from ecu_sim.vehicle.road import Road

TICK_S = 0.01


@pytest.fixture(scope="module")
def model() -> Class6Model:
    return Class6Model(Class6Params())


def run(model: Class6Model, state: Class6State, app: float, command: EngineCommand | None,
        seconds: float, brake: float = 0.0) -> Class6State:
    for _ in range(round(seconds / TICK_S)):
        state = model.step(state, app, brake, 0.0, TICK_S, command)
    return state


def cruising(model: Class6Model) -> Class6State:
    """60 km/h in a high gear, driveline locked, after a second of settling at a light pedal."""
    return run(model, model.initial(60.0), 30.0, None, 1.0)


def test_an_empty_command_steps_exactly_as_no_command(model: Class6Model) -> None:
    start = cruising(model)
    assert run(model, start, 70.0, EngineCommand(), 2.0) == run(model, start, 70.0, None, 2.0)


def test_tsc1_torque_0_pct_against_a_full_pedal_slows_the_truck(model: Class6Model) -> None:
    start = cruising(model)
    pedal = run(model, start, 100.0, None, 2.0)
    commanded = run(model, start, 100.0, EngineCommand(torque_pct=0.0), 2.0)
    assert pedal.speed_mps > start.speed_mps > commanded.speed_mps


def test_tsc1_torque_0_pct_leaves_the_engine_its_motoring_torque(model: Class6Model) -> None:
    state = run(model, cruising(model), 100.0, EngineCommand(torque_pct=0.0), 0.5)
    assert state.engine_nm == pytest.approx(model.engine.motoring.at(state.engine_rpm), abs=1.0)
    assert model.engine.indicated_pct(state.engine_nm, state.engine_rpm) == pytest.approx(0.0, abs=0.2)


def test_the_drivers_demand_stays_the_pedals_under_a_command(model: Class6Model) -> None:
    state = run(model, cruising(model), 100.0, EngineCommand(torque_pct=0.0), 0.5)
    assert state.demand_nm == pytest.approx(model.engine.full.at(state.engine_rpm))
    assert state.engine_demand_nm < 0.0 < state.demand_nm


def test_a_torque_limit_caps_the_torque_the_pedal_asks(model: Class6Model) -> None:
    state = run(model, cruising(model), 100.0, EngineCommand(limit_pct=20.0), 0.5)
    assert model.engine.indicated_pct(state.engine_nm, state.engine_rpm) == pytest.approx(20.0, abs=0.5)


def test_a_torque_limit_above_the_pedals_demand_changes_nothing(model: Class6Model) -> None:
    start = cruising(model)
    assert (run(model, start, 20.0, EngineCommand(limit_pct=90.0), 1.0).speed_mps
            == run(model, start, 20.0, None, 1.0).speed_mps)


def test_a_commanded_torque_is_bounded_by_the_full_load_curve(model: Class6Model) -> None:
    state = run(model, cruising(model), 0.0, EngineCommand(torque_pct=125.0), 0.5)
    assert state.engine_nm == pytest.approx(model.engine.full.at(state.engine_rpm), rel=1e-9)


def test_the_retarder_slows_the_truck_while_the_driveline_is_locked(model: Class6Model) -> None:
    start = cruising(model)
    coasting = run(model, start, 0.0, None, 2.0)
    retarding = run(model, start, 0.0, EngineCommand(retarder_nm=-600.0), 2.0)
    assert retarding.speed_mps < coasting.speed_mps
    assert retarding.retarder_nm == -600.0


def test_the_retarder_does_nothing_at_a_standstill(model: Class6Model) -> None:
    state = run(model, model.initial(0.0), 0.0, EngineCommand(retarder_nm=-600.0), 0.5)
    assert (state.speed_mps, state.retarder_nm) == (0.0, 0.0)


def test_at_a_zero_torque_command_from_a_standstill_the_engine_idles(model: Class6Model) -> None:
    state = run(model, model.initial(0.0), 50.0, EngineCommand(torque_pct=0.0), 1.0)
    assert (state.speed_mps, state.engine_rpm) == (0.0, model.params.idle_rpm)


def test_the_state_reports_the_ticks_acceleration(model: Class6Model) -> None:
    start = cruising(model)
    after = model.step(start, 100.0, 0.0, 0.0, TICK_S)
    assert after.accel_mps2 == (after.speed_mps - start.speed_mps) / TICK_S


def test_the_vehicle_passes_the_command_and_a_step_ahead_keeps_it() -> None:
    def vehicle() -> Class6Vehicle:
        road = Road([100.0] * 50, 10.0, loop=False)
        return Class6Vehicle(Class6Model(Class6Params()), road, 5.5, 60.0, TICK_S)

    ahead, plain = vehicle(), vehicle()
    for k in range(30):
        command = EngineCommand(torque_pct=None if k < 10 else 0.0, retarder_nm=-300.0 if k > 20 else 0.0)
        ahead.prepare(80.0, 0.0, command)
        ahead.step(80.0, 0.0, command)
        plain.step(80.0, 0.0, command)
        assert ahead.state == plain.state


def test_a_step_prepared_for_another_command_is_not_taken() -> None:
    road = Road([100.0] * 50, 10.0, loop=False)
    truck = Class6Vehicle(Class6Model(Class6Params()), road, 5.5, 60.0, TICK_S)
    start = truck.state
    truck.prepare(100.0, 0.0, None)
    truck.step(100.0, 0.0, EngineCommand(torque_pct=0.0))
    assert truck.state.speed_mps < start.speed_mps
