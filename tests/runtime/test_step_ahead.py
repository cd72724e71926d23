"""A real-time ECU steps its truck ahead of the deadline; the result is the step it would take."""

from __future__ import annotations

from collections.abc import Callable

from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from ecu_sim.vehicle.drive import Class6Vehicle, StepAhead, TestbedVehicle, Vehicle
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.road import Road
from ecu_sim.vehicle.route import GradeSchedule

HILLS = GradeSchedule([(0.0, 0.0), (30.0, 4.0), (60.0, -2.0)])


def a_testbed_truck() -> TestbedVehicle:
    return TestbedVehicle(TruckModel(TruckParams()), HILLS, 60.0, 0.1)


def a_class6_truck() -> Class6Vehicle:
    road = Road([100.0 + 0.5 * i for i in range(400)], 10.0, loop=False)
    return Class6Vehicle(Class6Model(Class6Params()), road, 5.5, 60.0, 0.1)


def drive(vehicle: TestbedVehicle | Class6Vehicle, ahead: bool) -> list[tuple[object, float]]:
    """Fifty steps of changing demands, each prepared first when ``ahead``; every state."""
    states: list[tuple[object, float]] = []
    for k in range(50):
        app, brake = (k * 7) % 100, (30.0 if k % 11 == 0 else 0.0)
        if ahead:
            vehicle.prepare(app, brake)
        vehicle.step(app, brake)
        states.append((vehicle.state, vehicle.grade_pct))
    return states


def test_the_testbed_truck_stepped_ahead_is_bit_identical() -> None:
    assert drive(a_testbed_truck(), ahead=True) == drive(a_testbed_truck(), ahead=False)


def test_the_class6_truck_stepped_ahead_is_bit_identical() -> None:
    assert drive(a_class6_truck(), ahead=True) == drive(a_class6_truck(), ahead=False)


def stepped_after_preparing_other_demands(make: Callable[[], Vehicle], prepared: tuple[float, float],
                                          used: tuple[float, float]) -> bool:
    """Whether a truck prepared for ``prepared`` and stepped with ``used`` ends where one stepped
    with ``used`` alone does."""
    ahead, plain = make(), make()
    ahead.prepare(*prepared)
    ahead.step(*used)
    plain.step(*used)
    return ahead.state == plain.state


def test_a_demand_that_changed_after_the_step_ahead_is_stepped_afresh() -> None:
    """A frame that came in the last moments before the deadline is the one used."""
    assert stepped_after_preparing_other_demands(a_testbed_truck, (10.0, 0.0), (90.0, 0.0))


def test_a_class6_brake_demand_that_changed_is_stepped_afresh() -> None:
    assert stepped_after_preparing_other_demands(a_class6_truck, (0.0, 0.0), (0.0, 80.0))


def test_a_step_ahead_commits_nothing() -> None:
    vehicle = a_testbed_truck()
    before = vehicle.state
    vehicle.prepare(100.0, 0.0)
    assert vehicle.state is before


class CountingPlant:
    """A plant whose steps have effects (another program's truck): each one is counted."""

    def __init__(self) -> None:
        self.steps = 0

    def step(self, state: TruckState, app_pct: float, grade_pct: float, dt_s: float) -> TruckState:
        self.steps += 1
        return state


def test_a_plant_with_effects_is_never_stepped_ahead() -> None:
    plant = CountingPlant()
    vehicle = TestbedVehicle(plant, HILLS, 60.0, 0.1, pure=False)
    vehicle.prepare(50.0, 0.0)
    vehicle.step(50.0, 0.0)
    assert plant.steps == 1


def test_a_step_ahead_is_taken_once() -> None:
    ahead: StepAhead[str] = StepAhead()
    state = object()
    ahead.keep(state, (50.0,), "prepared")
    assert (ahead.take(state, (50.0,)), ahead.take(state, (50.0,))) == ("prepared", None)


def test_a_step_ahead_is_not_taken_for_another_state() -> None:
    ahead: StepAhead[str] = StepAhead()
    ahead.keep(object(), (50.0,), "prepared")
    assert ahead.take(object(), (50.0,)) is None
