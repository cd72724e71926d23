"""CAN network interfaces: create a vcan, set a controller's bit rate and read its error state.

This talks rtnetlink through pyroute2 instead of running ``ip``: on a board the ``ip`` in PATH may be
busybox's, which knows nothing of ``type can``, and its error text is not something we can turn into
advice.  Every kernel refusal is turned into a :class:`LinkError` whose message says what to do.

pyroute2 is an optional extra (``pip install 'ecu-sim[link]'``) and is imported only when a function
here is called, so the simulator itself still runs on an image where the link is set up by systemd-networkd.
"""

from __future__ import annotations

import enum
import errno
import importlib
import os
import re
import socket
import struct
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ecu_sim.errors import EXIT_UNAVAILABLE, ConfigError

#: sysexits(3) EX_NOPERM: the command was right but this user may not run it.
EXIT_NOPERM = 77

IFF_UP = 0x1
IFNAMSIZ = 16

#: struct can_device_stats (linux/can/netlink.h), the IFLA_INFO_XSTATS payload of a CAN controller.
_CAN_DEVICE_STATS = struct.Struct("=6I")
_CAN_DEVICE_STATS_FIELDS = ("bus_error", "error_warning", "error_passive", "bus_off", "arbitration_lost",
                            "restarts")

_NAME_RE = re.compile(r"^[^\s/:]{1,15}$")

#: ISO 11898-1: the nominal (arbitration) bit rate of a CAN bus is at most 1 Mbit/s.
MAX_BITRATE = 1_000_000
#: IFLA_CAN_RESTART_MS is a u32 in milliseconds.
MAX_RESTART_MS = 0xFFFFFFFF
#: the kernel's CAN_CALC_MAX_ERROR: a bit rate the clock misses by more than 5.0 % is refused (EDOM)
_MAX_BITRATE_ERROR_PERMILLE = 50
#: the ctrlmode names ecu_sim can set, as pyroute2 spells them, and as ``ecu-sim link`` spells them
_CTRLMODE_OPTIONS = {"berr_reporting": "--berr-reporting", "listenonly": "--listen-only"}


class LinkError(ConfigError):
    """A CAN interface could not be inspected or changed; the message names the interface and the fix."""


class LinkNotFoundError(LinkError):
    """The interface is not there (yet): a USB adapter may still be enumerating, so callers may retry."""

    exit_status = EXIT_UNAVAILABLE


class LinkPermissionError(LinkError):
    """Changing links needs CAP_NET_ADMIN, which only the operator can grant."""

    exit_status = EXIT_NOPERM


class LinkUnsupportedError(LinkError):
    """The kernel or the driver cannot do what was asked (module not loaded, option not in hardware)."""

    exit_status = EXIT_UNAVAILABLE


class ControllerState(enum.Enum):
    """enum can_state (linux/can/netlink.h); the numbers are what the kernel sends in IFLA_CAN_STATE."""

    ERROR_ACTIVE = 0
    ERROR_WARNING = 1
    ERROR_PASSIVE = 2
    BUS_OFF = 3
    STOPPED = 4
    SLEEPING = 5


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


# --------------------------------------------------------------------------------------------------
# pyroute2 access and error translation


def _pyroute2() -> Any:
    try:
        return importlib.import_module("pyroute2")
    except ImportError as exc:
        raise LinkError("managing CAN links needs pyroute2, which is not installed: "
                        "pip install 'ecu-sim[link]'") from exc


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name) or name in (".", ".."):
        raise LinkError(f"{name!r} is not a valid interface name: at most {IFNAMSIZ - 1} characters, "
                        "no spaces, '/' or ':'")


def _missing_hint(name: str) -> str:
    create = f"create it with `sudo ecu-sim link {name} --create`"
    if name.startswith("vcan"):
        return f"{name} does not exist; {create}"
    return (f"{name} does not exist; plug in the CAN adapter and check its driver is loaded "
            f"(`ip -d link` lists the CAN interfaces), or for a virtual bus {create}")


