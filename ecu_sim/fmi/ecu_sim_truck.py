"""The FMU's model: ecu-sim's truck and route behind PythonFMU's slave interface.

This file is the script PythonFMU packs (its name becomes the FMU's module); it runs inside the
importing tool, on that host's Python, next to a copy of the few ecu-sim modules the model needs
(:mod:`ecu_sim.fmi.export`), so the host needs no ecu-sim installation. A communication step
of any size is integrated in equal sub-steps no longer than ``max_step_s``, the ECU's period by
default, so the FMU gives the speeds the ECU puts on the bus.

``class6`` (a fixed parameter) swaps the testbed's model for the ``class6`` truck of
``--vehicle class6`` with its defaults: engine, automatic gearbox, service brake (the
``brake_pct`` input) and the engine's fuel map, whose gear, engine speed and fuel are outputs
(0 with the testbed's model, which has no engine).
"""

from __future__ import annotations

import dataclasses
import math

from pythonfmu import Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Real
from pythonfmu.variables import Boolean

from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from ecu_sim.vehicle.model import TruckModel, TruckState
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.route import GradeSchedule

#: the TruckParams fields, every one a parameter of the FMU
TRUCK_FIELDS = tuple(f.name for f in dataclasses.fields(TruckParams))


class EcuSimTruck(Fmi2Slave):  # type: ignore[misc]  # pythonfmu ships no type information
    author = "ecu-sim"
    description = "ecu-sim's Class 6 truck: longitudinal dynamics (road load, grade, inertia, rated power)"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        defaults = TruckParams()
        for name in TRUCK_FIELDS:
            setattr(self, name, float(getattr(defaults, name)))
            self.register_variable(Real(name, causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.fixed,
                                        description=f"[truck] {name} of ecu-sim"))
        self.initial_speed_kph = 80.0
        self.max_step_s = 0.1
        self.use_route = False
        self.class6 = False
        self.app_pct = 0.0
        self.brake_pct = 0.0
        self.gear = 0.0
        self.engine_rpm = 0.0
        self.fuel_rate_lph = 0.0
        self.fuel_used_l = 0.0
        self.grade_pct = 0.0
        self.speed_kph = self.initial_speed_kph
        self.distance_m = 0.0
        self.road_grade_pct = 0.0
        self.register_variable(Real("initial_speed_kph", causality=Fmi2Causality.parameter,
                                    variability=Fmi2Variability.fixed, description="speed at t = 0"))
        self.register_variable(Real("max_step_s", causality=Fmi2Causality.parameter,
                                    variability=Fmi2Variability.fixed,
                                    description="longest integration sub-step (the ECU's period)"))
        self.register_variable(Boolean("use_route", causality=Fmi2Causality.parameter,
                                       variability=Fmi2Variability.fixed,
                                       description="grade from ecu-sim's testbed route by distance "
                                                   "instead of the grade_pct input"))
        self.register_variable(Boolean("class6", causality=Fmi2Causality.parameter,
                                       variability=Fmi2Variability.fixed,
                                       description="the class6 truck (engine, gearbox, brake, fuel map) "
                                                   "instead of the testbed's model"))
        self.register_variable(Real("app_pct", causality=Fmi2Causality.input,
                                    description="accelerator pedal position, %"))
        self.register_variable(Real("brake_pct", causality=Fmi2Causality.input,
                                    description="service brake demand, % (class6 only)"))
        self.register_variable(Real("grade_pct", causality=Fmi2Causality.input,
                                    description="road grade, %, positive uphill (unless use_route)"))
        for name, text in (("speed_kph", "vehicle speed, km/h"), ("distance_m", "distance travelled, m"),
                           ("road_grade_pct", "grade of the last sub-step, %"),
                           ("gear", "engaged gear (class6; 0 without an engine)"),
                           ("engine_rpm", "engine speed, rpm (class6)"),
                           ("fuel_rate_lph", "fuel rate, L/h, from the engine's map (class6)"),
                           ("fuel_used_l", "fuel used since the start, L (class6)")):
            # exact: the start values are the state at t = 0, so no initial unknowns to compute
            self.register_variable(Real(name, causality=Fmi2Causality.output, initial=Fmi2Initial.exact,
                                        description=text))
        self._model: TruckModel | None = None
        self._state = TruckState.from_kph(self.initial_speed_kph)
        self._class6: Class6Model | None = None
        self._truck: Class6State | None = None
        self._route = GradeSchedule.testbed()

    def exit_initialization_mode(self) -> None:
        params = TruckParams(**{name: float(getattr(self, name)) for name in TRUCK_FIELDS})
        self._model = TruckModel(params)
        self._state = TruckState.from_kph(self.initial_speed_kph)
        self.speed_kph, self.distance_m = self._state.speed_kph, self._state.distance_m
        if self.class6:
            self._class6 = Class6Model(Class6Params())
            self._truck = self._class6.initial(float(self.initial_speed_kph))
            self._report(self._truck)

    def do_step(self, current_time: float, step_size: float) -> bool:
        model = self._model
        if model is None or not step_size > 0.0:
            return False
        count = max(1, math.ceil(step_size / self.max_step_s - 1e-9))
        dt = step_size / count
        if self._class6 is not None and self._truck is not None:
            self._step_class6(self._class6, self._truck, count, dt)
            return True
        state = self._state
        for _ in range(count):
            grade = self._route.grade_at(state.distance_m) if self.use_route else float(self.grade_pct)
            state = model.step(state, float(self.app_pct), grade, dt)
            self.road_grade_pct = grade
        self._state = state
        self.speed_kph, self.distance_m = state.speed_kph, state.distance_m
        return True

    def _step_class6(self, model: Class6Model, truck: Class6State, count: int, dt: float) -> None:
        for _ in range(count):
            grade = self._route.grade_at(truck.distance_m) if self.use_route else float(self.grade_pct)
            x = grade * 0.01
            sin = x / math.sqrt(1.0 + x * x)
            truck = model.step(truck, float(self.app_pct), float(self.brake_pct), sin, dt)
            self.road_grade_pct = grade
        self._truck = truck
        self._report(truck)

    def _report(self, truck: Class6State) -> None:
        self.speed_kph, self.distance_m = truck.speed_kph, truck.distance_m
        self.gear, self.engine_rpm = float(truck.gear), truck.engine_rpm
        self.fuel_rate_lph, self.fuel_used_l = truck.fuel_rate_lph, truck.fuel_used_l
