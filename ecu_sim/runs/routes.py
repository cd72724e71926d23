"""Route files and built-in routes read into the road a truck drives, before the bus opens.

A route is a built-in name (``testbed``, ``appendix-d``), a CSV file of grades (``distance_m,grade_pct``,
the testbed's format) or of elevations (``distance_m,elevation_m``), or a GPX track. A GPX file
is read with gpxpy (the optional ``routes`` extra): distance along the track from its points'
coordinates and heights, elevation from the points. Every mistake is a ConfigError that names the
file, the line or point, and what to do, so the command exits 2 before anything is on the wire.

The ``class6`` truck drives every route as a road of heights, felt under its axles. The
``testbed`` truck drives the routes only a road can describe that way too (elevations, GPX,
appendix D's linear grades), but its own route and grade files as the grade schedule they always
were: its runs on those stay the same bit for bit, on every processor.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ecu_sim.errors import ConfigError, needs_extra
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle import appendix_d
from ecu_sim.vehicle.road import Road
from ecu_sim.vehicle.route import TESTBED_POINTS, GradeSchedule

#: built-in routes by name: (distance m, grade %) points, and whether grades are linear between them
BUILT_IN: dict[str, tuple[tuple[tuple[float, float], ...], bool]] = {
    "testbed": (TESTBED_POINTS, False),
    "appendix-d": (appendix_d.POINTS, True),
}
GRADE_HEADER = ("distance_m", "grade_pct")
ELEVATION_HEADER = ("distance_m", "elevation_m")


def load_grades(name: str) -> GradeSchedule:
    """The testbed vehicle's grade schedule: its built-in route or a grade CSV (a step function)."""
    if name in BUILT_IN:
        return GradeSchedule.from_points(BUILT_IN[name][0])
    return GradeSchedule.from_csv(name)


def is_road(name: str) -> bool:
    """Whether the testbed truck drives the route ``name`` as a road under its wheelbase.

    Elevations and GPX tracks have no grade schedule to fall back on, and a built-in road such as
    appendix D has grades linear between its points, which a step function would not follow. The
    testbed's own route (the default) and grade CSVs stay schedules: the runs made on them must
    not change. A file that cannot be read is no road, so the grade reader says what is wrong.
    """
    if name in BUILT_IN:
        return name != "testbed"
    return name.lower().endswith(".gpx") or _header(name) == ELEVATION_HEADER


def road_file(settings: Settings) -> str | None:
    """The file a truck's road is read from; None for a constant grade or a built-in."""
    run = settings.run
    if run.grade_pct is not None:
        return None
    name = run.grade_file or "testbed"
    return None if name in BUILT_IN else name


def load_road(settings: Settings) -> Road:
    """The road from the settings, as the ``class6`` truck (and the testbed truck on a route that
    :func:`is_road`) drives it: a constant grade, a built-in or a file."""
    run, vehicle = settings.run, settings.vehicle
    loop = vehicle.route_end == "loop"
    if run.grade_pct is not None:
        flat = ((0.0, run.grade_pct), (1000.0, run.grade_pct))
        return Road.from_grades(flat, linear=False, loop=loop)
    name = road_file(settings)
    if name is None:
        points, linear = BUILT_IN[run.grade_file or "testbed"]
        return Road.from_grades(points, linear=linear, loop=loop)
    if name.lower().endswith(".gpx"):
        return Road.from_elevation(read_gpx(name), smoothing_m=vehicle.smoothing_m, loop=loop)
    if _header(name) == ELEVATION_HEADER:
        return Road.from_elevation(read_elevation_csv(name), smoothing_m=vehicle.smoothing_m, loop=loop)
    return Road.from_grades(GradeSchedule.from_csv(name).points, linear=False, loop=loop)


def _header(name: str) -> tuple[str, ...] | None:
    """The first non-blank line's fields, or None when the file cannot be read (from_csv says why)."""
    try:
        with open(name, encoding="utf-8-sig", newline="") as f:
            for row in csv.reader(f):
                cells = tuple(cell.strip() for cell in row)
                if any(cells):
                    return cells
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


def read_elevation_csv(name: str) -> list[tuple[float, float]]:
    """``distance_m,elevation_m`` rows, checked: numbers, the first distance 0, strictly increasing."""
    rows: list[tuple[str, list[str]]] = []
    try:
        with open(name, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            for row in reader:
                cells = [cell.strip() for cell in row]
                if any(cells):
                    rows.append((f"route file {name}, line {reader.line_num}", cells))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"route file {name}: cannot read it as UTF-8 CSV ({exc})") from None
    points: list[tuple[float, float]] = []
    for where, cells in rows[1:]:
        if len(cells) != 2 or not cells[1]:
            raise ConfigError(f"{where}: expected 'distance_m,elevation_m', got {','.join(cells)!r}; "
                              f"every line needs both a distance and an elevation")
        points.append((_number(cells[0], "distance", where), _number(cells[1], "elevation", where)))
        _check_order(points, where)
    return _enough(points, f"route file {name}")


def read_gpx(name: str) -> list[tuple[float, float]]:
    """A GPX track as (distance along it m, elevation m), every point needing an elevation."""
    try:
        import gpxpy
        import gpxpy.gpx
    except ImportError:
        raise ConfigError(f"route file {name}: " + needs_extra(
            "reading GPX", "gpxpy", "routes", "or write the route as CSV distance_m,elevation_m")) from None
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"route file {name}: cannot read it ({exc}); check the path") from None
    try:
        gpx = gpxpy.parse(text)
    except gpxpy.gpx.GPXException as exc:
        raise ConfigError(f"route file {name}: not a GPX file ({exc}); export the route as GPX "
                          f"1.1 with elevations, or write it as CSV distance_m,elevation_m") from None
    points: list[tuple[float, float]] = []
    previous = None
    number = 0
    for track in gpx.tracks:
        for segment in track.segments:
            for point in segment.points:
                number += 1
                where = f"route file {name}, track point {number}"
                if point.elevation is None:
                    raise ConfigError(f"{where} has no elevation (<ele>); the road's slope comes from "
                                      f"elevations, so every point needs one")
                step = 0.0 if previous is None else point.distance_3d(previous) or 0.0
                distance = 0.0 if previous is None else points[-1][0] + step
                if previous is not None and step <= 0.0:
                    raise ConfigError(f"{where} lies where the point before it lies; remove "
                                      f"repeated points so the distance along the track increases")
                points.append((distance, float(point.elevation)))
                previous = point
    return _enough(points, f"route file {name}")


def _number(text: str, what: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{where}: {what} {text!r} is not a finite number")
    return value


def _check_order(points: list[tuple[float, float]], where: str) -> None:
    distance = points[-1][0]
    if len(points) == 1 and distance != 0.0:
        raise ConfigError(f"{where}: the first distance is {distance:g} m, it must be 0")
    if len(points) > 1 and distance <= points[-2][0]:
        raise ConfigError(f"{where}: distance {distance:g} m is not greater than the previous one "
                          f"({points[-2][0]:g} m); distances must strictly increase")


def _enough(points: list[tuple[float, float]], source: str) -> list[tuple[float, float]]:
    if len(points) < 2:
        raise ConfigError(f"{source}: {len(points)} point(s), a road needs at least 2")
    return points
