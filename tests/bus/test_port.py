"""The port: a node's view of the bus, its echoes, its failures, and the frames it shows its listeners."""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator

import can
import pytest

from ecu_sim.bus import port as bus
from ecu_sim.bus.listener import Direction
from ecu_sim.bus.own import EPISODE_QUIET_S, OwnFrames
from ecu_sim.bus.state import ControllerState
from ecu_sim.errors import BusUnavailableError


def test_port_keeps_frames_carrying_its_own_identifier_from_the_node() -> None:
    a = can.Bus(interface="virtual", channel="test-port-echo", receive_own_messages=False)
    b = can.Bus(interface="virtual", channel="test-port-echo", receive_own_messages=False)
    port = bus.Port(b, own_ids=[0x18FEF125])
    try:
        a.send(can.Message(arbitration_id=0x18FEF125, data=b"\xff" * 8))
        a.send(can.Message(arbitration_id=0x18F00326, data=b"\xff" * 8))
        received = port.recv(0.1)
        assert received is not None and received.arbitration_id == 0x18F00326
        assert port.counters.rx == 1
    finally:
        a.shutdown()
        b.shutdown()


@pytest.fixture
def looped() -> Iterator[tuple[can.BusABC, bus.Port]]:
    """A port on a bus that hands its frames back (as udp_multicast does), and another node's bus."""
    other = can.Bus(interface="virtual", channel="test-port-own", receive_own_messages=False)
    port = bus.Port(can.Bus(interface="virtual", channel="test-port-own", receive_own_messages=True),
                    own_ids=[0x18FEF125], monotonic=FakeTime())
    with port:
        yield other, port
    other.shutdown()


def own_frame(data: bytes) -> can.Message:
    return can.Message(arbitration_id=0x18FEF125, data=data)


def test_our_frame_heard_back_is_counted_as_an_echo(looped: tuple[can.BusABC, bus.Port]) -> None:
    _, port = looped
    port.send(own_frame(b"\x01\x02"))
    assert port.recv(0.1) is None
    assert (port.counters.echo, port.counters.foreign) == (1, 0)


def test_another_sender_of_our_identifier_is_counted_as_foreign(looped: tuple[can.BusABC, bus.Port]) -> None:
    other, port = looped
    port.send(own_frame(b"\x01\x02"))
    other.send(own_frame(b"\x07\x07"))
    assert port.recv(0.1) is None
    assert (port.counters.echo, port.counters.foreign) == (1, 1)


def test_an_old_payload_of_ours_after_a_newer_echo_is_foreign(looped: tuple[can.BusABC, bus.Port]) -> None:
    other, port = looped
    port.send(own_frame(b"\x01"))
    port.send(own_frame(b"\x02"))
    port.recv(0.1)
    other.send(own_frame(b"\x01"))
    port.recv(0.1)
    assert (port.counters.echo, port.counters.foreign) == (2, 1)


CLAIM_FROM_21 = 0x18EEFF21  # an identifier the node sends now and then, not one it was built with


def claim(data: bytes) -> can.Message:
    return can.Message(arbitration_id=CLAIM_FROM_21, data=data)


def test_our_frame_of_another_identifier_heard_back_is_an_echo(looped: tuple[can.BusABC, bus.Port]) -> None:
    _, port = looped
    port.send(claim(b"\x21" * 8))
    assert port.recv(0.1) is None
    assert (port.counters.echo, port.counters.rx, port.counters.foreign) == (1, 0, 0)


def test_another_nodes_frame_of_an_identifier_we_sent_goes_to_the_node(
        looped: tuple[can.BusABC, bus.Port]) -> None:
    """A J1939 layer must hear a rival's claim from our address to contend for it."""
    other, port = looped
    port.send(claim(b"\x21" * 8))
    other.send(claim(b"\x05" * 8))
    received = port.recv(0.1)
    assert received is not None and bytes(received.data) == b"\x05" * 8
    assert (port.counters.echo, port.counters.rx, port.counters.foreign) == (1, 1, 0)


def test_a_bus_that_keeps_our_frames_from_us_leaves_every_other_identifier_to_the_node() -> None:
    """On such a bus nothing comes back, so even our exact payload from another sender is input."""
    a = can.Bus(interface="virtual", channel="test-port-unlooped", receive_own_messages=False)
    with bus.Port(can.Bus(interface="virtual", channel="test-port-unlooped", receive_own_messages=False),
                  own_ids=[]) as port:
        port.send(claim(b"\x21" * 8))
        a.recv(0.1)
        a.send(claim(b"\x21" * 8))
        assert port.recv(0.1) is not None
    a.shutdown()


def test_the_kernel_repeating_our_newest_payload_is_still_our_echo() -> None:
    own = OwnFrames([0x18FEF125])
    own.sent(own_frame(b"\x05"))
    assert [own.is_echo(own_frame(b"\x05")) for _ in range(3)] == [True, True, True]


