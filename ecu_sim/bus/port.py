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
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import can
import can.cli
from can.interfaces.udp_multicast import UdpMulticastBus

from ecu_sim.bus.state import ControllerState, error_classes, state_from_error_frame
from ecu_sim.errors import BusUnavailableError, ConfigError, errno_of, missing_interface_hint

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
    if "interface" not in ns:
        if _python_can_configured():
            _fill_from_python_can(ns)
        elif "channel" in ns:
            raise ConfigError(
                f"a channel ({ns.channel!r}) needs an interface: add -i/--interface (e.g. "
                f"`-i socketcan -c {ns.channel}`, or `--iface {ns.channel}` for SocketCAN), or drop "
                "-c for the default bus (udp_multicast)")
        else:
            ns.interface, ns.channel = DEFAULT_INTERFACE, DEFAULT_CHANNEL
    return ns


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
        bus = can.cli.create_bus_from_namespace(options)
    except argparse.ArgumentError as exc:
        raise _unavailable(options, exc.__cause__ or exc) from exc
    except Exception as exc:  # python-can backends raise many types; all mean "no bus"
        raise _unavailable(options, exc) from exc
    if getattr(options, "interface", None) == "socketcan" and not _link_is_up(str(options.channel)):
        # A raw socket binds to a down interface without complaint and fails only when sending.
        bus.shutdown()
        raise _unavailable(options, OSError(errno.ENETDOWN, "interface is down"))
    return bus


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


#: errno values of a send or receive that mean the interface went away (down, deleted, unplugged)
_LOST = frozenset({errno.ENETDOWN, errno.ENODEV, errno.ENXIO, errno.EBADF, errno.ENETUNREACH})
#: frames (echoes, error frames) one receive call skips at most before it returns
SKIP_LIMIT = 256
BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 5.0


@dataclass
class PortCounters:
    rx: int = 0
    tx: int = 0
    echo: int = 0
    tx_errors: int = 0
    #: frames a tick wanted to send while the bus was down (dropped, never sent late)
    tx_dropped: int = 0
    reconnects: int = 0
    error_frames: Counter[str] = field(default_factory=Counter)

    def text(self) -> str:
        """The problem counters that are not zero, e.g. ``echo 12 tx_dropped 3``."""
        return " ".join(f"{name} {value}" for name, value in (
            ("echo", self.echo), ("tx_errors", self.tx_errors), ("tx_dropped", self.tx_dropped),
            ("reconnects", self.reconnects)) if value)


