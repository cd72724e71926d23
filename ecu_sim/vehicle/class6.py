"""A GEM-style medium heavy-duty vocational truck: engine, 6-speed automatic, brakes and road load.

The vehicle equation is GEM's (40 CFR 1036.545(f)(3), the vehicle model of the powertrain test):

    (M + M_rot + J_e (i_g i_a / r)^2) dv/dt = T i_a Eff_axle / r - Crr M g cos(theta)
                                               - rho CdA v^2 / 2 - F_brake - M g sin(theta)

with T the torque at the axle input (engine torque through the gear, the transmission's efficiency
and, at launch, the torque converter), ``Eff_axle`` taken as its inverse when the torque is negative
(engine braking) as the CFR prescribes, and the engine and transmission inertia reflected through
the gear while the driveline is locked. ``sin(theta)`` is what the road gives (the slope under the
axles), so no trigonometric function runs per tick: only + - * / and sqrt, correctly rounded on
every processor, so a run is bit-identical everywhere.

Fixed step and pure: the gear, the shift in progress and the time since the last shift are state
passed in and out, never wall-clock time. Shifting is decided once per tick; the speed is
integrated in sub-steps of the tick (explicit Euler, as in the CFR's own worked example) because
the engine's torque changes with its speed within a tick, steeply so at the governor.

Fuel (:mod:`ecu_sim.vehicle.fuel`) is looked up once per tick at the engine's speed and the torque
it delivers at the tick's end, and summed over the ticks: cut at or below the motoring torque.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ecu_sim.checks import non_finite_fields
from ecu_sim.vehicle import neutral
from ecu_sim.vehicle.class6_state import Class6State as Class6State
from ecu_sim.vehicle.engine import Engine, EngineCommand
from ecu_sim.vehicle.fuel import FuelMap, FuelTable
from ecu_sim.vehicle.fuel_data import cat3126e
from ecu_sim.vehicle.transmission import ShiftSchedule, TorqueConverter

_RPM_PER_RAD_S = 60.0 / (2.0 * math.pi)

#: full-load torque (rpm, N m) of a medium heavy-duty diesel of about 200 kW; the governor takes
#: the torque to zero between 2400 and 2600 rpm
FULL_LOAD = ((700.0, 600.0), (1000.0, 900.0), (1200.0, 1050.0), (1600.0, 1050.0), (2000.0, 950.0),
             (2400.0, 800.0), (2600.0, 0.0))
#: motoring (drag) torque of the same engine, negative: friction and pumping with no fuel
MOTORING = ((700.0, -60.0), (1500.0, -100.0), (2600.0, -160.0))
#: the payload the test mass carries, kg: GEM's standard payload of a vocational Medium HDV, 5.6 tons
#: of 2000 lb (40 CFR 1037.801); per-ton figures divide by it plus any added payload
STANDARD_PAYLOAD_KG = 5.6 * 907.18474
#: fields that are tables or parts rather than numbers
_STRUCTURED = frozenset({"gear_ratios", "full_load", "motoring", "schedule", "converter", "fuel_map"})
#: limits whose default, infinity, is "none": the governor that keeps to them never acts then
_LIMITS = ("road_speed_limit_kph", "torque_limit_nm")
#: the road speed governor takes the pedal from full to none over this span below the limit
ROAD_SPEED_DROOP_KPH = 2.0


@dataclass(frozen=True, slots=True)
class Class6Params:
    """The truck; the defaults are the vocational Medium HDV of 40 CFR 1036.545 (docs/vehicle.md)."""

    mass_kg: float = 11408.0
    rotating_mass_kg: float = 340.0
    crr: float = 0.0077
    cda_m2: float = 5.4
    air_density_kg_m3: float = 1.1845
    gravity_mps2: float = 9.80665
    axle_ratio: float = 4.0
    axle_efficiency: float = 0.955
    tire_radius_m: float = 0.399
    gear_ratios: tuple[float, ...] = (3.10, 1.81, 1.41, 1.00, 0.71, 0.61)
    transmission_efficiency: float = 0.95
    engine_inertia_kg_m2: float = 2.5
    idle_rpm: float = 700.0
    governed_rpm: float = 2600.0
    full_load: tuple[tuple[float, float], ...] = FULL_LOAD
    motoring: tuple[tuple[float, float], ...] = MOTORING
    shift_time_s: float = 0.5
    schedule: ShiftSchedule = field(default_factory=ShiftSchedule)
    converter: TorqueConverter = field(default_factory=TorqueConverter)
    max_brake_decel_g: float = 0.6
    substeps: int = 4
    #: the published fuel map, scaled to this engine (ecu_sim.vehicle.fuel)
    fuel_map: FuelTable = field(default_factory=cat3126e)
    #: J1939's maximum vehicle speed limit: the engine governs the truck to it (inf: no limit)
    road_speed_limit_kph: float = math.inf
    #: the engine's torque limit at the crank (inf: the full-load curve alone)
    torque_limit_nm: float = math.inf

    def problems(self) -> list[str]:
        found = [problem for problem in non_finite_fields(self)
                 if problem.split(" ", 1)[0] not in _STRUCTURED | set(_LIMITS)]
        found += [f"{name} must be > 0 (got {getattr(self, name)}); inf: no limit" for name in _LIMITS
                  if not getattr(self, name) > 0.0]
        if found:
            return found
        for name in ("mass_kg", "crr", "cda_m2", "air_density_kg_m3", "gravity_mps2", "axle_ratio",
                     "tire_radius_m", "max_brake_decel_g"):
            if not getattr(self, name) > 0.0:
                found.append(f"{name} must be > 0 (got {getattr(self, name)})")
        for name in ("axle_efficiency", "transmission_efficiency"):
            if not 0.0 < getattr(self, name) <= 1.0:
                found.append(f"{name} must be within 0 < x <= 1 (got {getattr(self, name)})")
        if self.substeps < 1:
            found.append(f"substeps must be >= 1 (got {self.substeps})")
        return found + self.schedule.problems(self.gear_ratios, self.idle_rpm)


class Class6Model:
    """The equations above for one parameter set, constants computed once."""

    def __init__(self, params: Class6Params) -> None:
        problems = params.problems()
        if problems:
            raise ValueError("invalid Class6Params: " + "; ".join(problems))
        self.params = p = params
        self.engine = Engine(p.full_load, p.motoring, p.idle_rpm, p.governed_rpm)
        self.fuel = FuelMap(p.fuel_map, p.idle_rpm, p.full_load, self.engine.motoring)
        self._weight_n = p.mass_kg * p.gravity_mps2
        self._half_rho_cda = 0.5 * p.air_density_kg_m3 * p.cda_m2
        self._brake_max_n = p.max_brake_decel_g * self._weight_n
        #: the governor's lowest speed in m/s at which the road speed limit begins to take the pedal
        self._governed_from_mps = (p.road_speed_limit_kph - ROAD_SPEED_DROOP_KPH) / 3.6
        #: a torque limit at or above the full-load peak cannot act, so it is not looked at
        self._limits_torque = p.torque_limit_nm < self.engine.reference_nm
        self._free_mass = p.mass_kg + p.rotating_mass_kg
        overall = [g * p.axle_ratio for g in p.gear_ratios]
        #: per gear: engine rpm per m/s, and the inertia mass while the driveline is locked
        self._rpm_per_mps = [k / p.tire_radius_m * _RPM_PER_RAD_S for k in overall]
        lo = min(p.full_load[0][0], p.motoring[0][0])
        hi = max(p.full_load[-1][0], p.motoring[-1][0])
        step = 10.0
        self._curve_lo, self._curve_inv = lo, 1.0 / step
        self._curve_last = int((hi - lo) / step)
        grid = [lo + i * step for i in range(self._curve_last + 2)]
        self._full_table = [self.engine.full.at(r) for r in grid]
        self._drag_table = [self.engine.motoring.at(r) for r in grid]
        #: each table's step to the next point, as the interpolation computes it
        self._full_rise = [b - a for a, b in itertools.pairwise(self._full_table)]
        self._drag_rise = [b - a for a, b in itertools.pairwise(self._drag_table)]
        self._locked_mass = [self._free_mass + p.engine_inertia_kg_m2 * (k / p.tire_radius_m) ** 2
                             for k in overall]
        #: per gear: force at the wheels per N m of negative (braking) torque at the crank
        self._negative_force = [g / p.transmission_efficiency * p.axle_ratio / p.axle_efficiency
                                / p.tire_radius_m for g in p.gear_ratios]

    def initial(self, speed_kph: float) -> Class6State:
        """The state at ``speed_kph``, in the gear the schedule holds there at a light pedal."""
        speed = max(speed_kph, 0.0) / 3.6
        gear = 1
        ratios = self.params.gear_ratios
        comfortable = self.params.schedule.down_rpm(50.0) + 200.0
        while gear < len(ratios) and speed * self._rpm_per_mps[gear] > comfortable:
            gear += 1
        rpm, actual, demand = self._readings(speed, gear, 0.0, False)
        return Class6State(speed, 0.0, gear, gear, 0.0, 1e9, rpm, actual, demand, 0.0,
                           self.fuel.rate_lph(rpm, actual), engine_demand_nm=demand)

    def step(self, s: Class6State, app_pct: float, brake_pct: float, sin_g: float,
             dt_s: float, command: EngineCommand | None = None, neutral: bool = False) -> Class6State:
        """One tick of ``dt_s``: shift decision, then the speed in sub-steps with gear and pedal held.

        ``command`` is the engine controller's (TSC1, the retarder): its torque becomes the pedal
        position that asks for it at the tick's engine speed, held over the tick as a pedal is.
        ``neutral`` is a controller's request for neutral (TC1): the truck rolls free of the engine,
        which idles, until the request ends and a gear is engaged again (:meth:`_neutral`).
        """
        if neutral or (s.neutral and s.shift_left_s <= 0.0):
            return self._neutral(s, neutral, brake_pct, sin_g, dt_s)
        app = app_pct if app_pct > 0.0 else 0.0  # NaN counts as a released pedal
        app = 100.0 if app > 100.0 else app
        driver_app = app
        if command is not None:
            app = self.engine.pedal_for(command, app, s.engine_rpm)
        if s.speed_mps > self._governed_from_mps or self._limits_torque:
            app = self._governed(s, app)
        brake = brake_pct if brake_pct > 0.0 else 0.0
        brake = 100.0 if brake > 100.0 else brake
        p = self.params
        gear, selected, shift_left, since = s.gear, s.selected, s.shift_left_s, s.since_shift_s + dt_s
        if shift_left > 0.0:
            shift_left -= dt_s
            if shift_left <= 1e-9:
                gear, shift_left = selected, 0.0
            if s.neutral and shift_left > 0.0:  # the engine is still being brought to the gear's speed
                return self._neutral(s._replace(shift_left_s=shift_left), False, brake_pct, sin_g, dt_s)
        else:
            rpm = s.speed_mps * self._rpm_per_mps[gear - 1]
            selected = p.schedule.choose(p.gear_ratios, gear, rpm, app, since, self.engine)
            if selected != gear:
                shift_left, since = p.shift_time_s, 0.0
        cos_g = math.sqrt(1.0 - sin_g * sin_g)
        brake_n = brake * 0.01 * self._brake_max_n
        weight = self._weight_n
        # Everything but the engine's torque and the air drag is constant over the tick.
        static_n = p.crr * weight * cos_g + brake_n
        const_n = static_n + weight * sin_g
        v = s.speed_mps
        k_rpm = self._rpm_per_mps[gear - 1]
        locked = (shift_left <= 0.0 and v * k_rpm >= self.engine.idle_rpm
                  and (gear > 1 or v * k_rpm >= p.converter.lockup_rpm))
        retarder_nm = 0.0
        if locked and command is not None and command.retarder_nm < 0.0:
            retarder_nm = command.retarder_nm
            retarder_n = -retarder_nm * self._negative_force[gear - 1]  # the wheels drive the engine
            static_n += retarder_n
            const_n += retarder_n
        if locked:
            v, distance = self._locked(v, s.distance_m, gear, app, const_n, static_n, sin_g, dt_s)
        else:
            v, distance = self._open(v, s.distance_m, gear, app, shift_left > 0.0, const_n, static_n, dt_s)
        rpm, actual, engine_demand = self._readings(v, gear, app, shift_left > 0.0)
        demand = engine_demand if driver_app == app else self._readings(v, gear, driver_app, False)[2]
        fuel_lph = self.fuel.rate_lph(rpm, actual)
        return Class6State(v, distance, gear, selected, shift_left, since, rpm, actual, demand, brake,
                           fuel_lph, s.fuel_used_l + fuel_lph * dt_s / 3600.0, (v - s.speed_mps) / dt_s,
                           engine_demand, retarder_nm)

    def _governed(self, s: Class6State, app: float) -> float:
        """The pedal the engine's limits leave of ``app``: the road speed governor takes it down to
        none over a droop below the limit, the torque limit caps the torque it asks for."""
        p = self.params
        over_kph = s.speed_mps * 3.6 - (p.road_speed_limit_kph - ROAD_SPEED_DROOP_KPH)
        if over_kph > 0.0:
            cap = 100.0 * (1.0 - over_kph / ROAD_SPEED_DROOP_KPH)
            app = min(app, max(cap, 0.0))
        if self._limits_torque:
            rpm = s.engine_rpm
            drag, span = self.engine.motoring.at(rpm), self.engine.full.at(rpm) - self.engine.motoring.at(rpm)
            if span > 0.0:
                app = min(app, max(100.0 * (p.torque_limit_nm - drag) / span, 0.0))
        return app

    def _neutral(self, s: Class6State, requested: bool, brake_pct: float, sin_g: float,
                 dt_s: float) -> Class6State:
        """A tick out of gear (ecu_sim.vehicle.neutral): the driveline open, the wheels free."""
        brake = brake_pct if brake_pct > 0.0 else 0.0
        brake = 100.0 if brake > 100.0 else brake
        cos_g = math.sqrt(1.0 - sin_g * sin_g)
        static_n = self.params.crr * self._weight_n * cos_g + brake * 0.01 * self._brake_max_n
        const_n = static_n + self._weight_n * sin_g
        gear, shift_left = neutral.gear_and_sync(self, s, requested)
        v, distance = self._open(s.speed_mps, s.distance_m, gear, 0.0, True, const_n, static_n, dt_s)
        return neutral.after(self, s, requested, gear, shift_left, v, distance, brake, dt_s)

    def rpm_in(self, gear: int, speed_mps: float) -> float:
        """The engine's speed in ``gear`` (1-based) at ``speed_mps``, driveline locked."""
        return speed_mps * self._rpm_per_mps[gear - 1]

    def retarder_decel_per_nm(self, s: Class6State) -> float:
        """The deceleration (m/s^2) each N m of braking torque at the crank gives in state ``s``: 0
        while the driveline is open (a shift, the converter at launch, below idle)."""
        gear = s.gear
        k_rpm = self._rpm_per_mps[gear - 1]
        locked = (s.shift_left_s <= 0.0 and s.speed_mps * k_rpm >= self.engine.idle_rpm
                  and (gear > 1 or s.speed_mps * k_rpm >= self.params.converter.lockup_rpm))
        return self._negative_force[gear - 1] / self._locked_mass[gear - 1] if locked else 0.0

    def _locked(self, v: float, distance: float, gear: int, app: float, const_n: float, static_n: float,
                sin_g: float, dt_s: float) -> tuple[float, float]:
        """Sub-steps with the engine coupled to the wheels: its torque follows the road speed.

        The hot path of a ``class6`` simulation, so the curve lookups are written out inline.
        """
        p = self.params
        k_rpm = self._rpm_per_mps[gear - 1]
        lo, inv, last = self._curve_lo, self._curve_inv, self._curve_last
        full, full_rise = self._full_table, self._full_rise
        drag, drag_rise = self._drag_table, self._drag_rise
        a = app * 0.01
        ratio = p.gear_ratios[gear - 1]
        f_pos = ratio * p.transmission_efficiency * p.axle_ratio * p.axle_efficiency / p.tire_radius_m
        f_neg = ratio / p.transmission_efficiency * p.axle_ratio / p.axle_efficiency / p.tire_radius_m
        inv_mass = 1.0 / self._locked_mass[gear - 1]
        half_rho_cda = self._half_rho_cda
        h = dt_s / p.substeps
        for _ in range(p.substeps):
            x = (v * k_rpm - lo) * inv
            i = int(x) if x > 0.0 else 0
            if i >= last:
                i, x = last, float(last)
            f = x - i
            d = drag[i] + f * drag_rise[i]
            torque = d + a * (full[i] + f * full_rise[i] - d)
            drive = torque * (f_pos if torque >= 0.0 else f_neg)
            if v <= 0.0 and drive - self._weight_n * sin_g <= static_n:
                v = 0.0
                continue
            v_new = v + (drive - const_n - half_rho_cda * v * v) * inv_mass * h
            if v_new < 0.0:
                v_new = 0.0
            distance += 0.5 * (v + v_new) * h
            v = v_new
        return v, distance

    def _open(self, v: float, distance: float, gear: int, app: float, shifting: bool, const_n: float,
              static_n: float, dt_s: float) -> tuple[float, float]:
        """Sub-steps at launch through the converter, or with the driveline open during a shift."""
        p = self.params
        h = dt_s / p.substeps
        sin_term = const_n - static_n  # m g sin(theta)
        for _ in range(p.substeps):
            axle_nm, mass = self._axle_torque(v, gear, app, shifting)
            axle_nm *= p.transmission_efficiency
            if v <= 0.0:
                # Held by static rolling resistance and the brake unless the push beats them: a stopped
                # truck does not roll back, and does not creep forward against the brake.
                push = axle_nm * p.axle_ratio * p.axle_efficiency / p.tire_radius_m - sin_term
                if push <= static_n:
                    v = 0.0
                    continue
            v_new = v + (axle_nm * p.axle_ratio * p.axle_efficiency / p.tire_radius_m - const_n
                         - self._half_rho_cda * v * v) / mass * h
            if v_new < 0.0:
                v_new = 0.0
            distance += 0.5 * (v + v_new) * h
            v = v_new
        return v, distance

    def _axle_torque(self, v: float, gear: int, app: float, shifting: bool) -> tuple[float, float]:
        """Torque at the transmission output (before its losses) and the inertia mass, driveline open."""
        if shifting:
            return 0.0, self._free_mass  # torque interruption: the driveline is open during a shift
        engine = self.engine
        turbine = v * self._rpm_per_mps[gear - 1]
        if gear == 1 and turbine < self.params.converter.lockup_rpm:
            conv = self.params.converter
            rpm = conv.engine_rpm(turbine, app, engine.idle_rpm)
            torque = app * 0.01 * engine.full.at(rpm) * conv.torque_ratio(turbine, rpm)
            return torque * self.params.gear_ratios[0], self._free_mass
        if turbine < engine.idle_rpm:
            return 0.0, self._free_mass  # slipping until the next tick's downshift
        return engine.demand_nm(app, turbine) * self.params.gear_ratios[gear - 1], self._locked_mass[gear - 1]

    def _readings(self, v: float, gear: int, app: float, shifting: bool) -> tuple[float, float, float]:
        """Engine speed, actual and demanded torque, as the engine messages report them."""
        engine = self.engine
        turbine = v * self._rpm_per_mps[gear - 1]
        if gear == 1 and turbine < self.params.converter.lockup_rpm:
            rpm = self.params.converter.engine_rpm(turbine, app, engine.idle_rpm)
            demand = app * 0.01 * engine.full.at(rpm)
        else:
            rpm = turbine if turbine > engine.idle_rpm else engine.idle_rpm
            demand = engine.demand_nm(app, rpm)
        return rpm, (0.0 if shifting else demand), demand
