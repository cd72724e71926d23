"""The ``class6`` engine's fuel: a published steady-state map, scaled to the engine, looked up per tick.

The map is data (:mod:`ecu_sim.vehicle.fuel_data` reads it): fuel mass rate on a regular grid of
engine speed and brake torque, with the full-load curve of the engine it was measured on. It is
scaled to another engine the way VECTO builds its larger generic engines from one map, by torque,
at the same normalised speed:

- speed: ``n_norm = (n - n_idle) / (n_rated - n_idle)`` is the same on both engines, ``n_rated``
  being the speed of maximum power on each engine's full-load curve;
- torque: multiplied by ``k``, the ratio of the two engines' peak full-load torques;
- fuel rate: multiplied by ``k n / n_source``, the ratio of the powers at corresponding points,
  so the brake-specific consumption at corresponding points is the source's.

The scaled grid is again regular (an affine map of a regular grid), so a lookup is bilinear
interpolation on it: one multiply per axis to find the cell, four table reads, three blends, no
search. Bilinear rather than VECTO's triangulation because the source is a full regular grid, on
which bilinear is exact at every grid point and continuous, and costs less per tick; VECTO
triangulates because its maps are scattered measured points. The map is never extrapolated: beyond
its speeds and above its torques the edge values hold.

Below the map: at or below the motoring curve the engine is dragged with no fuel (fuel cut:
engine braking, coasting in gear). Between the motoring torque and zero the fuel falls linearly
from the map's zero-torque value to nothing, the Willans line's shape; from zero to the map's
lowest torque the lowest row holds, so an idling engine at no load burns the map's idle fuel.

Only + - * / and comparisons run per lookup, so the fuel is bit-identical on every processor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ecu_sim.vehicle.engine import TorqueCurve

#: diesel density, kg/L: the map source's own (ADVISOR's ``fc_fuel_den``, 839 g/L); docs/vehicle.md
DIESEL_KG_PER_L = 0.839
#: g/s to L/h at that density
LPH_PER_GPS = 3.6 / DIESEL_KG_PER_L
#: CO2 from burning a litre of diesel, g: EPA's 10,180 g per US gallon (complete oxidation)
CO2_G_PER_L = 10180.0 / 3.785411784


@dataclass(frozen=True, slots=True)
class FuelTable:
    """A steady-state fuel map as published: ``rates_gps[i][j]`` at speed ``first_rpm + i step_rpm``
    and torque ``first_nm + j step_nm``, with the full-load torque at each of those speeds."""

    first_rpm: float
    step_rpm: float
    first_nm: float
    step_nm: float
    rates_gps: tuple[tuple[float, ...], ...]
    full_load_nm: tuple[float, ...]
    idle_rpm: float

    def full_load(self) -> tuple[tuple[float, float], ...]:
        return tuple((self.first_rpm + i * self.step_rpm, t) for i, t in enumerate(self.full_load_nm))


def rated(full_load: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(speed, torque) of maximum power among a full-load curve's points."""
    return max(full_load, key=lambda point: point[0] * point[1])


def peak_nm(full_load: Sequence[tuple[float, float]]) -> float:
    return max(torque for _, torque in full_load)


