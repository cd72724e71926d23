"""The command line's contract: exit statuses and messages a person can act on."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import clean_env, ecu_sim_command, run_cli


def test_unknown_profile_exits_2_and_lists_the_known_ones() -> None:
    result = run_cli("simulate", "--duration", "1", "--profile", "nosuch")
    assert result.returncode == 2
    assert "nosuch" in result.stderr and "amp" in result.stderr and "j1939" in result.stderr


def test_bad_dbc_exits_2_naming_the_file(tmp_path: Path) -> None:
    dbc = tmp_path / "broken.dbc"
    dbc.write_text("this is not a DBC file\n")
    result = run_cli("simulate", "--duration", "1", "--dbc", str(dbc))
    assert result.returncode == 2
    assert str(dbc) in result.stderr


def test_missing_dbc_exits_2_naming_the_file() -> None:
    result = run_cli("simulate", "--duration", "1", "--dbc", "/nonexistent/truck.dbc")
    assert result.returncode == 2
    assert "/nonexistent/truck.dbc" in result.stderr


def test_bad_config_value_exits_2_naming_the_key(tmp_path: Path) -> None:
    ini = tmp_path / "bad.ini"
    ini.write_text("[truck]\nmass_kg = 0\n")
    result = run_cli("simulate", "--duration", "1", "--config", str(ini))
    assert result.returncode == 2
    assert "mass_kg" in result.stderr and str(ini) in result.stderr


def test_bad_argument_exits_2() -> None:
    result = run_cli("--initial-speed", "fast")
    assert result.returncode == 2
    assert "--initial-speed" in result.stderr


def test_missing_socketcan_interface_exits_69_with_a_hint() -> None:
    result = run_cli("--iface", "vcan7", "--duration", "1")
    assert result.returncode == 69
    # Without kernel CAN the hint is about the kernel; with it, about creating the interface.
    assert ("ecu-sim link vcan7 --create" in result.stderr) or ("no SocketCAN support" in result.stderr)


def test_unknown_interface_exits_2() -> None:
    result = run_cli("-i", "nosuchbus", "-c", "x", "--duration", "1")
    assert result.returncode == 2
    assert "nosuchbus" in result.stderr


def test_help_lists_the_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "ccm", "simulate"):
        assert command in result.stdout


def test_python_can_environment_variables_name_the_bus() -> None:
    channel = f"ecu-sim-test-{uuid.uuid4().hex[:8]}"
    env = {**clean_env(), "CAN_INTERFACE": "virtual", "CAN_CHANNEL": channel}
    result = subprocess.run(ecu_sim_command("--duration", "0.3"), capture_output=True, text=True,
                            timeout=60, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert f"ECU on virtual {channel}" in result.stderr
    assert "stopped after 3 ticks" in result.stderr and "| bus up" in result.stderr
    assert "not properly shut down" not in result.stderr


def test_a_channel_without_an_interface_exits_2_suggesting_iface() -> None:
    result = run_cli("-c", "vcan0", "--duration", "1")
    assert result.returncode == 2
    assert "needs an interface" in result.stderr and "--iface vcan0" in result.stderr
    assert "adapter" not in result.stderr


def test_a_missing_driver_exits_2_naming_the_interface() -> None:
    result = run_cli("-i", "pcan", "-c", "PCAN_USBBUS1", "--duration", "1")
    assert result.returncode == 2, result.stderr
    assert "pcan" in result.stderr and "Install the driver" in result.stderr
    assert ".." not in result.stderr and "adapter is connected" not in result.stderr


@pytest.mark.parametrize("command", ["ccm", "simulate"])
def test_gains_have_a_metavar_in_help(command: str) -> None:
    result = run_cli(command, "--help")
    assert result.returncode == 0
    assert "--kp GAIN" in result.stdout and "--ki GAIN" in result.stdout
    assert "CFG:" not in result.stdout


@pytest.mark.parametrize(("command", "present", "absent"), [
    ("run", ["--app-source", "--tx-mode"], ["--speed-source"]),
    ("ccm", ["--speed-source", "--tx-mode"], ["--app-source"]),
    ("simulate", ["--app-source", "--speed-source"], ["--tx-mode"]),
])
def test_each_command_offers_only_its_options(command: str, present: list[str], absent: list[str]) -> None:
    result = run_cli(command, "--help")
    assert result.returncode == 0
    for option in present:
        assert option in result.stdout
    for option in absent:
        assert option not in result.stdout


def test_an_option_a_command_lacks_is_refused_but_its_config_key_works(tmp_path: Path) -> None:
    assert run_cli("simulate", "--duration", "1", "--tx-mode", "user").returncode == 2
    ini = tmp_path / "run.ini"
    ini.write_text("[run]\ntx_mode = kernel\n[profile]\napp_source = 0x26\n")
    result = run_cli("ccm", "--help", "--config", str(ini))
    assert result.returncode == 0
    result = run_cli("simulate", "--duration", "1", "--config", str(ini))
    assert result.returncode == 0, result.stderr