def _error_code(exc: BaseException) -> int | None:
    """pyroute2's NetlinkError carries the kernel errno in ``code``; plain OSErrors in ``errno``."""
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return code
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    return None


def translate_error(exc: BaseException, name: str, action: str) -> LinkError | None:
    """Turn a kernel refusal into advice, or ``None`` when the exception is not a netlink/OS error.

    ``action`` is what we were doing ("create", "configure", "read", "up") because the same errno
    means different things: EOPNOTSUPP on create is a missing vcan module, on configure a driver
    that lacks the option or an interface that is not a controller.
    """
    code = _error_code(exc)
    if code is None:
        return None
    if code == errno.ENODEV:
        return LinkNotFoundError(_missing_hint(name))
    if code in (errno.EPERM, errno.EACCES):
        return LinkPermissionError(
            f"cannot {action} {name}: changing network links needs CAP_NET_ADMIN; run as root "
            f"(sudo ecu-sim link {name} ...) or grant the capability (AmbientCapabilities=CAP_NET_ADMIN "
            "in the systemd unit)")
    if code == errno.EOPNOTSUPP:
        if action == "create":
            return LinkUnsupportedError(
                f"cannot create {name}: the kernel has no vcan support loaded; run `sudo modprobe vcan` "
                "(on Debian/Raspberry Pi OS the module is in the kernel image package; CONFIG_CAN_VCAN)")
        return LinkUnsupportedError(
            f"cannot {action} {name}: the driver does not support this setting "
            "(vcan has no bit timing; listen-only and bus-error reporting depend on the controller)")
    if code == errno.EBUSY and action == "restart":
        return LinkError(f"cannot restart {name}: the controller is not bus-off")
    if code == errno.EBUSY:
        return LinkError(f"cannot {action} {name}: the interface is busy (up); "
                         f"bring it down with `sudo ip link set {name} down` and retry")
    if code == errno.EINVAL:
        if action == "restart":
            return LinkError(f"cannot restart {name}: the kernel restarts only an up controller with "
                             f"restart-ms 0 (`ecu-sim link {name} --show` shows both)")
        if action == "up":
            return LinkError(f"cannot bring {name} up: the controller has no bit timing yet; "
                             f"set one with `sudo ecu-sim link {name} --bitrate 250000`")
        return LinkError(f"cannot {action} {name}: the driver rejected the value ({exc}); "
                         "check the bit rate is one the controller's clock can reach "
                         "(J1939: 250000 or 500000)")
    if code in (errno.EDOM, errno.ERANGE):
        return LinkError(f"cannot {action} {name}: the controller's clock cannot produce that bit rate "
                         "within its bit-timing limits; use a standard rate (J1939: 250000 or 500000)")
    if code == errno.EEXIST:
        return LinkError(f"cannot {action} {name}: an interface with that name already exists")
    if code == errno.EAFNOSUPPORT:
        return LinkUnsupportedError(f"cannot {action} {name}: this kernel has no SocketCAN (PF_CAN); "
                                    "run `sudo modprobe can` or use a kernel built with CONFIG_CAN")
    return LinkError(f"cannot {action} {name}: {exc}")


@contextmanager
def _netlink(name: str, action: str) -> Iterator[Any]:
    _check_name(name)
    pyroute2 = _pyroute2()
    try:
        with pyroute2.IPRoute() as ipr:
            yield ipr
    except LinkError:
        raise
    except Exception as exc:
        translated = translate_error(exc, name, action)
        if translated is None:
            raise
        raise translated from exc


def _get_message(ipr: Any, name: str) -> Any | None:
    """The RTM_NEWLINK message describing ``name``, or ``None`` when there is no such interface."""
    try:
        messages = list(ipr.link("get", ifname=name))
    except Exception as exc:
        if _error_code(exc) == errno.ENODEV:
            return None
        raise
    return messages[0] if messages else None


