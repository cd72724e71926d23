"""The eco comparison as a campaign: ``controller.mode`` in the matrix, every case ending at the
campaign's ``distance_m``, and ``campaign compare --by`` putting the controllers side by side."""

from __future__ import annotations

import csv
from pathlib import Path

from ecu_sim.campaign import matrix, spec
from ecu_sim.runs import routes
from ecu_sim.settings.model import Settings
from tests.conftest import Cli

REPO = Path(__file__).resolve().parents[2]
HILL = "distance_m,elevation_m\n0,0\n800,0\n1800,20\n2800,-10\n5000,-10\n"
#: a reduced eco campaign: one lap of a short hilly road, one speed, one payload, both controllers
SMALL = """
[campaign]
name = "eco-small"
distance_m = 5000

[base]
vehicle.preset = "class6"
profile.name = "j1939"
run.grade_file = "hill.csv"
run.initial_speed_kph = 60
run.set_speed_kph = 60
run.duration_s = 600

[matrix]
vehicle.payload_kg = [0, 2500]
controller.mode = ["pi", "predictive"]
"""


def run_small(tmp_path: Path, cli_main: Cli) -> list[dict[str, str]]:
    (tmp_path / "hill.csv").write_text(HILL)
    (tmp_path / "eco.toml").write_text(SMALL)
    result = cli_main("campaign", str(tmp_path / "eco.toml"), "--out", str(tmp_path / "out"),
                      "--workers", "1")
    assert result.status == 0, result.err
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_campaign_varies_the_controller_and_ends_each_case_at_its_distance(
        tmp_path: Path, cli_main: Cli) -> None:
    rows = run_small(tmp_path, cli_main)
    assert [row["controller.mode"] for row in rows] == ["pi", "predictive"] * 2
    assert all(row["status"] == "ok" for row in rows)
    for row in rows:  # stopped at the first tick past 5000 m, long before the 600 s limit
        assert 5000.0 <= float(row["distance_m"]) < 5000.0 + 2.0
        assert float(row["travel_time_s"]) < 400.0
    pi, predictive = rows[0], rows[1]
    assert pi["frame_hash"] != predictive["frame_hash"]
    assert float(predictive["fuel_l_per_100km"]) < float(pi["fuel_l_per_100km"])
    # the time in neutral and the eco-rolls of each case, from the same run
    assert (float(pi["neutral_s"]), pi["eco_roll_events"]) == (0.0, "0")
    assert float(predictive["neutral_s"]) > 0.0 and int(predictive["eco_roll_events"]) >= 1


def test_compare_by_the_controller_prints_fuel_time_and_deviation_side_by_side_and_a_png(
        tmp_path: Path, cli_main: Cli) -> None:
    rows = run_small(tmp_path, cli_main)
    png = tmp_path / "eco.png"
    result = cli_main("campaign", "compare", str(tmp_path / "out" / "results.csv"), "--by",
                      "controller.mode", "--png", str(png))
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "controller.mode: pi vs predictive (change against pi)"
    assert lines[1] == "vehicle.payload_kg=0" and lines[5] == "vehicle.payload_kg=2500"
    fuel = lines[2].split()
    pi, predictive = (float(row["fuel_l_per_100km"]) for row in rows[:2])
    assert fuel[:2] == ["fuel", "l/100km"] and float(fuel[3]) == float(f"{predictive:.4g}")
    assert fuel[-2:] == [f"{(predictive - pi) / pi * 100:+.2f}", "%"]
    assert lines[3].split()[:2] == ["time", "s"] and lines[4].split()[:2] == ["dev", "km/h"]
    assert png.stat().st_size > 10_000


def test_compare_by_a_setting_the_table_does_not_vary_exits_2_naming_it(
        tmp_path: Path, cli_main: Cli) -> None:
    run_small(tmp_path, cli_main)
    result = cli_main("campaign", "compare", str(tmp_path / "out" / "results.csv"), "--by",
                      "run.set_speed_kph")
    assert result.status == 2 and "run.set_speed_kph" in result.err and "controller.mode" in result.err


def test_a_campaign_distance_must_be_positive(tmp_path: Path, cli_main: Cli) -> None:
    (tmp_path / "bad.toml").write_text("[campaign]\ndistance_m = 0\n")
    result = cli_main("campaign", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "out"))
    assert result.status == 2 and "distance_m must be a distance > 0" in result.err and "line 2" in result.err


# -- examples/eco.toml -----------------------------------------------------------------------------------


def eco_cases() -> list[matrix.Case]:
    return matrix.expand(spec.load(REPO / "examples" / "eco.toml"))


def test_the_eco_example_runs_both_controllers_on_both_routes_at_five_speeds_and_two_payloads() -> None:
    """The issue's 55, 65 and 90 km/h, and its 55 and 65 read as GEM's Appendix D cruise cycles in mph."""
    cases = eco_cases()
    settings = [case.settings() for case in cases]
    assert len(cases) == 2 * 5 * 2 * 2
    assert {s.controller.mode for s in settings} == {"pi", "predictive"}
    mph = {round(55 * 1.609344, 1), round(65 * 1.609344, 1)}
    assert {s.run.set_speed_kph for s in settings} == {55.0, 65.0, 90.0} | mph
    assert len({s.vehicle.payload_kg for s in settings}) == 2
    assert {Path(s.run.grade_file or "").name for s in settings} == {"appendix-d", "hilly.csv"}
    assert all(s.vehicle.preset == "class6" for s in settings)


def test_the_eco_example_ends_on_whole_laps_of_appendix_d_and_nearly_whole_laps_of_hilly() -> None:
    cases = eco_cases()
    distance = cases[0].distance_m
    assert distance is not None
    for case in cases[:1] + [c for c in cases if "hilly" in str(c.settings().run.grade_file)][:1]:
        length = routes.load_road(case.settings()).length_m
        laps = distance / length
        assert abs(laps - round(laps)) * length < 200.0  # less than 200 m of a lap left over


def test_the_eco_example_gives_each_case_time_to_reach_its_distance_at_the_lowest_speed() -> None:
    lowest: Settings = min((case.settings() for case in eco_cases()), key=lambda s: s.run.set_speed_kph)
    distance = eco_cases()[0].distance_m
    assert distance is not None and lowest.run.duration_s is not None
    assert lowest.run.duration_s > 1.2 * distance / (lowest.run.set_speed_kph / 3.6)
