"""The ECU and the CCM on two emulated SJA1000 controllers: the loop across a real controller driver.

scripts/vm-test attaches two qemu ``kvaser_pci`` cards on one emulated CAN bus; the guest's
``kvaser_pci``/``sja1000`` drivers make them can0 and can1, which acknowledge each other's frames.
Each node runs on its own controller, brought up by ``ecu-sim link --bitrate 250000``, so every
frame of the loop crosses the drivers and the emulated bus. The bus is watched through a raw
socket and a kernel CAN_J1939 socket on can1, never through ecu_sim.

A full transmit queue is made with the kernel's ``plug`` qdisc on can0: it holds what is queued
(here one frame, by its byte limit) and refuses the rest with ENOBUFS, as a real adapter's queue
does when no other node acknowledges, until it is released. Sorted after test_link_vm.py on
purpose: those tests must see a controller that has no bit rate yet.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest

from ecu_sim.cli import main
from ecu_sim.link import apply
from tests.conftest import summary_of
from tests.socketcan.conftest import Node, RawCapture
from tests.socketcan.test_j1939_kernel import CCM, CLAIMED, CLIENT, ECU, KernelClient
from tests.socketcan.test_link_vm import CONTROLLERS
from tests.socketcan.test_nodes_vm import AMP, J1939, speeds

pytestmark = [
    pytest.mark.socketcan,
    pytest.mark.skipif(len(CONTROLLERS) < 2, reason="no emulated CAN controllers "
                       "(scripts/vm-test sets ECU_SIM_TEST_CONTROLLERS)"),
]

BITRATE = 250000
#: a node's start and the speed's climb under software emulation on a shared host: generous
START_TIMEOUT_S, CONVERGE_TIMEOUT_S = 180.0, 180.0
#: the byte limits of the plug qdisc: one classic CAN frame (CAN_MTU) while it holds, so the queue
#: is full at once; once released, ten (a CAN interface's default txqueuelen), so a tick's frames
#: that meet one still in flight are not refused again
HOLD_LIMIT, DRAINED_LIMIT = 16, 160
#: refused frames to see counted in the status line before the queue is released
REFUSED_BEFORE_RELEASE = 20
FULL_REPORT, AGAIN_REPORT = "sends fail", re.compile(r"sending again after (\d+) refused frames?")


@pytest.fixture
def controllers() -> tuple[str, str]:
    """can0 and can1 at 250 kbit/s, set by the command line as a user would."""
    for name in CONTROLLERS[:2]:
        assert main(["link", name, "--bitrate", str(BITRATE)]) == 0
        state = apply.link_state(name)
        assert (state.up, state.bitrate, state.listen_only) == (True, BITRATE, False)
    return CONTROLLERS[0], CONTROLLERS[1]


def wait_for_log(node: Node, found: Callable[[str], bool], what: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = node.log()
        if found(log):
            return log
        if not node.process.is_alive():
            break
        time.sleep(0.5)
    pytest.fail(f"{what}: not in the node's log within {timeout} s (alive: {node.process.is_alive()})\n"
                f"{node.log()[-2000:]}")


def refused_so_far(log: str) -> int:
    """The newest status line's tx_errors (0 before the first)."""
    counts = re.findall(r" tx_errors (\d+)", log)
    return int(counts[-1]) if counts else 0


class Plug:
    """The kernel's plug qdisc as can0's root: frames held and refused until it is released."""

    def __init__(self, iface: str) -> None:
        from pyroute2 import IPRoute

        self._ipr = IPRoute()
        self._index = self._ipr.link_lookup(ifname=iface)[0]
        self._ipr.tc("add", "plug", self._index, "1:", limit=HOLD_LIMIT)

    def release(self) -> None:
        """The held frame goes out and the queue passes frames on as they come, as a drained one does."""
        self._ipr.tc("change", "plug", self._index, "1:", action="TCQ_PLUG_RELEASE_INDEFINITE")
        self._ipr.tc("change", "plug", self._index, "1:", action="TCQ_PLUG_LIMIT", limit=DRAINED_LIMIT)

    def remove(self) -> None:
        """Back to the default qdisc; the teardown must not fail when the link was reset meanwhile."""
        try:
            self._ipr.tc("del", "plug", self._index, "1:")
        except Exception as exc:  # the qdisc went with a reset of the link
            print(f"plug qdisc not removed: {exc}")
        self._ipr.close()


@pytest.fixture
def plug_factory() -> Iterator[Callable[[str], Plug]]:
    plugs: list[Plug] = []

    def make(iface: str) -> Plug:
        plugs.append(Plug(iface))
        return plugs[-1]

    yield make
    for plug in plugs:
        plug.remove()


