"""ISO-TP's identifiers and protocol control information: what a frame is, and the bytes of one.

Normal fixed addressing puts the addresses in the 29-bit identifier, as J1939 does: a physical
request goes to ``18DA<target><source>``, a functional one to ``18DB<target><source>``, and the
answer swaps the two addresses on ``18DA``. The priority bits are not checked on reception (a
tester may choose its own); answers go at priority 6, the one ISO 15765-2 names for it.

Frames are padded to eight bytes with 0xCC, the filler ISO 15765-2 recommends, so a receiver that
insists on full frames (the kernel's ``CAN_ISOTP`` with padding checks) takes them.
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple

#: the PDU formats of the two addressings (PGN 0xDA00 physical, 0xDB00 functional)
PHYSICAL_PF: Final = 0xDA
FUNCTIONAL_PF: Final = 0xDB
#: priority 6, data page 0, PDU format 0xDA: the base of an answer's identifier
_ANSWER_BASE: Final = 0x18DA0000
#: the byte frames are padded with
PADDING: Final = 0xCC
#: the payload of one classic CAN frame
FRAME_BYTES: Final = 8
#: the largest message a first frame's 12-bit length can announce
MAX_MESSAGE: Final = 4095
#: data bytes a single frame, a first frame and a consecutive frame carry
SINGLE_MAX: Final = 7
FIRST_DATA: Final = 6
CONSECUTIVE_DATA: Final = 7


class FrameKind(enum.IntEnum):
    """The frame types by the high nibble of the first byte."""

    SINGLE = 0
    FIRST = 1
    CONSECUTIVE = 2
    FLOW_CONTROL = 3


class FlowStatus(enum.IntEnum):
    """A flow control frame's status: go on, wait for another flow control, or give up."""

    CONTINUE = 0
    WAIT = 1
    OVERFLOW = 2


class Addressed(NamedTuple):
    """Who a diagnostic frame is from and whether it went to everyone (functional)."""

    tester: int
    target: int
    functional: bool


def addressed(can_id: int) -> Addressed | None:
    """The addresses of a 29-bit identifier on PGN 0xDA00 or 0xDB00; None for any other."""
    pf = (can_id >> 16) & 0x3FF  # data page and extended data page must be 0
    if pf != PHYSICAL_PF and pf != FUNCTIONAL_PF:
        return None
    return Addressed(can_id & 0xFF, (can_id >> 8) & 0xFF, pf == FUNCTIONAL_PF)


def answer_id(node: int, tester: int) -> int:
    """The identifier of a frame from ``node`` to ``tester`` (flow control or answer)."""
    return _ANSWER_BASE | (tester << 8) | node


def pad(data: bytes) -> bytes:
    return data + bytes((PADDING,)) * (FRAME_BYTES - len(data))


def single(payload: bytes) -> bytes:
    return pad(bytes((len(payload),)) + payload)


def first(payload: bytes) -> bytes:
    size = len(payload)
    return bytes((0x10 | (size >> 8), size & 0xFF)) + payload[:FIRST_DATA]


def consecutive(sequence: int, chunk: bytes) -> bytes:
    return pad(bytes((0x20 | (sequence & 0x0F),)) + chunk)


def flow_control(status: FlowStatus, block_size: int, st_min: int) -> bytes:
    return pad(bytes((0x30 | status, block_size, st_min)))


def st_min_s(raw: int) -> float:
    """STmin's byte as seconds: 0..0x7F milliseconds, 0xF1..0xF9 hundreds of microseconds; a
    reserved value counts as the longest, 127 ms, as ISO 15765-2 tells a sender to do."""
    if raw <= 0x7F:
        return raw / 1000.0
    if 0xF1 <= raw <= 0xF9:
        return (raw - 0xF0) / 10000.0
    return 0.127
