"""Rules of roads from elevation (ecu_sim.vehicle.road) and of route files (ecu_sim.runs.routes)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from ecu_sim.vehicle import appendix_d
from ecu_sim.vehicle.road import Road, grade_pct_of
from tests.conftest import Cli

#: a 1 m high step between 100 m and 101 m of an otherwise level road
STEP = ((0.0, 0.0), (100.0, 0.0), (101.0, 1.0), (300.0, 1.0))


@pytest.mark.parametrize(("front_m", "rise_under_axles_m"),
                         [(99.0, 0.0), (100.5, 0.5), (103.0, 1.0), (105.5, 0.5), (107.0, 0.0)])
def test_the_slope_under_the_axles_of_an_elevation_step_is_the_height_between_them_over_the_wheelbase(
        front_m: float, rise_under_axles_m: float) -> None:
    road = Road.from_elevation(STEP, step_m=0.5, loop=False)
    assert road.sin_under_axles(front_m, 5.0) == pytest.approx(rise_under_axles_m / 5.0, abs=1e-12)


def test_a_slope_of_sine_one_fifth_is_a_grade_of_one_over_the_root_of_twenty_four() -> None:
    assert grade_pct_of(0.2) == pytest.approx(100.0 / math.sqrt(24.0), rel=1e-15)


def test_a_looping_road_repeats_lifted_by_its_net_rise_so_its_height_stays_continuous() -> None:
    road = Road.from_elevation(((0.0, 10.0), (100.0, 20.0)), loop=True)
    assert road.elevation_at(150.0) == pytest.approx(25.0)
    assert road.sin_under_axles(102.0, 5.0) == pytest.approx(0.1)


def test_an_extended_road_continues_level_after_its_end() -> None:
    road = Road.from_elevation(((0.0, 10.0), (100.0, 20.0)), loop=False)
    assert road.elevation_at(500.0) == 20.0 and road.sin_under_axles(500.0, 5.0) == 0.0


def test_smoothing_keeps_the_height_of_a_constant_slope() -> None:
    points = [(float(d), 0.05 * d) for d in range(0, 1001, 10)]
    road = Road.from_elevation(points, smoothing_m=50.0, loop=True)
    assert road.elevation_at(500.0) == pytest.approx(25.0, abs=1e-9)


def test_smoothing_takes_out_noise_that_the_raw_profile_would_turn_into_grade() -> None:
    noisy = [(float(d), 0.3 * ((d // 5) % 2)) for d in range(0, 1001, 5)]
    raw = Road.from_elevation(noisy, loop=False)
    smooth = Road.from_elevation(noisy, smoothing_m=30.0, loop=False)
    worst = [max(abs(r.sin_under_axles(d, 5.0)) for d in range(100, 900)) for r in (raw, smooth)]
    assert worst[1] < worst[0] / 5


def test_appendix_d_integrates_to_a_road_whose_steepest_slope_under_the_axles_is_its_peak_averaged() -> None:
    # The 5.01 % peak sits between 3.69 % points 90 m either side: over a 5 m wheelbase centred on
    # it the mean grade is 5.01 - (5.01 - 3.69) / 90 * 2.5 / 2.
    road = Road.from_grades(appendix_d.POINTS, linear=True)
    steepest = max(grade_pct_of(road.sin_under_axles(d / 2, 5.0)) for d in range(14400, 14800))
    assert steepest == pytest.approx(5.01 - 1.32 / 90 * 1.25, abs=2e-3)


# -- route files through the command line ---------------------------------------------------------------


def simulate(cli_main: Cli, route: Path | str, *extra: str) -> tuple[int, str]:
    result = cli_main("simulate", "--vehicle", "class6", "--route", str(route), "--duration", "10", *extra)
    return result.status, result.err


def test_an_elevation_csv_drives_the_class6_truck_over_its_heights(cli_main: Cli, tmp_path: Path) -> None:
    route = tmp_path / "hill.csv"
    route.write_text("distance_m,elevation_m\n0,100\n200,100\n400,110\n600,100\n")
    out = tmp_path / "run.csv"
    status, err = simulate(cli_main, route, "--smoothing", "0", "--out", str(out))
    assert status == 0, err
    rows = list(csv.DictReader(out.open()))
    assert float(rows[-1]["elevation_m"]) > 100.0 and float(rows[-1]["grade_pct"]) > 4.0


def test_an_elevation_csv_line_without_an_elevation_exits_2_naming_file_and_line(
        cli_main: Cli, tmp_path: Path) -> None:
    route = tmp_path / "bad.csv"
    route.write_text("distance_m,elevation_m\n0,100\n100,\n200,102\n")
    status, err = simulate(cli_main, route)
    assert status == 2 and f"{route}, line 3" in err and "elevation" in err


def test_an_elevation_csv_with_a_distance_going_back_exits_2_naming_file_and_line(
        cli_main: Cli, tmp_path: Path) -> None:
    route = tmp_path / "bad.csv"
    route.write_text("distance_m,elevation_m\n0,100\n100,101\n90,102\n")
    status, err = simulate(cli_main, route)
    assert status == 2 and f"{route}, line 4" in err and "strictly increase" in err


GPX = """<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
<trkpt lat="48.0000" lon="11.0000">{ele1}</trkpt>
<trkpt lat="48.0010" lon="11.0000"><ele>505</ele></trkpt>
<trkpt lat="48.0020" lon="11.0000"><ele>515</ele></trkpt>
</trkseg></trk></gpx>
"""


def test_a_gpx_track_drives_the_class6_truck_with_distance_from_its_coordinates(
        cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("gpxpy")
    route = tmp_path / "track.gpx"
    route.write_text(GPX.format(ele1="<ele>500</ele>"))
    out = tmp_path / "run.csv"
    status, err = simulate(cli_main, route, "--smoothing", "0", "--out", str(out), "--route-end", "extend")
    assert status == 0, err
    rows = list(csv.DictReader(out.open()))
    assert 500.0 < float(rows[30]["elevation_m"]) - 0.0 < 515.0 and float(rows[30]["grade_pct"]) > 0.0


def test_a_gpx_point_without_elevation_exits_2_naming_the_point(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("gpxpy")
    route = tmp_path / "track.gpx"
    route.write_text(GPX.format(ele1=""))
    status, err = simulate(cli_main, route)
    assert status == 2 and "track point 1" in err and "elevation" in err


def test_a_file_that_is_not_gpx_exits_2_saying_so(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("gpxpy")
    route = tmp_path / "track.gpx"
    route.write_text("distance_m,elevation_m\n0,1\n")
    status, err = simulate(cli_main, route)
    assert status == 2 and "not a GPX file" in err


# -- the testbed truck on a road: the grade under its wheelbase, as class6 feels it ---------------------


def drive_testbed(cli_main: Cli, out: Path, *args: str) -> list[dict[str, str]]:
    """The testbed truck's trace of ``ecu-sim simulate ARGS`` (the default vehicle)."""
    result = cli_main("simulate", *args, "--out", str(out))
    assert result.status == 0, result.err
    return list(csv.DictReader(out.open()))


