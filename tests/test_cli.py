"""The command line's contract: exit statuses and messages a person can act on."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


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
