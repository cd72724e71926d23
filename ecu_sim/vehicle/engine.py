"""The engine of the ``class6`` truck: full-load and motoring torque over engine speed, and the pedal map.

A torque curve is given as (rpm, N m) breakpoints, as an engine's published or measured curve is,
and resampled once onto an evenly spaced table, so a lookup on the per-tick path is one multiply,
one truncation and one interpolation instead of a bisect. Between the table's points it is linear,
which is exact for the piecewise-linear curve whenever its breakpoints fall on the table's spacing.

The pedal maps to torque the way GEM's engine demand does: APP 0 % is the motoring (drag) torque,
APP 100 % the full-load torque, and in between the demand is the linear blend of the two. Above
the governed speed the full-load curve has fallen to zero, so the governor is part of the curve.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple


class TorqueCurve:
    """A curve over engine speed, sampled evenly once; constant beyond its first and last point."""

    __slots__ = ("_inv", "_last", "_lo", "_values")

    def __init__(self, points: Sequence[tuple[float, float]], step_rpm: float = 10.0) -> None:
        if len(points) < 2:
            raise ValueError("a torque curve needs at least two (rpm, N m) points")
        speeds = [p[0] for p in points]
        if any(b <= a for a, b in itertools.pairwise(speeds)):
            raise ValueError(f"torque curve speeds must strictly increase (got {speeds})")
        lo, hi = speeds[0], speeds[-1]
        count = int((hi - lo) / step_rpm) + 1
        values = [_interpolate(points, lo + i * step_rpm) for i in range(count + 1)]
        self._lo = lo
        self._inv = 1.0 / step_rpm
        self._last = count - 1
        self._values = values

    def at(self, rpm: float) -> float:
        """The torque at ``rpm`` in N m: linear between the table's points, flat outside the curve."""
        x = (rpm - self._lo) * self._inv
        if x <= 0.0:
            return self._values[0]
        i = int(x)
        if i > self._last:
            return self._values[self._last + 1]
        v = self._values
        return v[i] + (x - i) * (v[i + 1] - v[i])

    def sampling(self) -> tuple[float, float, int, list[float]]:
        """(first rpm, points per rpm, last index, values): for a hot path that inlines :meth:`at`
        with the very same arithmetic, so it gets the same bits."""
        return self._lo, self._inv, self._last, self._values


def _interpolate(points: Sequence[tuple[float, float]], rpm: float) -> float:
    if rpm <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if rpm <= x1:
            return y0 + (rpm - x0) * (y1 - y0) / (x1 - x0)
    return points[-1][1]


class EngineCommand(NamedTuple):
    """What the engine's controller asks of the engine besides the pedal (J1939 TSC1, a retarder).

    Torques in percent are indicated torque in percent of the reference torque, as J1939 counts
    them: 0 % is no fuel, so the engine gives its motoring (drag) torque. ``torque_pct`` replaces
    the pedal's demand (None: the pedal's demand stands); ``limit_pct`` caps whichever demand
    drives (None: no cap); ``retarder_nm`` is the compression brake's torque at the crank
    (negative), which acts only while the driveline is locked to the wheels.
    """

    torque_pct: float | None = None
    limit_pct: float | None = None
    retarder_nm: float = 0.0


class Engine:
    """Full-load and motoring curves with the pedal map; speeds in rpm, torques in N m."""

    __slots__ = ("full", "governed_rpm", "idle_rpm", "motoring", "reference_nm")

    def __init__(self, full_load: Sequence[tuple[float, float]], motoring: Sequence[tuple[float, float]],
                 idle_rpm: float, governed_rpm: float) -> None:
        self.full = TorqueCurve(full_load)
        self.motoring = TorqueCurve(motoring)
        self.idle_rpm = idle_rpm
        self.governed_rpm = governed_rpm
        #: J1939's reference engine torque (the 100 % of SPN 512/513): the curve's peak
        self.reference_nm = max(t for _, t in full_load)

    def demand_nm(self, app_pct: float, rpm: float) -> float:
        """Torque the pedal asks for at ``rpm``: motoring at 0 %, full load at 100 %, linear between."""
        drag = self.motoring.at(rpm)
        return drag + app_pct * 0.01 * (self.full.at(rpm) - drag)

    def indicated_pct(self, torque_nm: float, rpm: float) -> float:
        """``torque_nm`` at the crank as J1939 reports torque: indicated (what the fuel gives, the
        motoring drag added back), in percent of the reference torque."""
        return (torque_nm - self.motoring.at(rpm)) * 100.0 / self.reference_nm

    def pedal_for(self, command: EngineCommand, app_pct: float, rpm: float) -> float:
        """The pedal position that asks for what ``command`` and the pedal together ask at ``rpm``.

        The pedal map is linear between motoring and full load, so an indicated torque is the share
        of that span it fills; the full-load curve bounds it, a requested 0 % is the released pedal.
        """
        span = self.full.at(rpm) - self.motoring.at(rpm)
        if span <= 0.0:
            return 0.0
        app = app_pct if command.torque_pct is None else command.torque_pct * self.reference_nm / span
        if command.limit_pct is not None:
            cap = command.limit_pct * self.reference_nm / span
            app = cap if cap < app else app
        return 0.0 if not app > 0.0 else (100.0 if app > 100.0 else app)
