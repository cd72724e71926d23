"""``ecu-sim calibration show|export|build``; bad input is refused in one line, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ecu_sim.calibration.files import read_image
from ecu_sim.nodes.calibrated import builtin_image, pi_params
from ecu_sim.settings.model import Settings
from tests.conftest import Cli


def test_show_without_a_file_prints_the_layout_of_a_node_kind(cli_main: Cli) -> None:
    result = cli_main("calibration", "show", "--node", "transmission")
    assert result.status == 0 and "| `up_rpm_at_0` | 0x80018 | 8 | f64 |" in result.out


def test_export_writes_the_built_in_image_the_run_would_start_from(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("calibration", "export", "--node", "engine", "-o", str(tmp_path / "engine.hex"))
    assert result.status == 0, result.err
    assert read_image(tmp_path / "engine.hex") == builtin_image("engine", Settings())


def test_export_of_the_ccm_takes_its_gains_from_the_settings(cli_main: Cli, tmp_path: Path) -> None:
    config = tmp_path / "gains.ini"
    config.write_text("[controller]\nkp = 12.5\nki = 0.3\n")
    result = cli_main("calibration", "export", "--node", "ccm", "--config", str(config),
                      "-o", str(tmp_path / "c.s19"))
    assert result.status == 0, result.err
    params = pi_params(read_image(tmp_path / "c.s19", "ccm"))
    assert (params.kp, params.ki) == (12.5, 0.3)


def test_build_changes_the_named_parameters_and_the_id_and_show_reads_them(cli_main: Cli,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "slow.s19"
    built = cli_main("calibration", "build", "--node", "engine", "--id", "SLOW-80",
                     "--set", "road_speed_limit_kph=80", "-o", str(out))
    assert built.status == 0, built.err
    shown = cli_main("calibration", "show", str(out))
    image = read_image(out)
    assert f"engine calibration 'SLOW-80', CVN 0x{image.cvn:08X}" in shown.out
    assert "road_speed_limit_kph = 80.0 km/h" in shown.out and "idle_rpm = 700.0 rpm" in shown.out


def test_build_from_a_file_keeps_what_it_does_not_change(cli_main: Cli, tmp_path: Path) -> None:
    cli_main("calibration", "build", "--node", "engine", "--set", "idle_rpm=650",
             "-o", str(tmp_path / "a.hex"))
    result = cli_main("calibration", "build", "--from", str(tmp_path / "a.hex"),
                      "--set", "governed_rpm=2400", "-o", str(tmp_path / "b.hex"))
    assert result.status == 0, result.err
    values = read_image(tmp_path / "b.hex").values
    assert (values["idle_rpm"], values["governed_rpm"]) == (650.0, 2400.0)


@pytest.mark.parametrize(("args", "message"), [
    (("--node", "engine", "--set", "idle_rpm=5"), "idle_rpm must be within 400..1200 rpm (got 5.0)"),
    (("--node", "engine", "--set", "top_speed=5"), "the engine has no calibration parameter 'top_speed'"),
    (("--node", "engine", "--set", "idle_rpm=fast"), "idle_rpm: 'fast' is not a number"),
    (("--node", "engine", "--id", "X" * 17), "at most 16 characters"),
    (("--node", "engine", "--set", "idle_rpm"), "'idle_rpm' is not NAME=VALUE"),
])
def test_bad_input_to_build_is_one_line_exit_2_and_nothing_written(
        cli_main: Cli, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = tmp_path / "never.s19"
    result = cli_main("calibration", "build", *args, "-o", str(out))
    assert result.status == 2 and message in result.err and result.err.count("\n") == 1
    assert not out.exists()


def test_a_malformed_file_is_refused_in_one_line(cli_main: Cli, tmp_path: Path) -> None:
    (tmp_path / "bad.s19").write_text("S1this is not a record\n")
    result = cli_main("calibration", "show", str(tmp_path / "bad.s19"))
    assert result.status == 2 and "not a valid S-record file" in result.err and result.err.count("\n") == 1


def test_an_image_for_another_node_kind_is_refused(cli_main: Cli, tmp_path: Path) -> None:
    cli_main("calibration", "export", "--node", "brakes", "-o", str(tmp_path / "brakes.hex"))
    result = cli_main("calibration", "build", "--node", "engine", "--from", str(tmp_path / "brakes.hex"),
                      "-o", str(tmp_path / "never.hex"))
    assert result.status == 2 and "an image for the brakes, not for the engine" in result.err
    assert not (tmp_path / "never.hex").exists()


def test_the_command_runs_as_a_real_process_without_a_traceback(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ecu_sim", "calibration", "build", "--node", "ccm",
                           "--set", "kp=-1", "-o", str(tmp_path / "x.s19")], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "kp must be within 0..inf" in done.stderr
    assert "Traceback" not in done.stderr
