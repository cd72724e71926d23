"""``--network powertrain`` on a real vcan0 against the Linux kernel's J1939 stack: a CAN_J1939 socket
at 0x2A, as an adaptive cruise controller would hold, sends TSC1 to the engine and XBR to the brakes
with J1939-71's counters and checksums, and reads EEC1 and EBC5 back; ``ecu-sim j1939 list`` sees
the four nodes the ECU process hosts.

The ECU runs once for the module (a process takes long to start under emulation); the sender sends
from a thread at its declared rate while a test waits for the answer. Nothing is asserted against
the wall clock: the controller declares a slow TSC1 rate (100 ms) so that an emulated guest's late
ticks never time it out, and the tests wait for what the ECU reports.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from cantools.database.can import Database

from ecu_sim.codec.command import CommandCodec
from ecu_sim.codec.profile import Profile
from ecu_sim.j1939.ids import pgn_of
from tests.socketcan.conftest import Node, RawCapture, create_vcan, delete_link
from tests.socketcan.test_j1939_kernel import KernelClient, Message

pytestmark = pytest.mark.socketcan

IFACE = "vcan0"
CONTROLLER = 0x2A
ENGINE, TRANSMISSION, BRAKES, RETARDER = 0x00, 0x03, 0x0B, 0x0F
EEC1, EBC5, CCVS1_ID = 0xF004, 0xFDC4, 0x18FEF100
#: the socket option that sets the priority of what a CAN_J1939 socket sends (linux/can/j1939.h)
SOL_CAN_J1939 = getattr(socket, "SOL_CAN_BASE", 100) + socket.CAN_J1939
#: TSC1: torque control, priority 11, declared rate 100 ms (code 4), purpose P2 cruise
TSC1_FIXED = {695: 2, 897: 3, 3349: 4, 3350: 1}
#: XBR: EBI integration allowed, priority ACC, maximum mode
XBR_FIXED = {2914: 2, 2915: 2, 2916: 2}


class Sender:
    """Sends one command message from the kernel socket every ``period_s`` with its counter and
    checksum (over the identifier the kernel puts on the wire: priority 3 from 0x2A)."""

    def __init__(self, client: KernelClient, codec: CommandCodec, destination: int,
                 fixed: Mapping[int, float], demands: Mapping[int, float], period_s: float) -> None:
        self._client = client
        self._codec = codec
        self._destination = destination
        self._fixed, self._demands = fixed, demands
        self._period = period_s
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        pgn = pgn_of(self._codec.frame_id)
        while not self._stop.is_set():
            data = self._codec.encode(self._fixed, self._demands, self.sent)
            self._client.sock.sendto(data, (IFACE, socket.J1939_NO_NAME, pgn, self._destination))
            self.sent += 1
            self._stop.wait(self._period)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def decode(database: Database, name: str, message: Message) -> dict[str, float]:
    values = database.get_message_by_name(name).decode(message.data, decode_choices=False)
    assert isinstance(values, dict)
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


@pytest.fixture(scope="module")
def powertrain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelClient, Database]]:
    create_vcan(IFACE)
    logs = tmp_path_factory.mktemp("powertrain")
    capture = RawCapture(IFACE)
    client = KernelClient(IFACE, CONTROLLER)
    client.sock.setsockopt(SOL_CAN_J1939, socket.SO_J1939_SEND_PRIO, 3)
    ecu = Node(["--iface", IFACE, "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                "--grade", "0", "--initial-speed", "70"], Path(logs, "ecu.log"))
    capture.wait_for(lambda f: f.can_id == CCVS1_ID, count=5, timeout=180)
    try:
        yield client, Profile.load("j1939").database
    finally:
        status = ecu.stop()
        print(f"--- {' '.join(ecu.argv)} (exit {status})\n{ecu.log()[-3000:]}")
        client.close()
        capture.close()
        delete_link(IFACE)


def test_j1939_list_shows_the_four_hosted_nodes(powertrain: tuple[KernelClient, Database]) -> None:
    command = [sys.executable, "-m", "ecu_sim", "j1939", "list", "--iface", IFACE, "--wait", "3"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    print(result.stdout)
    assert listed == ["0x00", "0x03", "0x0B", "0x0F"]


def test_tsc1_from_the_kernel_socket_takes_the_engine_and_eec1_names_it(
        powertrain: tuple[KernelClient, Database]) -> None:
    client, database = powertrain
    codec = CommandCodec(database.get_message_by_name("TSC1"), CONTROLLER)
    sender = Sender(client, codec, ENGINE, TSC1_FIXED, {518: 10.0}, 0.1)
    try:
        client.flush()
        eec1 = client.wait(lambda m: m.pgn == EEC1 and m.source == ENGINE
                           and decode(database, "EEC1", m)["SrcAddrssOfCtrllngDvcForEngCtrl"] == CONTROLLER,
                           timeout=30)
    finally:
        sender.stop()
    assert decode(database, "EEC1", eec1)["EngTorqueMode"] == 2  # cruise control, the purpose P2
    # released by silence: the engine takes control back once the sender's timeout has passed
    client.wait(lambda m: m.pgn == EEC1 and m.source == ENGINE
                and decode(database, "EEC1", m)["SrcAddrssOfCtrllngDvcForEngCtrl"] != CONTROLLER, timeout=30)


def test_xbr_from_the_kernel_socket_brakes_and_ebc5_reports_it(
        powertrain: tuple[KernelClient, Database]) -> None:
    client, database = powertrain
    codec = CommandCodec(database.get_message_by_name("XBR"), CONTROLLER)
    sender = Sender(client, codec, BRAKES, XBR_FIXED, {2920: -1.0}, 0.02)
    try:
        client.flush()
        ebc5 = client.wait(lambda m: m.pgn == EBC5 and m.source == BRAKES
                           and decode(database, "EBC5", m)["XBRActiveControlMode"] == 3, timeout=30)
    finally:
        sender.stop()
    assert decode(database, "EBC5", ebc5)["XBRSystemState"] in (0, 2)
    # the stream is lost: the brakes go back to the driver, and EBC5 says so
    time.sleep(0.5)
    client.flush()
    lost = client.wait(lambda m: m.pgn == EBC5 and m.source == BRAKES, timeout=30)
    assert decode(database, "EBC5", lost)["XBRActiveControlMode"] != 3
