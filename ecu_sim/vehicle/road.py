"""A road as terrain height over distance, and the slope a truck feels between its axles.

The profile is held in memory on an even grid of distance, so a lookup is an index computation,
and road and truck stay in step whatever the speed. Distance is measured along the road. The truck
stands with its front axle at the distance travelled and its rear axle one wheelbase behind, so
the sine of its pitch is the height difference over the wheelbase::

    sin(theta) = (h(d) - h(d - wheelbase)) / wheelbase

A crest or a sag is felt over the wheelbase, not as a step, and the grade force m g sin(theta)
needs no trigonometric function. Heights come from elevation points (linear between them), or from
grades (integrated: a constant grade per segment, or a grade interpolated linearly between points
as 40 CFR 1037 appendix D asks). Elevation data carries noise that a derivative amplifies, so it can
be smoothed with a centred moving average over a stated window before use.

At the end the road either starts again (``loop``: the profile repeats, lifted by its net rise, so
the height stays continuous) or continues level at its last height (``extend``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

ROUTE_ENDS = ("loop", "extend")


class Road:
    """Heights on an even grid, immutable; built by :meth:`from_elevation` or :meth:`from_grades`."""

    __slots__ = ("_heights", "_inv_step", "_last", "_length_m", "_loop", "_rise_m", "_step_m")

    def __init__(self, heights: Sequence[float], step_m: float, loop: bool) -> None:
        if len(heights) < 2 or not step_m > 0.0:
            raise ValueError("a road needs at least two heights and a positive step")
        self._heights = list(heights)
        self._step_m = step_m
        self._inv_step = 1.0 / step_m
        self._last = len(heights) - 1
        self._length_m = step_m * self._last
        self._rise_m = self._heights[-1] - self._heights[0]
        self._loop = loop

    @classmethod
    def from_elevation(cls, points: Sequence[tuple[float, float]], *, step_m: float = 1.0,
                       smoothing_m: float = 0.0, loop: bool = True) -> Road:
        """From (distance m, elevation m) points; the loader checks distances start at 0 and increase."""
        length = points[-1][0]
        count = max(1, round(length / step_m))
        step = length / count
        heights = []
        j = 0
        for i in range(count + 1):
            d = i * step
            while j < len(points) - 2 and points[j + 1][0] < d:
                j += 1
            (d0, h0), (d1, h1) = points[j], points[j + 1]
            heights.append(h0 + (min(d, d1) - d0) * (h1 - h0) / (d1 - d0))
        return cls(_smooth(heights, round(smoothing_m / step), loop), step, loop)

    @classmethod
    def from_grades(cls, points: Sequence[tuple[float, float]], *, linear: bool, step_m: float = 1.0,
                    loop: bool = True) -> Road:
        """From (distance m, grade %) points: each grade held to the next point, or linear between them."""
        elevation = [(points[0][0], 0.0)]
        height = 0.0
        for (d0, g0), (d1, g1) in itertools.pairwise(points):
            if linear:
                height += _rise(d1 - d0, g0, g1)
            else:
                height += _rise(d1 - d0, g0, g0)
            elevation.append((d1, height))
        if not linear:
            return cls.from_elevation(elevation, step_m=step_m, loop=loop)
        # Linear grade makes the height a parabola per segment: sample it, not its chords.
        fine: list[tuple[float, float]] = [elevation[0]]
        for k, ((d0, g0), (d1, g1)) in enumerate(itertools.pairwise(points)):
            pieces = max(1, math.ceil((d1 - d0) / step_m))
            for i in range(1, pieces + 1):
                x = (d1 - d0) * i / pieces
                g_x = g0 + (g1 - g0) * i / pieces
                fine.append((d0 + x, elevation[k][1] + _rise(x, g0, g_x)))
        return cls.from_elevation(fine, step_m=step_m, loop=loop)

    def elevation_at(self, distance_m: float) -> float:
        """Height at a distance along the road, by the route-end rule outside the profile."""
        length = self._length_m
        lift = 0.0
        if self._loop:
            laps = math.floor(distance_m / length)
            distance_m -= laps * length
            lift = laps * self._rise_m
        elif distance_m >= length:
            return self._heights[-1]
        x = distance_m * self._inv_step
        if x <= 0.0:
            return self._heights[0] + lift
        i = int(x)
        h = self._heights
        if i >= self._last:
            return h[-1] + lift
        return h[i] + (x - i) * (h[i + 1] - h[i]) + lift

    def sin_under_axles(self, distance_m: float, wheelbase_m: float) -> float:
        """Sine of the truck's pitch with the front axle at ``distance_m``; positive uphill."""
        s = (self.elevation_at(distance_m) - self.elevation_at(distance_m - wheelbase_m)) / wheelbase_m
        return 1.0 if s > 1.0 else -1.0 if s < -1.0 else s

    @property
    def length_m(self) -> float:
        return self._length_m

    @property
    def step_m(self) -> float:
        return self._step_m


def grade_pct_of(sin_g: float) -> float:
    """The grade in percent (rise over run) of a slope whose sine is ``sin_g``."""
    cos_g = math.sqrt(1.0 - sin_g * sin_g)
    return 100.0 * sin_g / cos_g if cos_g > 0.0 else math.copysign(math.inf, sin_g)


def _rise(run_m: float, g0_pct: float, g1_pct: float) -> float:
    """Height gained over ``run_m`` of road whose grade goes linearly from g0 to g1 (in %)."""
    # Distance is along the road: the rise of a slope of grade G over a length s is s G / sqrt(1 + G^2).
    mean = (g0_pct + g1_pct) * 0.005
    return run_m * mean / math.sqrt(1.0 + mean * mean)


def _smooth(heights: list[float], window: int, loop: bool) -> list[float]:
    """Centred moving average over ``window`` samples (made odd); looped or padded with the end heights."""
    half = window // 2
    if half < 1:
        return heights
    n = len(heights) - 1
    rise = heights[-1] - heights[0]

    def at(i: int) -> float:
        if loop:
            laps, k = divmod(i, n)
            return heights[k] + laps * rise
        return heights[0] if i < 0 else heights[-1] if i > n else heights[i]

    width = 2 * half + 1
    total = sum(at(i) for i in range(-half, half + 1))
    out = []
    for i in range(n + 1):
        out.append(total / width)
        total += at(i + half + 1) - at(i - half)
    return out
