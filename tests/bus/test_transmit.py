"""Sending once a tick: the choice of transmitter, and what the kernel-timed one tells the kernel.

The broadcast manager itself runs only under a real kernel (tests/socketcan); here the BCM socket
is a recorder, and every TX_SETUP it receives is decoded with python-can's own header layout.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from dataclasses import dataclass, field

import can
import pytest
from can.interfaces.socketcan import constants
from can.interfaces.socketcan.socketcan import BcmMsgHead

from ecu_sim.bus import kernel as transmit
from ecu_sim.bus.kernel import KernelTransmitter, PhaseLock
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Transmitter, uses_kernel_timer
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import FaultSchedule, parse_fault
from ecu_sim.nodes.factory import Built, NodeKind, build_node
from ecu_sim.runs.prepare import load_route, prepare
from ecu_sim.settings.model import Settings

PERIOD = 0.1
PHASE = 0.025
FRAME_ID = 0x18FEF125
WALL_OFFSET = 1.8e9


# -- the phase lock ----------------------------------------------------------------------------


def test_a_send_on_the_phase_point_leaves_the_interval_at_one_period() -> None:
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=10.025, deadline=10.0)
    assert lock.error_s == pytest.approx(0.0, abs=1e-12)
    assert lock.interval_s() == pytest.approx(PERIOD)


def test_a_late_kernel_gets_a_shorter_next_interval() -> None:
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=10.027, deadline=10.0)
    assert lock.interval_s() == pytest.approx(PERIOD - transmit.LOCK_GAIN * 0.002)


def test_no_interval_moves_by_more_than_the_step_limit() -> None:
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=10.034, deadline=10.0)
    assert lock.interval_s() == pytest.approx(PERIOD - transmit.LOCK_MAX_STEP * PERIOD)


def test_the_phase_is_measured_against_any_deadline_of_the_grid() -> None:
    """An echo is handled a tick after it was sent: the previous period's send is on phase too."""
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=9.9255, deadline=10.0)
    assert lock.error_s == pytest.approx(0.0005)


def test_an_early_send_wraps_to_a_negative_error_not_a_late_one() -> None:
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=10.005, deadline=10.0)
    assert lock.error_s == pytest.approx(-0.020)


def test_the_lock_is_lost_beyond_a_tenth_of_a_period() -> None:
    lock = PhaseLock(PERIOD, PHASE)
    lock.observe(sent_at=10.040, deadline=10.0)
    assert lock.lost
    lock.restarted()
    assert not lock.lost and lock.interval_s() == PERIOD


# -- choosing a transmitter --------------------------------------------------------------------


@pytest.fixture
def virtual_port() -> Iterator[Port]:
    bus = can.Bus(interface="virtual", channel="test-transmit", receive_own_messages=False)
    port = Port(bus, own_ids=[FRAME_ID])
    yield port
    port.close()


def test_auto_sends_from_user_space_on_a_bus_other_than_socketcan(virtual_port: Port) -> None:
    assert not uses_kernel_timer(virtual_port, "auto")


def test_kernel_mode_on_a_bus_other_than_socketcan_is_a_configuration_error(virtual_port: Port) -> None:
    with pytest.raises(ConfigError, match="--tx-mode kernel needs a SocketCAN interface"):
        uses_kernel_timer(virtual_port, "kernel")


def test_auto_uses_the_kernel_on_socketcan() -> None:
    port = Port(FakeSocketcanBus(), own_ids=[FRAME_ID])
    assert uses_kernel_timer(port, "auto")


def test_user_mode_on_socketcan_sends_from_user_space() -> None:
    port = Port(FakeSocketcanBus(), own_ids=[FRAME_ID])
    assert not uses_kernel_timer(port, "user")


# -- what the kernel is told -------------------------------------------------------------------


@dataclass
class Setup:
    """One decoded BCM TX_SETUP."""

    flags: int
    count: int
    interval_s: float
    task_id: int
    data: bytes

    @property
    def starts_timer(self) -> bool:
        return bool(self.flags & constants.STARTTIMER)