# --------------------------------------------------------------------------------------------------
# Parsing


def _field(value: Any, key: str) -> Any:
    if isinstance(value, Mapping) or hasattr(value, "get"):
        return value.get(key)
    return None


def _on(value: Any) -> bool | None:
    if value is None:
        return None
    return str(value).lower() == "on"


def _controller_state(value: Any) -> ControllerState | None:
    if value is None:
        return None
    if isinstance(value, int):
        try:
            return ControllerState(value)
        except ValueError:
            return None
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
    values = _CAN_DEVICE_STATS.unpack_from(raw)
    return DeviceStats(**dict(zip(_CAN_DEVICE_STATS_FIELDS, values, strict=True)))


def _bittiming_const(value: Any) -> BittimingConst | None:
    fields = {name: _field(value, name) for name in BittimingConst.__dataclass_fields__}
    if any(not isinstance(number, int) for number in fields.values()):
        return None
    return BittimingConst(**fields)


def _supported_ctrlmodes(ext: Any) -> frozenset[str] | None:
    """IFLA_CAN_CTRLMODE_EXT/IFLA_CAN_CTRLMODE_SUPPORTED (Linux 5.19+), decoded by pyroute2 as yes/no."""
    if ext is None or not hasattr(ext, "get_attr"):
        return None
    supported = ext.get_attr("IFLA_CAN_CTRLMODE_SUPPORTED")
    if supported is None or not hasattr(supported, "items"):
        return None
    return frozenset(key for key, value in supported.items() if value == "yes")


def parse_link(message: Any) -> LinkState:
    """Build a :class:`LinkState` from a pyroute2 ifinfmsg as returned by ``IPRoute.link("get")``.

    Kept apart from the netlink round trip so it can be checked against messages recorded from a
    real kernel on a machine that has no CAN at all.
    """
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


# --------------------------------------------------------------------------------------------------
# Operations


def link_state(name: str) -> LinkState:
    """Read the interface; raises :class:`LinkNotFoundError` when it is not there."""
    with _netlink(name, "read") as ipr:
        message = _get_message(ipr, name)
    if message is None:
        raise LinkNotFoundError(_missing_hint(name))
    return parse_link(message)


def ensure_vcan(name: str) -> list[str]:
    """Make ``name`` an up vcan interface; returns what had to be done (empty: it already was).

    An existing interface of another kind is an error rather than something to replace: deleting
    a real adapter's can0 because someone typed ``--create`` would take the truck's bus away.
    """
    changes: list[str] = []
    with _netlink(name, "create") as ipr:
        message = _get_message(ipr, name)
        if message is None:
            ipr.link("add", ifname=name, kind="vcan")
            changes.append("created")
            message = _get_message(ipr, name)
            if message is None:
                raise LinkError(f"created {name} but the kernel does not list it; check `ip link`")
        state = parse_link(message)
        if state.kind != "vcan":
            raise LinkError(f"{name} already exists and is a {state.kind or 'non-virtual'} interface, "
                            "not a vcan; pick another name or delete it first")
        if not state.up:
            ipr.link("set", index=state.index, state="up")
            changes.append("brought up")
    return changes


def check_settings(bitrate: int | None = None, restart_ms: int | None = None) -> None:
    """Refuse values no controller accepts, before any netlink request (and without pyroute2)."""
    if bitrate is not None and not 0 < bitrate <= MAX_BITRATE:
        raise LinkError(f"bitrate must be a positive number of bit/s up to {MAX_BITRATE} (CAN's limit; "
                        f"J1939: 250000 or 500000), not {bitrate}")
    if restart_ms is not None and not 0 <= restart_ms <= MAX_RESTART_MS:
        raise LinkError("restart-ms must be 0 (no automatic restart) or a delay in ms "
                        f"(at most {MAX_RESTART_MS}), not {restart_ms}")


