"""A real ``ecu-sim`` process's engine read and written by can-j1939's ``Dm14Query`` (2.0.12), a
DM14/DM15/DM16 client nobody here wrote, on the processes' udp_multicast bus.

The reference's caveats for that version shape the test: on udp_multicast the client hears its
own frames (its stack is fed every frame but its own, through can-j1939's documented custom
back end), it claims no address (``bypass_address_claim``), a refusal is judged by the DM15 on
the bus (the client misses "operation failed" and asks again with the key of seed 0xFFFF, which
the key callback here refuses to compute), and ``read`` waits its fixed second, returning None
after a refusal.
"""

from __future__ import annotations

import re
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import can
import pytest

from ecu_sim.calibration.layout import AREA_SIZE, AREA_START, HEADER_SIZE, INTEGRITY_SIZE
from ecu_sim.j1939.ids import destination_of, pgn_of, source_address_of
from ecu_sim.memory_access.keys import key_of
from ecu_sim.memory_access.messages import DM15_PGN, NO_KEY, Error, Status, decode_dm15
from ecu_sim.uds.security import default_key
from tests.conftest import HANG_S, Node, Udp

pytestmark = pytest.mark.slow

ENGINE, TOOL, SECOND_TOOL = 0x00, 0xF9, 0xFA
LIMIT_ADDRESS = AREA_START + HEADER_SIZE  # road_speed_limit_kph, the engine's first parameter
DM19_PGN = 0xD300
NEW_LIMIT_KPH = 40.0


@dataclass
class Bus:
    """Every frame on the bus as the test heard it, and can-j1939's stacks fed from the same bus."""

    bus: can.BusABC
    frames: list[can.Message] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def on_message_received(self, msg: can.Message) -> None:
        with self.changed:
            self.frames.append(msg)
            self.changed.notify_all()

    def dm15s(self, tool: int, since: int = 0) -> list[tuple[Status | int, int, int, int]]:
        return [decode_dm15(bytes(m.data)) for m in self.frames[since:]
                if pgn_of(m.arbitration_id) == DM15_PGN and source_address_of(m.arbitration_id) == ENGINE
                and destination_of(m.arbitration_id) == tool]

    def wait(self, done: Callable[[], bool], what: str) -> None:
        give_up = time.monotonic() + HANG_S
        with self.changed:
            while not done():
                if not self.changed.wait(max(0.0, give_up - time.monotonic())):
                    pytest.fail(f"no {what} within {HANG_S:g} s")


@contextmanager
def heard(udp: Udp) -> Iterator[tuple[Bus, can.Notifier]]:
    """The bus and its one notifier (one reader thread: two would share the frames out)."""
    bus = Bus(udp.bus())
    notifier = can.Notifier(bus.bus, [bus.on_message_received])
    try:
        yield bus, notifier
    finally:
        notifier.stop()
        bus.bus.shutdown()


class Tool:
    """can-j1939's stack at ``address`` on ``bus``: a controller application and its Dm14Query."""

    def __init__(self, bus: Bus, address: int, key: Callable[[int], int]) -> None:
        import j1939  # type: ignore[import-untyped]

        def send(can_id: int, extended: bool, data: Any, fd_format: bool = False) -> None:
            bus.bus.send(can.Message(arbitration_id=can_id, is_extended_id=extended, data=bytes(data)))

        # a CTS for every packet at once: with 2.0.12's default of one a CTS, a long DM16 from a
        # node on the 100 ms tick takes longer than the fixed second its read waits
        self.ecu = j1939.ElectronicControlUnit(send_message=send, max_cmdt_packets=0xFF)
        self.ca = j1939.ControllerApplication(j1939.Name(function=129, identity_number=address), address,
                                              bypass_address_claim=True)
        self.ecu.add_ca(controller_application=self.ca)
        self.ca.start()
        self.query = j1939.Dm14Query(self.ca)
        self.query.set_seed_key_algorithm(key)
        self._address = address
        self.raised: list[Exception] = []
        self.answers: list[tuple[int, bytes]] = []
        self.ca.subscribe(lambda priority, pgn, source, timestamp, data: self.answers.append(
            (pgn, bytes(data or b""))))

    def on_message_received(self, msg: can.Message) -> None:
        """Every frame but the tool's own (udp_multicast hands them back) goes to its stack. What
        the client raises in this thread (its answer to "busy", the key callback's refusal of
        seed 0xFFFF) is kept here: raised on, it would end the notifier's thread for every tool."""
        if msg.is_extended_id and source_address_of(msg.arbitration_id) != self._address:
            try:
                self.ecu.notify(msg.arbitration_id, bytearray(msg.data), msg.timestamp)
            except (RuntimeError, AssertionError) as exc:
                self.raised.append(exc)

    def read(self, address: int, length: int) -> bytes | None:
        raw = self.query.read(ENGINE, 0, address, length, return_raw_bytes=True)
        return None if raw is None else bytes(raw)

    def stop(self) -> None:
        self.ecu.stop()


