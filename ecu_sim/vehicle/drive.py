"""One interface for the ECU's vehicle: a model and its road, advanced one fixed tick at a time.

The ECU does not know which truck it drives. It hands each tick's pedal and brake to a
:class:`Vehicle` and reads back speed, distance and grade, and, when the vehicle has a driveline,
its :class:`Driveline` readings (gear, engine speed and torque) for the engine messages. The
``testbed`` vehicle is the original model on a grade schedule, stepped exactly as before, so its
runs stay bit-for-bit the same; it has no brake and no driveline. On a road of elevations it
takes the grade under its wheelbase (:class:`GradeUnderAxles`), as the ``class6`` truck does.
"""

from __future__ import annotations

import math
from typing import Generic, NamedTuple, Protocol, TypeGuard, TypeVar, runtime_checkable

from ecu_sim.vehicle.class6 import Class6Model, Class6State
from ecu_sim.vehicle.engine import EngineCommand
from ecu_sim.vehicle.model import TruckState
from ecu_sim.vehicle.road import grade_pct_of

PRESETS = ("testbed", "class6")

#: what a prepared step yields: the new state with what the vehicle read on the way (grade, slope)
Result = TypeVar("Result")


class StepAhead(Generic[Result]):
    """One step computed before it is due, kept for the state and demands it was computed from.

    ``take`` hands it over once, and only for that very state (the same object: nothing stepped
    it since) and equal demands; a demand that changed in the meantime gets None, and the vehicle
    steps afresh. The model is pure, so a step taken is the step it would have computed.
    """

    def __init__(self) -> None:
        self._for: tuple[object, tuple[float, ...]] | None = None
        self._result: Result | None = None

    def keep(self, state: object, demands: tuple[float, ...], result: Result) -> None:
        self._for, self._result = (state, demands), result

    def take(self, state: object, demands: tuple[float, ...]) -> Result | None:
        kept, self._for = self._for, None
        if kept is None or kept[0] is not state or kept[1] != demands:
            return None
        return self._result


class Plant(Protocol):
    """The testbed-shaped truck: the built-in model, or one that lives in another program
    (``--plant``), whose speed may be NaN when it is not known (then sent as not available)."""

    def step(self, state: TruckState, app_pct: float, grade_pct: float, dt_s: float) -> TruckState: ...


class GradeProfile(Protocol):
    """A grade by distance: the built-in schedule, or a road whose grade a co-simulation peer sets."""

    def grade_at(self, distance_m: float) -> float: ...


@runtime_checkable
class Terrain(Protocol):
    """Heights along a road, which the ``class6`` truck feels under its axles: a road of
    elevations (:class:`ecu_sim.vehicle.road.Road`), or one whose slope a co-simulation peer sets.
    Checked at construction only (which vehicle a route is for), never per tick."""

    def elevation_at(self, distance_m: float) -> float: ...

    def sin_under_axles(self, distance_m: float, wheelbase_m: float) -> float: ...


class GradeUnderAxles:
    """A road's grade as the testbed truck takes it: the slope between its axles, the one the
    ``class6`` truck feels, handed over as the grade its model asks for.

    The testbed model turns a grade back into the sine of the slope, so its grade force is the
    class6 truck's on the same road, and the grade it reports is the one it drove on. Only
    ``grade_at``: a Terrain check must not take this for a road of heights.
    """

    __slots__ = ("road", "wheelbase_m")

    def __init__(self, road: Terrain, wheelbase_m: float) -> None:
        self.road = road
        self.wheelbase_m = wheelbase_m

    def grade_at(self, distance_m: float) -> float:
        return grade_pct_of(self.road.sin_under_axles(distance_m, self.wheelbase_m))


def drives_class6(route: GradeProfile | Terrain, preset: str) -> TypeGuard[Terrain]:
    """Whether the ECU's truck is the ``class6`` one: the preset says so, not the route, since
    the testbed truck drives a road of heights too."""
    return preset == "class6" and isinstance(route, Terrain)


def testbed_route(route: GradeProfile | Terrain, wheelbase_m: float) -> GradeProfile:
    """The route as the testbed truck drives it: a grade profile as it is, a road under its axles."""
    return GradeUnderAxles(route, wheelbase_m) if isinstance(route, Terrain) else route


class Driveline(NamedTuple):
    """What the engine and transmission report on the wire.

    The fuel economies are km/L: the instantaneous one is the speed over the fuel rate (NaN, sent
    as not available, while the fuel is cut), the average one the distance over the fuel used
    since the start (NaN before any fuel).
    """

    gear: int
    selected: int
    engine_rpm: float
    engine_pct: float
    demand_pct: float
    fuel_rate_lph: float = 0.0
    fuel_used_l: float = 0.0
    fuel_economy_kml: float = math.nan
    average_economy_kml: float = math.nan


class Vehicle(Protocol):
    """The ECU's view of a truck on its road."""

    @property
    def state(self) -> TruckState | Class6State: ...

    @property
    def grade_pct(self) -> float: ...

    @property
    def elevation_m(self) -> float | None: ...

    @property
    def brake_pct(self) -> float | None: ...

    def driveline(self) -> Driveline | None: ...

    def step(self, app_pct: float, brake_pct: float) -> None: ...

    def prepare(self, app_pct: float, brake_pct: float) -> None:
        """Compute the next step for these demands ahead of time, committing nothing: a ``step``
        with the same demands then only takes it (a real-time clock does this before its
        deadline, so the step does not stand between the deadline and the send)."""
        ...


