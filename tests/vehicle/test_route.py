"""Rules of the grade schedule (ecu_sim.vehicle.route): lookup, looping, validation and route files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ecu_sim.errors import EXIT_USAGE, ConfigError
from ecu_sim.vehicle.route import TESTBED_POINTS, GradeSchedule


def write(tmp_path: Path, text: str, name: str = "route.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- lookup and looping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("distance_m", "grade_pct"),
    [
        (0.0, 0.0),
        (99.999, 0.0),
        (100.0, 0.5),
        (199.999, 0.5),
        (200.0, 0.1),
        (650.0, 0.5),
        (1050.0, 0.9),
        (1100.0, 1.0),
        (1199.999, 1.0),
    ],
)
def test_testbed_route_has_the_published_grades(distance_m: float, grade_pct: float) -> None:
    assert GradeSchedule.testbed().grade_at(distance_m) == grade_pct


def test_testbed_route_is_1200_m_long() -> None:
    assert GradeSchedule.testbed().length_m == 1200.0


def test_a_breakpoint_belongs_to_the_segment_it_starts() -> None:
    route = GradeSchedule.from_points([(0.0, 1.0), (10.0, 2.0), (20.0, 3.0)])
    assert route.grade_at(10.0) == 2.0
    assert route.grade_at(math.nextafter(10.0, 0.0)) == 1.0


def test_route_starts_again_at_its_last_distance() -> None:
    route = GradeSchedule.testbed()
    assert route.grade_at(1200.0) == 0.0
    assert route.grade_at(1300.0) == 0.5
    for d in (0.0, 57.3, 100.0, 450.5, 1150.0):
        for lap in (1, 2, 10, 1000):
            assert route.grade_at(d + lap * 1200.0) == route.grade_at(d)


def test_last_point_only_marks_the_end_of_the_route() -> None:
    route = GradeSchedule.from_points([(0.0, 2.0), (50.0, -3.0)])
    assert route.grade_at(49.9) == 2.0
    assert route.grade_at(50.0) == 2.0  # the loop starts again; -3 is never used


def test_constant_route_has_the_same_grade_everywhere() -> None:
    route = GradeSchedule.constant(-2.5)
    assert {route.grade_at(d) for d in (0.0, 1.0, 999.0, 1000.0, 1e6 + 0.5)} == {-2.5}


def test_tiny_negative_distance_wraps_to_the_last_segment_not_past_it() -> None:
    route = GradeSchedule.from_points([(0.0, 1.0), (100.0, 2.0), (200.0, 3.0)])
    assert route.grade_at(-1e-20) == 2.0  # -1e-20 % 200 rounds to 200.0
    assert route.grade_at(-50.0) == 2.0


def test_points_are_kept_as_given() -> None:
    assert GradeSchedule.testbed().points == TESTBED_POINTS


# -- validation of points -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("points", "complaint"),
    [
        ([], "need at least 2"),
        ([(0.0, 1.0)], "need at least 2"),
        ([(5.0, 0.0), (10.0, 1.0)], "must be 0"),
        ([(0.0, 0.0), (10.0, 1.0), (10.0, 2.0)], "strictly increase"),
        ([(0.0, 0.0), (10.0, 1.0), (5.0, 2.0)], "strictly increase"),
        ([(0.0, 0.0), (math.inf, 1.0)], "not a finite number"),
        ([(0.0, math.nan), (10.0, 1.0)], "not a finite number"),
        ([(0.0, 0.0), (10.0, 150.0)], "steeper than"),
        ([(0.0, 0.0), (10.0, "steep")], "not a number"),
        ([(0.0, 0.0), (10.0,)], "not a (distance_m, grade_pct) pair"),
        ([(0.0, 0.0), "10,1"], "not a (distance_m, grade_pct) pair"),
    ],
)
def test_invalid_points_raise_config_error_naming_the_problem(points: list[object], complaint: str) -> None:
    with pytest.raises(ConfigError) as info:
        GradeSchedule.from_points(points)  # type: ignore[arg-type]
    assert complaint in str(info.value)
    assert info.value.exit_status == EXIT_USAGE


def test_invalid_point_error_says_which_point() -> None:
    with pytest.raises(ConfigError, match="point 2"):
        GradeSchedule.from_points([(0.0, 0.0), (10.0, 1.0), (5.0, 2.0)])


def test_downhill_grades_down_to_minus_100_percent_are_accepted() -> None:
    route = GradeSchedule.from_points([(0.0, -100.0), (10.0, 100.0), (20.0, 0.0)])
    assert route.grade_at(5.0) == -100.0


# -- route files ----------------------------------------------------------------------------------------


def test_route_file_gives_the_same_schedule_as_its_points(tmp_path: Path) -> None:
    lines = ["distance_m,grade_pct"] + [f"{d:g},{g:g}" for d, g in TESTBED_POINTS]
    path = write(tmp_path, "\n".join(lines) + "\n")
    assert GradeSchedule.from_csv(path) == GradeSchedule.testbed()


def test_route_file_tolerates_a_byte_order_mark_spaces_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "route.csv"
    path.write_bytes(b"\xef\xbb\xbfdistance_m, grade_pct\r\n0, 1.5\r\n\r\n250.5 ,-2\r\n")
    route = GradeSchedule.from_csv(path)
    assert route.points == ((0.0, 1.5), (250.5, -2.0))


@pytest.mark.parametrize("header", ["distance,grade", "grade_pct,distance_m", "0,0", "distance_m;grade_pct"])
def test_route_file_with_a_wrong_header_names_the_file_and_line_1(tmp_path: Path, header: str) -> None:
    path = write(tmp_path, f"{header}\n0,0\n100,1\n")
    with pytest.raises(ConfigError) as info:
        GradeSchedule.from_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 1" in message
    assert "distance_m,grade_pct" in message


def test_route_file_with_decreasing_distance_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "distance_m,grade_pct\n0,0\n100,1\n200,2\n150,3\n")
    with pytest.raises(ConfigError) as info:
        GradeSchedule.from_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 5" in message
    assert "strictly increase" in message


def test_route_file_with_a_non_numeric_value_names_the_file_line_and_text(tmp_path: Path) -> None:
    path = write(tmp_path, "distance_m,grade_pct\n0,0\n100,1.5%\n")
    with pytest.raises(ConfigError) as info:
        GradeSchedule.from_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "'1.5%'" in message


def test_route_file_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "distance_m,grade_pct\n\n0,0\n\n100,x\n")
    with pytest.raises(ConfigError, match="line 5"):
        GradeSchedule.from_csv(path)


@pytest.mark.parametrize("row", ["100", "100,1,2"])
def test_route_file_row_without_exactly_two_fields_is_refused(tmp_path: Path, row: str) -> None:
    path = write(tmp_path, f"distance_m,grade_pct\n0,0\n{row}\n")
    with pytest.raises(ConfigError, match=r"line 3.*expected 2"):
        GradeSchedule.from_csv(path)


def test_route_file_with_nan_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "distance_m,grade_pct\n0,nan\n100,1\n")
    with pytest.raises(ConfigError, match=r"line 2.*not a finite number"):
        GradeSchedule.from_csv(path)


def test_route_file_with_a_single_point_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "distance_m,grade_pct\n0,0\n")
    with pytest.raises(ConfigError, match="need at least 2"):
        GradeSchedule.from_csv(path)


def test_empty_route_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    with pytest.raises(ConfigError, match="empty"):
        GradeSchedule.from_csv(path)


def test_missing_route_file_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(ConfigError) as info:
        GradeSchedule.from_csv(path)
    assert str(path) in str(info.value)
    assert "not found" in str(info.value)


def test_route_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "route.csv"
    path.write_bytes(b"distance_m,grade_pct\n0,0\n100,\xff\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        GradeSchedule.from_csv(path)