@dataclass
class RecordingBcmSocket:
    sent: list[bytes] = field(default_factory=list)

    def send(self, data: bytes) -> int:
        self.sent.append(bytes(data))
        return len(data)

    def setups(self) -> list[Setup]:
        found = []
        size = ctypes.sizeof(BcmMsgHead)
        for raw in self.sent:
            head = BcmMsgHead.from_buffer_copy(raw[:size])
            assert head.opcode == constants.CAN_BCM_TX_SETUP and head.nframes == 1
            frame = raw[size:]
            found.append(Setup(head.flags, head.count, head.ival1_tv_sec + head.ival1_tv_usec / 1e6,
                               head.can_id, frame[8:8 + frame[4]]))
        return found


@dataclass
class FakeTask:
    bcm_socket: RecordingBcmSocket
    task_id: int = 7


_fake_buses: list[can.BusABC] = []


@pytest.fixture(autouse=True)
def _shut_fake_buses_down() -> Iterator[None]:
    yield
    while _fake_buses:
        _fake_buses.pop().shutdown()


class FakeSocketcanBus(can.BusABC):
    """Only what the kernel transmitter uses of a socketcan bus: its BCM socket, via send_periodic."""

    def __init__(self) -> None:
        self.channel_info = "socketcan channel 'vcan0'"
        self.bcm = RecordingBcmSocket()
        self.periodic_calls: list[dict[str, object]] = []
        self.incoming: list[can.Message] = []
        super().__init__(channel="vcan0")
        _fake_buses.append(self)

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        raise AssertionError("the kernel transmitter must not send from user space")

    def _recv_internal(self, timeout: float | None) -> tuple[can.Message | None, bool]:
        return (self.incoming.pop(0) if self.incoming else None), False

    def send_periodic(self, msgs: can.Message, period: float, duration: float | None = None,  # type: ignore[override]
                      store_task: bool = True, autostart: bool = True, **_: object) -> FakeTask:
        self.periodic_calls.append({"period": period, "store_task": store_task, "autostart": autostart})
        return FakeTask(self.bcm)


