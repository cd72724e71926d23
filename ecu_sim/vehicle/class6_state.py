"""The class6 truck's state after a tick, apart from its model so that the parts of the model in
modules of their own (ecu_sim.vehicle.neutral) read it without importing the model."""

from __future__ import annotations

from typing import NamedTuple


class Class6State(NamedTuple):
    """The truck after a tick. ``gear`` is engaged; ``selected`` differs from it during a shift."""

    speed_mps: float
    distance_m: float
    gear: int = 1
    selected: int = 1
    shift_left_s: float = 0.0
    since_shift_s: float = 1e9
    engine_rpm: float = 0.0
    engine_nm: float = 0.0
    demand_nm: float = 0.0
    brake_pct: float = 0.0
    #: fuel rate at the tick's end, L/h, and fuel used since the start: that rate times each tick
    fuel_rate_lph: float = 0.0
    fuel_used_l: float = 0.0
    #: the tick's mean acceleration over the road, which an external brake request (XBR) closes on
    accel_mps2: float = 0.0
    #: the torque the engine was asked for after the controller's command and limit (``demand_nm``
    #: is the pedal's alone), and the retarder's torque at the crank that acted (negative, or 0)
    engine_demand_nm: float = 0.0
    retarder_nm: float = 0.0
    #: out of gear: in neutral (a controller's request, eco-roll), or synchronising the engine to
    #: ``gear`` before the clutch closes again after neutral
    neutral: bool = False

    @property
    def speed_kph(self) -> float:
        return self.speed_mps * 3.6
