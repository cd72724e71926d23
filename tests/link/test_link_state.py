"""Reading a CAN interface's state from netlink, and showing it, without a kernel CAN stack.

Parsing is checked against RTM_NEWLINK messages recorded from a real kernel (in the VM of
scripts/vm-test, trimmed to the attributes ecu_sim reads) and against messages pyroute2 encodes,
decoded the same way a kernel reply is. The other link tests build their messages with :func:`build`.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

pytest.importorskip("pyroute2")

from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

from ecu_sim.bus.state import ControllerState
from ecu_sim.link.show import format_state
from ecu_sim.link.state import BittimingConst, DeviceStats, LinkState, parse_link

# --------------------------------------------------------------------------------------------------
# Messages recorded from Linux 6.1 (Debian 6.1.0-56) under qemu: RTM_GETLINK replies, with only
# IFLA_IFNAME, IFLA_MTU, IFLA_OPERSTATE and IFLA_LINKINFO kept, byte for byte.

RECORDED: dict[str, str] = {
    "vcan0_up": (
        "4c0000001000000001000000f30000000000180104000000c1000100000000000a0003007663616e3000000005001000"
        "00000000080004004800000010001200090001007663616e00000000"
    ),
    "can0_fresh": (
        "dc0000001000000001000000f3000000000018010200000080000400000000000900030063616e300000000005001000"
        "020000000800040010000000a00012000800010063616e001c0003000000000000000000000000000000000000000000"
        "000000007800020034000200736a61313030300000000000000000000100000010000000010000000800000004000000"
        "0100000040000000010000000800030000127a0008000400040000000c00050000000000000000000800060000000000"
        "080008000000000008000f00000000000c001180080001005f010000"
    ),
    "can0_configured": (
        "000100001000000001000000f30000000000180102000000c1000500000000000900030063616e300000000005001000"
        "060000000800040010000000c40012000800010063616e001c0003000000000000000000000000000000000000000000"
        "000000009c0002002400010090d003006b030000fa000000060000000700000002000000010000000200000034000200"
        "736a61313030300000000000000000000100000010000000010000000800000004000000010000004000000001000000"
        "0800030000127a0008000400000000000c00050000000000100000000800060064000000080008000000000008000f00"
        "000000000c001180080001005f010000"
    ),
}


def recorded(name: str) -> Any:
    message = ifinfmsg(bytes.fromhex(RECORDED[name]))
    message.decode()
    return message


def ctrlmode_bits(supported: dict[str, str]) -> int:
    """IFLA_CAN_CTRLMODE_SUPPORTED from pyroute2's names ("listenonly": "yes", ...)."""
    from pyroute2.netlink.rtnl.ifinfmsg.plugins.can import CAN_CTRLMODE_NAMES

    return sum(value for mode, value in CAN_CTRLMODE_NAMES.items()
               if supported.get(mode[len("CAN_CTRLMODE_"):].lower()) == "yes")


def build(name: str = "can0", index: int = 3, kind: str | None = "can", up: bool = True,
          can: list[tuple[str, Any]] | None = None, xstats: bytes | None = None) -> Any:
    """An ifinfmsg as the kernel would send it: encoded by pyroute2, then decoded from the bytes."""
    linkinfo: list[tuple[str, Any]] = []
    if kind is not None:
        linkinfo.append(("IFLA_INFO_KIND", kind))
    if can is not None:
        linkinfo.append(("IFLA_INFO_DATA", {"attrs": can}))
    if xstats is not None:
        linkinfo.append(("IFLA_INFO_XSTATS", xstats))
    message = ifinfmsg()
    message["index"] = index
    message["flags"] = 0x1 | 0x40 if up else 0x0
    message["attrs"] = [("IFLA_IFNAME", name), ("IFLA_MTU", 16 if kind == "can" else 72),
                        ("IFLA_OPERSTATE", "UP" if up else "DOWN")]
    if linkinfo:
        message["attrs"].append(("IFLA_LINKINFO", {"attrs": linkinfo}))
    message.encode()
    decoded = ifinfmsg(message.data)
    decoded.decode()
    return decoded


# --------------------------------------------------------------------------------------------------
# Parsing


