"""Opening the bus the python-can way, with the --iface shorthand and a default that works anywhere."""

from __future__ import annotations

import argparse
import errno
from collections.abc import Iterator

import can
import pytest

from ecu_sim.bus import port as bus
from ecu_sim.bus.state import ControllerState
from ecu_sim.errors import BusUnavailableError, ConfigError


@pytest.fixture(autouse=True)
def no_python_can_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CAN_INTERFACE", "CAN_CHANNEL", "CAN_BITRATE", "CAN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(can.util, "load_file_config", lambda *a, **k: {})


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bus.add_arguments(parser)
    return parser.parse_args(argv)


def test_without_any_bus_option_the_default_is_udp_multicast_ipv4() -> None:
    options = bus.resolve_bus_options(parse(), {})
    assert (options.interface, options.channel) == ("udp_multicast", "239.74.163.2")


def test_iface_is_shorthand_for_socketcan() -> None:
    options = bus.resolve_bus_options(parse("--iface", "vcan0"), {})
    assert (options.interface, options.channel) == ("socketcan", "vcan0")


def test_iface_together_with_interface_is_refused() -> None:
    with pytest.raises(ConfigError, match="--iface"):
        bus.resolve_bus_options(parse("--iface", "vcan0", "-i", "pcan"), {})


def test_standard_python_can_options_pass_through() -> None:
    options = bus.resolve_bus_options(parse("-i", "pcan", "-c", "PCAN_USBBUS1", "-b", "250000"), {})
    assert (options.interface, options.channel, options.bitrate) == ("pcan", "PCAN_USBBUS1", 250000)


def test_python_can_environment_configuration_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAN_INTERFACE", "virtual")
    monkeypatch.setenv("CAN_CHANNEL", "foo")
    options = bus.resolve_bus_options(parse(), {})
    assert (options.interface, options.channel) == ("virtual", "foo")


def test_a_python_can_config_file_names_the_interface_the_command_line_the_channel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(can.util, "load_file_config",
                        lambda *a, **k: {"interface": "virtual", "channel": "from-file"})
    options = bus.resolve_bus_options(parse("-c", "mine"), {})
    assert (options.interface, options.channel) == ("virtual", "mine")


def test_an_unknown_interface_in_python_can_config_is_a_configuration_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAN_INTERFACE", "nosuchbus")
    with pytest.raises(ConfigError, match=r"CAN_.*nosuchbus"):
        bus.resolve_bus_options(parse(), {})


def test_a_channel_without_an_interface_is_refused_with_the_socketcan_hint() -> None:
    with pytest.raises(ConfigError, match=r"needs an interface.*--iface vcan0"):
        bus.resolve_bus_options(parse("-c", "vcan0"), {})


def test_a_missing_driver_library_is_a_configuration_error_without_a_doubled_full_stop() -> None:
    err = bus._unavailable(argparse.Namespace(interface="pcan", channel="PCAN_USBBUS1"),
                           OSError("pcanbasic library not found."))
    assert isinstance(err, ConfigError)
    assert "pcan" in str(err) and "Install the driver" in str(err) and ".." not in str(err)


def test_missing_constructor_arguments_are_a_configuration_error() -> None:
    err = bus._unavailable(argparse.Namespace(interface="socketcand", channel="x"),
                           TypeError("__init__() missing 2 required positional arguments: 'host' and 'port'"))
    assert isinstance(err, ConfigError) and "socketcand" in str(err)


def test_config_file_bus_section_fills_what_the_command_line_leaves_open() -> None:
    options = bus.resolve_bus_options(parse("-c", "can0"), {"interface": "socketcan", "channel": "can9",
                                                            "receive_own_messages": "False"})
    assert (options.interface, options.channel, options.bus_kwargs) == (
        "socketcan", "can0", {"receive_own_messages": False})


def test_a_missing_socketcan_interface_says_how_to_create_it() -> None:
    options = argparse.Namespace(interface="socketcan", channel="vcan0")
    err = bus._unavailable(options, OSError(errno.ENODEV, "No such device"))
    assert isinstance(err, BusUnavailableError)
    assert "vcan0 does not exist; create it with `sudo ecu-sim link vcan0 --create`" in str(err)


def test_a_kernel_without_socketcan_is_explained() -> None:
    options = argparse.Namespace(interface="socketcan", channel="vcan0")
    err = bus._unavailable(options, can.CanOperationError("x", error_code=errno.EAFNOSUPPORT))
    assert "no SocketCAN support" in str(err)


