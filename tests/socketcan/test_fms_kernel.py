"""``--fms`` on a real vcan0, read by the Linux kernel's J1939 stack: a CAN_J1939 socket at 0xC0, as
a telematics unit would hold, hears each FMS message from its sender and decodes it with cantools
and dbc/fms.dbc alone. Nothing is asserted against the wall clock; the tests wait for frames.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cantools
import pytest
from cantools.database.can import Database

from tests.conftest import REPO
from tests.socketcan.conftest import Node, RawCapture, create_vcan, delete_link
from tests.socketcan.test_j1939_kernel import KernelClient, Message

pytestmark = pytest.mark.socketcan

IFACE = "vcan0"
TELEMATICS, GATEWAY, TACHOGRAPH = 0xC0, 0x4A, 0xEE
CCVS1_ID = 0x18FEF100
#: PGN, sender, message name in dbc/fms.dbc
FMS_SET = [(0xFEC1, GATEWAY, "VDHR"), (0xFEE5, GATEWAY, "HOURS"), (0xFEFC, GATEWAY, "DD1"),
           (0xFEEE, GATEWAY, "ET1"), (0xFEF5, GATEWAY, "AMB"), (0xFD09, GATEWAY, "HRLFC"),
           (0xFE6C, TACHOGRAPH, "TCO1"), (0xFEEA, GATEWAY, "VW"), (0xFD7D, GATEWAY, "FMS1"),
           (0xFEEC, GATEWAY, "VI")]  # VI: 17 bytes, by BAM, which the kernel reassembles


def fms_dbc() -> Database:
    database = cantools.database.load_file(str(REPO / "dbc" / "fms.dbc"))
    assert isinstance(database, Database)
    return database


def decoded(name: str, message: Message) -> dict[str, float]:
    values = fms_dbc().get_message_by_name(name).decode(message.data, decode_choices=False)
    assert isinstance(values, dict)
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelClient]:
    create_vcan(IFACE)
    logs = tmp_path_factory.mktemp("fms")
    capture = RawCapture(IFACE)
    client = KernelClient(IFACE, TELEMATICS)
    ecu = Node(["--iface", IFACE, "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                "--fms", "--grade", "0", "--initial-speed", "70"], Path(logs, "ecu.log"))
    capture.wait_for(lambda f: f.can_id == CCVS1_ID, count=5, timeout=180)
    try:
        yield client
    finally:
        status = ecu.stop()
        print(f"--- {' '.join(ecu.argv)} (exit {status})\n{ecu.log()[-3000:]}")
        client.close()
        capture.close()
        delete_link(IFACE)


@pytest.mark.parametrize(("pgn", "source", "name"), FMS_SET)
def test_each_fms_message_reaches_a_kernel_j1939_socket_from_its_sender(
        reader: KernelClient, pgn: int, source: int, name: str) -> None:
    message = reader.wait(lambda m: m.pgn == pgn and m.source == source, timeout=60)
    assert decoded(name, message)  # cantools reads it with the FMS DBC


def test_the_distance_a_kernel_socket_reads_grows_while_the_truck_drives(reader: KernelClient) -> None:
    first = reader.wait(lambda m: m.pgn == 0xFEC1 and m.source == GATEWAY, timeout=60)
    second = reader.wait(lambda m: m.pgn == 0xFEC1 and m.source == GATEWAY and m.at > first.at, timeout=60)
    assert (decoded("VDHR", second)["HighResTotalVehicleDistance"]
            > decoded("VDHR", first)["HighResTotalVehicleDistance"])