def test_a_recorded_vcan_is_up_with_no_controller() -> None:
    state = parse_link(recorded("vcan0_up"))
    assert state == LinkState(name="vcan0", index=state.index, kind="vcan", up=True, operstate="UNKNOWN",
                              mtu=72)
    assert not state.is_controller


def test_a_recorded_fresh_sja1000_is_stopped_without_bit_rate() -> None:
    state = parse_link(recorded("can0_fresh"))
    assert (state.kind, state.up, state.operstate) == ("can", False, "DOWN")
    assert state.controller_state is ControllerState.STOPPED
    assert (state.bitrate, state.sample_point, state.restart_ms) == (None, None, 0)
    assert (state.berr_reporting, state.listen_only) == (False, False)
    assert (state.tx_error_counter, state.rx_error_counter) == (0, 0)


def test_a_recorded_configured_sja1000_reports_what_was_set() -> None:
    state = parse_link(recorded("can0_configured"))
    assert (state.name, state.kind, state.up, state.mtu) == ("can0", "can", True, 16)
    assert state.controller_state is ControllerState.ERROR_ACTIVE
    assert (state.bitrate, state.sample_point, state.restart_ms) == (250000, 87.5, 100)
    assert (state.berr_reporting, state.listen_only) == (True, False)
    assert state.stats == DeviceStats(0, 0, 0, 0, 0, 0)


def test_counters_and_stats_land_in_the_right_fields() -> None:
    message = build(can=[("IFLA_CAN_STATE", 2), ("IFLA_CAN_BERR_COUNTER", {"txerr": 128, "rxerr": 7})],
                    xstats=struct.pack("=6I", 11, 12, 13, 14, 15, 16))
    state = parse_link(message)
    assert state.controller_state is ControllerState.ERROR_PASSIVE
    assert (state.tx_error_counter, state.rx_error_counter) == (128, 7)
    assert state.stats == DeviceStats(bus_error=11, error_warning=12, error_passive=13, bus_off=14,
                                      arbitration_lost=15, restarts=16)


@pytest.mark.parametrize(("value", "expected"), [
    (0, ControllerState.ERROR_ACTIVE), (1, ControllerState.ERROR_WARNING), (2, ControllerState.ERROR_PASSIVE),
    (3, ControllerState.BUS_OFF), (4, ControllerState.STOPPED), (5, ControllerState.SLEEPING),
])
def test_every_controller_state_is_decoded(value: int, expected: ControllerState) -> None:
    assert parse_link(build(can=[("IFLA_CAN_STATE", value)])).controller_state is expected


def test_a_short_xstats_is_not_misread_as_counters() -> None:
    assert parse_link(build(can=[("IFLA_CAN_STATE", 0)], xstats=b"\x01\x00")).stats is None


def test_a_non_can_interface_parses_without_controller_fields() -> None:
    state = parse_link(build(name="eth0", kind=None))
    assert (state.kind, state.controller_state, state.bitrate, state.stats) == (None, None, None, None)


def test_show_output_has_one_field_per_line() -> None:
    text = format_state(parse_link(recorded("can0_configured")))
    lines = text.splitlines()
    assert lines[0] == "can0"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["controller state"] == "ERROR_ACTIVE"
    assert fields["bitrate"] == "250000 (sample point 87.5%)"
    assert fields["error counters"] == "tx 0 rx 0"
    assert fields["device stats"] == ("bus-error 0 error-warning 0 error-passive 0 bus-off 0 "
                                      "arbitration-lost 0 restarts 0")
    vcan_text = format_state(parse_link(recorded("vcan0_up")))
    assert "controller state" not in vcan_text and "kind:      vcan" in vcan_text


def test_the_recorded_controller_reports_its_limits() -> None:
    state = parse_link(recorded("can0_configured"))
    assert state.clock_hz == 8_000_000
    assert state.bittiming_const == BittimingConst(1, 16, 1, 8, 1, 64, 1)
    assert state.supported_ctrlmodes is not None
    assert {"listenonly", "berr_reporting"} <= state.supported_ctrlmodes
    assert "fd" not in state.supported_ctrlmodes

