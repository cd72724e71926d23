"""The predictive ("eco") cruise controller: its rules seen in ``simulate``, its settings checked, its
CCM replayed bit for bit, and the prediction itself on roads whose answer is known.

The simulations drive the class6 truck (on the j1939 profile, so the CCM brakes on descents) over a
short road of one hill: flat, a 2 % climb to a crest at 1800 m, a 3 % descent, flat again.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import math
from pathlib import Path

import pytest

from ecu_sim.cruise.modes import ControllerSettings
from ecu_sim.cruise.predictive import CoastModel, Models, PredictiveParams, PreviewState, coast_pays, step
from ecu_sim.runs import replay
from ecu_sim.vehicle.class6 import Class6Params
from ecu_sim.vehicle.road import Road
from tests.conftest import Cli
from tests.helpers.nodebench import Bench, settings

HILL = "distance_m,elevation_m\n0,0\n800,0\n1800,20\n2800,-10\n5000,-10\n"
CREST_M = 1800.0
SET_KPH = 60.0
#: the brake acts in proportion to the speed above the band's top, so it lets the speed a little past
BRAKE_ALLOWANCE_KPH = 0.5


def drive(tmp_path: Path, cli_main: Cli, controller: str, *road: str,
          name: str = "") -> list[dict[str, float]]:
    """``simulate --out`` rows of five simulated minutes at 60 km/h, from 60 km/h."""
    out = tmp_path / f"{controller}{name}.csv"
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", *road, "--set-speed",
                      str(SET_KPH), "--initial-speed", str(SET_KPH), "--duration", "300", "--controller",
                      controller, "--out", str(out))
    assert result.status == 0, result.err
    with open(out, newline="") as handle:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]


@pytest.fixture
def hill(tmp_path: Path) -> tuple[str, str]:
    path = tmp_path / "hill.csv"
    path.write_text(HILL)
    return "--route", str(path)


def speed_at(rows: list[dict[str, float]], distance_m: float) -> float:
    return next(row["speed_kph"] for row in rows if row["distance_m"] >= distance_m)


# -- the rules, through simulate ---------------------------------------------------------------------


def test_the_predictive_controller_keeps_the_speed_within_its_band(
        tmp_path: Path, cli_main: Cli, hill: tuple[str, str]) -> None:
    band = PredictiveParams()
    speeds = [row["speed_kph"] for row in drive(tmp_path, cli_main, "predictive", *hill)]
    assert min(speeds) >= SET_KPH - band.under_kph
    assert max(speeds) <= SET_KPH + band.over_kph + BRAKE_ALLOWANCE_KPH


def test_the_predictive_controller_arrives_at_the_crest_slower_than_the_pi_controller(
        tmp_path: Path, cli_main: Cli, hill: tuple[str, str]) -> None:
    pi, predictive = (drive(tmp_path, cli_main, mode, *hill) for mode in ("pi", "predictive"))
    assert speed_at(predictive, CREST_M) < speed_at(pi, CREST_M) - 3.0
    assert speed_at(pi, CREST_M) > SET_KPH - 1.0  # the PI controller holds the set speed up the climb


def test_the_predictive_controller_lets_a_descent_take_the_speed_above_where_the_pi_controller_brakes(
        tmp_path: Path, cli_main: Cli, hill: tuple[str, str]) -> None:
    pi, predictive = (drive(tmp_path, cli_main, mode, *hill) for mode in ("pi", "predictive"))
    assert max(r["speed_kph"] for r in predictive) > max(r["speed_kph"] for r in pi) + 2.0


def test_the_predictive_controller_uses_less_fuel_over_the_hill(
        tmp_path: Path, cli_main: Cli, hill: tuple[str, str]) -> None:
    pi, predictive = (drive(tmp_path, cli_main, mode, *hill) for mode in ("pi", "predictive"))
    per_m = [rows[-1]["fuel_used_l"] / rows[-1]["distance_m"] for rows in (pi, predictive)]
    assert per_m[1] < per_m[0]


def test_on_a_flat_road_the_predictive_controller_drives_as_the_pi_controller_does(
        tmp_path: Path, cli_main: Cli) -> None:
    pi, predictive = (drive(tmp_path, cli_main, mode, "--grade", "0") for mode in ("pi", "predictive"))
    assert predictive == pi


def test_a_predictive_run_repeats_bit_for_bit(tmp_path: Path, cli_main: Cli, hill: tuple[str, str]) -> None:
    first = drive(tmp_path, cli_main, "predictive", *hill, name="-1")
    again = drive(tmp_path, cli_main, "predictive", *hill, name="-2")
    assert first == again


# -- the prediction --------------------------------------------------------------------------------------


def class6_model() -> CoastModel:
    from ecu_sim.nodes.preview import class6_coast

    return class6_coast(Class6Params(), SET_KPH)


def test_no_coast_pays_on_a_flat_road_however_fast_the_truck_is() -> None:
    flat = Road.from_grades(((0.0, 0.0), (1000.0, 0.0)), linear=False)
    assert not any(coast_pays(PredictiveParams(), class6_model(), flat.elevation_at, 0.0, speed, SET_KPH,
                              coasting) for speed in (55.0, 60.0, 64.0) for coasting in (False, True))


def test_a_coast_pays_before_a_crest_that_a_steep_descent_follows() -> None:
    road = Road.from_elevation([(0.0, 0.0), (60.0, 1.2), (1060.0, -38.8)], loop=False)  # 2 %, -4 %
    assert coast_pays(PredictiveParams(), class6_model(), road.elevation_at, 0.0, SET_KPH, SET_KPH, False)


def test_no_coast_pays_where_the_speed_would_fall_below_the_band_before_the_descent() -> None:
    road = Road.from_elevation([(0.0, 0.0), (1000.0, 40.0), (2000.0, 0.0)], loop=False)
    assert not coast_pays(PredictiveParams(), class6_model(), road.elevation_at, 0.0, SET_KPH, SET_KPH,
                          False)


def test_a_narrower_band_lets_no_coast_start_where_a_wider_one_does() -> None:
    road = Road.from_elevation([(0.0, 0.0), (60.0, 1.2), (1060.0, -38.8)], loop=False)
    narrow, wide = PredictiveParams(under_kph=2.0), PredictiveParams(under_kph=8.0)
    model = class6_model()
    assert coast_pays(wide, model, road.elevation_at, 0.0, SET_KPH, SET_KPH, False)
    assert not coast_pays(narrow, model, road.elevation_at, 0.0, SET_KPH, SET_KPH, False)


def test_a_speed_that_is_not_a_number_leaves_the_position_and_the_decision_as_they_were() -> None:
    flat = Road.from_grades(((0.0, 0.0), (1000.0, 0.0)), linear=False)
    before = PreviewState(distance_m=120.0, coasting=True, planned_at_m=115.0)
    after = step(PredictiveParams(), Models(class6_model()), flat.elevation_at, before, SET_KPH, math.nan,
                 0.1)
    assert after == before


# -- settings --------------------------------------------------------------------------------------------


def test_the_default_band_is_vectos() -> None:
    assert (PredictiveParams().under_kph, PredictiveParams().over_kph, PredictiveParams().preview_m) == (
        8.0, 5.0, 1500.0)


@pytest.mark.parametrize(("line", "named"), [
    ("mode = eco", "mode must be pi or predictive"),
    ("under_kph = -1", "under_kph must be within 0..30 km/h"),
    ("over_kph = 40", "over_kph must be within 0..30 km/h"),
    ("preview_m = 0", "preview_m must be within 25..20000 m"),
    ("preview_m = nan", "preview_m must be a finite number"),
    ("anticipate_kph = 6", "anticipate_kph must be within 0..over_kph"),
    ("eco_roll_min_s = -1", "eco_roll_min_s must be within 0..600"),
    ("climb_pct = 40", "climb_pct must be within 0..30"),
    ("eco_roll = maybe", "eco_roll"),
])
def test_a_bad_controller_setting_exits_2_naming_the_key_and_the_file(
        tmp_path: Path, cli_main: Cli, line: str, named: str) -> None:
    ini = tmp_path / "eco.ini"
    ini.write_text(f"[controller]\n{line}\n")
    result = cli_main("simulate", "--config", str(ini), "--duration", "1")
    assert result.status == 2 and named in result.err and str(ini) in result.err
    assert "Traceback" not in result.err


def test_an_unknown_controller_on_the_command_line_exits_2(cli_main: Cli) -> None:
    result = cli_main("simulate", "--controller", "eco", "--duration", "1")
    assert result.status == 2 and "--controller" in result.err


def test_the_predictive_controller_reads_its_route_and_names_a_missing_file(
        tmp_path: Path, cli_main: Cli) -> None:
    result = cli_main("simulate", "--controller", "predictive", "--route", str(tmp_path / "gone.csv"),
                      "--duration", "1")
    assert result.status == 2 and "gone.csv" in result.err


# -- replay ----------------------------------------------------------------------------------------------


def record_predictive_ccm(tmp_path: Path) -> tuple[Path, list[bool]]:
    """200 ticks of a predictive CCM hearing 58 to 59.5 km/h before a crest; whether it coasted."""
    route = tmp_path / "hill.csv"
    route.write_text("distance_m,elevation_m\n0,0\n100,3\n400,-15\n2000,-15\n")
    s = settings(grade_pct=None, grade_file=str(route), set_speed_kph=SET_KPH)
    s = dataclasses.replace(s, controller=ControllerSettings(mode="predictive"))
    log = tmp_path / "ccm.log"
    bench = Bench("ccm", s, record_to=str(log))
    coasted = []
    for _, speed in zip(range(200), itertools.cycle([58.0, 58.5, 59.0, 59.5]), strict=False):
        bench.send_value(speed)
        bench.tick(1)
        coasted.append(bench.ccm.coasting)
    bench.close()
    return log, coasted


def test_a_predictive_ccm_recording_replays_bit_for_bit_with_its_coasts(tmp_path: Path) -> None:
    log, coasted = record_predictive_ccm(tmp_path)
    assert any(coasted) and not all(coasted)
    result = replay.replay(str(log))
    assert result.identical and result.frames == 200


def test_a_predictive_ccm_recording_replays_with_its_controller_not_the_default(tmp_path: Path) -> None:
    log, _ = record_predictive_ccm(tmp_path)
    journal = Path(f"{log}.ticks")
    head, *rest = journal.read_text().splitlines(keepends=True)
    as_pi = json.loads(head)
    as_pi["settings"]["controller"]["mode"] = "pi"
    journal.write_text(json.dumps(as_pi) + "\n" + "".join(rest))
    assert not replay.replay(str(log)).identical
