"""The class6 engine's fuel map: the published table, its scaling, the lookup, and fuel in ``simulate``."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from ecu_sim.vehicle.engine import Engine, TorqueCurve
from ecu_sim.vehicle.fuel import DIESEL_KG_PER_L, FuelMap, minimum_bsfc, rated
from ecu_sim.vehicle.fuel_data import cat3126e
from tests.conftest import Cli

REPO = Path(__file__).resolve().parents[2]

RAD_S_PER_RPM = math.pi / 30.0


def source_map() -> FuelMap:
    """The table on the engine it was measured on: no scaling at all."""
    table = cat3126e()
    return FuelMap(table, table.idle_rpm, table.full_load(), TorqueCurve(Class6Params().motoring))


def class6_map() -> FuelMap:
    return Class6Model(Class6Params()).fuel


@pytest.mark.parametrize(("i", "j", "published"), [
    (0, 0, 0.149),  # fc_fuel_map row 1 (73.3 rad/s), column 1 (1 N m)
    (0, 6, 0.9979),  # 700 rpm, 121 N m
    (0, 1, 0.17990884),  # 700 rpm, 21 N m: the source's own extrapolation
    (85, 4, 2.3790673),  # 2400 rpm (251.3 rad/s), 81 N m
])
def test_the_table_holds_the_published_rates_at_the_published_grid_points(i: int, j: int,
                                                                          published: float) -> None:
    assert cat3126e().rates_gps[i][j] == published
    assert source_map().rate_gps(700.0 + 20.0 * i, 1.0 + 20.0 * j) == published


def test_the_table_has_the_published_grid_and_full_load_curve() -> None:
    table = cat3126e()
    assert (len(table.rates_gps), {len(row) for row in table.rates_gps}) == (86, {55})
    assert (table.first_rpm, table.step_rpm, table.first_nm, table.step_nm) == (700.0, 20.0, 1.0, 20.0)
    assert (table.full_load_nm[0], max(table.full_load_nm), table.full_load_nm[-1]) == (1030.0, 1085.0, 783.0)


def test_between_grid_points_the_rate_is_bilinear_in_speed_and_torque() -> None:
    fuel, rows = source_map(), cat3126e().rates_gps
    corners = rows[30][20], rows[30][21], rows[31][20], rows[31][21]
    middle = fuel.rate_gps(1310.0, 411.0)  # halfway between 1300 and 1320 rpm, 401 and 421 N m
    assert middle == pytest.approx(sum(corners) / 4.0, rel=1e-12)
    quarter = fuel.rate_gps(1305.0, 401.0)  # a quarter of the way in speed, on a torque row
    assert quarter == pytest.approx(rows[30][20] + 0.25 * (rows[31][20] - rows[30][20]), rel=1e-12)


def test_at_or_below_the_motoring_curve_the_fuel_is_cut() -> None:
    fuel, motoring = class6_map(), TorqueCurve(Class6Params().motoring)
    for rpm in (700.0, 1234.0, 2000.0, 2600.0):
        drag = motoring.at(rpm)
        assert fuel.rate_gps(rpm, drag) == 0.0
        assert fuel.rate_gps(rpm, drag - 50.0) == 0.0
        assert fuel.rate_gps(rpm, drag + 1.0) > 0.0


def test_between_motoring_and_no_load_the_fuel_falls_linearly_to_zero() -> None:
    fuel, drag = class6_map(), TorqueCurve(Class6Params().motoring).at(1500.0)
    assert fuel.rate_gps(1500.0, drag / 2.0) == pytest.approx(fuel.rate_gps(1500.0, 0.0) / 2.0, rel=1e-12)


def test_the_idling_engine_at_standstill_burns_the_maps_idle_fuel() -> None:
    model = Class6Model(Class6Params())
    state = model.initial(0.0)
    for _ in range(50):
        state = model.step(state, 0.0, 0.0, 0.0, 0.1)
    idle = cat3126e().rates_gps[0][0] * class6_map().torque_scale
    assert state.speed_mps == 0.0 and state.engine_rpm == 700.0
    assert state.fuel_rate_lph == pytest.approx(idle * 3.6 / DIESEL_KG_PER_L, rel=1e-12)


def test_the_scaled_map_is_the_published_one_torque_scaled_at_the_same_normalised_speed() -> None:
    p, table = Class6Params(), cat3126e()
    fuel = class6_map()
    k = max(t for _, t in p.full_load) / max(table.full_load_nm)
    source_rated, own_rated = rated(table.full_load())[0], rated(p.full_load)[0]
    assert (source_rated, own_rated) == (2180.0, 2400.0)
    for i, j in ((0, 0), (20, 10), (74, 40), (85, 54)):
        source_rpm = 700.0 + 20.0 * i
        own_rpm = p.idle_rpm + (source_rpm - 700.0) * (own_rated - p.idle_rpm) / (source_rated - 700.0)
        own_nm = (1.0 + 20.0 * j) * k
        assert fuel.first_rpm + i * fuel.step_rpm == pytest.approx(own_rpm, rel=1e-12)
        assert fuel.first_nm + j * fuel.step_nm == pytest.approx(own_nm, rel=1e-12)
        # fuel scaled with power, so the brake-specific consumption is the source's
        scaled = table.rates_gps[i][j] * k * own_rpm / source_rpm
        assert fuel.at_grid(i, j) == pytest.approx(scaled, rel=1e-12)
        assert fuel.bsfc(own_rpm, own_nm) == pytest.approx(
            source_map().bsfc(source_rpm, 1.0 + 20.0 * j), rel=1e-9)


def test_the_maps_best_point_is_a_realistic_diesel_near_peak_torque() -> None:
    p = Class6Params()
    engine = Engine(p.full_load, p.motoring, p.idle_rpm, p.governed_rpm)
    best, rpm, torque = minimum_bsfc(class6_map(), engine.full, p.idle_rpm, p.governed_rpm)
    assert 195.0 < best < 215.0
    assert 1400.0 <= rpm <= 2000.0 and torque > 0.9 * engine.full.at(rpm)


def rows_of(cli_main: Cli, tmp_path: Path, *args: str) -> list[dict[str, float]]:
    out = tmp_path / "run.csv"
    result = cli_main("simulate", "--vehicle", "class6", *args, "--out", str(out))
    assert result.status == 0, result.err
    return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(out.open())]


def test_fuel_used_in_the_trace_is_the_fuel_rate_summed_over_the_ticks(cli_main: Cli, tmp_path: Path) -> None:
    rows = rows_of(cli_main, tmp_path, "--route", "appendix-d", "--set-speed", "88", "--duration", "120")
    total = sum(r["fuel_rate_lph"] for r in rows) * 0.1 / 3600.0
    assert rows[-1]["fuel_used_l"] == pytest.approx(total, rel=1e-3)
    assert rows[-1]["fuel_used_l"] > 0.3


def test_steady_90_kph_on_the_flat_burns_what_road_load_over_the_maps_efficiency_gives(
        cli_main: Cli, tmp_path: Path) -> None:
    """The hand calculation: road-load power at the wheel, through the axle's and transmission's
    efficiencies to the engine, at the engine speed of the gear held, times the map's BSFC there,
    read from the published table by :func:`bsfc_from_the_csv`, not through the simulation's map."""
    rows = rows_of(cli_main, tmp_path, "--grade", "0", "--set-speed", "90", "--initial-speed", "90",
                   "--duration", "400")
    settled = rows[1000:]
    assert len({r["gear"] for r in settled}) == 1
    p = Class6Params()
    v = sum(r["speed_kph"] for r in settled) / len(settled) / 3.6
    wheel_w = (p.crr * p.mass_kg * p.gravity_mps2 + 0.5 * p.air_density_kg_m3 * p.cda_m2 * v * v) * v
    engine_w = wheel_w / (p.transmission_efficiency * p.axle_efficiency)
    ratio = p.gear_ratios[int(settled[0]["gear"]) - 1] * p.axle_ratio
    rpm = v / p.tire_radius_m * ratio / RAD_S_PER_RPM
    torque = engine_w / (rpm * RAD_S_PER_RPM)
    expected_lph = bsfc_from_the_csv(rpm, torque) * engine_w / 1000.0 / DIESEL_KG_PER_L / 1000.0
    simulated_lph = sum(r["fuel_rate_lph"] for r in settled) / len(settled)
    assert simulated_lph == pytest.approx(expected_lph, rel=0.01)


