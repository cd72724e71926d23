"""A DM14 tool on the powertrain rig's controller, in virtual time: writes of up to seven bytes,
each a session of its own (seed, key, DM16, operation completed), answered by what it hears."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import can

from ecu_sim.j1939.frames import Pdu, arbitration_id
from ecu_sim.memory_access.keys import key_of
from ecu_sim.memory_access.messages import (
    DM14_PGN,
    DM15_PGN,
    DM16_PGN,
    NO_KEY,
    Command,
    Dm14,
    Status,
    decode_dm15,
    encode_dm14,
    encode_dm16,
)
from ecu_sim.uds.security import default_key
from tests.helpers.powertrainrig import CONTROLLER, Controller


def spatial_writes(offset: int, data: bytes, level: int = 4) -> list[tuple[Dm14, bytes]]:
    """``data`` at a spatial pointer, in pieces one frame carries."""
    return [(Dm14(len(data[at:at + 7]), True, Command.WRITE, offset + at, 0, level), data[at:at + 7])
            for at in range(0, len(data), 7)]


@dataclass
class Dm14Tool:
    node: int
    sessions: list[tuple[Dm14, bytes]]
    start: int
    controller: Controller | None = None
    done: bool = False
    #: the DM15 of a refusal: (status, length, error indicator, seed)
    refused: tuple[object, ...] | None = None
    _index: int = 0
    _stage: str = "open"
    _seen: int = 0
    _keyed: list[Dm14] = field(default_factory=list)

    def __call__(self, tick: int) -> list[can.Message]:
        if self.done or tick < self.start or self.controller is None:
            return []
        heard = self.controller.heard
        answers = [decode_dm15(bytes(h.msg.data)) for h in heard[self._seen:]
                   if h.pgn == DM15_PGN and h.source == self.node]
        self._seen = len(heard)
        request, data = self.sessions[self._index]
        if self._stage == "open":
            self._stage = "seed"
            return [self._frame(DM14_PGN, encode_dm14(request))]
        if not answers:
            return []
        status, _, _, seed = answers[0]
        expected = Status.OPERATION_COMPLETED if self._stage == "completed" else Status.PROCEED
        if status is not expected:
            self.refused, self.done = answers[0], True
            return []
        if self._stage == "seed":
            self._stage = "proceed"
            keyed = dataclasses.replace(request, key=key_of(default_key, seed, request.key))
            return [self._frame(DM14_PGN, encode_dm14(keyed))]
        if self._stage == "proceed":
            self._stage = "completed"
            return [self._frame(DM16_PGN, encode_dm16(data))]
        closing = dataclasses.replace(request, command=Command.OPERATION_COMPLETED, length=1, key=NO_KEY)
        self._index += 1
        self._stage = "open"
        self.done = self._index == len(self.sessions)
        return [self._frame(DM14_PGN, encode_dm14(closing))]

    def _frame(self, pgn: int, data: bytes) -> can.Message:
        return can.Message(arbitration_id=arbitration_id(Pdu(pgn, data, self.node), CONTROLLER),
                           data=data, is_extended_id=True)