def right_key(seed: int) -> int:
    if seed == NO_KEY:
        raise RuntimeError("seed 0xFFFF asks for no key")
    return key_of(default_key, seed, 7)


def wrong_key(seed: int) -> int:
    return right_key(seed) ^ 0x5A5A


@contextmanager
def tool(bus: Bus, notifier: can.Notifier, address: int, key: Callable[[int], int]) -> Iterator[Tool]:
    client = Tool(bus, address, key)
    notifier.add_listener(client.on_message_received)
    try:
        yield client
    finally:
        notifier.remove_listener(client.on_message_received)
        client.stop()


def engine(start: Callable[..., Node], udp: Udp) -> Node:
    node = start(*udp.args(), "--profile", "j1939", "--vehicle", "class6", "--initial-speed", "0",
                 "--grade", "0")
    node.wait_for(r"J1939 SA 0x00 claimed")
    return node


def speeds(node: Node, since: int) -> list[float]:
    return [float(m) for m in re.findall(r"speed +([\d.]+) km/h", "\n".join(node.log.splitlines()[since:]))]


def read(bus: Bus, notifier: can.Notifier, address: int, length: int) -> bytes | None:
    """One read by a tool of its own: a Dm14Query of 2.0.12 serves one operation (the next one
    subscribes its DM15 handler a second time, and every DM15 is then handled twice)."""
    with tool(bus, notifier, TOOL, right_key) as client:
        return client.read(address, length)


def test_dm14query_reads_is_refused_writes_and_the_truck_keeps_to_the_new_limit(
        start: Callable[..., Node], udp: Udp) -> None:
    ecu = engine(start, udp)
    with heard(udp) as (bus, notifier):
        limit = read(bus, notifier, LIMIT_ADDRESS, 8)
        assert limit is not None and struct.unpack("<d", limit)[0] == float("inf")
        header = read(bus, notifier, AREA_START, HEADER_SIZE)
        rest = read(bus, notifier, LIMIT_ADDRESS, AREA_SIZE - HEADER_SIZE)
        assert header is not None and rest is not None
        image = bytearray(header + rest)
        image[HEADER_SIZE:HEADER_SIZE + 8] = struct.pack("<d", NEW_LIMIT_KPH)
        image[-INTEGRITY_SIZE:] = struct.pack("<I", zlib.adler32(bytes(image[:-INTEGRITY_SIZE])))
        with tool(bus, notifier, TOOL, wrong_key) as client:
            since = len(bus.frames)
            client.query.write(ENGINE, 0, LIMIT_ADDRESS, list(image[HEADER_SIZE:]))
            bus.wait(lambda: any(s is Status.OPERATION_FAILED for s, *_ in bus.dm15s(TOOL, since)),
                     "refusal")
            assert (Status.OPERATION_FAILED, 0, Error.INVALID_KEY, NO_KEY) in bus.dm15s(TOOL, since)
        assert read(bus, notifier, LIMIT_ADDRESS, 8) == limit  # nothing was written
        with tool(bus, notifier, TOOL, right_key) as client:
            client.query.write(ENGINE, 0, LIMIT_ADDRESS, list(image[HEADER_SIZE:]))
        assert read(bus, notifier, LIMIT_ADDRESS, 8) == struct.pack("<d", NEW_LIMIT_KPH)
        with tool(bus, notifier, TOOL, right_key) as client:
            client.ca.send_request(0, DM19_PGN, ENGINE)
            bus.wait(lambda: any(pgn == DM19_PGN for pgn, _ in client.answers), "DM19")
            (dm19,) = [data for pgn, data in client.answers if pgn == DM19_PGN]
            assert struct.unpack_from("<I", dm19)[0] == zlib.crc32(bytes(image))
    lines = len(ecu.log.splitlines())
    start("ccm", *udp.args(), "--profile", "j1939", "--vehicle", "class6", "--set-speed", "80")
    ecu.wait_for(r"speed +(3[5-9]|[4-9]\d)\.\d+ km/h")
    ecu.wait_for(r"distance", nth=len(re.findall("distance", ecu.log)) + 10)  # 10 s more
    driven = speeds(ecu, lines)
    assert max(driven) > NEW_LIMIT_KPH - 5 and max(driven) <= NEW_LIMIT_KPH


def test_a_second_tool_is_told_busy_while_a_session_is_open(start: Callable[..., Node], udp: Udp) -> None:
    engine(start, udp)
    with heard(udp) as (bus, notifier):
        # the first tool opens a session and stays in it: a DM14 read, left at its seed
        bus.bus.send(can.Message(arbitration_id=0x18D900F9, data=bytes([8, 0x03, 0x18, 0, 0x08, 0, 7, 0])))
        bus.wait(lambda: bool(bus.dm15s(TOOL)), "seed")
        with tool(bus, notifier, SECOND_TOOL, right_key) as second:
            since = len(bus.frames)
            assert second.read(LIMIT_ADDRESS, 8) is None
            assert bus.dm15s(SECOND_TOOL, since)[0][:3] == (Status.BUSY, 0, Error.BUSY_OTHER_TOOL)
