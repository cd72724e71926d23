"""Restarting a controller from bus-off: what the applier sends, and the message it sends."""

from __future__ import annotations

import errno
import struct

import pytest

pytest.importorskip("pyroute2")

from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

from ecu_sim.bus.state import ControllerState
from ecu_sim.link import apply
from ecu_sim.link.errors import LinkError, LinkUnsupportedError
from tests.link.test_link import FakeIPRoute, FakeLink, install_fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeIPRoute:
    return install_fake(monkeypatch)


def test_restart_brings_a_bus_off_controller_back(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, restart_ms=0, bus_off=True)
    assert apply.link_state("can0").controller_state is ControllerState.BUS_OFF
    assert apply.restart("can0") == ["restarted after bus-off"]
    assert fake.changes() == [("restart", {"index": 3})]
    assert apply.link_state("can0").controller_state is ControllerState.ERROR_ACTIVE


def test_restart_of_a_controller_that_is_not_bus_off_does_nothing(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000)
    assert apply.restart("can0") == []
    assert fake.changes() == []


def test_restart_that_loses_the_race_with_recovery_is_not_an_error(fake: FakeIPRoute,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, bus_off=True)

    def recovered_meanwhile(index: int) -> None:
        fake.links["can0"].bus_off = False
        fake.restart(index)

    monkeypatch.setattr(apply, "_restart_request", recovered_meanwhile)
    assert apply.restart("can0") == []


@pytest.mark.parametrize(("item", "error", "text"), [
    (FakeLink("can0", 3, "can", up=True, bitrate=250000, restart_ms=100, bus_off=True), LinkError,
     "restarts itself 100 ms after a bus-off"),
    (FakeLink("can0", 3, "can", up=False, bitrate=250000), LinkError, "can0 is down"),
    (FakeLink("can0", 3, "vcan", up=True), LinkUnsupportedError, "no bus-off state"),
])
def test_restart_refuses_what_the_kernel_would_with_advice(fake: FakeIPRoute, item: FakeLink,
                                                           error: type[Exception], text: str) -> None:
    fake.links["can0"] = item
    with pytest.raises(error, match=text):
        apply.restart("can0")
    assert fake.changes() == []


def test_a_kernel_refusal_of_the_restart_is_explained(fake: FakeIPRoute,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, bus_off=True)

    def refuse(index: int) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(apply, "_restart_request", refuse)
    with pytest.raises(LinkError, match="restarts only an up controller with restart-ms 0"):
        apply.restart("can0")


def test_the_restart_request_is_what_iproute2_sends() -> None:
    """IFLA_CAN_RESTART must be a u32 (the kernel's policy); pyroute2 would send a zero-length flag."""
    message = apply.restart_message(7, seq=1)
    decoded = ifinfmsg(message)
    decoded.decode()
    assert decoded["header"]["type"] == 16 and decoded["header"]["flags"] == 0x1 | 0x4  # RTM_NEWLINK, ACK
    assert decoded["header"]["length"] == len(message) and decoded["index"] == 7
    linkinfo = decoded.get_attr("IFLA_LINKINFO")
    assert linkinfo.get_attr("IFLA_INFO_KIND") == "can"
    # IFLA_INFO_DATA { IFLA_CAN_RESTART (7), length 8, u32 1 }, the last 8 bytes of the message
    assert message[-8:] == struct.pack("=HHI", 8, 7, 1)


