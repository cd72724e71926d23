"""Opening the CAN bus the python-can way, and saying what to do when it cannot be opened.

Bus options are python-can's own (``-i/-c/-b/--bus-kwargs``, its config files and ``CAN_*``
variables), so ecu-sim behaves like ``can.logger`` and ``cantools monitor``. Two things are
added: ``--iface NAME`` as shorthand for SocketCAN, and a default that works anywhere without
root or kernel modules (``udp_multicast``), used only when nothing else names an interface.
"""

from __future__ import annotations

import argparse
import errno
import socket
from collections.abc import Callable, Mapping
from typing import Any

import can
import can.cli
from can.interfaces.udp_multicast import UdpMulticastBus

from ecu_sim.bus import hostlocal
from ecu_sim.errors import (
    BusUnavailableError,
    BusUnreachableError,
    ConfigError,
    errno_of,
    missing_interface_hint,
)

DEFAULT_INTERFACE = "udp_multicast"
DEFAULT_CHANNEL = UdpMulticastBus.DEFAULT_GROUP_IPv4
#: how long one connection attempt to a socketcand server may take
SOCKETCAND_CONNECT_S = 1.0
#: keys of the [bus] config section that map onto python-can's own command-line options
_NAMESPACE_KEYS = ("interface", "channel", "bitrate", "fd", "data_bitrate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """python-can's standard bus options plus the ``--iface`` shorthand."""
    can.cli.add_bus_arguments(parser, group_title="bus options (python-can)")
    parser.add_argument(
        "--iface", metavar="NAME", default=argparse.SUPPRESS,
        help="SocketCAN interface, e.g. can1 or vcan0 (shorthand for -i socketcan -c NAME)",
    )


def _python_can_configured() -> bool:
    """True when python-can's config files or CAN_* variables name an interface."""
    return bool(can.util.load_environment_config().get("interface")
                or can.util.load_file_config().get("interface"))


def resolve_bus_options(args: argparse.Namespace, config: Mapping[str, str],
                        typed: Callable[[str, str], object]) -> argparse.Namespace:
    """Merge the command line over the ``[bus]`` config section; fill in the default bus.

    Returns a namespace for ``can.cli.create_bus_from_namespace``; the command line wins, then the
    config file, then python-can's own configuration, then udp_multicast. ``typed`` is the
    settings' rule for a ``[bus]`` value python-can's namespace takes typed (a bit rate, ``fd``),
    asked only for a value the command line does not override: the bus knows no settings.
    """
    ns = argparse.Namespace(**{k: v for k, v in vars(args).items()
                               if k in (*_NAMESPACE_KEYS, "bus_kwargs", "can_filters", "timing")})
    iface = getattr(args, "iface", None)
    if iface is not None:
        if "interface" in ns or "channel" in ns:
            raise ConfigError("--iface NAME already means '-i socketcan -c NAME'; give either --iface "
                              "or -i/-c, not both")
        ns.interface, ns.channel = "socketcan", iface
    extra: dict[str, Any] = {}
    for key, value in config.items():
        if key in _NAMESPACE_KEYS:
            if key not in ns:
                setattr(ns, key, typed(key, value))
        else:
            extra[key] = can.util.cast_from_string(value)
    if extra:
        ns.bus_kwargs = {**extra, **getattr(ns, "bus_kwargs", {})}
    if "interface" not in ns:
        if _python_can_configured():
            _fill_from_python_can(ns)
        elif "channel" in ns:
            raise ConfigError(
                f"a channel ({ns.channel!r}) needs an interface: add -i/--interface (e.g. "
                f"`-i socketcan -c {ns.channel}`, or `--iface {ns.channel}` for SocketCAN), or drop "
                "-c for the default bus (udp_multicast)")
        elif (channel := _python_can_channel()) is not None:
            # The same rule as for -c: a channel alone is a mistake, never silently dropped.
            raise ConfigError(
                f"python-can's configuration names a channel ({channel[1]!r}, {channel[0]}) but no "
                f"interface: set CAN_INTERFACE too (e.g. CAN_INTERFACE=socketcan "
                f"CAN_CHANNEL={channel[1]}), use `--iface {channel[1]}`, or remove it for the "
                "default bus (udp_multicast)")
        else:
            ns.interface, ns.channel = DEFAULT_INTERFACE, DEFAULT_CHANNEL
    return ns


def _python_can_channel() -> tuple[str, str] | None:
    """Where python-can's own configuration names a channel, and the channel, if it does."""
    from_environment = can.util.load_environment_config().get("channel")
    if from_environment:
        return "CAN_CHANNEL", str(from_environment)
    from_file = can.util.load_file_config().get("channel")
    return ("python-can's configuration file", str(from_file)) if from_file else None


def _fill_from_python_can(ns: argparse.Namespace) -> None:
    """Take the interface (and the channel, unless given) from python-can's files and CAN_* variables.

    python-can would find them by itself when the bus is opened; naming them here lets the log
    say which bus is used and the SocketCAN checks of open_bus apply to them too.
    """
    try:
        found = can.util.load_config()
    except (can.CanInterfaceNotImplementedError, ValueError, TypeError) as exc:
        raise ConfigError(f"python-can's configuration (CAN_* variables, ~/.canrc, /etc/can.conf) "
                          f"is not usable: {_sentence(exc)}") from None
    ns.interface = found["interface"]
    if "channel" not in ns and found.get("channel") is not None:
        ns.channel = found["channel"]


def open_bus(options: argparse.Namespace) -> can.BusABC:
    """Open the bus, turning python-can's failures into a message a person can act on.

    udp_multicast stays on this machine unless a hop limit above zero asks for the LAN
    (:mod:`ecu_sim.bus.hostlocal`).
    """
    interface, bus_kwargs = getattr(options, "interface", None), getattr(options, "bus_kwargs", {})
    if interface == "socketcand":
        _reach_socketcand(bus_kwargs or {})
    try:
        if hostlocal.is_host_local(interface, bus_kwargs):
            bus = hostlocal.open_host_local(vars(options), bus_kwargs)
        else:
            bus = can.cli.create_bus_from_namespace(options)
    except argparse.ArgumentError as exc:
        raise _unavailable(options, exc.__cause__ or exc) from exc
    except Exception as exc:  # python-can backends raise many types; all mean "no bus"
        raise _unavailable(options, exc) from exc
    if getattr(options, "interface", None) == "socketcan" and not _link_is_up(str(options.channel)):
        # A raw socket binds to a down interface without complaint and fails only when sending.
        bus.shutdown()
        raise _unavailable(options, OSError(errno.ENETDOWN, "interface is down"))
    if interface == "udp_multicast" and not hostlocal.is_host_local(interface, bus_kwargs):
        hostlocal.announce_lan(getattr(options, "channel", None), bus_kwargs)
    return bus


def _reach_socketcand(kwargs: Mapping[str, Any]) -> None:
    """One connection attempt to the socketcand server before python-can's own.

    python-can's client retries a refused connection in a tight loop for ten seconds, logging a
    warning each time; one attempt here lets the port retry with its backoff instead.
    """
    host, port = kwargs.get("host"), kwargs.get("port")
    if host is None or port is None:
        return  # python-can names the missing keyword argument
    try:
        socket.create_connection((str(host), int(port)), timeout=SOCKETCAND_CONNECT_S).close()
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise BusUnreachableError(f"cannot reach socketcand at {host}:{port}: {reason}; check that "
                                  "socketcand runs there and --bus-kwargs host=... port=...") from None


def _link_is_up(name: str) -> bool:
    """IFF_UP from sysfs; an interface sysfs does not show is given the benefit of the doubt."""
    try:
        with open(f"/sys/class/net/{name}/flags", encoding="ascii") as flags:
            return bool(int(flags.read(), 16) & 0x1)
    except (OSError, ValueError):
        return True


def _unavailable(options: argparse.Namespace, exc: BaseException) -> BusUnavailableError | ConfigError:
    interface = getattr(options, "interface", None)
    channel = getattr(options, "channel", None)
    code = errno_of(exc)
    if interface not in can.VALID_INTERFACES:
        return ConfigError(f"unknown interface {interface!r}; check -i/--interface (python-can's "
                           "interface names: socketcan, pcan, kvaser, slcan, gs_usb, socketcand, "
                           "udp_multicast, virtual, ...)")
    if code is None and _options_rejected(exc):
        return ConfigError(f"the {interface} interface cannot be opened with these options: {_sentence(exc)} "
                           "Check -c/--channel, -b/--bitrate and --bus-kwargs against python-can's "
                           f"documentation of the {interface} interface.")
    if code is None and _driver_missing(exc):
        return ConfigError(f"the {interface} interface cannot be used here: {_sentence(exc)} "
                           f"Install the driver of the {interface} interface (the vendor's library "
                           "or the Python package python-can names for it; see python-can's "
                           "interface documentation), or choose another interface with -i.")
    if interface == "socketcan":
        if code == errno.ENODEV:
            return BusUnavailableError(missing_interface_hint(str(channel)))
        if code == errno.ENETDOWN:
            return BusUnavailableError(f"{channel} is down; bring it up with `sudo ecu-sim link {channel}"
                                       " --bitrate 250000` (real CAN) or `--create` (vcan)")
        if code == errno.EAFNOSUPPORT:
            return BusUnavailableError("this kernel has no SocketCAN support (PF_CAN not available); "
                                       "load it with `sudo modprobe can-raw` or use another interface, "
                                       "e.g. `-i udp_multicast`")
    return BusUnavailableError(f"cannot open the {interface or 'configured'} bus"
                               f"{f' on {channel}' if channel else ''}: {_sentence(exc)} Check that "
                               "the adapter is connected and the interface options are right.")


def _sentence(exc: BaseException) -> str:
    """An exception's message ending in exactly one full stop, to go before another sentence."""
    text = str(exc).strip() or type(exc).__name__
    return text if text.endswith((".", "!", "?")) else text + "."


def _options_rejected(exc: BaseException | None) -> bool:
    """True when the backend's constructor refused its arguments (a missing or unknown keyword)."""
    while exc is not None:
        if isinstance(exc, TypeError) and "argument" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _driver_missing(exc: BaseException | None) -> bool:
    """True when a python-can backend failed because its driver (library or package) is absent.

    Backends say so in different ways: CanInterfaceNotImplementedError or ImportError (a missing
    package, a library that did not load, the wrong platform), an OSError without an errno naming
    a library (pcan: "pcanbasic library not found."), a NameError (kvaser calls functions of a
    canlib that never loaded).
    """
    while exc is not None:
        if isinstance(exc, (can.CanInterfaceNotImplementedError, ImportError, NameError)):
            return True
        if isinstance(exc, OSError) and exc.errno is None and any(
                word in str(exc).lower() for word in ("librar", "driver", "could not be loaded")):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