def slope(path: Path, rise_m: float) -> Path:
    """A straight slope of ``rise_m`` over 4 km, then level (with --route-end extend)."""
    path.write_text(f"distance_m,elevation_m\n0,100\n4000,{100 + rise_m}\n")
    return path


def test_the_testbed_truck_slows_climbing_an_elevation_route_and_speeds_up_descending(
        cli_main: Cli, tmp_path: Path) -> None:
    pedal = ("--app", "60", "--duration", "60", "--route-end", "extend")
    final = {}
    for name, rise in (("up", 200.0), ("flat", 0.0), ("down", -200.0)):
        route = slope(tmp_path / f"{name}.csv", rise)
        rows = drive_testbed(cli_main, tmp_path / f"{name}.out.csv", "--route", str(route), *pedal)
        final[name] = (float(rows[-1]["speed_kph"]), float(rows[-1]["grade_pct"]))
    assert final["up"][0] < final["flat"][0] < final["down"][0]
    # a rise of 5 m in 100 m along the road is a slope of sine 0.05, its grade 5/cos
    grade = 100.0 * 0.05 / math.sqrt(1.0 - 0.05 * 0.05)
    assert final["up"][1] == pytest.approx(grade, abs=1e-4)
    assert final["down"][1] == pytest.approx(-grade, abs=1e-4)
    assert final["flat"][1] == 0.0


def test_a_level_elevation_route_drives_the_testbed_truck_exactly_as_a_flat_road(
        cli_main: Cli, tmp_path: Path) -> None:
    route = slope(tmp_path / "level.csv", 0.0)
    on_road = drive_testbed(cli_main, tmp_path / "road.csv", "--route", str(route), "--duration", "30")
    flat = drive_testbed(cli_main, tmp_path / "flat.csv", "--grade", "0", "--duration", "30")
    assert on_road == flat


