"""Longitudinal dynamics of a Class 6 box truck, advanced one fixed tick at a time.

The model is referentially transparent: the same parameters, state, APP and grade sequence always
give the same speeds, because the caller passes the loop's fixed period as ``dt_s`` rather than a
measured wall-clock interval (the old testbed's results depended on timing jitter). Equations and
defaults follow the road-load method of SAE J1263/J2263 and 40 CFR 1066::

    J dv/dt = F_t - F_ss - F_g
    F_t  = min((APP/100) * P / v, mu * m * g)       tractive force, power-limited, traction-limited near 0
    F_ss = A + B v_kph + C v_kph^2                  road load, only against motion
    F_g  = m g sin(atan(x)) = m g x / sqrt(1 + x^2)   x = grade/100, positive uphill

Things the old testbed got wrong and this module must not repeat: the speed increment is in m/s and is
added to a speed in m/s; the grade is a ratio, not an angle; inertia is counted once, through J; tractive
force never divides by zero.

Only operations IEEE 754 rounds correctly (+, -, *, /, sqrt) are used, never a transcendental
function (sin, atan, exp, ...): libm implementations differ in the last bit between processors
and library versions, and the model's result must be the same bits on an x86-64 PC, an ARMv7
BeagleBone and an ARMv8 Raspberry Pi. tests/vehicle/test_model.py checks that no such call creeps in.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ecu_sim.vehicle.params import KPH_PER_MPS, TruckParams

_MPS_PER_KPH = 1.0 / KPH_PER_MPS


class TruckState(NamedTuple):
    """Where the truck is after a tick: speed (never negative) and distance travelled along the route.

    A named tuple rather than a dataclass: the model builds one every tick, and a tuple is the
    cheapest immutable value Python builds.
    """

    speed_mps: float
    distance_m: float

    @property
    def speed_kph(self) -> float:
        return self.speed_mps * KPH_PER_MPS

    @classmethod
    def from_kph(cls, speed_kph: float, distance_m: float = 0.0) -> TruckState:
        """Build a state from the km/h the user and the wire speak; negative speeds become standstill."""
        return cls(max(speed_kph, 0.0) * _MPS_PER_KPH, distance_m)


class TruckModel:
    """The equations above for one parameter set, its constants in SI computed once.

    The only state kept between calls is the grade force of the latest grade (routes hold a
    grade for many ticks), a cache that never changes a result.
    """

    __slots__ = ("_a_n", "_b_si", "_c_si", "_f_g", "_grade_pct", "_inv_j", "_power_w_per_pct",
                 "_traction_max_n", "_weight_n", "params")

    def __init__(self, params: TruckParams) -> None:
        problems = params.problems()
        if problems:
            raise ValueError("invalid TruckParams: " + "; ".join(problems))
        self.params = params
        weight = params.mass_kg * params.gravity_mps2
        self._inv_j = 1.0 / (params.inertia_factor * params.mass_kg)  # 1/kg
        self._a_n = params.road_load_a_n  # N
        self._b_si = params.road_load_b_n_per_kph * KPH_PER_MPS  # N per m/s
        self._c_si = params.road_load_c_n_per_kph2 * KPH_PER_MPS * KPH_PER_MPS  # N per (m/s)^2
        self._power_w_per_pct = params.rated_power_kw * 1000.0 / 100.0  # W per % APP
        self._traction_max_n = params.traction_limit_mu * weight  # mu * m * g
        self._weight_n = weight  # m * g
        self._grade_pct = math.nan
        self._f_g = 0.0

    def grade_force_n(self, grade_pct: float) -> float:
        """F_g for ``grade_pct``, positive uphill; the latest grade's is remembered."""
        if grade_pct != self._grade_pct:
            if grade_pct != grade_pct:
                raise ValueError("grade_pct must not be NaN")
            x = grade_pct / 100.0
            xx = x * x
            # sin(atan(x)), correctly rounded parts; an infinite grade (a wall in an elevation
            # route, under the wheelbase) is the whole weight, where the quotient would be NaN
            self._f_g = self._weight_n * (x / math.sqrt(1.0 + xx) if xx < math.inf else
                                          1.0 if x > 0.0 else -1.0)
            self._grade_pct = grade_pct
        return self._f_g

    def step(self, state: TruckState, app_pct: float, grade_pct: float, dt_s: float) -> TruckState:
        """Advance the truck by one fixed tick of ``dt_s`` seconds, APP and grade constant over it.

        Integrates (v, s) with classical RK4, because at 10 Hz a first-order method misses the
        published coastdown by more than the 1/256 km/h the wire can carry, while RK4 stays far
        within it. APP is clamped to 0..100 % (NaN counts as 0) so that whatever arrives over CAN
        can never crash the ECU. A pedal so light that the truck could only crawl, at v = P_t / F
        with F = A plus any uphill grade force, counts as released when P_t < F^2 dt / (2 J):
        there d(P_t/v)/dv = -F^2/P_t makes the crawl too stiff for RK4 at this dt, and the speed
        would oscillate between 0 and a few cm/s instead.

        Standstill is handled separately instead of integrating through it: stopped, road load
        acts as static friction of up to A, so the truck stays at exactly zero until tractive
        force minus grade force exceeds A (no chatter between 0 and tiny speeds, no rolling
        backwards); moving, a step that would end below zero ends at exactly zero. Tractive
        force at low speed is the traction limit mu*m*g, which keeps P/v finite and lets a
        standing start work.

        Raises ValueError only for programming errors: a non-positive or NaN ``dt_s`` or a NaN
        grade (a route never yields one).
        """
        if not dt_s > 0.0:
            raise ValueError(f"dt_s must be > 0 (got {dt_s!r})")
        # The hot path of every simulation: attributes read into locals once, comparisons in place
        # of min/max/isnan calls.
        app = app_pct if app_pct > 0.0 else 0.0  # a NaN fails the comparison: it counts as a released pedal
        if app > 100.0:
            app = 100.0
        pt = app * self._power_w_per_pct
        f_g = self._f_g if grade_pct == self._grade_pct else self.grade_force_n(grade_pct)
        a_n = self._a_n
        b = self._b_si
        c = self._c_si
        inv_j = self._inv_j
        f_creep = a_n + f_g if f_g > 0.0 else a_n  # resistance at a crawl
        if pt < 0.5 * f_creep * f_creep * dt_s * inv_j:
            pt = 0.0  # see the docstring: the crawl P_t / f_creep would be too stiff for RK4
        f_max = self._traction_max_n
        f_cap = f_max if pt > 0.0 else 0.0  # tractive force at and near standstill (v * f_max <= pt)

        v0 = state.speed_mps
        if not v0 > 0.0:
            # Stopped: static road load holds up to A against the net forward push.
            if f_cap - f_g <= a_n:
                if v0 == 0.0:
                    return state
                return TruckState(0.0, state.distance_m)
            v0 = 0.0

        # RK4, with the acceleration written out inline: four function calls per tick would cost more than
        # the arithmetic. "pt / v if v * f_max > pt else f_cap" is min(P_t / v, mu m g) without dividing by 0.
        h = dt_s
        a1 = ((pt / v0 if v0 * f_max > pt else f_cap) - a_n - v0 * (b + c * v0) - f_g) * inv_j
        v2 = v0 + 0.5 * h * a1
        a2 = ((pt / v2 if v2 * f_max > pt else f_cap) - a_n - v2 * (b + c * v2) - f_g) * inv_j
        v3 = v0 + 0.5 * h * a2
        a3 = ((pt / v3 if v3 * f_max > pt else f_cap) - a_n - v3 * (b + c * v3) - f_g) * inv_j
        v4 = v0 + h * a3
        a4 = ((pt / v4 if v4 * f_max > pt else f_cap) - a_n - v4 * (b + c * v4) - f_g) * inv_j

        v_new = v0 + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        ds = h / 6.0 * (v0 + 2.0 * v2 + 2.0 * v3 + v4)
        if v_new <= 0.0:
            # The truck stopped inside this tick. The stage speeds past the stop are slightly negative, so
            # bound the distance from below; the error is under v0 * dt, a few millimetres at most.
            v_new = 0.0
            ds = max(ds, 0.0)
        return TruckState(v_new, state.distance_m + ds)
