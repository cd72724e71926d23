"""J1939-73's memory access messages as bytes: DM14 (the tool's request), DM15 (the node's answer)
and DM16 (the data), and the codes they carry.

The layouts are the ones the two open implementations agree on; where they disagree (the byte
count of a DM16 sent by the transport protocol: 0xFF or the real count) a DM16 is read either way
and sent with the real count while it fits the byte, else 0xFF. Frames are built by hand rather
than from a DBC: the 11-bit length is split across two bytes around the command, which a DBC
signal cannot say in one piece.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

DM14_PGN: Final = 0xD900
DM15_PGN: Final = 0xD800
DM16_PGN: Final = 0xD700
#: DM15 and DM16 go at priority 7, as the recorded exchange of the reference has them
PRIORITY: Final = 7
#: the 11-bit length field's largest value
LENGTH_FIELD_MAX: Final = 0x7FF
#: the most data one DM16 holds: the transport protocol's 1785 bytes less the byte count
DATA_MAX: Final = 1784
#: DM15's seed field: no key is needed now (a "proceed" after the key, or an answer without one)
NO_KEY: Final = 0xFFFF
#: seeds with a meaning of their own, never given as a seed
MEANINGFUL_SEEDS: Final = frozenset({0x0000, 0x0001, NO_KEY})
_PAD: Final = 0xFF


class Command(IntEnum):
    ERASE = 0
    READ = 1
    WRITE = 2
    STATUS_REQUEST = 3
    OPERATION_COMPLETED = 4
    OPERATION_FAILED = 5
    BOOT_LOAD = 6
    EDCP_GENERATION = 7


class Status(IntEnum):
    PROCEED = 0
    BUSY = 1
    OPERATION_COMPLETED = 4
    OPERATION_FAILED = 5


class Error(IntEnum):
    """DM15's error indicator (24 bits): the values the node answers with."""

    BUSY_OTHER_TOOL = 0x02
    FLASH_DID_NOT_VERIFY = 0x22
    GENERAL_ADDRESSING = 0x100
    INVALID_LENGTH = 0x102
    MEMORY_OVERFLOW = 0x103
    BOOT_LOAD_OUT_OF_RANGE = 0x107
    SECURITY_GENERAL = 0x1000
    INVALID_LEVEL = 0x1002
    INVALID_KEY = 0x1003
    ENGINE_RUNNING = 0x1006
    VEHICLE_MOVING = 0x1007
    COMPLETION_TIMEOUT = 0x10004
    NONE = 0xFFFFFF


@dataclass(frozen=True, slots=True)
class Dm14:
    """A tool's request; ``key`` is B7..B8: the user level in the first request of a session, the
    key in the second, 0xFFFF in "operation completed" and "failed"."""

    length: int
    spatial: bool
    command: int
    pointer: int
    extension: int
    key: int

    @property
    def target(self) -> tuple[int, bool, int, int, int]:
        """What the request is about: a second request with the key must name the same."""
        return self.command, self.spatial, self.pointer, self.extension, self.length


def decode_dm14(data: bytes) -> Dm14 | None:
    """The request in ``data``; None when it is shorter than a DM14."""
    if len(data) < 8:
        return None
    length = data[0] | (data[1] >> 5) << 8
    return Dm14(length, bool(data[1] >> 4 & 1), data[1] >> 1 & 7,
                int.from_bytes(data[2:5], "little"), data[5], int.from_bytes(data[6:8], "little"))


def encode_dm14(request: Dm14) -> bytes:
    b2 = (request.length >> 8 & 7) << 5 | int(request.spatial) << 4 | (request.command & 7) << 1 | 1
    return bytes([request.length & 0xFF, b2, *request.pointer.to_bytes(3, "little"), request.extension,
                  *request.key.to_bytes(2, "little")])


def encode_dm15(status: Status, length: int = 0, error: int = Error.NONE, seed: int = NO_KEY) -> bytes:
    """The answer; bit 5 of B2 is set as in the recorded exchange (the answers there all carry it)."""
    b2 = (length >> 8 & 7) << 5 | 1 << 4 | int(status) << 1 | 1
    return bytes([length & 0xFF, b2, *error.to_bytes(3, "little"), _PAD, *seed.to_bytes(2, "little")])


def decode_dm15(data: bytes) -> tuple[Status | int, int, int, int]:
    """(status, length, error indicator, seed) of an answer: what a tool reads."""
    status = data[1] >> 1 & 7
    known = Status(status) if status in Status._value2member_map_ else status
    return (known, data[0] | (data[1] >> 5) << 8, int.from_bytes(data[2:5], "little"),
            int.from_bytes(data[6:8], "little"))


def encode_dm16(data: bytes) -> bytes:
    """One DM16: the count and the data, padded to a frame when it fits one."""
    payload = bytes([min(len(data), 0xFF)]) + data
    return payload.ljust(8, bytes([_PAD]))


def decode_dm16(payload: bytes, expected: int) -> bytes | None:
    """The data of a DM16 that should hold ``expected`` bytes; None when it holds another count.

    In one frame the count byte says how many of the seven bytes are data; by the transport
    protocol every byte after it is, and the count byte may be 0xFF or the count's low byte."""
    if len(payload) < 2:
        return None
    count = payload[0]
    if len(payload) <= 8:
        return payload[1:1 + count] if count == expected and count <= len(payload) - 1 else None
    data = payload[1:]
    if len(data) != expected or count not in (0xFF, expected & 0xFF):
        return None
    return data
