"""The service tool's memory access: a J1939-73 read or write of a node's memory, seed and key.

The tool speaks through ecu-sim's own J1939 layer (:class:`~ecu_sim.runs.j1939tool.J1939Tool`),
not can-j1939's ``Dm14Query``: the layer is the one the other ``ecu-sim j1939`` actions use and
carries DM16 by RTS/CTS both ways, it needs nothing installed beyond ecu-sim, and a person's
tool must say why a node refused. ``Dm14Query`` 2.0.12 raises a busy answer in its notifier's
thread rather than to its caller, misses "operation failed", always asks at user level 7 and
counts at most 255 objects; it stays the independent client the tests judge the node with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from ecu_sim.j1939.frames import Pdu, Received
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
    decode_dm16,
    encode_dm14,
    encode_dm16,
)
from ecu_sim.runs.j1939tool import J1939Tool
from ecu_sim.uds.security import KeyAlgorithm

#: what each error indicator means to a person at the tool
ERROR_TEXT: Final[dict[int, str]] = {
    Error.BUSY_OTHER_TOOL: "busy with another tool; try again when its session ends",
    Error.FLASH_DID_NOT_VERIFY: "the staged image did not verify",
    Error.GENERAL_ADDRESSING: "the pointer is outside the node's memory map",
    Error.INVALID_LENGTH: "a length no DM16 can carry, or data of another length than asked",
    Error.MEMORY_OVERFLOW: "the span runs past the end of the memory",
    Error.BOOT_LOAD_OUT_OF_RANGE: "an erase or boot load takes the whole area at its start address",
    Error.SECURITY_GENERAL: "locked out after too many invalid keys; wait for the delay",
    Error.INVALID_LEVEL: "the user level may not do that there",
    Error.INVALID_KEY: "invalid key: check the key algorithm",
    Error.ENGINE_RUNNING: "the engine is running",
    Error.VEHICLE_MOVING: "the vehicle is not stationary",
    Error.COMPLETION_TIMEOUT: "the session timed out",
}


class MemoryAccessError(Exception):
    """The node refused, or did not answer: the message says which and why."""


@dataclass(frozen=True)
class Where:
    """A pointer as a person gives it: ``spatial`` False: ``pointer`` is the address."""

    pointer: int
    spatial: bool = False
    extension: int = 0

    def request(self, command: Command, length: int, level: int) -> Dm14:
        if self.spatial:
            return Dm14(length, True, command, self.pointer & 0xFFFFFF, self.extension, level)
        return Dm14(length, False, command, self.pointer & 0xFFFFFF, self.pointer >> 24 & 0xFF, level)


class MemoryClient:
    """Reads and writes through ``tool``; ``algorithm`` computes the key as the node does."""

    def __init__(self, tool: J1939Tool, node: int, algorithm: KeyAlgorithm, level: int,
                 wait_s: float) -> None:
        self._tool = tool
        self._node = node
        self._algorithm = algorithm
        self._level = level
        self._wait_s = wait_s
        #: frames heard in this session that were looked at already
        self._taken = 0

    def read(self, where: Where, length: int) -> bytes:
        request = self._unlock(where.request(Command.READ, length, self._level))
        frame = self._next(None, DM16_PGN, "DM16")
        data = decode_dm16(frame.data, length)
        if data is None:
            raise MemoryAccessError(f"0x{self._node:02X}: a DM16 of another length than the {length} "
                                    "bytes asked")
        self._answer(None, {Status.OPERATION_COMPLETED})
        self._close(request)
        return data

    def write(self, where: Where, data: bytes) -> None:
        request = self._unlock(where.request(Command.WRITE, len(data), self._level))
        self._answer(Pdu(DM16_PGN, encode_dm16(data), self._node), {Status.OPERATION_COMPLETED})
        self._close(request)

    def _unlock(self, request: Dm14) -> Dm14:
        """The session opened and the key sent: the request as sent with the key."""
        self._tool.forget()
        self._taken = 0
        _, _, _, seed = self._answer(self._dm14(request), {Status.PROCEED})
        keyed = replace(request, key=key_of(self._algorithm, seed, self._level))
        self._answer(self._dm14(keyed), {Status.PROCEED})
        return keyed

    def _close(self, request: Dm14) -> None:
        done = replace(request, command=Command.OPERATION_COMPLETED, length=1, key=NO_KEY)
        self._tool.exchange(self._dm14(done), 0.0, lambda heard: True)

    def _answer(self, pdu: Pdu | None, wanted: set[Status]) -> tuple[Status | int, int, int, int]:
        status, length, error, seed = decode_dm15(self._next(pdu, DM15_PGN, "DM15").data)
        if status not in wanted:
            text = ERROR_TEXT.get(error, "an error indicator this tool does not know")
            raise MemoryAccessError(f"0x{self._node:02X}: refused ({_status_name(status)}, error indicator "
                                    f"0x{error:X}): {text}")
        return status, length, error, seed

    def _next(self, pdu: Pdu | None, pgn: int, name: str) -> Received:
        """The next frame of ``pgn`` from the node after those already taken (sending ``pdu`` first)."""
        found: list[Received] = []

        def got(heard: list[Received]) -> bool:
            if found:
                return True
            for index in range(self._taken, len(heard)):
                frame = heard[index]
                if frame.pgn == pgn and frame.source == self._node:
                    self._taken = index + 1
                    found.append(frame)
                    return True
            return False

        if not self._tool.exchange(pdu, self._wait_s, got):
            raise MemoryAccessError(f"0x{self._node:02X}: no {name} within {self._wait_s:g} s")
        return found[0]

    def _dm14(self, request: Dm14) -> Pdu:
        return Pdu(DM14_PGN, encode_dm14(request), self._node, 6)


def _status_name(status: Status | int) -> str:
    return status.name.lower().replace("_", " ") if isinstance(status, Status) else f"status {status}"

