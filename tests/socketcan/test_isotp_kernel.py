"""ecu-sim's UDS server on a real vcan0, asked through the Linux kernel's ISO-TP (``CAN_ISOTP``
sockets, module can-isotp) and can-utils' ``isotpsend``/``isotprecv``: ISO 15765-2 done by a
stack nobody here wrote, on 29-bit normal fixed addressing given as the two identifiers
explicitly (``18DA<node><tester>`` out, ``18DA<tester><node>`` back; ``-x`` is extended
addressing, another scheme).

One ECU runs for the module (a process takes long to start under emulation). The kernel's socket
and the tools use different tester addresses, so neither hears the other's answers. The kernel
sends the flow control for a multi-frame answer and waits for the node's for a multi-frame
request; what it delivers whole is what the node framed correctly.
"""

from __future__ import annotations

import queue
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.socketcan.conftest import CAN_EFF_FLAG, Node, RawCapture, create_vcan, delete_link

pytestmark = pytest.mark.socketcan

IFACE = "vcan0"
ECU = 0x00
#: the kernel socket's tester and the tools' tester: two testers, two pairs of identifiers
SOCKET_TESTER, TOOLS_TESTER = 0xF1, 0xF9
VIN = "1M8GDM9AXKP042788"
SPEED_ID = 0x18FEF100
#: a process under emulation may take minutes to start, an answer a few ticks late: only a guard
START_S, ANSWER_S = 180.0, 20.0


def request_id(node: int, tester: int) -> int:
    return 0x18DA0000 | node << 8 | tester


def answer_id(node: int, tester: int) -> int:
    return 0x18DA0000 | tester << 8 | node


def hexed(data: bytes) -> str:
    return " ".join(f"{b:02X}" for b in data)


class KernelIsoTp:
    """A ``CAN_ISOTP`` datagram socket: the kernel segments, reassembles and does flow control."""

    def __init__(self, iface: str, node: int, tester: int) -> None:
        try:
            self.sock = socket.socket(socket.PF_CAN, socket.SOCK_DGRAM, socket.CAN_ISOTP)
        except OSError as exc:
            pytest.fail(f"no CAN_ISOTP socket ({exc}): the kernel module can-isotp is missing "
                        "(scripts/vm-test loads it; see guest-notes.log)", pytrace=False)
        # (interface, the identifier it receives on, the one it sends on), 29-bit both
        self.sock.bind((iface, answer_id(node, tester) | CAN_EFF_FLAG,
                        request_id(node, tester) | CAN_EFF_FLAG))
        self.sock.settimeout(ANSWER_S)

    def ask(self, request: bytes) -> bytes:
        self.sock.send(request)
        return self.sock.recv(4095)

    def close(self) -> None:
        self.sock.close()


class IsoTpTools:
    """can-utils: one ``isotprecv -l`` for the module (line-buffered through stdbuf, so each PDU is
    a line as it arrives), and an ``isotpsend -b`` per request."""

    def __init__(self, iface: str, node: int, tester: int) -> None:
        for tool in ("isotpsend", "isotprecv", "stdbuf"):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is not installed (Debian: can-utils, coreutils)", pytrace=False)
        self.iface = iface
        self.ids = (f"{request_id(node, tester):08X}", f"{answer_id(node, tester):08X}")
        out, back = self.ids
        self.receiver = subprocess.Popen(["stdbuf", "-oL", "isotprecv", "-l", "-s", out, "-d", back, iface],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.receiver.stdout is not None
        for line in self.receiver.stdout:
            self._lines.put(line)

    def ask(self, request: bytes) -> bytes:
        out, back = self.ids
        sent = subprocess.run(["isotpsend", "-b", "-s", out, "-d", back, self.iface], input=hexed(request),
                              capture_output=True, text=True, timeout=ANSWER_S)
        assert sent.returncode == 0, sent.stderr
        try:
            line = self._lines.get(timeout=ANSWER_S)
        except queue.Empty:
            pytest.fail(f"isotprecv received nothing within {ANSWER_S:g} s", pytrace=False)
        return bytes(int(word, 16) for word in line.split())

    def close(self) -> None:
        self.receiver.terminate()
        self.receiver.wait(timeout=10)


@dataclass
class Bench:
    capture: RawCapture
    ecu: Node
    kernel: KernelIsoTp
    tools: IsoTpTools


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    create_vcan(IFACE)
    folder = tmp_path_factory.mktemp("isotp")
    config = Path(folder, "ecu.ini")
    config.write_text(f"[fms]\nvin = {VIN}\n", encoding="utf-8")
    capture = RawCapture(IFACE)
    kernel = KernelIsoTp(IFACE, ECU, SOCKET_TESTER)
    tools = IsoTpTools(IFACE, ECU, TOOLS_TESTER)  # bound long before the node can answer
    ecu = Node(["--iface", IFACE, "--profile", "j1939", "--grade", "0", "--config", str(config)],
               Path(folder, "ecu.log"))
    capture.wait_for(lambda f: f.can_id == SPEED_ID, count=3, timeout=START_S)
    try:
        yield Bench(capture, ecu, kernel, tools)
    finally:
        status = ecu.stop()
        print(f"--- {' '.join(ecu.argv)} (exit {status})\n{ecu.log()[-2000:]}")
        kernel.close()
        tools.close()
        capture.close()
        delete_link(IFACE)


def client(bench: Bench, name: str) -> KernelIsoTp | IsoTpTools:
    return bench.kernel if name == "socket" else bench.tools


@pytest.mark.parametrize("name", ["socket", "tools"])
def test_the_vin_arrives_whole_in_a_multi_frame_answer(bench: Bench, name: str) -> None:
    assert client(bench, name).ask(bytes.fromhex("22F190")) == bytes.fromhex("62F190") + VIN.encode()


@pytest.mark.parametrize("name", ["socket", "tools"])
def test_a_multi_frame_request_is_answered_whole(bench: Bench, name: str) -> None:
    answer = client(bench, name).ask(bytes.fromhex("22F186F190F186F195"))
    assert answer.startswith(bytes.fromhex("62F18601F190") + VIN.encode() + bytes.fromhex("F18601F195"))
    assert b"ecu-sim " in answer


def test_isotpsend_and_isotprecv_read_the_active_session_in_a_single_frame(bench: Bench) -> None:
    bench.capture.clear()
    assert bench.tools.ask(bytes.fromhex("22F186")) == bytes.fromhex("62F18601")
    answers = bench.capture.wait_for(lambda f: f.can_id == answer_id(ECU, TOOLS_TESTER))
    assert answers[0].data == bytes.fromhex("0462F18601CCCCCC")  # one single frame, padded by the node


def test_the_node_lets_a_multi_frame_request_stream(bench: Bench) -> None:
    bench.capture.clear()
    bench.tools.ask(bytes.fromhex("22F186F190F186F195"))
    flow = bench.capture.wait_for(lambda f: f.can_id == answer_id(ECU, TOOLS_TESTER) and f.data[0] >> 4 == 3)
    assert flow[0].data[:3] == bytes((0x30, 0, 0))  # continue, block size 0, STmin 0
