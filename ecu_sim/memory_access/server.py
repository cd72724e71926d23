"""A node's J1939-73 memory access server: DM14 in, DM15 and DM16 out, on the node's ticks.

One session at a time per node: a read, write, erase or boot load opens it with the user level,
is answered with a seed, and goes on only with the key; a second tool is told the node is busy
until the session closes with the tool's "operation completed" or "failed", or the tool falls
silent past :data:`SESSION_TIMEOUT_S`. A request is answered at the tick after it arrived, as
every request of the node's J1939 layer is, so a simulation gives the same bytes twice and a
recording replays.

Writes go to the staging bank of the node's one programmable memory (the one UDS programs):
the first write of a series starts from a copy of the active image, so a tool may write one
parameter; at the tool's "operation completed" the staged image is checked, and only an image
that passes is committed and made the node's behaviour (:meth:`MemoryNode.apply`). An image that
does not pass yet (a parameter written without the integrity field after it) stays staged for
the next write and is not run. Everything refused is counted by its error indicator and leaves
the memory as it was.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.j1939.frames import Pdu, Received, received
from ecu_sim.j1939.ids import destination_of, pgn_of
from ecu_sim.memory_access.areas import CHANGES, GUARDED, MemorySpan, known_level, permitted, resolve
from ecu_sim.memory_access.keys import MemoryKeys
from ecu_sim.memory_access.messages import (
    DM14_PGN,
    DM15_PGN,
    DM16_PGN,
    NO_KEY,
    PRIORITY,
    Command,
    Dm14,
    Error,
    Status,
    decode_dm14,
    decode_dm16,
    encode_dm15,
    encode_dm16,
)
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.uds.server import STANDSTILL_KPH

log = logging.getLogger(__name__)

#: a step of a session (the key after the seed, the data after "proceed", "operation completed"
#: after the data) must come within this, or the session ends and another tool may start
SESSION_TIMEOUT_S: Final = 5.0


class MemoryNode(Protocol):
    """What the node lends its memory access: the conditions of a write and the restart after one."""

    def speed_kph(self) -> float:
        """The vehicle's speed as the node knows it; NaN when it does not."""

    def engine_rpm(self) -> float:
        """The engine's speed as the node knows it; NaN when it does not."""

    def apply(self) -> None:
        """The active image takes effect now."""


class Stage(Enum):
    KEY = "waiting for the key"
    DATA = "waiting for the tool's DM16"
    SENDING = "sending DM16"
    CLOSING = "waiting for the tool's operation completed"


@dataclass
class _Session:
    tool: int
    request: Dm14
    span: MemorySpan
    stage: Stage
    deadline: int
    since: int