@pytest.mark.parametrize("wheelbase_m", [2.0, 5.0, 10.0])
def test_the_testbed_truck_feels_a_step_in_the_road_over_its_wheelbase(
        cli_main: Cli, tmp_path: Path, wheelbase_m: float) -> None:
    route = tmp_path / "step.csv"
    route.write_text("distance_m,elevation_m\n" + "\n".join(f"{d:g},{h:g}" for d, h in STEP) + "\n")
    rows = drive_testbed(cli_main, tmp_path / "run.csv", "--route", str(route), "--smoothing", "0",
                   "--route-end", "extend", "--wheelbase", str(wheelbase_m), "--app", "50",
                   "--duration", "10")
    grades = [float(row["grade_pct"]) for row in rows]
    # the 1 m step lies wholly between the axles for a while: its height over the wheelbase
    assert max(grades) == pytest.approx(grade_pct_of(1.0 / wheelbase_m), abs=1e-4)
    assert grades[0] == 0.0 and grades[-1] == 0.0


def test_a_gpx_track_drives_the_testbed_truck_uphill(cli_main: Cli, tmp_path: Path) -> None:
    pytest.importorskip("gpxpy")
    route = tmp_path / "track.gpx"
    route.write_text(GPX.format(ele1="<ele>500</ele>"))
    pedal = ("--app", "50", "--duration", "10", "--smoothing", "0", "--route-end", "extend")
    rows = drive_testbed(cli_main, tmp_path / "gpx.csv", "--route", str(route), *pedal)
    flat = drive_testbed(cli_main, tmp_path / "flat.csv", "--grade", "0", *pedal)
    assert float(rows[30]["grade_pct"]) > 0.0
    assert float(rows[-1]["speed_kph"]) < float(flat[-1]["speed_kph"])


def test_appendix_d_drives_the_testbed_truck_on_its_linear_grades_not_a_step_function(
        cli_main: Cli, tmp_path: Path) -> None:
    rows = drive_testbed(cli_main, tmp_path / "d.csv", "--route", "appendix-d", "--app", "70",
                         "--duration", "120")
    grades = {round(float(row["grade_pct"]), 4) for row in rows}
    steps = {round(g, 4) for _, g in appendix_d.POINTS}
    assert len(grades - steps) > len(grades) // 2


def test_the_testbed_route_by_name_and_grade_files_stay_the_grade_schedules_they_were(
        cli_main: Cli, tmp_path: Path) -> None:
    """Runs on these must not change, bit for bit, and the wheelbase has no say on them."""
    default = drive_testbed(cli_main, tmp_path / "default.csv", "--duration", "120")
    named = drive_testbed(cli_main, tmp_path / "named.csv", "--route", "testbed", "--wheelbase", "12",
                    "--duration", "120")
    assert named == default
    grades = tmp_path / "grades.csv"
    grades.write_text("distance_m,grade_pct\n0,0\n100,3\n300,-2\n500,0\n")
    schedule = drive_testbed(cli_main, tmp_path / "s.csv", "--grade-file", str(grades), "--duration", "60")
    wide = drive_testbed(cli_main, tmp_path / "w.csv", "--grade-file", str(grades), "--wheelbase", "12",
                   "--duration", "60")
    assert wide == schedule and {row["grade_pct"] for row in schedule} <= {"0.0000", "3.0000", "-2.0000"}


def test_a_cliff_in_an_elevation_route_is_a_wall_to_the_testbed_truck_not_a_nan(
        cli_main: Cli, tmp_path: Path) -> None:
    route = tmp_path / "cliff.csv"
    route.write_text("distance_m,elevation_m\n0,0\n100,0\n101,50\n300,50\n")
    rows = drive_testbed(cli_main, tmp_path / "run.csv", "--route", str(route), "--smoothing", "0",
                   "--route-end", "extend", "--app", "100", "--duration", "10")
    assert "inf" in {row["grade_pct"] for row in rows}
    assert all(math.isfinite(float(row["speed_kph"])) for row in rows)


def test_appendix_d_is_an_out_and_back_road_its_second_half_the_first_reversed_and_negated() -> None:
    middle = appendix_d.MIDDLE_M
    grades = dict(appendix_d.POINTS)
    assert all(grades[2 * middle - d] == -g for d, g in appendix_d.POINTS)
    road = Road.from_grades(appendix_d.POINTS, linear=True, loop=False)
    assert road.elevation_at(road.length_m) == pytest.approx(0.0, abs=1e-9)
