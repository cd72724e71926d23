"""Fixtures for the tests that need a kernel with SocketCAN (run inside the VM by scripts/vm-test).

Everything here talks to the kernel directly (pyroute2 for links, a raw PF_CAN socket for frames)
and never through ecu_sim, so a bug in the project cannot hide itself from the test that watches
the bus.  Without PF_CAN (errno 97 on this kind of container), root or pyroute2, every test in this
folder is skipped with a reason when pytest is run by hand, and fails with that reason when
ECU_SIM_REQUIRE_VM=1 (scripts/vm-test sets it in the guest): a stage that exists to run these tests
must not pass by running none of them.  scripts/vm-test also passes the kernel modules it could
not load in ECU_SIM_VM_MISSING_MODULES, which then fail every test too.
"""

from __future__ import annotations

import errno
import itertools
import multiprocessing
import os
import socket
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# linux/can.h and linux/can/raw.h; Python's socket module lacks some of them (CAN_RAW_ERR_FILTER).
CAN_EFF_FLAG = 0x80000000
CAN_RTR_FLAG = 0x40000000
CAN_ERR_FLAG = 0x20000000
CAN_EFF_MASK = 0x1FFFFFFF
CAN_SFF_MASK = 0x000007FF
CAN_ERR_MASK = 0x1FFFFFFF
SOL_CAN_RAW = 101
CAN_RAW_ERR_FILTER = 2
SO_TIMESTAMPNS = 35  # asm-generic value, the same on x86 and ARM
ARPHRD_CAN = 280

#: struct can_frame: can_id, len, __pad, __res0, len8_dlc, data[8]
CAN_FRAME = struct.Struct("=IB3x8s")
_TIMESPEC = struct.Struct("@ll")


#: set by the test scripts: a missing prerequisite is a failure, not a skip
REQUIRE_VM = os.environ.get("ECU_SIM_REQUIRE_VM") == "1"


