"""The edge to the CAN bus: opening it the python-can way, and sending and receiving frames.

Bus options are python-can's own (``-i/-c/-b/--bus-kwargs``, its config files and ``CAN_*``
variables), so ecu-sim behaves like ``can.logger`` and ``cantools monitor``. Two things are
added: ``--iface NAME`` as shorthand for SocketCAN, and a default that works anywhere without
root or kernel modules (``udp_multicast``), used only when nothing else names an interface.
"""

from __future__ import annotations

import argparse
import errno
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import can
import can.cli
from can.interfaces.udp_multicast import UdpMulticastBus

from ecu_sim.errors import BusUnavailableError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_INTERFACE = "udp_multicast"
DEFAULT_CHANNEL = UdpMulticastBus.DEFAULT_GROUP_IPv4
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


def resolve_bus_options(args: argparse.Namespace, config: Mapping[str, str]) -> argparse.Namespace:
    """Merge the command line over the ``[bus]`` config section; fill in the default bus.

    Returns a namespace for ``can.cli.create_bus_from_namespace``; the command line wins, then the
    config file, then python-can's own configuration, then udp_multicast.
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
                setattr(ns, key, _config_value(key, value))
        else:
            extra[key] = can.util.cast_from_string(value)
    if extra:
        ns.bus_kwargs = {**extra, **getattr(ns, "bus_kwargs", {})}
    if "interface" not in ns and not _python_can_configured():
        ns.interface = DEFAULT_INTERFACE
        if "channel" not in ns:
            ns.channel = DEFAULT_CHANNEL
    return ns


def _config_value(key: str, value: str) -> Any:
    if key in ("bitrate", "data_bitrate"):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"[bus] {key} must be an integer in bit/s (got {value!r})") from None
    if key == "fd":
        return value.strip().lower() in ("1", "yes", "true", "on")
    return value


def open_bus(options: argparse.Namespace) -> can.BusABC:
    """Open the bus, turning python-can's failures into a message a person can act on."""
    try:
        return can.cli.create_bus_from_namespace(options)
    except argparse.ArgumentError as exc:
        raise _unavailable(options, exc.__cause__ or exc) from exc
    except Exception as exc:  # python-can backends raise many types; all mean "no bus"
        raise _unavailable(options, exc) from exc


def _unavailable(options: argparse.Namespace, exc: BaseException) -> BusUnavailableError | ConfigError:
    interface = getattr(options, "interface", None)
    channel = getattr(options, "channel", None)
    code = _errno_of(exc)
    if isinstance(exc, (can.CanInterfaceNotImplementedError, ImportError)) and code is None:
        return ConfigError(f"interface {interface!r} cannot be used: {exc}. Check -i/--interface "
                           "(python-can's interface names: socketcan, pcan, kvaser, slcan, gs_usb, "
                           "socketcand, udp_multicast, virtual, ...) and that its driver is installed.")
    if interface == "socketcan":
        if code == errno.ENODEV:
            return BusUnavailableError(f"{channel} does not exist; create it with "
                                       f"`sudo ecu-sim link {channel} --create` (vcan) or check the "
                                       "adapter and its driver (real CAN)")
        if code == errno.ENETDOWN:
            return BusUnavailableError(f"{channel} is down; bring it up with `sudo ecu-sim link {channel}"
                                       " --bitrate 250000` (real CAN) or `--create` (vcan)")
        if code == errno.EAFNOSUPPORT:
            return BusUnavailableError("this kernel has no SocketCAN support (PF_CAN not available); "
                                       "load it with `sudo modprobe can-raw` or use another interface, "
                                       "e.g. `-i udp_multicast`")
    return BusUnavailableError(f"cannot open the {interface or 'configured'} bus"
                               f"{f' on {channel}' if channel else ''}: {exc}. Check that the "
                               "adapter is connected and the interface options are right.")


def _errno_of(exc: BaseException | None) -> int | None:
    """python-can wraps OSError in its own exceptions; dig out the errno wherever it is."""
    while exc is not None:
        for candidate in (getattr(exc, "errno", None), getattr(exc, "error_code", None)):
            if isinstance(candidate, int):
                return candidate
        exc = exc.__cause__ or exc.__context__
    return None


@dataclass
class PortCounters:
    rx: int = 0
    tx: int = 0
    echo: int = 0
    error_frames: int = 0
    tx_errors: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


class Port:
    """A node's view of the bus: own echoes dropped, failures counted rather than fatal.

    udp_multicast (and some adapters) hand a process its own frames back. A frame carrying an
    identifier this node transmits is either that echo or another node using our address; it is
    dropped either way and counted, never decoded as input.
    """

    def __init__(self, bus: can.BusABC, own_ids: Iterable[int]) -> None:
        self.bus = bus
        self.own_ids = frozenset(own_ids)
        self.counters = PortCounters()
        #: listeners (e.g. a python-can Logger) shown every frame received and every frame sent
        self.taps: list[can.Listener] = []

    def recv(self, timeout_s: float) -> can.Message | None:
        try:
            msg = self.bus.recv(timeout_s)
        except can.CanOperationError as exc:
            raise BusUnavailableError(f"receiving from the bus failed: {exc}") from exc
        if msg is None:
            return None
        for tap in self.taps:
            tap.on_message_received(msg)
        if msg.is_error_frame:
            self.counters.error_frames += 1
            return None
        if msg.arbitration_id in self.own_ids:
            self.counters.echo += 1
            return None
        self.counters.rx += 1
        return msg

    def send(self, msg: can.Message) -> None:
        try:
            self.bus.send(msg)
        except can.CanOperationError as exc:
            # A full transmit queue (ENOBUFS) or a bus without acknowledgement: the next tick sends
            # fresh data anyway, so count it and carry on.
            self.counters.tx_errors += 1
            log.debug("send failed: %s", exc)
            return
        self.counters.tx += 1
        for tap in self.taps:
            tap.on_message_received(msg)

    def close(self) -> None:
        self.bus.shutdown()


class Transmitter:
    """Sends one message of the node each tick, from user space (works on every interface)."""

    def __init__(self, port: Port, arbitration_id: int, is_extended_id: bool) -> None:
        self._port = port
        self._arbitration_id = arbitration_id
        self._is_extended_id = is_extended_id

    def send(self, data: bytes) -> None:
        self._port.send(can.Message(arbitration_id=self._arbitration_id, data=data,
                                    is_extended_id=self._is_extended_id, check=False))