class Port:
    """A node's view of the bus: own echoes dropped, failures counted rather than fatal.

    udp_multicast (and some adapters) hand a process its own frames back. A frame carrying an
    identifier this node transmits is either that echo or another node using our address; it is
    dropped either way and counted, never decoded as input.

    Given ``reopen``, a lost bus (interface down, deleted, adapter unplugged) does not end the
    run: the port closes it, retries with exponential backoff while the loop keeps ticking, and
    reports it. Frames due while the bus is down are dropped, so nothing stale is sent later.
    """

    def __init__(self, bus: can.BusABC, own_ids: Iterable[int],
                 reopen: Callable[[], can.BusABC] | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.bus: can.BusABC | None = bus
        self.own_ids = frozenset(own_ids)
        self.counters = PortCounters()
        #: the controller's state as last reported by an error frame (assumed error-active until then)
        self.controller_state = ControllerState.ERROR_ACTIVE
        #: listeners (e.g. a python-can Logger) shown every frame received and every frame sent
        self.taps: list[can.Listener] = []
        #: called with every echo of our own frames (the kernel-timed transmitter's phase lock)
        self.echo_listeners: list[Callable[[can.Message], None]] = []
        #: bumped on every reconnect, so transmitters know to set up again
        self.generation = 0
        self._reopen = reopen
        self._monotonic = monotonic
        self._backoff_s = BACKOFF_INITIAL_S
        self._retry_at = 0.0
        self._lost_at = 0.0

    @property
    def connected(self) -> bool:
        return self.bus is not None

    def state_text(self) -> str:
        """E.g. ``bus up``, ``bus up, error-passive | echo 40 tx_errors 2 | errors controller 1``.

        The controller state is shown unless error-active (the normal state); the counters only
        when not zero: echo (own frames heard back), tx_errors (failed sends, e.g. ENOBUFS),
        tx_dropped (frames due while the bus was down), reconnects, and error frames by class.
        """
        if self.bus is None:
            head = "bus down (reconnecting)"
        elif self.controller_state is ControllerState.ERROR_ACTIVE:
            head = "bus up"
        else:
            head = f"bus up, {self.controller_state.value}"
        parts = [head]
        counts = self.counters.text()
        if counts:
            parts.append(counts)
        errors = " ".join(f"{name} {count}" for name, count in sorted(self.counters.error_frames.items()))
        if errors:
            parts.append(f"errors {errors}")
        return " | ".join(parts)

    def recv(self, timeout_s: float) -> can.Message | None:
        """The next frame for the node, or None when none came within ``timeout_s``.

        Echoes and error frames are counted and skipped here, so None always means "nothing
        (more) queued". After a skipped frame the wait does not restart: what is already queued
        is looked at, and the caller's clock asks again for the rest of its wait. At most
        SKIP_LIMIT frames are skipped per call, so an error-frame storm cannot hold up a tick.
        """
        bus = self.bus
        if bus is None:
            self._wait_and_reconnect(timeout_s)
            return None
        counters, own_ids = self.counters, self.own_ids
        for _ in range(SKIP_LIMIT):
            try:
                msg = bus.recv(timeout_s)
            except (can.CanOperationError, OSError) as exc:
                self._lost(exc)
                return None
            if msg is None:
                return None
            for tap in self.taps:
                tap.on_message_received(msg)
            if msg.is_error_frame:
                self._count_error_frame(msg)
            elif msg.arbitration_id in own_ids:
                counters.echo += 1
                for listener in self.echo_listeners:
                    listener(msg)
            else:
                counters.rx += 1
                return msg
            timeout_s = 0.0
        return None

    def send(self, msg: can.Message) -> None:
        bus = self.bus
        if bus is None:
            self.counters.tx_dropped += 1
            return
        try:
            bus.send(msg)
        except (can.CanOperationError, OSError) as exc:
            self._send_failed(exc)
            return
        self.counters.tx += 1
        for tap in self.taps:
            tap.on_message_received(msg)

    def _send_failed(self, exc: Exception) -> None:
        """A full transmit queue (ENOBUFS) or a missing acknowledgement only costs this frame."""
        if errno_of(exc) in _LOST:
            self._lost(exc)
            return
        self.counters.tx_errors += 1
        log.debug("send failed: %s", exc)

    def _count_error_frame(self, msg: can.Message) -> None:
        classes = error_classes(msg)
        for name in classes:
            self.counters.error_frames[name] += 1
        state = state_from_error_frame(msg)
        if state is None or state is self.controller_state:
            return
        previous, self.controller_state = self.controller_state, state
        if state is ControllerState.BUS_OFF:
            log.warning("controller is bus-off; it recovers by its restart-ms setting "
                        "(e.g. `sudo ecu-sim link <iface> --restart-ms 100`)")
        elif "restarted" in classes:
            log.warning("controller restarted after bus-off")
        else:
            log.warning("controller %s (was %s)", state.value, previous.value)

    def _lost(self, exc: BaseException) -> None:
        if self._reopen is None:
            raise BusUnavailableError(f"the bus failed: {exc}") from exc
        log.warning("bus lost (%s); reconnecting with backoff", exc)
        self._close_quietly()
        self._lost_at = self._monotonic()
        self._backoff_s = BACKOFF_INITIAL_S
        self._retry_at = self._lost_at + self._backoff_s

    def _wait_and_reconnect(self, timeout_s: float) -> None:
        """Sleep at most ``timeout_s`` (the loop keeps its schedule), retrying when due."""
        now = self._monotonic()
        if now < self._retry_at:
            time.sleep(min(timeout_s, self._retry_at - now))
            return
        assert self._reopen is not None
        try:
            self.bus = self._reopen()
        except (BusUnavailableError, ConfigError) as exc:
            self._backoff_s = min(2 * self._backoff_s, BACKOFF_MAX_S)
            self._retry_at = self._monotonic() + self._backoff_s
            log.debug("reconnect failed (%s); next try in %.1f s", exc, self._backoff_s)
            return
        self.generation += 1
        self.counters.reconnects += 1
        self.controller_state = ControllerState.ERROR_ACTIVE
        log.warning("bus back after %.1f s", self._monotonic() - self._lost_at)

    def _close_quietly(self) -> None:
        bus, self.bus = self.bus, None
        if bus is not None:
            try:
                bus.shutdown()
            except Exception as exc:  # a bus that just failed may fail to close too
                log.debug("closing the lost bus: %s", exc)

    def close(self) -> None:
        if self.bus is not None:
            self.bus.shutdown()
            self.bus = None