class FakeTime:
    """A monotonic clock that only moves when the test (or a sleep) moves it."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        """CLOCK_REALTIME, a fixed distance from the monotonic clock as on a real machine."""
        return self.now + WALL_OFFSET

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime(100.002)


@pytest.fixture
def kernel(fake_time: FakeTime) -> tuple[KernelTransmitter, FakeSocketcanBus, list[float]]:
    bus = FakeSocketcanBus()
    port = Port(bus, own_ids=[FRAME_ID])
    sender = KernelTransmitter(port, FRAME_ID, True, PERIOD, PHASE, monotonic=fake_time.monotonic,
                               sleep=fake_time.sleep, wall=fake_time.wall)
    return sender, bus, [100.0]


def test_the_timer_starts_a_quarter_period_after_the_tick_deadline(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    assert fake_time.slept == [pytest.approx(0.023)], "from 2 ms after the deadline to 25 ms after it"
    (setup,) = bus.bcm.setups()
    assert setup.starts_timer and setup.flags & constants.SETTIMER
    assert setup.interval_s == pytest.approx(PERIOD) and setup.data == b"\x01" * 8


def test_the_task_is_not_left_to_python_can_so_closing_the_bus_removes_it(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]]) -> None:
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    assert bus.periodic_calls == [{"period": PERIOD, "store_task": False, "autostart": False}]


def two_ticks(kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]],
              fake_time: FakeTime) -> list[Setup]:
    """The first tick starts the timer; the next one, a period later and on time, updates it."""
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    deadline[0], fake_time.now = 100.1, 100.101
    sender.send(0, deadline[0], b"\x02" * 8)
    return bus.bcm.setups()


def test_each_tick_replaces_the_payload_without_moving_the_timer(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    update = two_ticks(kernel, fake_time)[-1]
    assert not update.starts_timer
    assert update.data == b"\x02" * 8


def test_each_tick_renews_the_budget_of_frames_the_kernel_may_send_without_us(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    setups = two_ticks(kernel, fake_time)
    assert [s.count for s in setups] == [transmit.STALL_FRAMES] * 2
    assert all(s.flags & constants.SETTIMER for s in setups)


def test_after_a_stall_the_timer_is_started_again_on_the_phase_point(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    deadline[0], fake_time.now = 100.5, 100.503
    sender.send(0, deadline[0], b"\x02" * 8)
    assert bus.bcm.setups()[-1].starts_timer
    assert fake_time.now == pytest.approx(100.525)


def test_an_echo_sent_late_shortens_the_next_interval(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    deadline[0], fake_time.now = 100.1, 100.101
    hear(bus, sender, FRAME_ID, sent_at=100.027, fake_time=fake_time)
    sender.send(0, deadline[0], b"\x02" * 8)
    assert bus.bcm.setups()[-1].interval_s == pytest.approx(PERIOD - transmit.LOCK_GAIN * 0.002, abs=1e-6)


def test_echoes_of_other_identifiers_do_not_move_the_phase(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    sender, bus, _ = kernel
    sender._port.own_ids = frozenset({FRAME_ID, 0x123})
    hear(bus, sender, 0x123, sent_at=100.05, fake_time=fake_time)
    assert sender.lock.error_s is None


def test_another_node_sending_our_identifier_does_not_move_the_phase(
        kernel: tuple[KernelTransmitter, FakeSocketcanBus, list[float]], fake_time: FakeTime) -> None:
    sender, bus, deadline = kernel
    sender.send(0, deadline[0], b"\x01" * 8)
    hear(bus, sender, FRAME_ID, sent_at=100.06, fake_time=fake_time, data=b"\x55" * 8)
    assert sender.lock.error_s is None
    assert sender._port.counters.foreign == 1


def hear(bus: FakeSocketcanBus, sender: KernelTransmitter, frame_id: int, sent_at: float,
         fake_time: FakeTime, data: bytes = b"\x01" * 8) -> None:
    """The kernel loops a frame sent at monotonic ``sent_at`` back to the port, stamped in wall time."""
    bus.incoming.append(can.Message(arbitration_id=frame_id, data=data,
                                    timestamp=sent_at + WALL_OFFSET))
    assert sender._port.recv(0.0) is None, "an echo is never handed to the node"


# -- faults that withhold frames ---------------------------------------------------------------


def socketcan_ecu_with_faults(*specs: str) -> Built:
    """An ECU wired as on SocketCAN (kernel-timed where it can be), with the faults ``specs``."""
    settings, profile = prepare(Settings())
    port = Port(FakeSocketcanBus(), own_ids=[profile.speed.frame_id])
    schedule = FaultSchedule(tuple(parse_fault(spec) for spec in specs), seed=0)
    return build_node(NodeKind.ECU, port, profile, settings, route=load_route(settings), schedule=schedule,
                      tx_mode="auto")


def test_a_socketcan_node_is_timed_by_the_kernel() -> None:
    assert isinstance(socketcan_ecu_with_faults().transmitter, KernelTransmitter)


@pytest.mark.parametrize("fault", ["drop=0.5", "silent@1+2", "delay=0.3"])
def test_a_fault_that_withholds_frames_makes_a_socketcan_node_send_from_user_space(fault: str) -> None:
    """The kernel repeats the last payload when a tick sends nothing, so it cannot drop a frame."""
    assert type(socketcan_ecu_with_faults(fault).transmitter) is Transmitter


def test_a_fault_that_only_changes_values_keeps_the_kernel_timer() -> None:
    assert isinstance(socketcan_ecu_with_faults("offset=3", "freeze@2+1").transmitter, KernelTransmitter)
