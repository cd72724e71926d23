"""Predictive ("eco") cruise: the PI controller's hold, and coasting where the road gives the speed back.

A map-based predictive cruise control knows the road ahead (elevation by distance, from the same
route the truck drives) and where it is on it; ours knows its position only as the integral of the
speed it hears on the bus, as a CCM without a navigation unit would. What it does with that is the
rule of VECTO's pre-crest coasting, written as the comparison of a predicted speed with the limits
of a band around the set speed:

- it predicts, by energy balance over the preview window, the speed the truck would have at each
  point of the road ahead if the pedal were released now (in gear: no fuel, the engine's drag, the
  road load, gravity), the speed held at the band's top where the service brake would act;
- it coasts (APP 0) when that prediction stays above the band's bottom until the road ahead has
  brought the speed back to the set speed on a descent (the truck still accelerating there): the
  speed let fall before a crest, or before a dip, is given back by gravity instead of the engine;
- otherwise the PI controller holds the set speed, as it does on a flat road, where a coast never
  comes back; the brake acts only above the band's top, so a descent's speed is kept for the road
  after it instead of being braked away at the set speed.

Why a coast must come back to the set speed: only then does it cost nothing afterwards. A coast
that ends below the set speed leaves the engine to make up the speed later, and coasting in gear
loses the engine's drag on the way, so it would trade fuel for nothing but a slower trip.

A coast starts with a margin inside the band and ends without one (hysteresis), so a prediction
that is a little off does not switch the pedal on and off every few metres. Deterministic: plain
arithmetic on the inputs, no clock; the prediction is made again every :data:`REPLAN_M` of travel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ecu_sim.checks import non_finite_fields

#: distance step of the prediction, m
STEP_M = 25.0
#: the prediction is made again after this much travel, m
REPLAN_M = 10.0
#: how far inside the band a coast must stay to start (it may then use the whole band), km/h
ENTRY_MARGIN_KPH = 1.0
_KPH_PER_MPS = 3.6

#: height of the road at a distance along it, m
Elevation = Callable[[float], float]


@dataclass(frozen=True, slots=True)
class PredictiveParams:
    """The band around the set speed and how far ahead the road is known (VECTO's defaults)."""

    under_kph: float = 8.0
    over_kph: float = 5.0
    preview_m: float = 1500.0

    def problems(self) -> list[str]:
        """One sentence per value that cannot work; empty when usable."""
        found = non_finite_fields(self)
        if found:
            return found
        for name in ("under_kph", "over_kph"):
            value = getattr(self, name)
            if not 0.0 <= value <= 30.0:
                found.append(f"{name} must be within 0..30 km/h (got {value:g}); it is how far the "
                             f"predictive controller may let the speed depart from the set speed")
        if not STEP_M <= self.preview_m <= 20000.0:
            found.append(f"preview_m must be within {STEP_M:g}..20000 m (got {self.preview_m:g}); "
                         "VECTO previews 1000 to 1500 m")
        return found


@dataclass(frozen=True, slots=True)
class CoastModel:
    """The truck as the prediction sees it with the pedal released, in SI units.

    Resistance ``a + b v + c v^2`` (rolling resistance and the engine's drag in gear in ``a``, air in
    ``c``), ``weight_n`` the weight whose component along the road pulls or holds back, and
    ``mass_kg`` the mass that is accelerated (rotating parts included).
    """

    mass_kg: float
    weight_n: float
    a_n: float
    b_n_per_mps: float
    c_n_per_mps2: float


class PreviewState(NamedTuple):
    """The controller's memory: where it believes it is, whether it coasts, where it last predicted."""

    distance_m: float = 0.0
    coasting: bool = False
    planned_at_m: float = -math.inf


def step(params: PredictiveParams, model: CoastModel, elevation: Elevation, state: PreviewState,
         set_speed_kph: float, speed_kph: float, dt_s: float) -> PreviewState:
    """Advance the position by the speed heard this tick and decide again when due.

    Whether to coast changes only at a prediction, every :data:`REPLAN_M` of travel, so a standing
    truck keeps its last decision and the cost per tick stays small.
    """
    if not math.isfinite(speed_kph):  # a caller's NaN must not lose the position for good
        return state
    distance = state.distance_m + max(0.0, speed_kph) / _KPH_PER_MPS * dt_s
    if distance - state.planned_at_m < REPLAN_M:
        return state._replace(distance_m=distance)
    coasting = coast_pays(params, model, elevation, distance, speed_kph, set_speed_kph, state.coasting)
    return PreviewState(distance, coasting, distance)


def coast_pays(params: PredictiveParams, model: CoastModel, elevation: Elevation, distance_m: float,
               speed_kph: float, set_speed_kph: float, coasting: bool) -> bool:
    """Whether releasing the pedal here keeps the speed in the band until a descent gives it back.

    The prediction walks the preview window in steps of :data:`STEP_M`, updating the kinetic energy
    per unit mass by the work of the resisting forces and of gravity over each step. ``coasting``
    says whether the truck coasts already: a coast in progress may use the whole band, a new one must
    keep :data:`ENTRY_MARGIN_KPH` inside it.
    """
    margin = 0.0 if coasting else ENTRY_MARGIN_KPH
    low = max(0.0, set_speed_kph - params.under_kph + margin) / _KPH_PER_MPS
    back = (set_speed_kph + margin) / _KPH_PER_MPS
    top = (set_speed_kph + params.over_kph) / _KPH_PER_MPS
    low2, back2, top2 = low * low, back * back, top * top
    v = speed_kph / _KPH_PER_MPS
    v2 = v * v
    if v2 < low2:
        return False
    inv_mass = 2.0 * STEP_M / model.mass_kg
    weight_per_step = model.weight_n / STEP_M
    a, b, c = model.a_n, model.b_n_per_mps, model.c_n_per_mps2
    height = elevation(distance_m)
    for k in range(1, math.ceil(params.preview_m / STEP_M) + 1):
        ahead = elevation(distance_m + k * STEP_M)
        force = a + b * v + c * v2 + weight_per_step * (ahead - height)
        height = ahead
        before = v2
        v2 = min(top2, v2 - inv_mass * force)
        if v2 < low2:
            return False
        if v2 >= back2 and v2 > before:
            return True
        v = math.sqrt(v2)
    return False


class Preview:
    """One CCM's predictive part: its parameters, its truck, the road ahead and its memory."""

    __slots__ = ("elevation", "model", "params", "state")

    def __init__(self, params: PredictiveParams, model: CoastModel, elevation: Elevation) -> None:
        self.params = params
        self.model = model
        self.elevation = elevation
        self.state = PreviewState()

    def update(self, speed_kph: float, set_speed_kph: float, dt_s: float) -> bool:
        """This tick's speed heard; whether the pedal is to be released (a coast)."""
        self.state = step(self.params, self.model, self.elevation, self.state, set_speed_kph, speed_kph,
                          dt_s)
        return self.state.coasting
