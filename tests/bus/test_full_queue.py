"""A transmit queue that is full for a while: frames refused, counted, reported once, then sent again.

The bus is python-can's virtual bus behind a queue that refuses sends with ENOBUFS while it is
full, as python-can's socketcan bus does when the kernel's queue is; a second virtual bus hears
what really went out.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator

import can
import pytest

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Transmitter

CHANNEL = "test-full-queue"
SPEED_ID = 0x18FEF125


class QueueBus(can.BusABC):
    """A virtual bus whose transmit queue can be made full: sends then fail as SocketCAN's do."""

    def __init__(self) -> None:
        super().__init__(channel=CHANNEL)
        self.inner = can.Bus(interface="virtual", channel=CHANNEL, receive_own_messages=False)
        self.full = False

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return self.inner.recv(timeout), False

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        if self.full:
            raise can.CanOperationError("Failed to transmit: No buffer space available",
                                        error_code=errno.ENOBUFS)
        self.inner.send(msg, timeout)

    def shutdown(self) -> None:
        self.inner.shutdown()
        super().shutdown()


@pytest.fixture
def queue() -> Iterator[tuple[QueueBus, Transmitter, can.BusABC]]:
    """The node's bus, its speed frame's transmitter through the real port, and a listener's bus."""
    listener = can.Bus(interface="virtual", channel=CHANNEL)
    node_bus = QueueBus()
    with Port(node_bus, own_ids=[SPEED_ID]) as port:
        yield node_bus, Transmitter(port, SPEED_ID, True), listener
    listener.shutdown()


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def send_ticks(transmitter: Transmitter, first: int, count: int) -> None:
    for tick in range(first, first + count):
        transmitter.send(tick, tick * 0.1, bytes([tick]) * 8)


def full_then_drained(node_bus: QueueBus, transmitter: Transmitter, first: int, refused: int,
                      sent: int) -> None:
    """``refused`` ticks while the queue is full, then ``sent`` ticks after it drained."""
    node_bus.full = True
    send_ticks(transmitter, first, refused)
    node_bus.full = False
    send_ticks(transmitter, first + refused, sent)


def test_every_frame_refused_by_a_full_queue_is_counted_and_the_next_tick_sends_again(
        queue: tuple[QueueBus, Transmitter, can.BusABC]) -> None:
    node_bus, transmitter, listener = queue
    full_then_drained(node_bus, transmitter, 0, refused=5, sent=1)
    counters = transmitter._port.counters
    assert (counters.tx, counters.tx_errors, counters.tx_dropped) == (1, 5, 0)
    heard = listener.recv(1.0)
    assert heard is not None and heard.data == bytes([5]) * 8, "the tick after the queue drained"
    assert listener.recv(0.0) is None, "nothing refused is sent later"


def test_a_full_queue_is_reported_once_however_many_frames_it_refuses(
        queue: tuple[QueueBus, Transmitter, can.BusABC], caplog: pytest.LogCaptureFixture) -> None:
    node_bus, transmitter, _ = queue
    node_bus.full = True
    with caplog.at_level(logging.WARNING):
        send_ticks(transmitter, 0, 50)
    (report,) = warnings(caplog)
    assert "sends fail" in report and "No buffer space available" in report and "tx_errors" in report


def test_sending_again_is_reported_once_with_the_frames_the_full_queue_cost(
        queue: tuple[QueueBus, Transmitter, can.BusABC], caplog: pytest.LogCaptureFixture) -> None:
    node_bus, transmitter, _ = queue
    node_bus.full = True
    send_ticks(transmitter, 0, 7)
    node_bus.full = False
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        send_ticks(transmitter, 7, 10)
    assert warnings(caplog) == ["sending again after 7 refused frames"]


def test_a_queue_that_fills_again_is_reported_again(
        queue: tuple[QueueBus, Transmitter, can.BusABC], caplog: pytest.LogCaptureFixture) -> None:
    node_bus, transmitter, _ = queue
    with caplog.at_level(logging.WARNING):
        for first in (0, 10):
            full_then_drained(node_bus, transmitter, first, refused=3, sent=2)
    reports = warnings(caplog)
    assert [r.split(" (")[0] for r in reports] == ["sends fail", "sending again after 3 refused frames"] * 2
    assert transmitter._port.counters.tx_errors == 6


def test_the_status_line_shows_the_refused_frames_after_the_queue_drained(
        queue: tuple[QueueBus, Transmitter, can.BusABC]) -> None:
    node_bus, transmitter, _ = queue
    full_then_drained(node_bus, transmitter, 0, refused=4, sent=3)
    assert transmitter._port.state_text() == "bus up | tx_errors 4"