def test_an_unknown_interface_name_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="'nosuchbus'"):
        bus.open_bus(argparse.Namespace(interface="nosuchbus", channel="x"))


def test_port_drops_frames_carrying_its_own_identifier() -> None:
    a = can.Bus(interface="virtual", channel="test-port-echo", receive_own_messages=False)
    b = can.Bus(interface="virtual", channel="test-port-echo", receive_own_messages=False)
    port = bus.Port(b, own_ids=[0x18FEF125])
    try:
        a.send(can.Message(arbitration_id=0x18FEF125, data=b"\xff" * 8))
        a.send(can.Message(arbitration_id=0x18F00326, data=b"\xff" * 8))
        received = port.recv(0.1)
        assert received is not None and received.arbitration_id == 0x18F00326
        assert (port.counters.echo, port.counters.rx) == (1, 1)
    finally:
        a.shutdown()
        b.shutdown()


class FailingBus(can.BusABC):
    """A bus whose interface has gone away: every receive and send fails like a downed SocketCAN."""

    def __init__(self, code: int = errno.ENETDOWN) -> None:
        super().__init__(channel="failing")
        self.code = code

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        raise can.CanOperationError("Network is down", error_code=self.code)

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        raise can.CanOperationError("Network is down", error_code=self.code)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_lost_bus_without_reopen_is_fatal() -> None:
    port = bus.Port(FailingBus(), own_ids=[])
    with pytest.raises(BusUnavailableError):
        port.recv(0.0)


def test_a_lost_bus_is_reopened_after_a_backoff() -> None:
    clock = FakeTime()
    replacement = can.Bus(interface="virtual", channel="test-reopen")
    port = bus.Port(FailingBus(), own_ids=[], reopen=lambda: replacement, monotonic=clock)
    try:
        port.recv(0.0)
        assert not port.connected
        clock.now = bus.BACKOFF_INITIAL_S
        port.recv(0.0)
        assert port.connected and port.counters.reconnects == 1 and port.generation == 1
    finally:
        replacement.shutdown()


def test_frames_due_while_the_bus_is_down_are_dropped_not_queued() -> None:
    port = bus.Port(FailingBus(), own_ids=[], reopen=FailingBus, monotonic=FakeTime())
    port.recv(0.0)
    port.send(can.Message(arbitration_id=1, data=b""))
    assert (port.counters.tx, port.counters.tx_dropped) == (0, 1)


def test_failed_reconnects_back_off_exponentially() -> None:
    clock = FakeTime()

    def reopen() -> can.BusABC:
        raise BusUnavailableError("still gone")

    port = bus.Port(FailingBus(), own_ids=[], reopen=reopen, monotonic=clock)
    port.recv(0.0)
    retries = []
    for _ in range(8):
        clock.now = port._retry_at
        port.recv(0.0)
        retries.append(round(port._retry_at - clock.now, 3))
    assert retries == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]


def test_a_full_transmit_queue_is_counted_not_fatal() -> None:
    port = bus.Port(FailingBus(errno.ENOBUFS), own_ids=[])
    port.send(can.Message(arbitration_id=1, data=b""))
    assert (port.counters.tx_errors, port.connected) == (1, True)


def test_error_frames_are_counted_by_class_and_not_passed_on() -> None:
    a = can.Bus(interface="virtual", channel="test-error-frames")
    b = can.Bus(interface="virtual", channel="test-error-frames")
    port = bus.Port(b, own_ids=[])
    try:
        a.send(can.Message(arbitration_id=0x040, is_error_frame=True, is_extended_id=False, data=b""))
        a.send(can.Message(arbitration_id=0x0A0, is_error_frame=True, is_extended_id=False, data=b""))
        assert port.recv(0.1) is None
        assert dict(port.counters.error_frames) == {"bus_off": 1, "no_ack": 1, "bus_error": 1}
        assert "errors bus_error 1 bus_off 1 no_ack 1" in port.state_text()
    finally:
        a.shutdown()
        b.shutdown()