def _socketcan_problem() -> str | None:
    """Why the kernel cannot run these tests, or None when it can."""
    missing_modules = os.environ.get("ECU_SIM_VM_MISSING_MODULES", "").split()
    if missing_modules:
        return (f"the VM's kernel could not load {', '.join(missing_modules)} (modprobe failed; see "
                "guest-notes.log in the results folder): install a kernel with CONFIG_CAN_VCAN, "
                "CONFIG_CAN_RAW and CONFIG_CAN_BCM (Debian: linux-image-amd64) or pass VM_TEST_KERNEL")
    try:
        sock = socket.socket(socket.PF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    except (OSError, AttributeError) as exc:
        code = getattr(exc, "errno", None)
        detail = "errno 97, no PF_CAN" if code == errno.EAFNOSUPPORT else str(exc)
        return (f"this kernel has no SocketCAN ({detail}); run scripts/vm-test, which boots a kernel "
                "that has it")
    sock.close()
    if os.geteuid() != 0:
        return ("creating vcan interfaces needs root (CAP_NET_ADMIN); run scripts/vm-test (root in a VM) "
                "or run pytest as root")
    try:
        import pyroute2  # noqa: F401
    except ImportError:
        return ("pyroute2 is not installed in this Python: pip install -e '.[link]' "
                "(scripts/setup-dev installs it into .venv)")
    return None


SOCKETCAN_PROBLEM = _socketcan_problem()


@pytest.fixture(autouse=True)
def _require_socketcan() -> None:
    if SOCKETCAN_PROBLEM is not None:
        if REQUIRE_VM:
            pytest.fail(f"ECU_SIM_REQUIRE_VM=1 but the SocketCAN tests cannot run: {SOCKETCAN_PROBLEM}",
                        pytrace=False)
        pytest.skip(SOCKETCAN_PROBLEM)


# --------------------------------------------------------------------------------------------------
# Links, managed without ecu_sim


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def link_flags(name: str) -> int:
    """IFF_* flags from sysfs: an independent view of what ecu-sim link did."""
    return int(Path("/sys/class/net", name, "flags").read_text().strip(), 16)


def link_ifindex(name: str) -> int:
    return int(Path("/sys/class/net", name, "ifindex").read_text())


def delete_link(name: str) -> None:
    """Remove the interface if it exists (teardown must not fail when a test already deleted it)."""
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        indexes = ipr.link_lookup(ifname=name)
        if indexes:
            ipr.link("del", index=indexes[0])


def create_vcan(name: str) -> None:
    """A brand-new, up vcan: any leftover of the same name is deleted first, so no state leaks in."""
    from pyroute2 import IPRoute

    delete_link(name)
    with IPRoute() as ipr:
        ipr.link("add", ifname=name, kind="vcan")
        ipr.link("set", index=ipr.link_lookup(ifname=name)[0], state="up")


@pytest.fixture
def vcan_factory() -> Iterator[Callable[[str], str]]:
    """Create fresh vcan interfaces by name; all of them are deleted after the test."""
    created: list[str] = []

    def make(name: str) -> str:
        create_vcan(name)
        created.append(name)
        return name

    yield make
    for name in created:
        delete_link(name)


@pytest.fixture
def vcan(vcan_factory: Callable[[str], str]) -> str:
    """A fresh, up ``vcan0`` (the name the README and the ecu-sim examples use)."""
    return vcan_factory("vcan0")


# --------------------------------------------------------------------------------------------------
# Frames, observed without ecu_sim


@dataclass(frozen=True)
class Frame:
    """One classic CAN frame as the kernel delivered it to a raw socket."""

    timestamp: float  # kernel receive time (SO_TIMESTAMPNS, CLOCK_REALTIME seconds)
    can_id: int  # identifier without the EFF/RTR/ERR flag bits
    extended: bool
    remote: bool
    error: bool
    data: bytes

    @property
    def priority(self) -> int:
        return (self.can_id >> 26) & 0x7

    @property
    def pgn(self) -> int:
        """J1939 parameter group number: PDU1 (PF < 240) addresses a node, so PS is not part of it."""
        pf = (self.can_id >> 16) & 0xFF
        ps = (self.can_id >> 8) & 0xFF
        data_page = (self.can_id >> 24) & 0x3
        return (data_page << 16) | (pf << 8) | (ps if pf >= 240 else 0)

    @property
    def source_address(self) -> int:
        return self.can_id & 0xFF


def encode_frame(can_id: int, data: bytes = b"", *, extended: bool | None = None, error: bool = False,
                 remote: bool = False) -> bytes:
    """struct can_frame bytes; ``extended`` defaults to whether the id needs 29 bits."""
    if len(data) > 8:
        raise ValueError("a classic CAN frame carries at most 8 bytes")
    if extended is None:
        extended = can_id > CAN_SFF_MASK
    raw_id = can_id & (CAN_EFF_MASK if extended else CAN_SFF_MASK)
    raw_id |= CAN_EFF_FLAG if extended else 0
    raw_id |= (CAN_ERR_FLAG if error else 0) | (CAN_RTR_FLAG if remote else 0)
    return CAN_FRAME.pack(raw_id, len(data), data.ljust(8, b"\0"))


def decode_frame(raw: bytes, timestamp: float) -> Frame:
    raw_id, length, data = CAN_FRAME.unpack(raw[: CAN_FRAME.size])
    extended = bool(raw_id & CAN_EFF_FLAG)
    error = bool(raw_id & CAN_ERR_FLAG)
    mask = CAN_EFF_MASK if extended or error else CAN_SFF_MASK
    return Frame(timestamp=timestamp, can_id=raw_id & mask, extended=extended,
                 remote=bool(raw_id & CAN_RTR_FLAG), error=error, data=data[: min(length, 8)])


def open_raw_socket(iface: str, *, receive_errors: bool = True) -> socket.socket:
    sock = socket.socket(socket.PF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    if receive_errors:
        sock.setsockopt(SOL_CAN_RAW, CAN_RAW_ERR_FILTER, struct.pack("=I", CAN_ERR_MASK))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((iface,))
    return sock


@dataclass(frozen=True)
class PeriodStats:
    count: int
    mean: float
    stdev: float
    minimum: float
    maximum: float


def period_stats(frames: list[Frame]) -> PeriodStats:
    """Intervals between consecutive kernel timestamps: how regularly a sender really transmits."""
    stamps = [frame.timestamp for frame in frames]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    if not gaps:
        raise ValueError(f"need at least two frames to measure a period, got {len(frames)}")
    return PeriodStats(count=len(gaps), mean=statistics.fmean(gaps), stdev=statistics.pstdev(gaps),
                       minimum=min(gaps), maximum=max(gaps))


class RawCapture:
    """Every frame on one interface, collected by a background thread from a raw CAN socket.

    The socket sees frames from every other socket on the machine (CAN_RAW_LOOPBACK is on by
    default), so it hears what ``ecu-sim --iface vcan0`` sends, and error frames too unless
    ``receive_errors`` is False.  ``send`` uses a second socket so the capture also records it.
    """

    def __init__(self, iface: str, *, receive_errors: bool = True) -> None:
        self.iface = iface
        self._rx = open_raw_socket(iface, receive_errors=receive_errors)
        self._rx.settimeout(0.1)
        self._tx: socket.socket | None = None
        self._frames: list[Frame] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"capture-{iface}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                raw, ancillary, _flags, _addr = self._rx.recvmsg(CAN_FRAME.size, 64)
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                if exc.errno == errno.ENETDOWN:
                    continue  # reported once when the link goes down; the socket hears it again when up
                raise
            stamp = time.time()
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = _TIMESPEC.unpack(payload[: _TIMESPEC.size])
                    stamp = seconds + nanoseconds / 1e9
            if len(raw) < CAN_FRAME.size:
                continue  # not a classic frame; CAN FD is not enabled on this socket
            with self._changed:
                self._frames.append(decode_frame(raw, stamp))
                self._changed.notify_all()

    def frames(self, predicate: Callable[[Frame], bool] | None = None) -> list[Frame]:
        with self._changed:
            return [f for f in self._frames if predicate is None or predicate(f)]

    def clear(self) -> None:
        with self._changed:
            self._frames.clear()

    def wait_for(self, predicate: Callable[[Frame], bool], count: int = 1,
                 timeout: float = 10.0) -> list[Frame]:
        """Block until ``count`` matching frames were seen; fail the test with what was seen instead."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                matching = [f for f in self._frames if predicate(f)]
                if len(matching) >= count:
                    return matching
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = ", ".join(f"{f.can_id:#x}" for f in self._frames[-10:]) or "nothing"
                    pytest.fail(f"{self.iface}: {len(matching)} of {count} expected frames within "
                                f"{timeout} s; last seen: {seen}")
                self._changed.wait(remaining)

    def send(self, can_id: int, data: bytes = b"", **flags: bool) -> None:
        if self._tx is None:
            self._tx = open_raw_socket(self.iface, receive_errors=False)
        self._tx.send(encode_frame(can_id, data, **flags))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._rx.close()
        if self._tx is not None:
            self._tx.close()

    def __enter__(self) -> RawCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def capture_factory() -> Iterator[Callable[[str], RawCapture]]:
    """Start captures on any interface; they are stopped after the test."""
    captures: list[RawCapture] = []

    def start(iface: str) -> RawCapture:
        capture = RawCapture(iface)
        captures.append(capture)
        return capture

    yield start
    for capture in captures:
        capture.close()


@pytest.fixture
def capture(vcan: str, capture_factory: Callable[[str], RawCapture]) -> RawCapture:
    """A raw-socket capture of the fresh ``vcan0``, started before the test's processes."""
    return capture_factory(vcan)


def run_cli(argv: list[str], log_path: str) -> None:
    """Child process body: the real command line, its stderr going to a file the test reads."""
    log = open(log_path, "w", buffering=1)  # noqa: SIM115 - lives as long as this process
    sys.stdout = sys.stderr = log
    from ecu_sim.cli import main

    status = main(argv)
    log.flush()
    os._exit(status)


class Node:
    """One ``ecu-sim`` process (ECU or CCM)."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.argv = argv
        self.log_path = log_path
        self.process = multiprocessing.get_context("fork").Process(
            target=run_cli, args=(argv, str(log_path)), daemon=True)
        self.process.start()

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def stop(self) -> int | None:
        """SIGTERM, as systemd and Ctrl-C do; the run must end cleanly with status 0."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        return self.process.exitcode


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[Callable[..., Node]]:
    nodes: list[Node] = []

    def start(*argv: str) -> Node:
        node = Node(list(argv), tmp_path / f"node{len(nodes)}.log")
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        status = node.stop()
        # shown by pytest with a failing test's report: what each node said
        print(f"--- ecu-sim {' '.join(node.argv)} (exit {status})\n{node.log()[-3000:]}")
