"""Carrying out link changes over netlink, against a fake IPRoute that keeps link state.

"Idempotent" here means "no request was sent", not "the same result came out"; what is decided
before any request is tested on its own in test_link_plan.py.
"""

from __future__ import annotations

import errno
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pyroute2")

from pyroute2.netlink.exceptions import NetlinkError

from ecu_sim.link import apply
from ecu_sim.link.errors import LinkError, LinkNotFoundError, LinkPermissionError, LinkUnsupportedError
from tests.link.test_link_state import build, ctrlmode_bits

# --------------------------------------------------------------------------------------------------
# A fake IPRoute that keeps state


@dataclass
class FakeLink:
    name: str
    index: int
    kind: str | None
    up: bool = False
    bitrate: int = 0
    restart_ms: int = 0
    ctrlmode: dict[str, str] = field(default_factory=dict)
    bus_off: bool = False
    #: what the driver reports of itself (None: not reported, as by older kernels)
    clock: int | None = None
    bittiming_const: dict[str, Any] | None = None
    supported: dict[str, str] | None = None


class FakeIPRoute:
    """The slice of pyroute2.IPRoute that ecu_sim.link.apply uses, with the kernel's refusals."""

    def __init__(self) -> None:
        self.links: dict[str, FakeLink] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, int] = {}  # command -> errno the kernel answers

    def __enter__(self) -> FakeIPRoute:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _by_index(self, index: int) -> FakeLink:
        return next(item for item in self.links.values() if item.index == index)

    def link(self, command: str, **kwargs: Any) -> list[Any]:
        if command == "get":
            item = self.links.get(kwargs["ifname"])
            if item is None:
                raise NetlinkError(errno.ENODEV, "No such device")
            can: list[tuple[str, Any]] | None = None
            if item.kind == "can":
                bittiming = {"bitrate": item.bitrate, "sample_point": 875 if item.bitrate else 0}
                can = [("IFLA_CAN_BITTIMING", bittiming),
                       ("IFLA_CAN_STATE", 0 if item.up else 4), ("IFLA_CAN_RESTART_MS", item.restart_ms),
                       ("IFLA_CAN_CTRLMODE", dict(item.ctrlmode)),
                       ("IFLA_CAN_BERR_COUNTER", {"txerr": 0, "rxerr": 0})]
                if item.up and item.bus_off:
                    can[1] = ("IFLA_CAN_STATE", 3)
                if item.clock is not None:
                    can.append(("IFLA_CAN_CLOCK", item.clock))
                if item.bittiming_const is not None:
                    can.append(("IFLA_CAN_BITTIMING_CONST", item.bittiming_const))
                if item.supported is not None:
                    can.append(("IFLA_CAN_CTRLMODE_EXT", {"attrs": [("IFLA_CAN_CTRLMODE_SUPPORTED",
                                                                     ctrlmode_bits(item.supported))]}))
            return [build(item.name, item.index, item.kind, item.up, can)]
        self.requests.append((command, kwargs))
        if command in self.fail:
            raise NetlinkError(self.fail[command], "refused")
        if command == "add":
            self.links[kwargs["ifname"]] = FakeLink(kwargs["ifname"], 10 + len(self.links), kwargs["kind"])
        elif command == "set":
            item = self._by_index(kwargs["index"])
            if "state" in kwargs:
                if kwargs["state"] == "up" and item.kind == "can" and not item.bitrate:
                    raise NetlinkError(errno.EINVAL, "Invalid argument")
                item.up = kwargs["state"] == "up"
            if "kind" in kwargs:
                if kwargs["kind"] != item.kind:
                    raise NetlinkError(errno.EOPNOTSUPP, "Operation not supported")
                if item.up:
                    raise NetlinkError(errno.EBUSY, "Device or resource busy")
                item.bitrate = kwargs.get("can_bittiming", {}).get("bitrate", item.bitrate)
                item.restart_ms = kwargs.get("can_restart_ms", item.restart_ms)
                item.ctrlmode.update(kwargs.get("can_ctrlmode", {}))
        return []

    def restart(self, index: int) -> None:
        """IFLA_CAN_RESTART as the kernel's can_restart_now() answers it."""
        self.requests.append(("restart", {"index": index}))
        item = self._by_index(index)
        if not item.up or item.restart_ms:
            raise OSError(errno.EINVAL, "Invalid argument")
        if not item.bus_off:
            raise OSError(errno.EBUSY, "Device or resource busy")
        item.bus_off = False

    def changes(self) -> list[tuple[str, dict[str, Any]]]:
        return [(command, kwargs) for command, kwargs in self.requests if command != "get"]