def closest_bitrate(clock_hz: int, bitrate: int, btc: BittimingConst) -> int | None:
    """The bit rate the kernel would settle on for ``bitrate``, or ``None`` when no prescaler fits.

    The search of can_calc_bittiming() (drivers/net/can/dev/calc_bittiming.c), without the sample
    point, which only chooses between equally good rates: every time-quantum count the controller
    allows, its prescaler rounded as the kernel rounds it.
    """
    best: int | None = None
    brp_inc = max(btc.brp_inc, 1)
    for tseg in range((btc.tseg1_max + btc.tseg2_max) * 2 + 1, (btc.tseg1_min + btc.tseg2_min) * 2 - 1, -1):
        tsegall = 1 + tseg // 2  # CAN_SYNC_SEG + tseg1 + tseg2
        brp = clock_hz // (tsegall * bitrate) + tseg % 2
        brp = (brp // brp_inc) * brp_inc
        if brp < btc.brp_min or brp > btc.brp_max or brp == 0:
            continue
        reached = clock_hz // (brp * tsegall)
        if best is None or abs(bitrate - reached) < abs(bitrate - best):
            best = reached
    return best


def _check_against_controller(state: LinkState, bitrate: int | None, berr_reporting: bool | None,
                              listen_only: bool | None) -> None:
    """What the kernel would refuse only after the link is down (EDOM, EINVAL, EOPNOTSUPP), refused now.

    Checked only against limits the driver reports; a driver that reports none is left to the kernel.
    """
    name = state.name
    if bitrate is not None and bitrate != state.bitrate:
        if state.bitrate_max is not None and bitrate > state.bitrate_max:
            raise LinkError(f"cannot configure {name}: its transceiver allows at most {state.bitrate_max} "
                            f"bit/s, not {bitrate}")
        if state.bittiming_const is not None and state.clock_hz:
            reached = closest_bitrate(state.clock_hz, bitrate, state.bittiming_const)
            if reached is None or abs(bitrate - reached) * 1000 // bitrate > _MAX_BITRATE_ERROR_PERMILLE:
                closest = f"; the closest it reaches is {reached} bit/s" if reached else ""
                raise LinkError(f"cannot configure {name}: its {state.clock_hz} Hz clock cannot produce "
                                f"{bitrate} bit/s within the kernel's 5% tolerance{closest}; use a standard "
                                "rate (J1939: 250000 or 500000)")
        elif state.bitrate_const and bitrate not in state.bitrate_const:
            raise LinkError(f"cannot configure {name}: its driver supports only the bit rates "
                            f"{', '.join(map(str, state.bitrate_const))}, not {bitrate}")
    if state.supported_ctrlmodes is not None:
        for mode, wanted in (("berr_reporting", berr_reporting), ("listenonly", listen_only)):
            if wanted and mode not in state.supported_ctrlmodes:
                raise LinkUnsupportedError(f"cannot configure {name}: its controller does not support "
                                           f"{_CTRLMODE_OPTIONS[mode]} (supported modes: "
                                           f"{', '.join(sorted(state.supported_ctrlmodes)) or 'none'})")


def configure(name: str, bitrate: int | None = None, restart_ms: int | None = None,
              berr_reporting: bool | None = None, listen_only: bool | None = None) -> list[str]:
    """Apply controller settings and leave the link up; returns what changed (empty: nothing to do).

    The kernel refuses bit timing, restart delay and control modes on a running controller
    (EBUSY), so when something differs the link is taken down, changed in one request and brought
    back up.  Nothing is touched when the controller already has these settings and is up, so a
    systemd ExecStartPre can run this on every start without bouncing a working bus.  Values the
    kernel would refuse are refused before the link goes down, as far as the driver reports its
    limits (clock and bit-timing limits, fixed bit rates, supported control modes): a mistake in
    LINK_ARGS must not take a working bus down on every start attempt.
    """
    check_settings(bitrate, restart_ms)
    changes: list[str] = []
    with _netlink(name, "configure") as ipr:
        message = _get_message(ipr, name)
        if message is None:
            raise LinkNotFoundError(_missing_hint(name))
        state = parse_link(message)
        settings = (bitrate, restart_ms, berr_reporting, listen_only)
        if not state.is_controller:
            if any(value is not None for value in settings):
                raise LinkUnsupportedError(
                    f"{name} is a {state.kind or 'non-CAN'} interface, not a CAN controller: bit rate, "
                    "restart-ms, berr-reporting and listen-only only apply to real CAN hardware")
            if not state.up:
                ipr.link("set", index=state.index, state="up")
                changes.append("brought up")
            return changes
        _check_against_controller(state, bitrate, berr_reporting, listen_only)
        request: dict[str, Any] = {}
        ctrlmode: dict[str, str] = {}
        if bitrate is not None and bitrate != state.bitrate:
            request["can_bittiming"] = {"bitrate": bitrate}
            changes.append(f"bitrate {state.bitrate or 'unset'} -> {bitrate}")
        if restart_ms is not None and restart_ms != state.restart_ms:
            request["can_restart_ms"] = restart_ms
            changes.append(f"restart-ms {state.restart_ms} -> {restart_ms}")
        if berr_reporting is not None and berr_reporting != state.berr_reporting:
            ctrlmode["berr_reporting"] = "on" if berr_reporting else "off"
            changes.append(f"berr-reporting {ctrlmode['berr_reporting']}")
        if listen_only is not None and listen_only != state.listen_only:
            ctrlmode["listenonly"] = "on" if listen_only else "off"
            changes.append(f"listen-only {ctrlmode['listenonly']}")
        if ctrlmode:
            request["can_ctrlmode"] = ctrlmode
        if request:
            if state.up:
                ipr.link("set", index=state.index, state="down")
            try:
                ipr.link("set", index=state.index, kind="can", **request)
            except Exception:
                if state.up:
                    _try_up(ipr, state.index)  # a refused value must not leave a working bus down
                raise
        if request or not state.up:
            try:
                ipr.link("set", index=state.index, state="up")
            except Exception as exc:
                translated = translate_error(exc, name, "up")
                if translated is None:
                    raise
                raise translated from exc
            if not state.up:
                changes.append("brought up")
    return changes


def restart(name: str) -> list[str]:
    """Restart a controller that is bus-off, as ``ip link set NAME type can restart`` does.

    With restart-ms 0 a controller stays bus-off until someone restarts it; this is that someone.
    Returns what was done: empty when the controller is not bus-off (nothing to restart), so it is
    safe in LINK_ARGS.  The kernel allows a manual restart only of an up controller with restart-ms
    0 that is bus-off; the first two are refused here with advice, before any request.
    """
    with _netlink(name, "restart") as ipr:
        message = _get_message(ipr, name)
        if message is None:
            raise LinkNotFoundError(_missing_hint(name))
        state = parse_link(message)
        if not state.is_controller:
            raise LinkUnsupportedError(f"{name} is a {state.kind or 'non-CAN'} interface, not a CAN "
                                       "controller: it has no bus-off state to restart from")
        if not state.up:
            raise LinkError(f"{name} is down, so there is no bus-off to restart from; bringing it up "
                            f"(`sudo ip link set {name} up`) starts the controller afresh")
        if state.controller_state is not ControllerState.BUS_OFF:
            return []
        if state.restart_ms:
            raise LinkError(f"{name} restarts itself {state.restart_ms} ms after a bus-off (restart-ms "
                            f"{state.restart_ms}) and the kernel refuses a manual restart then; if it "
                            "stays bus-off the bus itself is at fault (wiring, termination, bit rate)")
        try:
            _restart_request(state.index)
        except OSError as exc:
            if exc.errno == errno.EBUSY:  # it left bus-off between our look and the request
                return []
            raise
    return ["restarted after bus-off"]


# rtnetlink constants (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/can/netlink.h)
_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")
_NLMSG_ERROR = 2
_RTM_NEWLINK = 16
_NLM_F_REQUEST = 0x1
_NLM_F_ACK = 0x4
_IFLA_LINKINFO = 18
_IFLA_INFO_KIND = 1
_IFLA_INFO_DATA = 2
_IFLA_CAN_RESTART = 7


def _nla(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def restart_message(index: int, seq: int = 1) -> bytes:
    """RTM_NEWLINK with IFLA_CAN_RESTART = 1 (u32), byte for byte what iproute2 sends for ``restart``.

    Built here rather than by pyroute2, which encodes IFLA_CAN_RESTART as a zero-length flag; the
    kernel's policy wants a u32 and refuses the short attribute (ERANGE) before restarting anything.
    """
    data = _nla(_IFLA_CAN_RESTART, struct.pack("=I", 1))
    linkinfo = _nla(_IFLA_INFO_KIND, b"can\0") + _nla(_IFLA_INFO_DATA, data)
    body = _IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, 0, 0) + _nla(_IFLA_LINKINFO, linkinfo)
    header = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), _RTM_NEWLINK, _NLM_F_REQUEST | _NLM_F_ACK, seq, 0)
    return header + body