def test_foreign_frames_are_warned_about_once_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeTime()
    own = OwnFrames([0x18FEF125], monotonic=clock)
    for step in (0.0, 1.0, 1.0, EPISODE_QUIET_S, 1.0):
        clock.now += step
        own.is_echo(own_frame(b"\xab\xcd"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (own.foreign, own.episodes, len(warnings)) == (5, 2, 2)
    assert "18FEF125" in warnings[0] and "AB CD" in warnings[0]


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


def test_a_frame_after_a_storm_of_skipped_frames_stays_queued_for_the_next_receive() -> None:
    a = can.Bus(interface="virtual", channel="test-skip-limit")
    b = can.Bus(interface="virtual", channel="test-skip-limit")
    port = bus.Port(b, own_ids=[])
    try:
        for _ in range(bus.SKIP_LIMIT):
            a.send(can.Message(arbitration_id=0x0A0, is_error_frame=True, is_extended_id=False, data=b""))
        a.send(can.Message(arbitration_id=0x200, data=b"\x01"))
        assert port.recv(0.1) is None  # SKIP_LIMIT frames skipped: the call ends there
        received = port.recv(0.1)
        assert received is not None and received.arbitration_id == 0x200
        assert port.counters.rx == 1
    finally:
        a.shutdown()
        b.shutdown()


def test_another_sender_of_our_identifier_raises_an_alert_our_echo_does_not(
        looped: tuple[can.BusABC, bus.Port]) -> None:
    other, port = looped
    port.send(own_frame(b"\x01\x02"))
    port.recv(0.1)
    assert port.alerts == 0
    other.send(own_frame(b"\x07\x07"))
    port.recv(0.1)
    assert port.alerts == 1


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


def test_a_change_of_the_controller_state_raises_an_alert_a_repeat_does_not(
        error_bus: tuple[can.BusABC, bus.Port]) -> None:
    sender, port = error_bus
    sender.send(error_frame(0x040))  # bus-off
    sender.send(error_frame(0x040))
    port.recv(0.1)
    assert port.alerts == 1


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
    assert port.state_text() == "bus up | foreign 1"
    counters = port.counters
    counters.echo, counters.tx_errors, counters.tx_dropped, counters.reconnects = 4, 2, 3, 1
    assert port.state_text() == "bus up | echo 4 foreign 1 tx_errors 2 tx_dropped 3 reconnects 1"


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



class Heard:
    """A port listener that keeps every frame with its direction."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, Direction]] = []

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        self.frames.append((msg.arbitration_id, direction))


@pytest.fixture
def pair() -> Iterator[tuple[can.BusABC, bus.Port, Heard]]:
    """Another node's bus, and a port on the same virtual channel with a listener attached."""
    other = can.Bus(interface="virtual", channel="test-port-listener", receive_own_messages=False)
    port = bus.Port(can.Bus(interface="virtual", channel="test-port-listener", receive_own_messages=False),
                    own_ids=[0x18FEF125])
    heard = Heard()
    port.add_listener(heard)
    with port:
        yield other, port, heard
    other.shutdown()


def test_a_listener_hears_received_frames_as_received(pair: tuple[can.BusABC, bus.Port, Heard]) -> None:
    other, port, heard = pair
    other.send(can.Message(arbitration_id=0x18F00326, data=b"\x01"))
    port.recv(0.1)
    assert heard.frames == [(0x18F00326, Direction.RECEIVED)]


def test_a_listener_hears_another_sender_of_our_identifier_as_foreign(
        pair: tuple[can.BusABC, bus.Port, Heard]) -> None:
    other, port, heard = pair
    other.send(can.Message(arbitration_id=0x18FEF125, data=b"\x01"))
    assert port.recv(0.1) is None
    assert heard.frames == [(0x18FEF125, Direction.FOREIGN)]


def test_a_listener_hears_what_the_port_sent_as_sent(pair: tuple[can.BusABC, bus.Port, Heard]) -> None:
    _, port, heard = pair
    port.send(can.Message(arbitration_id=0x18FEF125, data=b"\x01"))
    assert heard.frames == [(0x18FEF125, Direction.SENT)]


def test_a_listener_hears_a_frame_the_bus_did_not_take_as_not_sent() -> None:
    port = bus.Port(FailingBus(errno.ENOBUFS), own_ids=[])
    heard = Heard()
    port.add_listener(heard)
    port.send(can.Message(arbitration_id=0x123, is_extended_id=False))
    assert heard.frames == [(0x123, Direction.NOT_SENT)]


def test_leaving_the_port_as_a_context_closes_its_bus() -> None:
    with bus.Port(can.Bus(interface="virtual", channel="test-port-close"), own_ids=[]) as port:
        pass
    assert not port.connected