class TestbedVehicle:
    """The testbed's model on a grade schedule: no brake, no driveline, unchanged arithmetic."""

    __test__ = False  # not a pytest test class, whatever its name says
    elevation_m = None
    brake_pct = None

    def __init__(self, model: Plant, route: GradeProfile, initial_speed_kph: float,
                 dt_s: float, pure: bool = True) -> None:
        """``pure`` False: stepping the model has effects (a plant in another program), so it is
        never stepped ahead."""
        self.model = model
        self.route = route
        self.dt_s = dt_s
        self.state = TruckState.from_kph(initial_speed_kph)
        self.grade_pct = route.grade_at(0.0)
        self._pure = pure
        self._ahead: StepAhead[tuple[float, TruckState]] = StepAhead()

    def driveline(self) -> None:
        return None

    def prepare(self, app_pct: float, brake_pct: float) -> None:
        if self._pure:
            state = self.state
            grade = self.route.grade_at(state.distance_m)
            self._ahead.keep(state, (app_pct,), (grade, self.model.step(state, app_pct, grade, self.dt_s)))

    def step(self, app_pct: float, brake_pct: float) -> None:
        ahead = self._ahead.take(self.state, (app_pct,))
        if ahead is not None:
            self.grade_pct, self.state = ahead
            return
        self.grade_pct = self.route.grade_at(self.state.distance_m)
        self.state = self.model.step(self.state, app_pct, self.grade_pct, self.dt_s)


class Class6Vehicle:
    """The ``class6`` truck on a road of elevations, with the slope taken under its two axles."""

    def __init__(self, model: Class6Model, road: Terrain, wheelbase_m: float, initial_speed_kph: float,
                 dt_s: float) -> None:
        self.model = model
        self.road = road
        self.wheelbase_m = wheelbase_m
        self.dt_s = dt_s
        self.state = model.initial(initial_speed_kph)
        self._sin = road.sin_under_axles(0.0, wheelbase_m)
        self._reference = model.engine.reference_nm
        self._ahead: StepAhead[tuple[float, Class6State]] = StepAhead()

    @property
    def grade_pct(self) -> float:
        return grade_pct_of(self._sin)

    @property
    def elevation_m(self) -> float:
        return self.road.elevation_at(self.state.distance_m)

    @property
    def brake_pct(self) -> float:
        return self.state.brake_pct

    def restart(self, model: Class6Model) -> None:
        """The truck's controllers restarted from other calibrations: the truck goes on as it is
        (its state carried over), stepped by ``model`` from the next tick."""
        self.model = model
        self._reference = model.engine.reference_nm
        self._ahead = StepAhead()

    def driveline(self) -> Driveline:
        s = self.state
        scale = 100.0 / self._reference
        rate, used = s.fuel_rate_lph, s.fuel_used_l
        if s.neutral:  # out of gear: neutral is gear 0 on the wire; the gear being engaged is selected
            gear, selected = 0, (s.selected if s.shift_left_s > 0.0 else 0)
        else:
            gear, selected = s.gear, s.selected
        return Driveline(gear, selected, s.engine_rpm, s.engine_nm * scale, s.demand_nm * scale,
                         rate, used,
                         s.speed_mps * 3.6 / rate if rate > 0.0 else math.nan,
                         s.distance_m * 0.001 / used if used > 0.0 else math.nan)

    def prepare(self, app_pct: float, brake_pct: float, command: EngineCommand | None = None,
                neutral: bool = False) -> None:
        """As :meth:`Vehicle.prepare`; ``command`` is the engine controller's (TSC1, retarder),
        ``neutral`` a transmission controller's request for neutral (TC1)."""
        state = self.state
        sin = self.road.sin_under_axles(state.distance_m, self.wheelbase_m)
        self._ahead.keep(state, _demands(app_pct, brake_pct, command, neutral),
                         (sin, self.model.step(state, app_pct, brake_pct, sin, self.dt_s, command, neutral)))

    def step(self, app_pct: float, brake_pct: float, command: EngineCommand | None = None,
             neutral: bool = False) -> None:
        """One tick; ``command`` is the engine controller's (TSC1, retarder), None without one;
        ``neutral`` asks the transmission for neutral (TC1), False for its own shift schedule."""
        ahead = self._ahead.take(self.state, _demands(app_pct, brake_pct, command, neutral))
        if ahead is not None:
            self._sin, self.state = ahead
            return
        self._sin = self.road.sin_under_axles(self.state.distance_m, self.wheelbase_m)
        self.state = self.model.step(self.state, app_pct, brake_pct, self._sin, self.dt_s, command, neutral)


def _demands(app_pct: float, brake_pct: float, command: EngineCommand | None,
             neutral: bool = False) -> tuple[float, ...]:
    """What a step ahead is kept for: the demands, with a command's fields (inf for "none") and
    a request for neutral (as -1, which no pedal takes)."""
    asked = (app_pct, brake_pct) if not neutral else (app_pct, brake_pct, -1.0)
    if command is None:
        return asked
    torque, limit = command.torque_pct, command.limit_pct
    return (*asked, math.inf if torque is None else torque, math.inf if limit is None else limit,
            command.retarder_nm)