def install_fake(monkeypatch: pytest.MonkeyPatch) -> FakeIPRoute:
    """Route the applier's netlink traffic, the raw restart request included, to a fresh fake."""
    ipr = FakeIPRoute()
    monkeypatch.setattr(apply, "_pyroute2", lambda: SimpleNamespace(IPRoute=lambda: ipr))
    monkeypatch.setattr(apply, "_restart_request", ipr.restart)
    return ipr


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeIPRoute:
    return install_fake(monkeypatch)


def test_missing_pyroute2_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyroute2", None)  # makes "import pyroute2" raise ImportError
    with pytest.raises(LinkError, match=r"pip install 'ecu-sim\[link\]'"):
        apply.link_state("vcan0")


@pytest.mark.parametrize("name", ["", "a" * 16, "has space", "a/b", "..", "x:1"])
def test_impossible_interface_names_are_refused_before_netlink(name: str, fake: FakeIPRoute) -> None:
    with pytest.raises(LinkError, match="not a valid interface name"):
        apply.ensure_vcan(name)
    assert fake.requests == []


# --------------------------------------------------------------------------------------------------
# Changes


def test_ensure_vcan_creates_and_brings_up_once(fake: FakeIPRoute) -> None:
    assert apply.ensure_vcan("vcan0") == ["created", "brought up"]
    assert fake.requests == [("add", {"ifname": "vcan0", "kind": "vcan"}),
                             ("set", {"index": 10, "state": "up"})]
    assert apply.ensure_vcan("vcan0") == []
    assert len(fake.requests) == 2, "a second run must not send any change"


def test_ensure_vcan_only_brings_a_down_vcan_up(fake: FakeIPRoute) -> None:
    fake.links["vcan0"] = FakeLink("vcan0", 4, "vcan", up=False)
    assert apply.ensure_vcan("vcan0") == ["brought up"]
    assert fake.requests == [("set", {"index": 4, "state": "up"})]


def test_ensure_vcan_never_replaces_a_real_controller(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000)
    with pytest.raises(LinkError, match="can0 already exists and is a can interface, not a vcan"):
        apply.ensure_vcan("can0")
    assert fake.requests == []


@pytest.mark.parametrize(("code", "error", "text"), [
    (errno.EOPNOTSUPP, LinkUnsupportedError, "sudo modprobe vcan"),
    (errno.EPERM, LinkPermissionError, "CAP_NET_ADMIN"),
])
def test_ensure_vcan_explains_a_refused_create(fake: FakeIPRoute, code: int, error: type[Exception],
                                               text: str) -> None:
    fake.fail["add"] = code
    with pytest.raises(error, match=text):
        apply.ensure_vcan("vcan0")


def test_configure_takes_the_controller_down_changes_it_in_one_request_and_brings_it_up(
        fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=500000)
    changes = apply.configure("can0", bitrate=250000, restart_ms=100, berr_reporting=True, listen_only=True)
    assert changes == ["bitrate 500000 -> 250000", "restart-ms 0 -> 100", "berr-reporting on",
                       "listen-only on"]
    assert fake.changes() == [
        ("set", {"index": 3, "state": "down"}),
        ("set", {"index": 3, "kind": "can", "can_bittiming": {"bitrate": 250000}, "can_restart_ms": 100,
                 "can_ctrlmode": {"berr_reporting": "on", "listenonly": "on"}}),
        ("set", {"index": 3, "state": "up"}),
    ]
    state = apply.link_state("can0")
    assert (state.up, state.bitrate, state.restart_ms, state.berr_reporting) == (True, 250000, 100, True)


def test_configure_with_the_current_settings_sends_nothing(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, restart_ms=100,
                                  ctrlmode={"berr_reporting": "on"})
    unchanged = apply.configure("can0", bitrate=250000, restart_ms=100, berr_reporting=True,
                                listen_only=False)
    assert unchanged == []
    assert fake.changes() == []


def test_configure_changes_only_what_differs(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000)
    assert apply.configure("can0", bitrate=250000, listen_only=True) == ["listen-only on"]
    assert fake.changes()[1] == ("set", {"index": 3, "kind": "can", "can_ctrlmode": {"listenonly": "on"}})