def _restart_request(index: int) -> None:
    """Send :func:`restart_message` and wait for the kernel's answer; a refusal raises OSError(errno)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.settimeout(5.0)
        sock.bind((0, 0))
        sock.send(restart_message(index))
        while True:
            reply = sock.recv(65536)
            offset = 0
            while offset + _NLMSGHDR.size <= len(reply):
                length, kind, _flags, seq, _pid = _NLMSGHDR.unpack_from(reply, offset)
                if kind == _NLMSG_ERROR and seq == 1:
                    (code,) = struct.unpack_from("=i", reply, offset + _NLMSGHDR.size)
                    if code:
                        raise OSError(-code, os.strerror(-code))
                    return
                if length < _NLMSGHDR.size:
                    break
                offset += (length + 3) & ~3


def _try_up(ipr: Any, index: int) -> None:
    """Best effort while another error is on its way to the user: that one is what they must see."""
    with suppress(Exception):
        ipr.link("set", index=index, state="up")


# --------------------------------------------------------------------------------------------------
# Presentation


def _onoff(value: bool | None) -> str:
    return "n/a" if value is None else ("on" if value else "off")


def format_state(state: LinkState) -> str:
    """The ``--show`` text: one ``key: value`` per line so scripts and tests can pick fields out."""
    rows: list[tuple[str, str]] = [
        ("kind", state.kind or "unknown"),
        ("admin", "up" if state.up else "down"),
        ("operstate", state.operstate),
    ]
    if state.mtu is not None:
        rows.append(("mtu", str(state.mtu)))
    if state.is_controller:
        rows.append(("controller state",
                     state.controller_state.name if state.controller_state is not None else "unknown"))
        bitrate = "unset" if state.bitrate is None else str(state.bitrate)
        if state.sample_point is not None:
            bitrate += f" (sample point {state.sample_point:.1f}%)"
        rows += [
            ("bitrate", bitrate),
            ("restart-ms", "n/a" if state.restart_ms is None else str(state.restart_ms)),
            ("berr-reporting", _onoff(state.berr_reporting)),
            ("listen-only", _onoff(state.listen_only)),
        ]
        if state.tx_error_counter is not None or state.rx_error_counter is not None:
            rows.append(("error counters", f"tx {state.tx_error_counter} rx {state.rx_error_counter}"))
        if state.stats is not None:
            rows.append(("device stats", " ".join(
                f"{field.replace('_', '-')} {getattr(state.stats, field)}"
                for field in _CAN_DEVICE_STATS_FIELDS)))
    width = max(len(key) for key, _ in rows) + 1
    return "\n".join([state.name] + [f"  {key + ':':<{width}} {value}" for key, value in rows])