class MemoryAccessServer:
    """DM14/DM15/DM16 of the node at ``address``; ``sending(tool)`` tells whether a DM16 to that
    tool is still on its way by the transport protocol."""

    def __init__(self, address: int, memory: ProgrammableMemory, node: MemoryNode, keys: MemoryKeys,
                 period_s: float, sending: Callable[[int], bool]) -> None:
        self.address = address
        self.memory = memory
        self._node = node
        self.keys = keys
        self._sending = sending
        self._timeout = max(1, ticks_in(SESSION_TIMEOUT_S, period_s))
        self._inbox: list[Received] = []
        self._session: _Session | None = None
        #: staged writes not committed yet: the next write goes on from them
        self._staged = False
        #: refusals by error indicator, busy answers among them
        self.refused: Counter[Error] = Counter()
        self.commits = 0
        self.incomplete = 0
        self.last_error = Error.NONE

    @property
    def session(self) -> tuple[int, Stage] | None:
        """The open session's tool and stage."""
        return None if self._session is None else (self._session.tool, self._session.stage)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        """Take a DM14 or a one-frame DM16 addressed to the node; False for any other frame."""
        if pgn_of(can_id) not in (DM14_PGN, DM16_PGN) or destination_of(can_id) != self.address:
            return False
        self._inbox.append(received(can_id, data))
        return True

    def take(self, message: Received) -> None:
        """A DM16 the transport protocol brought whole (the layer hears every such message)."""
        if message.pgn == DM16_PGN and message.destination == self.address:
            self._inbox.append(message)

    def next_due(self, tick: int) -> int:
        if self._inbox or (self._session is not None and self._session.stage is Stage.SENDING):
            return tick + 1
        return self._session.deadline if self._session is not None else 1 << 62

    def tick(self, tick: int) -> list[Pdu]:
        """Answer what came, close what went silent; the frames to send now."""
        out: list[Pdu] = []
        inbox, self._inbox = self._inbox, []
        for frame in inbox:
            if frame.pgn == DM14_PGN:
                request = decode_dm14(frame.data)
                if request is not None:
                    self._on_dm14(frame.source, request, tick, out)
            else:
                self._on_dm16(frame.source, frame.data, tick, out)
        session = self._session
        if session is not None and session.stage is Stage.SENDING and tick > session.since \
                and not self._sending(session.tool):
            self._advance(session, Stage.CLOSING, tick)
            out.append(self._dm15(session.tool, Status.OPERATION_COMPLETED))
        if session is not None and self._session is session and tick >= session.deadline:
            log.info("memory access: tool 0x%02X silent while %s: session closed", session.tool,
                     session.stage.value)
            self._refuse(session.tool, Error.COMPLETION_TIMEOUT, out)
        return out

    def _on_dm14(self, tool: int, request: Dm14, tick: int, out: list[Pdu]) -> None:
        session, command = self._session, request.command
        if session is not None and session.tool != tool:
            if command in GUARDED or command == Command.STATUS_REQUEST:
                self.refused[Error.BUSY_OTHER_TOOL] += 1
                out.append(self._dm15(tool, Status.BUSY, error=Error.BUSY_OTHER_TOOL))
            return
        if command == Command.STATUS_REQUEST:
            out.append(self._dm15(tool, Status.OPERATION_COMPLETED, error=self.last_error))
        elif command == Command.OPERATION_COMPLETED:
            if session is not None and session.stage is Stage.CLOSING:
                self._close(session)
        elif command == Command.OPERATION_FAILED:
            if session is not None:
                self._abandon()
        elif command not in GUARDED:
            self._refuse(tool, Error.GENERAL_ADDRESSING, out)  # EDCP generation: no such memory here
        elif session is not None and session.stage is Stage.KEY and request.target == session.request.target:
            self._on_key(session, request.key, tick, out)
        else:
            self._open(tool, request, tick, out)

    def _open(self, tool: int, request: Dm14, tick: int, out: list[Pdu]) -> None:
        if self._session is not None:
            self._abandon()  # the same tool starting over
        span = resolve(request, self.memory.start, self.memory.size)
        if isinstance(span, Error):
            self._refuse(tool, span, out)
            return
        level = request.key
        if not known_level(level) or not permitted(level, request.command, span):
            self._refuse(tool, Error.INVALID_LEVEL, out)
            return
        refusal = self._conditions(request.command)
        if refusal is None:
            seed = self.keys.seed(level, tick)
            if isinstance(seed, Error):
                refusal = seed
        if refusal is not None:
            self._refuse(tool, refusal, out)
            return
        self._session = _Session(tool, request, span, Stage.KEY, tick + self._timeout, tick)
        out.append(self._dm15(tool, Status.PROCEED, seed=seed))

    def _on_key(self, session: _Session, key: int, tick: int, out: list[Pdu]) -> None:
        command, span = session.request.command, session.span
        refusal = self.keys.check(key, tick) or self._conditions(command)
        if refusal is not None:
            self._refuse(session.tool, refusal, out)
            return
        if command == Command.READ:
            data = self.memory.active.data[span.offset:span.offset + span.length]
            out.append(self._dm15(session.tool, Status.PROCEED, length=span.length))
            out.append(Pdu(DM16_PGN, encode_dm16(data), session.tool, PRIORITY))
            if len(data) <= 7:
                self._advance(session, Stage.CLOSING, tick)
                out.append(self._dm15(session.tool, Status.OPERATION_COMPLETED))
            else:
                self._advance(session, Stage.SENDING, tick)
        elif command == Command.ERASE:
            self.memory.erase()
            self._staged = True
            self._advance(session, Stage.CLOSING, tick)
            out.append(self._dm15(session.tool, Status.OPERATION_COMPLETED))
        else:
            if command == Command.BOOT_LOAD:
                self.memory.erase()  # boot mode from here until a verified image is committed
            elif not self._staged and self.memory.application_valid:
                self.memory.stage_active()
            self._staged = True
            self._advance(session, Stage.DATA, tick)
            out.append(self._dm15(session.tool, Status.PROCEED, length=span.length))

    def _on_dm16(self, tool: int, payload: bytes, tick: int, out: list[Pdu]) -> None:
        session = self._session
        if session is None or session.tool != tool or session.stage is not Stage.DATA:
            return  # data nobody asked to send: J1939-73 gives no answer to it
        data = decode_dm16(payload, session.span.length)
        if data is None:
            self._refuse(tool, Error.INVALID_LENGTH, out)  # nothing of it is written
            return
        self.memory.write(self.memory.start + session.span.offset, data)
        self._advance(session, Stage.CLOSING, tick)
        out.append(self._dm15(tool, Status.OPERATION_COMPLETED))

    def _close(self, session: _Session) -> None:
        """The tool's operation completed: a change is checked, committed and applied."""
        self._session = None
        if session.request.command not in CHANGES:
            return
        problem = self.memory.check()
        if problem is not None:
            self.incomplete += 1
            self.last_error = Error.FLASH_DID_NOT_VERIFY
            log.info("memory access: the staged image is not committed yet (%s)", problem)
            return
        self.memory.commit()
        self._staged = False
        self.commits += 1
        self.last_error = Error.NONE
        log.info("memory access: image %s (CVN %08X) committed by tool 0x%02X", self.memory.calibration_id,
                 self.memory.cvn, session.tool)
        self._node.apply()

    def _abandon(self) -> None:
        """A session ended without completing: staged writes of it are not kept for the next."""
        session, self._session = self._session, None
        if session is not None and session.request.command in CHANGES and self.memory.application_valid:
            self._staged = False

    def _conditions(self, command: int) -> Error | None:
        if command not in CHANGES:
            return None
        if self._node.engine_rpm() > 0:  # NaN (not known) is judged by the truck's speed alone
            return Error.ENGINE_RUNNING
        speed = self._node.speed_kph()
        if math.isnan(speed) or speed >= STANDSTILL_KPH:
            return Error.VEHICLE_MOVING
        return None

    def _refuse(self, tool: int, error: Error, out: list[Pdu]) -> None:
        if self._session is not None and self._session.tool == tool:
            self._abandon()
        self.refused[error] += 1
        self.last_error = error
        out.append(self._dm15(tool, Status.OPERATION_FAILED, error=error))

    def _advance(self, session: _Session, stage: Stage, tick: int) -> None:
        session.stage, session.since, session.deadline = stage, tick, tick + self._timeout

    def _dm15(self, tool: int, status: Status, length: int = 0, error: int = Error.NONE,
              seed: int = NO_KEY) -> Pdu:
        return Pdu(DM15_PGN, encode_dm15(status, length, error, seed), tool, PRIORITY)
