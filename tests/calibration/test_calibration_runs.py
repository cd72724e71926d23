"""A run starts from a given image: ``[calibration] KIND = FILE``, read before the first tick.

The class6 powertrain in ``simulate``: an engine image with a lower road speed limit keeps the
truck under it; a transmission image with other shift lines changes the gears; the built-in images
drive exactly as before (the same CSV as a run with no calibration named).
"""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import Cli

SIMULATE = ("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
            "--grade", "0", "--duration", "60", "--initial-speed", "60", "--set-speed", "95")


def simulate(cli_main: Cli, tmp_path: Path, name: str, calibration: str = "") -> list[dict[str, str]]:
    config, out = tmp_path / f"{name}.ini", tmp_path / f"{name}.csv"
    config.write_text(f"[calibration]\n{calibration}\n")
    result = cli_main(*SIMULATE, "--config", str(config), "--out", str(out))
    assert result.status == 0, result.err
    with out.open() as file:
        return list(csv.DictReader(file))


def build(cli_main: Cli, path: Path, node: str, *changes: str) -> None:
    result = cli_main("calibration", "build", "--node", node, "--id", "TEST",
                      *(f"--set={c}" for c in changes), "-o", str(path))
    assert result.status == 0, result.err


def speeds(rows: list[dict[str, str]]) -> list[float]:
    return [float(row["speed_kph"]) for row in rows]


def test_an_engine_image_with_a_lower_road_speed_limit_keeps_the_truck_under_it(
        cli_main: Cli, tmp_path: Path) -> None:
    build(cli_main, tmp_path / "slow.s19", "engine", "road_speed_limit_kph=70")
    assert max(speeds(simulate(cli_main, tmp_path, "free"))) > 85.0  # the cruise reaches for 95 km/h
    limited = speeds(simulate(cli_main, tmp_path, "slow", f"engine = {tmp_path / 'slow.s19'}"))
    assert max(limited) <= 70.5 and max(limited[-100:]) > 66.0


def test_a_transmission_image_with_other_shift_lines_changes_the_gears(cli_main: Cli, tmp_path: Path) -> None:
    build(cli_main, tmp_path / "late.hex", "transmission", "up_rpm_at_0=1700", "up_rpm_at_100=2300",
          "down_rpm_at_0=1000", "down_rpm_at_100=1700")
    before = [row["gear"] for row in simulate(cli_main, tmp_path, "builtin")]
    late = f"transmission = {tmp_path / 'late.hex'}"
    after = [row["gear"] for row in simulate(cli_main, tmp_path, "late", late)]
    assert before != after


def test_the_exported_built_in_images_drive_exactly_as_no_image(cli_main: Cli, tmp_path: Path) -> None:
    lines = []
    for node in ("engine", "transmission", "brakes", "retarder"):
        exported = cli_main("calibration", "export", "--node", node, "-o", str(tmp_path / f"{node}.s19"))
        assert exported.status == 0, exported.err
        lines.append(f"{node} = {tmp_path / f'{node}.s19'}")
    assert simulate(cli_main, tmp_path, "exported", "\n".join(lines)) == simulate(cli_main, tmp_path, "none")


def test_an_image_for_another_node_in_a_setting_is_refused_in_one_line(cli_main: Cli, tmp_path: Path) -> None:
    build(cli_main, tmp_path / "brakes.s19", "brakes", "max_brake_decel_g=0.5")
    config = tmp_path / "wrong.ini"
    config.write_text(f"[calibration]\nengine = {tmp_path / 'brakes.s19'}\n")
    result = cli_main(*SIMULATE, "--config", str(config))
    assert result.status == 2 and "an image for the brakes, not for the engine" in result.err
    assert "[calibration] engine" in result.err and "Traceback" not in result.err


def test_a_campaign_case_starts_from_an_image_named_beside_the_campaign_file(cli_main: Cli,
                                                                            tmp_path: Path) -> None:
    from ecu_sim.campaign import matrix, spec
    from ecu_sim.campaign.case import run_case

    build(cli_main, tmp_path / "slow.s19", "engine", "road_speed_limit_kph=70")
    path = tmp_path / "c.toml"
    path.write_text('[base]\nrun.duration_s = 60\nvehicle.preset = "class6"\nprofile.name = "j1939"\n'
                    'j1939.network = "powertrain"\nrun.initial_speed_kph = 60\nrun.set_speed_kph = 95\n'
                    'run.grade_pct = 0\n[[case]]\n[[case]]\ncalibration.engine = "slow.s19"\n')
    cases = sorted(matrix.expand(spec.load(path)), key=lambda case: case.settings().calibration.engine or "")
    free, slow = (run_case(case) for case in cases)
    assert free["status"] == slow["status"] == "ok"
    assert float(free["final_speed_kph"]) > 85.0 >= 70.5 >= float(slow["final_speed_kph"])


def test_the_single_node_class6_ecu_takes_its_road_speed_limit_from_its_image(cli_main: Cli,
                                                                             tmp_path: Path) -> None:
    build(cli_main, tmp_path / "ecu.s19", "ecu", "road_speed_limit_kph=70")
    config, out = tmp_path / "ecu.ini", tmp_path / "ecu.csv"
    config.write_text(f"[calibration]\necu = {tmp_path / 'ecu.s19'}\n")
    result = cli_main("simulate", "--vehicle", "class6", "--grade", "0", "--duration", "60",
                      "--initial-speed", "60", "--set-speed", "95", "--config", str(config),
                      "--out", str(out))
    assert result.status == 0, result.err
    with out.open() as file:
        assert max(float(row["speed_kph"]) for row in csv.DictReader(file)) <= 70.5


def test_a_ccm_image_with_a_lower_pedal_limit_holds_the_pedal_under_it(cli_main: Cli,
                                                                       tmp_path: Path) -> None:
    build(cli_main, tmp_path / "ccm.hex", "ccm", "app_max_pct=30")
    rows = simulate(cli_main, tmp_path, "gentle", f"ccm = {tmp_path / 'ccm.hex'}")
    assert max(float(row["app_pct"]) for row in rows) <= 30.0
    assert max(float(row["app_pct"]) for row in simulate(cli_main, tmp_path, "full")) > 30.0
