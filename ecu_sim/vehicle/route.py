"""Road grade as a function of distance travelled, looping over a finite route.

Grade follows distance, not time, so road, vehicle and any plot of a run stay in step whatever the speed.
A route is a list of (distance m, grade %) breakpoints; the grade is constant from one breakpoint to the
next, and the last breakpoint only marks where the route ends and starts again::

    grade(d) = g[i]  where  d_i <= (d mod d_max) < d_(i+1),  d_max = last distance

Only :meth:`GradeSchedule.from_csv` touches the file system; everything else is pure.
"""

from __future__ import annotations

import csv
import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from pathlib import Path

from ecu_sim.errors import ConfigError

#: The steepest grade accepted, in percent (45 degrees). Real roads stay under about 15 %; anything above
#: 100 % is almost certainly a unit mistake (per mille, or degrees), so it is refused rather than driven.
MAX_ABS_GRADE_PCT = 100.0

CSV_HEADER = ("distance_m", "grade_pct")

#: The original testbed's example route: (distance m, grade %), looping every 1200 m.
TESTBED_POINTS: tuple[tuple[float, float], ...] = (
    (0.0, 0.0),
    (100.0, 0.5),
    (200.0, 0.1),
    (300.0, 0.2),
    (400.0, 0.3),
    (500.0, 0.4),
    (600.0, 0.5),
    (700.0, 0.6),
    (800.0, 0.7),
    (900.0, 0.8),
    (1000.0, 0.9),
    (1100.0, 1.0),
    (1200.0, 1.0),
)

_FIX_HINT = (
    "a route needs at least two points, the first at distance 0, distances strictly increasing, "
    f"and grades within +-{MAX_ABS_GRADE_PCT:g} %"
)


