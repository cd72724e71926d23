"""The command line's contract: exit statuses and messages a person can act on.

Run in this process (``ecu_sim.cli.main``); only what needs a real process (signals, two processes
on one bus, a service manager) starts one, in test_processes, test_service and test_replay.
"""

from __future__ import annotations

from pathlib import Path

import can
import pytest

from ecu_sim.cli import build_parser
from ecu_sim.settings import load
from tests.conftest import Cli, summary_of
from tests.helpers.nodebench import Bench


def test_unknown_profile_exits_2_and_lists_the_known_ones(cli_main: Cli) -> None:
    result = cli_main("simulate", "--duration", "1", "--profile", "nosuch")
    assert result.status == 2
    assert "nosuch" in result.err and "amp" in result.err and "j1939" in result.err


def test_bad_dbc_exits_2_naming_the_file(cli_main: Cli, tmp_path: Path) -> None:
    dbc = tmp_path / "broken.dbc"
    dbc.write_text("this is not a DBC file\n")
    result = cli_main("simulate", "--duration", "1", "--dbc", str(dbc))
    assert result.status == 2
    assert str(dbc) in result.err


def test_missing_dbc_exits_2_naming_the_file(cli_main: Cli) -> None:
    result = cli_main("simulate", "--duration", "1", "--dbc", "/nonexistent/truck.dbc")
    assert result.status == 2
    assert "/nonexistent/truck.dbc" in result.err


