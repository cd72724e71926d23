"""What a CAN interface looks like, read from the kernel's RTM_NEWLINK answer.

Parsing is kept apart from the netlink round trip so it can be checked against messages recorded
from a real kernel on a machine that has no CAN at all, and so the planner can be handed a state
built by hand.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ecu_sim.bus.state import ControllerState

IFF_UP = 0x1

#: the kernel's struct can_device_stats, the IFLA_INFO_XSTATS payload of a CAN controller
_CAN_DEVICE_STATS = struct.Struct("=6I")


@dataclass(frozen=True)
class DeviceStats:
    """Event counters a CAN driver keeps (``ip -s -d link``); they only ever grow until the driver reloads."""

    bus_error: int
    error_warning: int
    error_passive: int
    bus_off: int
    arbitration_lost: int
    restarts: int


@dataclass(frozen=True)
class BittimingConst:
    """struct can_bittiming_const: the limits the kernel computes a bit timing within."""

    tseg1_min: int
    tseg1_max: int
    tseg2_min: int
    tseg2_max: int
    brp_min: int
    brp_max: int
    brp_inc: int


@dataclass(frozen=True)
class LinkState:
    """What a CAN interface looks like right now.

    Controller fields are ``None`` on a vcan (it has no controller) and whenever the driver does not
    report them, so a caller can tell "not known" from zero.  ``up`` is the administrative IFF_UP
    flag; ``operstate`` is the kernel's RFC 2863 view, which for an up vcan is "UNKNOWN" (it has no
    carrier to report), so never take operstate alone to mean "down".
    """

    name: str
    index: int
    kind: str | None
    up: bool
    operstate: str
    mtu: int | None = None
    controller_state: ControllerState | None = None
    bitrate: int | None = None
    sample_point: float | None = None
    restart_ms: int | None = None
    berr_reporting: bool | None = None
    listen_only: bool | None = None
    tx_error_counter: int | None = None
    rx_error_counter: int | None = None
    stats: DeviceStats | None = None
    #: what the driver can do, for checking a setting before the link is taken down; ``None``: not reported
    clock_hz: int | None = None
    bittiming_const: BittimingConst | None = None
    bitrate_const: tuple[int, ...] | None = None
    bitrate_max: int | None = None
    supported_ctrlmodes: frozenset[str] | None = None

    @property
    def is_controller(self) -> bool:
        """Only a kind-``can`` device has bit timing; vcan/vxcan refuse IFLA_CAN_* with EOPNOTSUPP."""
        return self.kind == "can"


def _field(value: Any, key: str) -> Any:
    if isinstance(value, Mapping) or hasattr(value, "get"):
        return value.get(key)
    return None


def _on(value: Any) -> bool | None:
    if value is None:
        return None
    return str(value).lower() == "on"


def _controller_state(value: Any) -> ControllerState | None:
    """pyroute2 decodes IFLA_CAN_STATE to the kernel's name ("BUS_OFF"); a raw number is taken too."""
    if value is None:
        return None
    if isinstance(value, int):
        return ControllerState.from_kernel(value)
    try:
        return ControllerState[str(value)]
    except KeyError:
        return None


def _device_stats(xstats: Any) -> DeviceStats | None:
    """IFLA_INFO_XSTATS arrives from pyroute2 as "aa:bb:.." text (its 'hex' type) or as bytes."""
    if xstats is None:
        return None
    if isinstance(xstats, str):
        try:
            raw = bytes.fromhex(xstats.replace(":", ""))
        except ValueError:
            return None
    elif isinstance(xstats, (bytes, bytearray)):
        raw = bytes(xstats)
    else:
        return None
    if len(raw) < _CAN_DEVICE_STATS.size:
        return None
    return DeviceStats(*_CAN_DEVICE_STATS.unpack_from(raw))


def _bittiming_const(value: Any) -> BittimingConst | None:
    limits = {limit.name: _field(value, limit.name) for limit in fields(BittimingConst)}
    if any(not isinstance(number, int) for number in limits.values()):
        return None
    return BittimingConst(**limits)


def _supported_ctrlmodes(ext: Any) -> frozenset[str] | None:
    """Decoded by pyroute2 as yes/no per mode; kernels without IFLA_CAN_CTRLMODE_EXT report nothing."""
    if ext is None or not hasattr(ext, "get_attr"):
        return None
    supported = ext.get_attr("IFLA_CAN_CTRLMODE_SUPPORTED")
    if supported is None or not hasattr(supported, "items"):
        return None
    return frozenset(key for key, value in supported.items() if value == "yes")


def parse_link(message: Any) -> LinkState:
    """Build a :class:`LinkState` from a pyroute2 ifinfmsg as returned by ``IPRoute.link("get")``."""
    linkinfo = message.get_attr("IFLA_LINKINFO")
    kind = linkinfo.get_attr("IFLA_INFO_KIND") if linkinfo is not None else None
    name = message.get_attr("IFLA_IFNAME") or ""
    flags = int(message.get("flags") or 0)
    state = LinkState(name=name, index=int(message.get("index") or 0), kind=kind,
                      up=bool(flags & IFF_UP), operstate=str(message.get_attr("IFLA_OPERSTATE") or "UNKNOWN"),
                      mtu=message.get_attr("IFLA_MTU"))
    if kind != "can" or linkinfo is None:
        return state
    data = linkinfo.get_attr("IFLA_INFO_DATA")
    if data is None or not hasattr(data, "get_attr"):
        return state
    bittiming = data.get_attr("IFLA_CAN_BITTIMING")
    bitrate = _field(bittiming, "bitrate")
    sample_point = _field(bittiming, "sample_point")
    ctrlmode = data.get_attr("IFLA_CAN_CTRLMODE")
    berr = data.get_attr("IFLA_CAN_BERR_COUNTER")
    tx_errors = _field(berr, "txerr")
    rx_errors = _field(berr, "rxerr")
    restart_ms = data.get_attr("IFLA_CAN_RESTART_MS")
    clock = data.get_attr("IFLA_CAN_CLOCK")
    bitrate_const = data.get_attr("IFLA_CAN_BITRATE_CONST")
    bitrate_max = data.get_attr("IFLA_CAN_BITRATE_MAX")
    return LinkState(
        name=state.name, index=state.index, kind=kind, up=state.up, operstate=state.operstate,
        mtu=state.mtu,
        controller_state=_controller_state(data.get_attr("IFLA_CAN_STATE")),
        # a controller that was never given a bit rate reports an all-zero bittiming
        bitrate=int(bitrate) if bitrate else None,
        sample_point=int(sample_point) / 10.0 if sample_point else None,
        restart_ms=int(restart_ms) if restart_ms is not None else None,
        berr_reporting=_on(_field(ctrlmode, "berr_reporting")),
        listen_only=_on(_field(ctrlmode, "listenonly")),
        tx_error_counter=int(tx_errors) if tx_errors is not None else None,
        rx_error_counter=int(rx_errors) if rx_errors is not None else None,
        stats=_device_stats(linkinfo.get_attr("IFLA_INFO_XSTATS")),
        clock_hz=int(clock) if clock else None,
        bittiming_const=_bittiming_const(data.get_attr("IFLA_CAN_BITTIMING_CONST")),
        bitrate_const=tuple(int(rate) for rate in bitrate_const) if bitrate_const else None,
        bitrate_max=int(bitrate_max) if bitrate_max else None,
        supported_ctrlmodes=_supported_ctrlmodes(data.get_attr("IFLA_CAN_CTRLMODE_EXT")),
    )
