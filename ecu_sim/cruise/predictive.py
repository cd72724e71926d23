"""Predictive ("eco") cruise: the PI controller's hold, and coasting where the road gives the speed back.

A map-based predictive cruise control knows the road ahead (elevation by distance, from the same
route the truck drives) and where it is on it; ours knows its position only as the integral of the
speed it hears on the bus, as a CCM without a navigation unit would. What it does with that is the
rule of VECTO's pre-crest coasting, written as the comparison of a predicted speed with the limits
of a band around the set speed:

- it predicts, by energy balance over the preview window, the speed the truck would have at each
  point of the road ahead if the pedal were released now, the speed held at the band's top where
  the service brake would act: once in neutral (the road load and gravity alone, idle fuel) where
  the transmission takes a request for neutral, and once in gear (no fuel, the engine's drag too);
- it rolls in neutral (eco-roll: APP 0 and TC1's requested gear 0), else coasts in gear (APP 0),
  when that prediction stays above the band's bottom until the road ahead has brought the speed
  back to the set speed on a descent (the truck still accelerating there): the speed let fall
  before a crest, or before a dip, is given back by gravity instead of the engine. Neutral first,
  since without the engine's drag the same descent gives more back, and more descents do;
- otherwise the PI controller holds the set speed, as it does on a flat road, where a coast never
  comes back, or a little above it ahead of a climb (:func:`climb_lift`); the brake acts only above
  the band's top, so a descent's speed is kept for the road after it instead of being braked away.

Why a coast must come back to the set speed: only then does it cost nothing afterwards. A coast
that ends below the set speed leaves the engine to make up the speed later, and the coast loses
the road load (and in gear the engine's drag) on the way, so it would trade fuel for nothing but a
slower trip.

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
#: the length over which a climb's mean grade is taken, m
CLIMB_SPAN_M = 200.0
_KPH_PER_MPS = 3.6

#: height of the road at a distance along it, m
Elevation = Callable[[float], float]


@dataclass(frozen=True, slots=True)
class PredictiveParams:
    """The band around the set speed and how far ahead the road is known (VECTO's defaults)."""

    under_kph: float = 8.0
    over_kph: float = 5.0
    preview_m: float = 1500.0
    #: coast in neutral (asked of the transmission with TC1) instead of in gear, where the truck
    #: has a transmission on the wire: VECTO's eco-roll
    eco_roll: bool = True
    #: no eco-roll below this speed, km/h (VECTO's predictive functions stop at 50 km/h)
    eco_roll_min_kph: float = 50.0
    #: an eco-roll the prediction says lasts less than this is not started, s
    eco_roll_min_s: float = 5.0
    #: how far above the set speed the speed may be taken ahead of a climb, km/h (0: never)
    anticipate_kph: float = 2.0
    #: how far ahead of its foot a climb is anticipated, m
    anticipate_m: float = 500.0
    #: the mean grade over :data:`CLIMB_SPAN_M` that counts as a climb, %
    climb_pct: float = 2.0

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
        if not 0.0 <= self.anticipate_kph <= self.over_kph:
            found.append(f"anticipate_kph must be within 0..over_kph ({self.over_kph:g}) (got "
                         f"{self.anticipate_kph:g}); above the band's top the brake would take it back")
        for name, top in (("eco_roll_min_kph", 150.0), ("eco_roll_min_s", 600.0), ("anticipate_m", 20000.0),
                          ("climb_pct", 30.0)):
            value = getattr(self, name)
            if not 0.0 <= value <= top:
                found.append(f"{name} must be within 0..{top:g} (got {value:g})")
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
    """The controller's memory: where it believes it is, whether it coasts (in neutral or in gear),
    where it last predicted, and how far above the set speed it holds the speed ahead of a climb."""

    distance_m: float = 0.0
    coasting: bool = False
    planned_at_m: float = -math.inf
    neutral: bool = False
    lift_kph: float = 0.0


class Models(NamedTuple):
    """The truck coasting in gear, and in neutral (None where no transmission takes a request)."""

    in_gear: CoastModel
    neutral: CoastModel | None = None


def step(params: PredictiveParams, models: Models, elevation: Elevation, state: PreviewState,
         set_speed_kph: float, speed_kph: float, dt_s: float) -> PreviewState:
    """Advance the position by the speed heard this tick and decide again when due.

    What to do changes only at a prediction, every :data:`REPLAN_M` of travel, so a standing
    truck keeps its last decision and the cost per tick stays small.
    """
    if not math.isfinite(speed_kph):  # a caller's NaN must not lose the position for good
        return state
    distance = state.distance_m + max(0.0, speed_kph) / _KPH_PER_MPS * dt_s
    if distance - state.planned_at_m < REPLAN_M:
        return state._replace(distance_m=distance)
    return decide(params, models, elevation, state, distance, speed_kph, set_speed_kph)


def decide(params: PredictiveParams, models: Models, elevation: Elevation, state: PreviewState,
           distance_m: float, speed_kph: float, set_speed_kph: float) -> PreviewState:
    """Eco-roll where a coast in neutral pays and lasts, else a coast in gear where that pays, else
    the PI controller's hold, lifted ahead of a climb.

    Neutral first: with the engine's drag gone the same descent gives more speed back, for the
    idle fuel. A coast in neutral must last :attr:`PredictiveParams.eco_roll_min_s` to start, so the
    transmission is not asked to shift out and back in for a few seconds' gain.
    """
    neutral_model = models.neutral
    if neutral_model is not None and params.eco_roll and speed_kph >= params.eco_roll_min_kph:
        going = state.coasting and state.neutral
        if coast_pays(params, neutral_model, elevation, distance_m, speed_kph, set_speed_kph, going,
                      0.0 if going else params.eco_roll_min_s):
            return PreviewState(distance_m, True, distance_m, True)
    going = state.coasting and not state.neutral
    if coast_pays(params, models.in_gear, elevation, distance_m, speed_kph, set_speed_kph, going):
        return PreviewState(distance_m, True, distance_m)
    return PreviewState(distance_m, False, distance_m, False, climb_lift(params, elevation, distance_m))


def climb_lift(params: PredictiveParams, elevation: Elevation, distance_m: float) -> float:
    """How far above the set speed to hold the speed here: :attr:`PredictiveParams.anticipate_kph`
    where a climb begins within :attr:`PredictiveParams.anticipate_m` ahead and the road here does
    not climb yet, else 0.

    The speed gained on the approach is spent on the climb, where the PI controller, asked for the
    set speed again, lets it fall back instead of holding it with the engine at full load; on the
    climb itself the lift is 0, so no speed is bought uphill.
    """
    if params.anticipate_kph <= 0.0:
        return 0.0
    rise = params.climb_pct * 0.01
    here = elevation(distance_m)
    if elevation(distance_m + CLIMB_SPAN_M) - here >= rise * CLIMB_SPAN_M * 0.5:
        return 0.0
    for k in range(1, math.ceil(params.anticipate_m / STEP_M) + 1):
        foot = distance_m + k * STEP_M
        if elevation(foot + CLIMB_SPAN_M) - elevation(foot) >= rise * CLIMB_SPAN_M:
            return params.anticipate_kph
    return 0.0


def coast_pays(params: PredictiveParams, model: CoastModel, elevation: Elevation, distance_m: float,
               speed_kph: float, set_speed_kph: float, coasting: bool, min_s: float = 0.0) -> bool:
    """Whether releasing the pedal here keeps the speed in the band until a descent gives it back.

    The prediction walks the preview window in steps of :data:`STEP_M`, updating the kinetic energy
    per unit mass by the work of the resisting forces and of gravity over each step. ``coasting``
    says whether the truck coasts already: a coast in progress may use the whole band, a new one must
    keep :data:`ENTRY_MARGIN_KPH` inside it. A coast that gives the speed back sooner than
    ``min_s`` does not pay.
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
    elapsed = 0.0
    for k in range(1, math.ceil(params.preview_m / STEP_M) + 1):
        ahead = elevation(distance_m + k * STEP_M)
        force = a + b * v + c * v2 + weight_per_step * (ahead - height)
        height = ahead
        before = v2
        v2 = min(top2, v2 - inv_mass * force)
        if v2 < low2:
            return False
        v_next = math.sqrt(v2)
        elapsed += 2.0 * STEP_M / (v + v_next) if v + v_next > 0.0 else math.inf
        if v2 >= back2 and v2 > before:
            return elapsed >= min_s
        v = v_next
    return False


class Preview:
    """One CCM's predictive part: its parameters, its truck, the road ahead and its memory."""

    __slots__ = ("elevation", "models", "params", "state")

    def __init__(self, params: PredictiveParams, models: Models, elevation: Elevation) -> None:
        self.params = params
        self.models = models
        self.elevation = elevation
        self.state = PreviewState()

    def update(self, speed_kph: float, set_speed_kph: float, dt_s: float) -> PreviewState:
        """This tick's speed heard; the decision: a coast (in neutral or in gear), or the hold and
        its lift ahead of a climb."""
        self.state = step(self.params, self.models, self.elevation, self.state, set_speed_kph, speed_kph,
                          dt_s)
        return self.state