def test_bad_config_value_exits_2_naming_the_key(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "bad.ini"
    ini.write_text("[truck]\nmass_kg = 0\n")
    result = cli_main("simulate", "--duration", "1", "--config", str(ini))
    assert result.status == 2
    assert "mass_kg" in result.err and str(ini) in result.err


def test_bad_argument_exits_2_naming_the_option(cli_main: Cli) -> None:
    result = cli_main("--initial-speed", "fast")
    assert result.status == 2
    assert "--initial-speed" in result.err


def test_missing_socketcan_interface_exits_69_with_a_hint(cli_main: Cli) -> None:
    result = cli_main("--iface", "vcan7", "--duration", "1")
    assert result.status == 69
    # Without kernel CAN the hint is about the kernel; with it, about creating the interface.
    assert ("ecu-sim link vcan7 --create" in result.err) or ("no SocketCAN support" in result.err)


def test_unknown_interface_exits_2_naming_it(cli_main: Cli) -> None:
    result = cli_main("-i", "nosuchbus", "-c", "x", "--duration", "1")
    assert result.status == 2
    assert "nosuchbus" in result.err


def test_help_lists_the_commands(cli_main: Cli) -> None:
    result = cli_main("--help")
    assert result.status == 0
    for command in ("run", "ccm", "simulate"):
        assert command in result.out


def test_python_can_environment_variables_name_the_bus(cli_main: Cli, virtual_time: None,
                                                       virtual_channel: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAN_INTERFACE", "virtual")
    monkeypatch.setenv("CAN_CHANNEL", virtual_channel)
    result = cli_main("--duration", "0.3")
    assert result.status == 0, result.err
    assert f"ECU on virtual {virtual_channel}" in result.err
    assert "| bus up" in summary_of(result.err).line
    assert "not properly shut down" not in result.err


def test_a_run_with_a_duration_ends_by_itself_after_that_many_ticks_with_status_0(
        cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    result = cli_main("ccm", "-i", "virtual", "-c", virtual_channel, "--duration", "1.5")
    assert result.status == 0, result.err
    assert summary_of(result.err).ticks == 15


def test_each_tick_of_a_run_puts_exactly_one_frame_on_the_bus(cli_main: Cli, virtual_time: None,
                                                               virtual_channel: str) -> None:
    """One second at 10 Hz: ten speed frames, the first of tick 0, and nothing else."""
    with can.Bus(interface="virtual", channel=virtual_channel) as ear:
        result = cli_main("-i", "virtual", "-c", virtual_channel, "--duration", "1")
        heard = list(iter(lambda: ear.recv(0.0), None))
    assert result.status == 0, result.err
    assert [m.arbitration_id for m in heard] == [0x18FEF125] * 10
    assert summary_of(result.err).tx == 10


@pytest.mark.parametrize(("timeout", "ticks"), [("0.3", 3), ("5", 50)])
def test_app_timeout_on_the_command_line_is_how_many_ticks_the_ecu_uses_an_app_value(
        timeout: str, ticks: int) -> None:
    """The ECU is built from the command line's settings as in a real run (tests/nodebench)."""
    args = build_parser("run").parse_args(["run", "--app-timeout", timeout])
    bench = Bench("ecu", load.load(args, environ={}))
    try:
        assert bench.ecu.hold_ticks == ticks
    finally:
        bench.close()


def test_a_channel_without_an_interface_exits_2_suggesting_iface(cli_main: Cli) -> None:
    result = cli_main("-c", "vcan0", "--duration", "1")
    assert result.status == 2
    assert "needs an interface" in result.err and "--iface vcan0" in result.err
    assert "adapter" not in result.err


def test_a_missing_driver_exits_2_naming_the_interface(cli_main: Cli) -> None:
    result = cli_main("-i", "pcan", "-c", "PCAN_USBBUS1", "--duration", "1")
    assert result.status == 2, result.err
    assert "pcan" in result.err and "Install the driver" in result.err
    assert ".." not in result.err and "adapter is connected" not in result.err


@pytest.mark.parametrize("command", ["ccm", "simulate"])
def test_gains_have_a_metavar_in_help(cli_main: Cli, command: str) -> None:
    result = cli_main(command, "--help")
    assert result.status == 0
    assert "--kp GAIN" in result.out and "--ki GAIN" in result.out
    assert "CFG:" not in result.out


@pytest.mark.parametrize(("command", "present", "absent"), [
    ("run", ["--app-source", "--tx-mode"], ["--speed-source"]),
    ("ccm", ["--speed-source", "--tx-mode"], ["--app-source"]),
    ("simulate", ["--app-source", "--speed-source"], ["--tx-mode"]),
])
def test_each_command_offers_only_its_options(cli_main: Cli, command: str, present: list[str],
                                              absent: list[str]) -> None:
    result = cli_main(command, "--help")
    assert result.status == 0
    for option in present:
        assert option in result.out
    for option in absent:
        assert option not in result.out


def test_an_option_a_command_lacks_is_refused(cli_main: Cli) -> None:
    assert cli_main("simulate", "--duration", "1", "--tx-mode", "user").status == 2


def test_a_config_key_whose_option_a_command_lacks_is_accepted_by_it(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "run.ini"
    ini.write_text("[run]\ntx_mode = kernel\n[profile]\napp_source = 0x26\n")
    assert cli_main("ccm", "--help", "--config", str(ini)).status == 0
    result = cli_main("simulate", "--duration", "1", "--config", str(ini))
    assert result.status == 0, result.err


def test_simulate_writes_one_full_precision_state_hash_per_tick(cli_main: Cli, tmp_path: Path) -> None:
    """A nanometre per second at the start is below the CSV's decimals, not below the hash."""
    runs = []
    for name, speed in (("a", "80"), ("b", "80"), ("c", "80.000000001")):
        path = tmp_path / name
        result = cli_main("simulate", "--duration", "5", "--no-ccm", "--initial-speed", speed,
                          "--state-hash", str(path))
        assert result.status == 0, result.err
        runs.append(path.read_text(encoding="ascii").splitlines())
    assert [line.split()[0] for line in runs[0]] == [str(tick) for tick in range(50)]
    assert runs[0] == runs[1], "the same run gives the same bits"
    assert runs[0][-1] != runs[2][-1], "a state that differs in any bit gives another hash"
