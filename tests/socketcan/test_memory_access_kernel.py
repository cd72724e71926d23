"""J1939-73 memory access through the Linux kernel's J1939 stack (CAN_J1939 sockets on a vcan): the
kernel carries the DM16s by RTS/CTS both ways, a DM16 of 1785 bytes (the transport's largest)
among them, to a real ``ecu-sim`` process."""

from __future__ import annotations

import dataclasses
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecu_sim.calibration.layout import AREA_SIZE, AREA_START, HEADER_SIZE, INTEGRITY_SIZE
from ecu_sim.memory_access.keys import key_of
from ecu_sim.memory_access.messages import (
    DM14_PGN,
    DM15_PGN,
    DM16_PGN,
    NO_KEY,
    Command,
    Dm14,
    Error,
    Status,
    decode_dm15,
    encode_dm14,
)
from ecu_sim.uds.security import default_key
from tests.socketcan.conftest import Node, create_vcan, delete_link
from tests.socketcan.test_j1939_kernel import KernelClient, Message

pytestmark = pytest.mark.socketcan

IFACE = "vcanmem"
TOOL, ENGINE = 0xF9, 0x00
CLAIMED = 0xEE00
LIMIT = AREA_START + HEADER_SIZE


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelClient]:
    create_vcan(IFACE)
    logs = tmp_path_factory.mktemp("memory-access")
    kernel = KernelClient(IFACE, TOOL)
    ecu = Node(["--iface", IFACE, "--profile", "j1939", "--vehicle", "class6", "--initial-speed", "0",
                "--grade", "0"], Path(logs, "ecu.log"))
    try:
        kernel.wait(lambda m: m.pgn == CLAIMED and m.source == ENGINE, timeout=180)
        yield kernel
    finally:
        status = ecu.stop()
        print(f"--- {' '.join(ecu.argv)} (exit {status})\n{ecu.log()[-2000:]}")
        kernel.close()
        delete_link(IFACE)


def send(kernel: KernelClient, pgn: int, data: bytes) -> None:
    kernel.sock.sendto(data, (IFACE, socket.J1939_NO_NAME, pgn, ENGINE))


def answer(kernel: KernelClient, pgn: int = DM15_PGN) -> Message:
    return kernel.wait(lambda m: m.pgn == pgn and m.source == ENGINE)


def unlocked(kernel: KernelClient, request: Dm14) -> tuple[Status | int, int, int, int]:
    """The session opened and the key sent: the node's DM15 to the key."""
    kernel.flush()
    send(kernel, DM14_PGN, encode_dm14(request))
    seed = decode_dm15(answer(kernel).data)[3]
    send(kernel, DM14_PGN, encode_dm14(dataclasses.replace(request, key=key_of(default_key, seed, 7))))
    return decode_dm15(answer(kernel).data)


def close(kernel: KernelClient, request: Dm14) -> None:
    done = dataclasses.replace(request, command=Command.OPERATION_COMPLETED, length=1, key=NO_KEY)
    send(kernel, DM14_PGN, encode_dm14(done))


def read_area(kernel: KernelClient) -> bytes:
    request = Dm14(AREA_SIZE, False, Command.READ, AREA_START, 0, 7)
    assert unlocked(kernel, request)[:2] == (Status.PROCEED, AREA_SIZE)
    dm16 = answer(kernel, DM16_PGN).data
    assert decode_dm15(answer(kernel).data)[0] is Status.OPERATION_COMPLETED
    close(kernel, request)
    return dm16[1:]


def test_the_kernel_carries_the_whole_area_from_the_node_in_one_dm16(tool: KernelClient) -> None:
    area = read_area(tool)
    assert len(area) == AREA_SIZE and area[:4] == b"ECAL"
    assert struct.unpack_from("<d", area, HEADER_SIZE)[0] == float("inf")


def test_a_dm16_of_1785_bytes_reaches_the_node_and_is_refused_as_longer_than_announced(
        tool: KernelClient) -> None:
    request = Dm14(AREA_SIZE - HEADER_SIZE, False, Command.WRITE, LIMIT, 0, 7)
    assert unlocked(tool, request)[0] is Status.PROCEED
    send(tool, DM16_PGN, b"\xff" + bytes(1784))
    assert decode_dm15(answer(tool).data)[:3] == (Status.OPERATION_FAILED, 0, Error.INVALID_LENGTH)
    assert struct.unpack_from("<d", read_area(tool), HEADER_SIZE)[0] == float("inf")


def test_a_write_by_the_kernel_transport_is_committed_and_read_back(tool: KernelClient) -> None:
    image = bytearray(read_area(tool))
    image[HEADER_SIZE:HEADER_SIZE + 8] = struct.pack("<d", 50.0)
    image[-INTEGRITY_SIZE:] = struct.pack("<I", zlib.adler32(bytes(image[:-INTEGRITY_SIZE])))
    request = Dm14(AREA_SIZE - HEADER_SIZE, False, Command.WRITE, LIMIT, 0, 7)
    assert unlocked(tool, request)[0] is Status.PROCEED
    send(tool, DM16_PGN, b"\xff" + bytes(image[HEADER_SIZE:]))
    assert decode_dm15(answer(tool).data)[0] is Status.OPERATION_COMPLETED
    close(tool, request)
    assert read_area(tool) == bytes(image)