class GradeSchedule:
    """A looping, piecewise-constant grade profile; immutable once built.

    Build one with :meth:`constant`, :meth:`testbed`, :meth:`from_points` or :meth:`from_csv`; all of them
    validate, so :meth:`grade_at` can stay a bare bisect on the real-time path.
    """

    __slots__ = ("_distances", "_grades", "_last_segment", "_length_m", "_segment")

    _distances: list[float]
    _grades: list[float]
    _length_m: float
    _last_segment: int

    def __init__(self, points: Iterable[tuple[float, float]]) -> None:
        """Same as :meth:`from_points`: validates, raising ConfigError that names the offending point."""
        try:
            rows: list[tuple[str, object]] = [(f"point {i}", p) for i, p in enumerate(points)]
        except TypeError:
            raise ConfigError(f"route points: {points!r} is not a list of (distance_m, grade_pct) pairs; "
                              f"{_FIX_HINT}") from None
        self._init_checked(_validate(rows, "route points"))

    def _init_checked(self, points: Sequence[tuple[float, float]]) -> None:
        self._distances = [d for d, _ in points]
        self._grades = [g for _, g in points]
        self._length_m = self._distances[-1]
        self._last_segment = len(points) - 2
        #: (start, end, grade) of the segment found last: the truck stays on one for many ticks
        self._segment = (self._distances[0], self._distances[1], self._grades[0])

    # -- constructors -------------------------------------------------------------------------------------

    @classmethod
    def from_points(cls, points: Iterable[tuple[float, float]]) -> GradeSchedule:
        """Build from (distance m, grade %) pairs; raises ConfigError saying which point is wrong."""
        return cls(points)

    @classmethod
    def constant(cls, grade_pct: float) -> GradeSchedule:
        """The same grade everywhere (a flat road with 0); the 1000 m length only sets the loop period."""
        return cls(((0.0, grade_pct), (1000.0, grade_pct)))

    @classmethod
    def testbed(cls) -> GradeSchedule:
        """The route built into the original testbed, the default when no route file is given."""
        return cls(TESTBED_POINTS)

    @classmethod
    def from_csv(cls, path: str | Path) -> GradeSchedule:
        """Read a route file: header ``distance_m,grade_pct``, then one breakpoint per line.

        Blank lines are skipped and a UTF-8 byte-order mark (as spreadsheets write it) is tolerated. Every
        error raises ConfigError naming the file and line, what is wrong and what to do.
        """
        name = str(path)
        try:
            with open(path, encoding="utf-8-sig", newline="") as f:
                rows = list(_read_rows(f, name))
        except FileNotFoundError:
            raise ConfigError(f"route file {name}: not found; check the path or omit it to use "
                              f"the built-in testbed route") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"route file {name}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              f"save it as UTF-8 CSV") from None
        except OSError as exc:
            raise ConfigError(f"route file {name}: cannot read it ({exc.strerror or exc}); "
                              f"check the path and its permissions") from None
        except csv.Error as exc:
            raise ConfigError(f"route file {name}: not valid CSV ({exc}); "
                              f"write one 'distance_m,grade_pct' pair per line") from None
        schedule = cls.__new__(cls)
        schedule._init_checked(_validate(rows, f"route file {name}"))
        return schedule

    # -- queries ------------------------------------------------------------------------------------------

    def grade_at(self, distance_m: float) -> float:
        """Grade in percent at a distance travelled; the route repeats every :attr:`length_m` metres."""
        d = distance_m % self._length_m
        start, end, grade = self._segment
        if start <= d < end:
            return grade
        # min(): a tiny negative distance rounds up to length_m, which lies on the last segment
        i = min(bisect_right(self._distances, d) - 1, self._last_segment)
        self._segment = (self._distances[i], self._distances[i + 1], self._grades[i])
        return self._grades[i]

    @property
    def length_m(self) -> float:
        """Distance after which the route starts again (the last breakpoint's distance)."""
        return self._length_m

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        """The breakpoints as given, for logging and plotting."""
        return tuple(zip(self._distances, self._grades, strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GradeSchedule):
            return NotImplemented
        return self._distances == other._distances and self._grades == other._grades

    def __hash__(self) -> int:
        return hash(self.points)

    def __repr__(self) -> str:
        return f"GradeSchedule({list(self.points)!r})"


def _read_rows(lines: Iterable[str], name: str) -> Iterable[tuple[str, object]]:
    """Yield (location, (distance text, grade text)) per data line, after checking the header."""
    reader = csv.reader(lines)
    header: list[str] | None = None
    for row in reader:
        where = f"route file {name}, line {reader.line_num}"
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        if header is None:
            header = cells
            if tuple(cells) != CSV_HEADER:
                raise ConfigError(
                    f"{where}: the header is {','.join(row)!r}, expected exactly "
                    f"{','.join(CSV_HEADER)!r}; make that the first line (distance in metres, grade in %)"
                )
            continue
        if len(cells) != 2:
            raise ConfigError(
                f"{where}: {len(cells)} fields ({','.join(row)!r}), expected 2; "
                f"write one 'distance_m,grade_pct' pair per line"
            )
        yield where, (cells[0], cells[1])
    if header is None:
        raise ConfigError(f"route file {name}: empty; expected the header {','.join(CSV_HEADER)!r} "
                          f"followed by at least two 'distance_m,grade_pct' lines")


def _number(value: object, what: str, where: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: {what} {value!r} is not a number; {_FIX_HINT}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {what} {value!r} is not a number; {_FIX_HINT}") from None
    if not math.isfinite(number):
        raise ConfigError(f"{where}: {what} {value!r} is not a finite number; {_FIX_HINT}")
    return number


def _pair(raw: object) -> tuple[object, object] | None:
    """Unpack anything shaped like a pair (tuple, list, numpy row), but not a two-character string."""
    if isinstance(raw, (str, bytes)):
        return None
    try:
        items = list(raw)  # type: ignore[call-overload]
    except TypeError:
        return None
    if len(items) != 2:
        return None
    return items[0], items[1]


def _validate(rows: Sequence[tuple[str, object]], source: str) -> list[tuple[float, float]]:
    """Turn (location, (distance, grade)) rows into checked floats; ConfigError at the first fault."""
    points: list[tuple[float, float]] = []
    for where, raw in rows:
        loc = where if where.startswith(source) else f"{source}, {where}"
        pair = _pair(raw)
        if pair is None:
            raise ConfigError(f"{loc}: {raw!r} is not a (distance_m, grade_pct) pair; {_FIX_HINT}")
        distance = _number(pair[0], "distance", loc)
        grade = _number(pair[1], "grade", loc)
        if not points and distance != 0.0:
            raise ConfigError(f"{loc}: the first distance is {distance:g} m, it must be 0; "
                              f"add a point at distance 0 so the grade is defined from the start")
        if points and distance <= points[-1][0]:
            raise ConfigError(
                f"{loc}: distance {distance:g} m is not greater than the previous one "
                f"({points[-1][0]:g} m); distances must strictly increase, so sort the points "
                f"and remove duplicates"
            )
        if abs(grade) > MAX_ABS_GRADE_PCT:
            raise ConfigError(
                f"{loc}: grade {grade:g} % is steeper than +-{MAX_ABS_GRADE_PCT:g} %; "
                f"grades are in percent (rise per 100 m of run), not per mille or degrees"
            )
        points.append((distance, grade))
    if len(points) < 2:
        raise ConfigError(
            f"{source}: {len(points)} point(s), need at least 2; the last point's distance is the "
            f"route length after which it repeats, e.g. '0,0' then '1000,0'"
        )
    return points
