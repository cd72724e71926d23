"""``ecu-sim j1939``: a service tool against real ecu-sim processes on a udp_multicast bus."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import Cli, Node, Udp


def j1939_ecu(start: Callable[..., Node], udp: Udp, *args: str) -> Node:
    """An ECU of the j1939 profile whose claim stands (its status line says so)."""
    ecu = start(*udp.args(), "--profile", "j1939", "--grade", "0", *args)
    ecu.wait_for(r"J1939 SA 0x00 claimed")
    return ecu


def test_list_shows_each_node_by_its_address_claim(start: Callable[..., Node], udp: Udp,
                                                   cli_main: Cli) -> None:
    j1939_ecu(start, udp)
    start("ccm", *udp.args(), "--profile", "j1939").wait_for(r"J1939 SA 0x11 claimed")
    result = cli_main("j1939", "list", *udp.args(), "--wait", "2")
    assert result.status == 0
    assert [line.split()[0] for line in result.out.splitlines()] == ["0x00", "0x11"]


def test_dm1_reads_the_missing_app_dtc_of_an_ecu_without_ccm(start: Callable[..., Node], udp: Udp,
                                                           cli_main: Cli) -> None:
    j1939_ecu(start, udp).wait_for(r"DTC 1 active")
    result = cli_main("j1939", "dm1", "0x00", *udp.args(), "--wait", "5")
    assert result.status == 0
    assert "lamps: amber warning; SPN 91 FMI 9 (1x)" in result.out


def test_ids_reads_component_software_and_ecu_id_through_the_transport_protocol(
        start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    j1939_ecu(start, udp)
    result = cli_main("j1939", "ids", "0x00", *udp.args(), "--wait", "5")
    assert result.status == 0
    lines = result.out.splitlines()
    assert lines[0] == "0x00 Component ID: ecu-sim*ECU**"
    assert lines[1].startswith("0x00 Software ID: ecu-sim ")
    assert lines[2] == "0x00 ECU ID: ***ECU*ecu-sim"


def test_clear_sends_dm11_and_reports_the_acknowledgement(start: Callable[..., Node], udp: Udp,
                                                          cli_main: Cli) -> None:
    j1939_ecu(start, udp)
    result = cli_main("j1939", "clear", "0x00", *udp.args(), "--wait", "5")
    assert (result.status, result.out.strip()) == (0, "0x00: ACK")


def test_an_address_nobody_has_gives_no_answer_and_status_1(start: Callable[..., Node], udp: Udp,
                                                            cli_main: Cli) -> None:
    j1939_ecu(start, udp)
    result = cli_main("j1939", "dm2", "0x11", *udp.args(), "--wait", "1")
    assert (result.status, result.out.strip()) == (1, "0x11: no answer within 1 s")


def test_an_action_on_a_node_without_its_address_is_a_usage_error(cli_main: Cli) -> None:
    result = cli_main("j1939", "dm1", "-i", "virtual")
    assert result.status == 2 and "needs the node's address" in result.err
