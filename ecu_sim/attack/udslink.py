"""The attacker as a UDS tester: single-frame requests on ISO-TP's normal fixed addressing, and
the single-frame answers the target sent it, read from what the attacker heard.

The requests these attacks send fit one frame (a session, a seed, a key, a reset, a
CommunicationControl), so no ISO-TP client is needed: the frame encoding is the server's own
(:mod:`ecu_sim.isotp.frames`), not a second copy. A negative answer "response pending" (0x78) is
no answer yet, as a tester takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import can

from ecu_sim.isotp import frames
from ecu_sim.isotp.frames import FlowStatus, FrameKind

#: priority 6, PDU format 0xDA: a physical request's identifier without its addresses
_REQUEST_BASE: Final = 0x18DA0000
_PENDING: Final = 0x78
NEGATIVE: Final = 0x7F


def request_id(target: int, tester: int) -> int:
    return _REQUEST_BASE | (target << 8) | tester


def request(target: int, tester: int, *payload: int) -> can.Message:
    """A single-frame request of ``payload`` (at most seven bytes) from ``tester`` to ``target``."""
    return can.Message(arbitration_id=request_id(target, tester), data=frames.single(bytes(payload)),
                       is_extended_id=True)


def raw(target: int, tester: int, data: bytes) -> can.Message:
    """Any ISO-TP frame from ``tester`` to ``target`` (a first frame, a flow control)."""
    return can.Message(arbitration_id=request_id(target, tester), data=data, is_extended_id=True)


def flow_wait(target: int, tester: int) -> can.Message:
    return raw(target, tester, frames.flow_control(FlowStatus.WAIT, 0, 0))


def from_target(heard: Sequence[can.Message], target: int, tester: int) -> list[bytes]:
    """Every frame's data the target sent ``tester``, in bus order."""
    wanted = frames.answer_id(target, tester)
    return [bytes(msg.data) for msg in heard if msg.arbitration_id == wanted and msg.data]


def answers(heard: Sequence[can.Message], target: int, tester: int) -> list[bytes]:
    """The single-frame answers the target sent ``tester``, "response pending" left out."""
    out = []
    for data in from_target(heard, target, tester):
        size = data[0] & 0x0F
        if data[0] >> 4 != FrameKind.SINGLE or not 0 < size < len(data):
            continue
        payload = data[1:1 + size]
        if not (payload[0] == NEGATIVE and len(payload) >= 3 and payload[2] == _PENDING):
            out.append(payload)
    return out


def first_frames(heard: Sequence[can.Message], target: int, tester: int) -> int:
    """How many first frames of a multi-frame answer the target sent ``tester``."""
    return sum(1 for data in from_target(heard, target, tester) if data[0] >> 4 == FrameKind.FIRST)