def bsfc_from_the_csv(rpm: float, torque_nm: float) -> float:
    """The map's BSFC (g/kWh) at a class6 operating point, worked out apart from FuelMap: the
    published CSV read here, the point taken back to the 3126E at the same normalised speed and the
    same fraction of peak torque, and the fuel rate there interpolated bilinearly between the four
    published points around it. Scaling keeps BSFC at corresponding points, so it is the 3126E's."""
    text = (REPO / "ecu_sim" / "vehicle" / "cat3126e_fuel.csv").read_text(encoding="utf-8")
    lines = list(csv.reader(line for line in text.splitlines() if not line.startswith("#")))
    torques = [float(t) for t in lines[0][2:]]
    speeds = [float(row[0]) for row in lines[1:]]
    full = [float(row[1]) for row in lines[1:]]
    grams = [[float(v) for v in row[2:]] for row in lines[1:]]
    p = Class6Params()
    own_rated = max(p.full_load, key=lambda point: point[0] * point[1])[0]
    cat_rated = speeds[max(range(len(speeds)), key=lambda i: speeds[i] * full[i])]
    n = speeds[0] + (rpm - p.idle_rpm) * (cat_rated - speeds[0]) / (own_rated - p.idle_rpm)
    t = torque_nm * max(full) / max(torque for _, torque in p.full_load)
    i = max(k for k in range(len(speeds) - 1) if speeds[k] <= n)
    j = max(k for k in range(len(torques) - 1) if torques[k] <= t)
    u = (n - speeds[i]) / (speeds[i + 1] - speeds[i])
    w = (t - torques[j]) / (torques[j + 1] - torques[j])
    gps = ((1 - u) * (1 - w) * grams[i][j] + u * (1 - w) * grams[i + 1][j]
           + (1 - u) * w * grams[i][j + 1] + u * w * grams[i + 1][j + 1])
    return gps * 3600.0 / (t * n * 2.0 * math.pi / 60.0 / 1000.0)