def test_configure_brings_up_a_configured_controller_that_is_down(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=False, bitrate=250000)
    assert apply.configure("can0", bitrate=250000) == ["brought up"]
    assert fake.changes() == [("set", {"index": 3, "state": "up"})]


def test_a_controller_without_bit_rate_cannot_be_brought_up(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=False)
    with pytest.raises(LinkError, match=r"no bit timing yet; set one with `sudo ecu-sim link can0"):
        apply.configure("can0", restart_ms=100)


def test_controller_settings_on_a_vcan_are_refused_without_a_request(fake: FakeIPRoute) -> None:
    fake.links["vcan0"] = FakeLink("vcan0", 4, "vcan", up=True)
    with pytest.raises(LinkUnsupportedError, match="vcan0 is a vcan interface, not a CAN controller"):
        apply.configure("vcan0", bitrate=250000)
    assert fake.changes() == []


def test_configure_of_a_missing_interface_says_how_to_get_one(fake: FakeIPRoute) -> None:
    with pytest.raises(LinkNotFoundError, match="can0 does not exist; plug in the CAN adapter"):
        apply.configure("can0", bitrate=250000)


def test_a_refused_bit_rate_leaves_a_running_bus_up(fake: FakeIPRoute) -> None:
    """Linux answers EDOM when the clock cannot be divided down to the rate (seen with 7 bit/s)."""
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000)
    real_link = fake.link

    def refuse_bittiming(command: str, **kwargs: Any) -> list[Any]:
        if "can_bittiming" in kwargs:
            fake.requests.append((command, kwargs))
            raise NetlinkError(errno.EDOM, "Numerical argument out of domain")
        return real_link(command, **kwargs)

    fake.link = refuse_bittiming  # type: ignore[method-assign]
    with pytest.raises(LinkError, match="clock cannot produce that bit rate"):
        apply.configure("can0", bitrate=7)
    assert fake.changes()[-1] == ("set", {"index": 3, "state": "up"})
    assert apply.link_state("can0").up


@pytest.mark.parametrize(("bitrate", "restart_ms", "text"), [
    (0, None, "positive"), (-250000, None, "positive"), (2_000_000, None, "up to 1000000"),
    (None, -1, "restart-ms"), (None, 2**32, "restart-ms"),
])
def test_impossible_settings_are_refused_before_netlink(fake: FakeIPRoute, bitrate: int | None,
                                                        restart_ms: int | None, text: str) -> None:
    with pytest.raises(LinkError, match=text):
        apply.configure("can0", bitrate=bitrate, restart_ms=restart_ms)
    assert fake.requests == []


SJA1000 = {"name": "sja1000", "tseg1_min": 1, "tseg1_max": 16, "tseg2_min": 1, "tseg2_max": 8,
           "sjw_max": 4, "brp_min": 1, "brp_max": 64, "brp_inc": 1}
SJA1000_MODES = {"loopback": "yes", "listenonly": "yes", "berr_reporting": "yes", "one_shot": "yes"}


@pytest.mark.parametrize(("settings", "text"), [
    ({"bitrate": 7}, "8000000 Hz clock cannot produce 7 bit/s"),
    ({"bitrate": 950000}, "5% tolerance; the closest it reaches is 1000000 bit/s"),
    ({"listen_only": True}, "does not support --listen-only"),
    ({"bitrate": 250000, "berr_reporting": True}, "does not support --berr-reporting"),
])
def test_what_the_controller_cannot_do_is_refused_without_taking_the_bus_down(
        fake: FakeIPRoute, settings: dict[str, Any], text: str) -> None:
    """A bad LINK_ARGS runs on every start attempt: it must not bounce a working bus each time."""
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=500000, clock=8_000_000,
                                  bittiming_const=SJA1000, supported={"loopback": "yes", "one_shot": "yes"})
    with pytest.raises(LinkError, match=text):
        apply.configure("can0", **settings)
    assert fake.changes() == []
    assert apply.link_state("can0").up


def test_settings_within_the_controllers_limits_are_applied(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=500000, clock=8_000_000,
                                  bittiming_const=SJA1000, supported=SJA1000_MODES)
    assert apply.configure("can0", bitrate=250000, listen_only=True, berr_reporting=False) == [
        "bitrate 500000 -> 250000", "listen-only on"]


def test_switching_an_unsupported_mode_off_is_not_refused(fake: FakeIPRoute) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, supported={})
    assert apply.configure("can0", listen_only=False, berr_reporting=False) == []
