"""The class6 truck out of gear: neutral on a controller's request (TC1, eco-roll), and back in gear.

In neutral the wheels roll against the road alone (no motoring drag, the engine's inertia not
carried) and the engine idles on the fuel map's idle fuel whatever the pedal: the low-idle
governor holds it. When the request ends, the gear the schedule would hold at this speed is
selected and the engine is brought to that gear's speed with the driveline still open, for one
shift time; only then does the clutch close (the model's ordinary end of a shift), with the
engine already turning at the wheels' speed, so the engagement adds no torque of its own.

The state keeps ``neutral`` set while out of gear, in neutral or synchronising; ``gear`` is the
gear last engaged, or the one being engaged.
"""

from __future__ import annotations

from typing import Protocol

from ecu_sim.vehicle.class6_state import Class6State
from ecu_sim.vehicle.engine import Engine
from ecu_sim.vehicle.fuel import FuelMap
from ecu_sim.vehicle.transmission import ShiftSchedule


class _Params(Protocol):
    @property
    def shift_time_s(self) -> float: ...

    @property
    def schedule(self) -> ShiftSchedule: ...

    @property
    def gear_ratios(self) -> tuple[float, ...]: ...


class OutOfGearModel(Protocol):
    """What of the class6 model a tick out of gear needs (ecu_sim.vehicle.class6.Class6Model)."""

    @property
    def params(self) -> _Params: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def fuel(self) -> FuelMap: ...

    def rpm_in(self, gear: int, speed_mps: float) -> float: ...


def gear_and_sync(model: OutOfGearModel, s: Class6State, requested: bool) -> tuple[int, float]:
    """The gear the driveline is set for and the synchronising time left after this tick's start:
    none while neutral is asked for; a full shift time from the tick the request ends."""
    if requested:
        return s.gear, 0.0
    if s.shift_left_s > 0.0:
        return s.gear, s.shift_left_s
    return engage_gear(model, s.speed_mps), model.params.shift_time_s


def after(model: OutOfGearModel, s: Class6State, requested: bool, gear: int, shift_left: float, v: float,
          distance: float, brake: float, dt_s: float) -> Class6State:
    """The state after a tick out of gear that took the truck to ``v`` and ``distance``."""
    idle = model.engine.idle_rpm
    rpm = idle if requested else max(idle, model.rpm_in(gear, v))
    fuel_lph = model.fuel.rate_lph(rpm, 0.0)
    restarted = not requested and s.shift_left_s <= 0.0
    return s._replace(speed_mps=v, distance_m=distance, gear=gear, selected=gear, shift_left_s=shift_left,
                      since_shift_s=0.0 if restarted else s.since_shift_s + dt_s, engine_rpm=rpm,
                      engine_nm=0.0, demand_nm=0.0, brake_pct=brake, fuel_rate_lph=fuel_lph,
                      fuel_used_l=s.fuel_used_l + fuel_lph * dt_s / 3600.0,
                      accel_mps2=(v - s.speed_mps) / dt_s, engine_demand_nm=0.0, retarder_nm=0.0,
                      neutral=True)


def engage_gear(model: OutOfGearModel, speed_mps: float) -> int:
    """The highest gear that puts the engine clear above the released pedal's downshift line at
    ``speed_mps``, so the schedule keeps it once engaged; first gear below that."""
    schedule = model.params.schedule
    least = schedule.down_rpm(0.0) + schedule.margin_rpm
    for gear in range(len(model.params.gear_ratios), 1, -1):
        if model.rpm_in(gear, speed_mps) >= least:
            return gear
    return 1