@pytest.fixture
def error_bus() -> Iterator[tuple[can.BusABC, bus.Port]]:
    """A virtual bus to send error frames on, and a port listening on it."""
    sender = can.Bus(interface="virtual", channel="test-controller-state")
    listener = can.Bus(interface="virtual", channel="test-controller-state")
    try:
        yield sender, bus.Port(listener, own_ids=[])
    finally:
        sender.shutdown()
        listener.shutdown()


def error_frame(can_id: int, data1: int = 0) -> can.Message:
    return can.Message(arbitration_id=can_id, is_error_frame=True, is_extended_id=False,
                       data=bytes([0, data1, 0, 0, 0, 0, 0, 0]))


@pytest.mark.parametrize(("can_id", "data1", "state", "text"), [
    (0x004, 0x04, ControllerState.ERROR_WARNING, "bus up, error-warning"),  # RX_WARNING
    (0x004, 0x08, ControllerState.ERROR_WARNING, "bus up, error-warning"),  # TX_WARNING
    (0x004, 0x10, ControllerState.ERROR_PASSIVE, "bus up, error-passive"),  # RX_PASSIVE
    (0x004, 0x20, ControllerState.ERROR_PASSIVE, "bus up, error-passive"),  # TX_PASSIVE
    (0x040, 0x00, ControllerState.BUS_OFF, "bus up, bus-off"),              # CAN_ERR_BUSOFF
])
def test_error_frames_set_the_controller_state(error_bus: tuple[can.BusABC, bus.Port], can_id: int,
                                               data1: int, state: ControllerState, text: str) -> None:
    sender, port = error_bus
    sender.send(error_frame(can_id, data1))
    assert port.recv(0.1) is None
    assert port.controller_state is state
    assert port.state_text().startswith(f"{text} | errors ")


@pytest.mark.parametrize(("can_id", "data1"), [(0x004, 0x40), (0x100, 0x00)])  # CRTL_ACTIVE, RESTARTED
def test_back_to_error_active_by_a_controller_frame_or_a_restart(
        error_bus: tuple[can.BusABC, bus.Port], can_id: int, data1: int) -> None:
    sender, port = error_bus
    sender.send(error_frame(0x040))
    sender.send(error_frame(can_id, data1))
    assert port.recv(0.1) is None
    assert port.controller_state is ControllerState.ERROR_ACTIVE
    assert port.state_text().startswith("bus up | errors ")


def test_an_error_frame_reporting_no_state_leaves_it(error_bus: tuple[can.BusABC, bus.Port]) -> None:
    sender, port = error_bus
    sender.send(error_frame(0x004, 0x10))
    sender.send(error_frame(0x004, 0x01))  # CAN_ERR_CRTL_RX_OVERFLOW: no state change
    sender.send(error_frame(0x080))        # a bus error
    assert port.recv(0.1) is None
    assert port.state_text() == "bus up, error-passive | errors bus_error 1 controller 2"


def test_state_text_shows_the_counters_that_are_not_zero(error_bus: tuple[can.BusABC, bus.Port]) -> None:
    sender, port = error_bus
    port.own_ids = frozenset({0x18FEF125})
    assert port.state_text() == "bus up"
    sender.send(can.Message(arbitration_id=0x18FEF125, data=b"\xff" * 8))
    assert port.recv(0.1) is None
    assert port.state_text() == "bus up | echo 1"
    port.counters.tx_errors, port.counters.tx_dropped, port.counters.reconnects = 2, 3, 1
    assert port.state_text() == "bus up | echo 1 tx_errors 2 tx_dropped 3 reconnects 1"


def test_a_full_transmit_queue_shows_as_tx_errors() -> None:
    port = bus.Port(FailingBus(errno.ENOBUFS), own_ids=[])
    port.send(can.Message(arbitration_id=1, data=b""))
    assert port.state_text() == "bus up | tx_errors 1"


def test_a_lost_bus_shows_dropped_frames_then_the_reconnect() -> None:
    clock = FakeTime()
    replacement = can.Bus(interface="virtual", channel="test-reconnect-text")
    port = bus.Port(FailingBus(), own_ids=[], reopen=lambda: replacement, monotonic=clock)
    try:
        port.recv(0.0)
        port.send(can.Message(arbitration_id=1, data=b""))
        assert port.state_text() == "bus down (reconnecting) | tx_dropped 1"
        clock.now = bus.BACKOFF_INITIAL_S
        port.recv(0.0)
        assert port.state_text() == "bus up | tx_dropped 1 reconnects 1"
    finally:
        replacement.shutdown()