class FuelMap:
    """A :class:`FuelTable` scaled to an engine (module docstring), with fuel cut below motoring.

    ``rate_gps(rpm, torque_nm)`` and ``rate_lph(rpm, torque_nm)`` are lookups built once: closures
    over the table in each unit, with the motoring curve's lookup written out inside, because the
    class6 model calls one every tick.
    """

    __slots__ = ("_rows", "first_nm", "first_rpm", "rate_gps", "rate_lph", "step_nm", "step_rpm",
                 "torque_scale")

    def __init__(self, table: FuelTable, idle_rpm: float, full_load: Sequence[tuple[float, float]],
                 motoring: TorqueCurve) -> None:
        source_rated = rated(table.full_load())[0]
        target_rated = rated(full_load)[0]
        speed_scale = (target_rated - idle_rpm) / (source_rated - table.idle_rpm)
        k = peak_nm(full_load) / peak_nm(table.full_load())
        self.torque_scale = k
        self.first_rpm = idle_rpm + (table.first_rpm - table.idle_rpm) * speed_scale
        self.step_rpm = table.step_rpm * speed_scale
        self.first_nm = table.first_nm * k
        self.step_nm = table.step_nm * k
        rows = []
        for i, source_row in enumerate(table.rates_gps):
            power_ratio = k * (self.first_rpm + i * self.step_rpm) / (table.first_rpm + i * table.step_rpm)
            rows.append(tuple(rate * power_ratio for rate in source_row))
        self._rows = tuple(rows)
        #: fuel mass rate, g/s, of the engine at ``rpm`` delivering ``torque_nm``
        self.rate_gps: Callable[[float, float], float] = self._lookup(self._rows, motoring)
        #: fuel volume rate, L/h, at :data:`DIESEL_KG_PER_L`
        self.rate_lph: Callable[[float, float], float] = self._lookup(
            tuple(tuple(rate * LPH_PER_GPS for rate in row) for row in rows), motoring)

    def _lookup(self, rows: tuple[tuple[float, ...], ...],
                motoring: TorqueCurve) -> Callable[[float, float], float]:
        first_rpm, inv_rpm, last_i = self.first_rpm, 1.0 / self.step_rpm, len(rows) - 2
        first_nm, inv_nm, last_j = self.first_nm, 1.0 / self.step_nm, len(rows[0]) - 2
        lo, inv, last, drags = motoring.sampling()

        def rate(rpm: float, torque_nm: float) -> float:
            x = (rpm - lo) * inv  # TorqueCurve.at, written out
            if x <= 0.0:
                drag = drags[0]
            else:
                i = int(x)
                drag = drags[last + 1] if i > last else drags[i] + (x - i) * (drags[i + 1] - drags[i])
            if torque_nm <= drag:
                return 0.0
            x = (rpm - first_rpm) * inv_rpm
            i = int(x) if x > 0.0 else 0
            fx = x - i if x > 0.0 else 0.0
            if i > last_i:
                i, fx = last_i, 1.0
            low, high = rows[i], rows[i + 1]
            if torque_nm < 0.0:
                idle = low[0] + fx * (high[0] - low[0])
                return idle * (torque_nm - drag) / -drag
            y = (torque_nm - first_nm) * inv_nm
            j = int(y) if y > 0.0 else 0
            fy = y - j if y > 0.0 else 0.0
            if j > last_j:
                j, fy = last_j, 1.0
            a = low[j] + fy * (low[j + 1] - low[j])
            b = high[j] + fy * (high[j + 1] - high[j])
            return a + fx * (b - a)

        return rate

    def at_grid(self, i: int, j: int) -> float:
        """The scaled rate at grid point (i, j), g/s: what the lookup returns there."""
        return self._rows[i][j]

    def bsfc(self, rpm: float, torque_nm: float) -> float:
        """Brake-specific fuel consumption, g/kWh, at a point of positive power."""
        return self.rate_gps(rpm, torque_nm) * 3.6e6 / (torque_nm * rpm * _RAD_S_PER_RPM)


_RAD_S_PER_RPM = 0.10471975511965977


def minimum_bsfc(fuel: FuelMap, full_load: TorqueCurve, lo_rpm: float, hi_rpm: float,
                 step_rpm: float = 10.0, step_nm: float = 5.0) -> tuple[float, float, float]:
    """(g/kWh, rpm, N m) of the lowest BSFC on a grid over the engine's envelope (up to full load)."""
    best = (float("inf"), 0.0, 0.0)
    rpm = lo_rpm
    while rpm <= hi_rpm:
        torque, top = step_nm, full_load.at(rpm)
        while torque <= top:
            value = fuel.bsfc(rpm, torque)
            if value < best[0]:
                best = (value, rpm, torque)
            torque += step_nm
        rpm += step_rpm
    return best
