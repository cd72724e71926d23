"""PI cruise controller: set speed and measured speed in km/h in, accelerator pedal position in % out.

Pure and stateless between calls apart from the explicit :class:`PiState`, so the CCM, ``simulate`` and
the tests all drive the very same arithmetic.

Tuning rationale for the defaults
---------------------------------
The plant, linearised about 90 km/h on a flat road with the default truck (APP 35.4 % holds it):
pedal authority (P/100)/(v J) = 0.0212 km/h/s per % APP, self-damping time constant 47 s, so a steady
gain of about 1.0 km/h per % APP. A 1 % grade costs 1157 N, the same as 16.2 % APP at 90 km/h.

The testbed route at 90 km/h climbs 0.1 % every 4 s (a disturbance ramp of 0.40 % APP/s, which a PI
controller follows with a lag of 0.40/ki km/h) and once per 48 s drops from 1.0 % to 0 % (a 16.2 % APP
step, which the proportional path must catch within a few seconds). That calls for a fast loop:

* kp = 20 % per km/h puts the crossover at about 0.0212 * 20 = 0.42 rad/s. The 1 % APP resolution of the
  ``amp`` wire profile then moves speed by far less than the 0.5 km/h band, the 1/256 km/h speed
  resolution adds only 0.08 % APP of jitter, and the one-tick CCM -> ECU delay costs under 4 degrees of
  phase.
* ki = 2 % per km/h s puts the PI zero at ki/kp = 0.1 rad/s, four times below crossover (little phase
  lost), and keeps the ramp lag at 0.2 km/h.

Measured in closed loop (dt 0.1 s, APP rounded to the wire resolution, speed to 1/256 km/h, APP applied one
tick after it is computed, integral starting at 0), 80 -> 90 km/h on a flat road: overshoot 0.004 km/h,
inside +-0.5 km/h after 11.2 s (same with the 0.4 % APP of the ``j1939`` profile). Testbed route, 30 min
after 2 min of settling: worst error 0.46 km/h with 1 % or 0.4 % APP. Margins: the route stays within
+-1 km/h with up to 20 ticks (2 s) of loop delay; set speeds from 20 to 110 km/h settle within 32 s,
standing starts included, without overshooting 0.1 km/h. In a grid over kp 5..30 and ki 0.5..6, kp 10
already gave route errors of 0.55..0.72 km/h and, with ki >= 1.5, overshoot above 1 km/h; kp 25 / ki 3 only
improved the route error to 0.40 km/h at the cost of more pedal activity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecu_sim.checks import non_finite_fields


@dataclass(frozen=True, slots=True)
class PiParams:
    """Controller gains and output limits; the field names are the INI keys of section ``[controller]``."""

    kp: float = 20.0  # % APP per km/h of speed error
    ki: float = 2.0  # % APP per (km/h * s) of integrated speed error
    app_min_pct: float = 0.0
    app_max_pct: float = 100.0

    def problems(self) -> list[str]:
        """Say what cannot work, one human-readable sentence per problem; empty when usable."""
        found = non_finite_fields(self)
        if found:
            return found
        for name in ("kp", "ki"):
            value = getattr(self, name)
            if value < 0.0:
                found.append(
                    f"{name} must be >= 0 (got {value:g}); a negative gain drives away from the set speed"
                )
        if self.kp == 0.0 and self.ki == 0.0:
            found.append("kp and ki are both 0, so the pedal would never move; set at least one of them")
        for name in ("app_min_pct", "app_max_pct"):
            value = getattr(self, name)
            if not 0.0 <= value <= 100.0:
                found.append(f"{name} must be within 0..100 % (got {value:g})")
        if self.app_min_pct >= self.app_max_pct:
            found.append(
                f"app_min_pct must be below app_max_pct (got {self.app_min_pct:g} >= {self.app_max_pct:g})"
            )
        return found


@dataclass(frozen=True, slots=True)
class PiState:
    """Controller memory: the integral term, already multiplied by ki, in % APP.

    Keeping the term rather than the raw integral of the error means a change of ki between runs (or a
    state restored from a log) does not make the pedal jump, and the anti-windup bound is simply the output
    range.
    """

    integral: float = 0.0


def step(
    params: PiParams, state: PiState, set_speed_kph: float, speed_kph: float, dt_s: float
) -> tuple[float, PiState]:
    """Compute this tick's pedal position and the controller memory for the next tick.

    Anti-windup is by conditional integration: the integral is frozen while the output is saturated and the
    error pushes further into the saturation (e.g. full pedal and still too slow on a climb), so that it does
    not pile up and cause a long overshoot once the truck can follow again.

    A non-finite error (a NaN or infinite ``speed_kph`` or ``set_speed_kph`` from a caller) counts as zero
    error: the pedal holds at the integral term, clamped to the output range, instead of snapping to a limit,
    and the integral does not grow. A missing speed never gets here: the CCM then sends APP 0 % and resets
    the controller instead of calling this (see :mod:`ecu_sim.nodes.ccm`).

    Raises ValueError only for a non-positive or NaN ``dt_s``.
    """
    if not dt_s > 0.0:
        raise ValueError(f"dt_s must be > 0 (got {dt_s!r})")
    lo = params.app_min_pct
    hi = params.app_max_pct
    error = set_speed_kph - speed_kph
    if not math.isfinite(error):
        error = 0.0
    p_term = params.kp * error
    integral = min(max(lo, state.integral), hi)
    candidate = integral + params.ki * error * dt_s
    unclamped = p_term + candidate
    if not ((unclamped > hi and error > 0.0) or (unclamped < lo and error < 0.0)):
        integral = min(max(lo, candidate), hi)
    app = min(max(lo, p_term + integral), hi)
    if integral == state.integral:
        return app, state
    return app, PiState(integral)