def test_coasting_in_gear_down_a_descent_cuts_the_fuel(cli_main: Cli, tmp_path: Path) -> None:
    rows = rows_of(cli_main, tmp_path, "--grade", "-3", "--app", "0", "--initial-speed", "70",
                   "--duration", "30")
    in_gear = rows[10:]  # after the first shift (a shift opens the driveline, the engine idles)
    assert len({r["gear"] for r in in_gear}) == 1 and min(r["engine_rpm"] for r in in_gear) > 800.0
    assert all(r["fuel_rate_lph"] == 0.0 for r in in_gear)


def test_simulates_summary_line_gives_the_fuel_of_a_class6_run(cli_main: Cli, tmp_path: Path) -> None:
    rows = rows_of(cli_main, tmp_path, "--grade", "0", "--set-speed", "90", "--initial-speed", "90",
                   "--duration", "60")
    result = cli_main("simulate", "--vehicle", "class6", "--grade", "0", "--set-speed", "90",
                      "--initial-speed", "90", "--duration", "60")
    per_100km = rows[-1]["fuel_used_l"] * 1e5 / rows[-1]["distance_m"]
    assert f"fuel {rows[-1]['fuel_used_l']:.3f} L ({per_100km:.1f} L/100 km)" in result.err
    assert "fuel" not in cli_main("simulate", "--duration", "10").err
