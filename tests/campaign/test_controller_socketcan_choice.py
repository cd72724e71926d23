"""Choosing SocketCAN for a controller under test (``[program] socketcan = true`` or
``--socketcan``): each case gets a vcan of its own and the program ``{iface}``. What can be
checked on any kernel is here: the refusals, each one line and exit 2 before any case runs. The
cases themselves on vcans run in the SocketCAN VM (tests/socketcan/test_controller_c_vm.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.link.plan import check_name
from ecu_sim.link.private import PREFIX, new_name, socketcan_problem
from tests.conftest import Cli

NO_SOCKETCAN = socketcan_problem()


def campaign(tmp_path: Path, command: str, program: str = "") -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f"""
[program]
command = {command!r}
{program}

[base]
run.duration_s = 2
run.set_speed_kph = 90
""")
    return path


def refusal(result_err: str) -> str:
    lines = [line for line in result_err.splitlines() if line.strip()]
    assert len(lines) == 1, result_err
    return lines[0]


@pytest.mark.skipif(NO_SOCKETCAN is None, reason="this kernel has SocketCAN: the refusal cannot happen")
def test_socketcan_asked_of_a_kernel_without_it_is_one_line_and_exit_2(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("campaign", str(campaign(tmp_path, "{python} x.py --iface {iface}")),
                      "--socketcan", "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "SocketCAN was asked for" in refusal(result.err) and "no SocketCAN" in result.err
    assert not (tmp_path / "out" / "results.csv").exists()


@pytest.mark.skipif(NO_SOCKETCAN is None, reason="this kernel has SocketCAN: the refusal cannot happen")
def test_socketcan_set_in_the_file_is_refused_the_same_way(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, "{python} x.py --iface {iface}", "socketcan = true")
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"))
    assert result.status == 2 and "SocketCAN was asked for" in refusal(result.err)


def test_a_udp_port_placeholder_is_refused_on_socketcan(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, "{python} x.py --channel {channel} --port {port}")
    result = cli_main("campaign", str(path), "--socketcan", "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "{port} is a udp_multicast port" in refusal(result.err) and "{iface}" in result.err


def test_the_iface_placeholder_without_socketcan_names_the_switch(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("campaign", str(campaign(tmp_path, "{python} x.py --iface {iface}")),
                      "--out", str(tmp_path / "out"))
    assert result.status == 2 and "--socketcan" in refusal(result.err)


def test_socketcan_with_a_cosim_program_is_refused_in_the_file(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, "{python} x.py {channel}", "cosim = true\nsocketcan = true")
    result = cli_main("campaign", str(path), "--out", str(tmp_path / "out"))
    assert result.status == 2 and "drop socketcan or cosim" in refusal(result.err)


def test_socketcan_flag_with_a_cosim_program_is_refused(cli_main: Cli, tmp_path: Path) -> None:
    path = campaign(tmp_path, "{python} x.py {channel}", "cosim = true")
    result = cli_main("campaign", str(path), "--socketcan", "--out", str(tmp_path / "out"))
    assert result.status == 2 and "cosim = true" in refusal(result.err)


def test_socketcan_flag_needs_a_program(cli_main: Cli, tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text("[base]\nrun.duration_s = 1\n")
    result = cli_main("campaign", str(path), "--socketcan", "--out", str(tmp_path / "out"))
    assert result.status == 2 and "--socketcan is for a controller under test" in refusal(result.err)


def test_private_vcan_names_are_valid_interface_names_that_differ() -> None:
    names = {new_name() for _ in range(1000)}
    assert len(names) == 1000
    for name in names:
        check_name(name)
        assert name.startswith(PREFIX)