def test_ecu_and_ccm_on_two_controllers_close_the_loop_and_the_kernel_sees_both_claims(
        controllers: tuple[str, str], start_node: Callable[..., Node]) -> None:
    ecu_side, ccm_side = controllers
    with RawCapture(ccm_side) as capture:
        kernel = KernelClient(ccm_side, CLIENT)
        try:
            ecu = start_node("--iface", ecu_side, "--profile", "j1939", "--initial-speed", "86",
                             "--grade", "0")
            ccm = start_node("ccm", "--iface", ccm_side, "--profile", "j1939", "--set-speed", "90")
            capture.wait_for(lambda f: f.can_id == J1939.speed_id, count=5, timeout=START_TIMEOUT_S)
            capture.wait_for(lambda f: f.can_id == J1939.app_id, count=5, timeout=START_TIMEOUT_S)

            kernel.request(CLAIMED, 0xFF)
            claimed: set[int] = set()
            while claimed != {ECU, CCM}:
                claimed.add(kernel.wait(lambda m: m.pgn == CLAIMED and m.source in {ECU, CCM} - claimed,
                                        timeout=30).source)
        finally:
            kernel.close()
        # the ECU's speed frames, heard on the CCM's controller: they crossed the emulated bus
        capture.wait_for(lambda f: f.can_id == J1939.speed_id and abs(J1939.speed(f.data) - 90.0) < 1.0,
                         timeout=CONVERGE_TIMEOUT_S)
        frames = capture.frames()
    assert (ecu.stop(), ccm.stop()) == (0, 0), ecu.log()[-2000:] + ccm.log()[-2000:]
    assert "bus lost" not in ecu.log() + ccm.log()
    assert abs(speeds(frames, J1939)[-1] - 90.0) < 1.0, "converged to the set speed"
    assert all(f.extended and len(f.data) == 8 for f in frames if f.can_id == J1939.app_id)


def test_a_full_transmit_queue_is_survived_counted_reported_once_and_sending_resumes(
        controllers: tuple[str, str], start_node: Callable[..., Node],
        plug_factory: Callable[[str], Plug]) -> None:
    """From the loop (``--tx-mode user``) every tick's frame passes the port, so every refusal is
    counted: a tick's frame is sent, refused, dropped while the bus is down, or skipped as late."""
    ecu_side, listener_side = controllers
    with RawCapture(listener_side) as capture:
        ecu = start_node("--iface", ecu_side, "--tx-mode", "user", "--grade", "0")
        capture.wait_for(lambda f: f.can_id == AMP.speed_id, count=5, timeout=START_TIMEOUT_S)
        plug = plug_factory(ecu_side)
        wait_for_log(ecu, lambda log: refused_so_far(log) >= REFUSED_BEFORE_RELEASE,
                     f"{REFUSED_BEFORE_RELEASE} refused frames counted while the queue is full", 120.0)
        released_at = time.time()
        plug.release()
        capture.wait_for(lambda f: f.can_id == AMP.speed_id and f.timestamp > released_at, count=10,
                         timeout=60.0)
        log = wait_for_log(ecu, lambda log: AGAIN_REPORT.search(log) is not None,
                           "sending again", 60.0)
    assert ecu.stop() == 0
    log = ecu.log()
    run = summary_of(log)
    assert run.tx_errors >= REFUSED_BEFORE_RELEASE
    assert run.ticks == run.tx + run.tx_errors + run.tx_dropped + run.skipped, run.line
    assert log.count(FULL_REPORT) == 1, "reported once, not once a frame"
    (again,) = AGAIN_REPORT.findall(log)
    assert int(again) == run.tx_errors, "the report counts every refused frame"
    assert "bus lost" not in log, "a full queue is not a lost bus"


def test_under_the_kernel_timer_a_full_queue_costs_the_ports_own_frames_and_the_loop_runs_on(
        controllers: tuple[str, str], start_node: Callable[..., Node],
        plug_factory: Callable[[str], Plug]) -> None:
    """The default on SocketCAN: the kernel's broadcast manager sends the speed frame and learns of
    a full queue alone (it tells no socket), so only what the port sends itself is refused where
    ecu-sim sees it: DM1, due once a second by the loop's ticks. The speed frames come back by
    themselves once the queue drains, and the loop with the CCM across the bus still converges."""
    ecu_side, ccm_side = controllers
    with RawCapture(ccm_side) as capture:
        ecu = start_node("--iface", ecu_side, "--profile", "j1939", "--initial-speed", "86",
                         "--grade", "0")
        ccm = start_node("ccm", "--iface", ccm_side, "--profile", "j1939", "--set-speed", "90")
        capture.wait_for(lambda f: f.can_id == J1939.speed_id, count=5, timeout=START_TIMEOUT_S)
        capture.wait_for(lambda f: f.can_id == J1939.app_id, count=5, timeout=START_TIMEOUT_S)
        plug = plug_factory(ecu_side)
        # three DM1 refused: the ticks that make them due went on while the queue was full
        wait_for_log(ecu, lambda log: refused_so_far(log) >= 3, "3 refused DM1 frames", 120.0)
        released_at = time.time()
        plug.release()
        capture.wait_for(lambda f: f.can_id == J1939.speed_id and f.timestamp > released_at, count=10,
                         timeout=60.0)
        wait_for_log(ecu, lambda log: AGAIN_REPORT.search(log) is not None, "sending again", 60.0)
        capture.wait_for(lambda f: f.can_id == J1939.speed_id and abs(J1939.speed(f.data) - 90.0) < 1.0,
                         timeout=CONVERGE_TIMEOUT_S)
    assert (ecu.stop(), ccm.stop()) == (0, 0)
    log = ecu.log()
    run = summary_of(log)
    assert log.count(FULL_REPORT) == 1, "reported once, not once a frame"
    (again,) = AGAIN_REPORT.findall(log)
    assert int(again) == run.tx_errors >= 3
    assert "bus lost" not in log, "a full queue is not a lost bus"
