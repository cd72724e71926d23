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
import re
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
    if code == errno.EBUSY:
        return LinkError(f"cannot {action} {name}: the interface is busy (up); "
                         f"bring it down with `sudo ip link set {name} down` and retry")
    if code == errno.EINVAL:
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


def configure(name: str, bitrate: int | None = None, restart_ms: int | None = None,
              berr_reporting: bool | None = None, listen_only: bool | None = None) -> list[str]:
    """Apply controller settings and leave the link up; returns what changed (empty: nothing to do).

    The kernel refuses bit timing, restart delay and control modes on a running controller
    (EBUSY), so when something differs the link is taken down, changed in one request and brought
    back up.  Nothing is touched when the controller already has these settings and is up, so a
    systemd ExecStartPre can run this on every start without bouncing a working bus.
    """
    if bitrate is not None and bitrate <= 0:
        raise LinkError(f"bitrate must be a positive number of bit/s, not {bitrate}")
    if restart_ms is not None and restart_ms < 0:
        raise LinkError(f"restart-ms must be 0 (no automatic restart) or a delay in ms, not {restart_ms}")
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
