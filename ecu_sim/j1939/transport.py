"""The transport protocol (J1939-21) for payloads over eight bytes, sent and received on ticks.

Broadcast (BAM): the announcement goes out at a tick, then one data packet every
:func:`~ecu_sim.j1939.timing.bam_gap_ticks` ticks, so packets are never closer than the standard's
minimum gap; one broadcast at a time per sender, the rest wait in order. Connection mode
(RTS/CTS) to one destination: request to send, then the packets each clear to send asks for, at
the tick after it arrived; the end of message acknowledgement closes the session. A session whose
partner stays silent past T1..T4 is aborted (and the abort sent where connection mode asks for
it). The timeouts count ticks (:func:`~ecu_sim.j1939.timing.expired_after`). The layouts come
from the layer's DBC (:mod:`ecu_sim.j1939.layouts`).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, Pdu, Received
from ecu_sim.j1939.ids import GLOBAL_ADDRESS
from ecu_sim.j1939.timing import T3_S, T4_S, bam_gap_ticks, expired_after

log = logging.getLogger(__name__)

RTS: Final = 16
CTS: Final = 17
EOMA: Final = 19
BAM: Final = 32
ABORT: Final = 255
#: abort reasons: already in a session, timeout, bad sequence number
ABORT_BUSY: Final = 1
ABORT_TIMEOUT: Final = 3
ABORT_BAD_SEQUENCE: Final = 7
MAX_SIZE: Final = 1785
_PRIORITY: Final = 7


def packets(data: bytes) -> list[bytes]:
    """The seven-byte chunks of ``data``, the last padded with 0xFF."""
    return [data[i:i + 7].ljust(7, b"\xff") for i in range(0, len(data), 7)]


def cm(values: dict[str, int], destination: int) -> Pdu:
    return Pdu(TP_CM_PGN, layouts.encode(layouts.TP_CM, values), destination, _PRIORITY)


def dt(sequence: int, chunk: bytes, destination: int) -> Pdu:
    data = layouts.encode(layouts.TP_DT, {"SequenceNumber": sequence,
                                         "Data": int.from_bytes(chunk, "little")})
    return Pdu(TP_DT_PGN, data, destination, _PRIORITY)


def abort(pgn: int, reason: int, destination: int) -> Pdu:
    return cm({"ControlByte": ABORT, "Abort_Reason": reason, "Abort_PGN": pgn}, destination)


@dataclass
class _Outgoing:
    pgn: int
    chunks: list[bytes]
    destination: int
    deadline: int = 0
    #: next sequence number to send (BAM) or the ones a CTS asked for (connection mode)
    next_sequence: int = 1
    to_send: list[int] = field(default_factory=list)


class TransportSender:
    """Sends payloads over eight bytes: broadcasts one after another, one session per destination."""

    def __init__(self, period_s: float) -> None:
        self._gap = bam_gap_ticks(period_s)
        self._t3 = expired_after(T3_S, period_s)
        self._t4 = expired_after(T4_S, period_s)
        self._broadcasts: deque[tuple[int, bytes]] = deque()
        self._bam: _Outgoing | None = None
        self._sessions: dict[int, _Outgoing] = {}
        self._waiting: dict[int, deque[tuple[int, bytes]]] = {}
        #: sessions this node aborted (its partner went silent) or saw aborted
        self.aborted = 0

    def send(self, pgn: int, data: bytes, destination: int) -> None:
        """Queue ``data`` (9..1785 bytes) for ``destination``: broadcast when it is global."""
        if not 8 < len(data) <= MAX_SIZE:
            raise ValueError(f"the transport protocol carries 9..{MAX_SIZE} bytes, got {len(data)}")
        if destination == GLOBAL_ADDRESS:
            self._broadcasts.append((pgn, data))
        else:
            self._waiting.setdefault(destination, deque()).append((pgn, data))

    @property
    def busy(self) -> bool:
        return bool(self._broadcasts or self._bam or self._sessions or any(self._waiting.values()))

    def tick(self, tick: int, out: list[Pdu]) -> None:
        """This tick's announcement or packet of the broadcast, new sessions, timeouts."""
        self._tick_broadcast(tick, out)
        for destination, queue in self._waiting.items():
            if queue and destination not in self._sessions:
                pgn, data = queue.popleft()
                session = _Outgoing(pgn, packets(data), destination, tick + self._t3)
                self._sessions[destination] = session
                out.append(cm({"ControlByte": RTS, "RTS_TotalSize": len(data),
                                "RTS_TotalPackets": len(session.chunks), "RTS_PGN": pgn}, destination))
        for destination, session in list(self._sessions.items()):
            for sequence in session.to_send:
                out.append(dt(sequence, session.chunks[sequence - 1], destination))
            session.to_send = []
            if tick >= session.deadline:
                log.warning("transport to 0x%02X timed out waiting for its partner: aborted", destination)
                self.aborted += 1
                del self._sessions[destination]
                out.append(abort(session.pgn, ABORT_TIMEOUT, destination))

    def _tick_broadcast(self, tick: int, out: list[Pdu]) -> None:
        bam = self._bam
        if bam is None and self._broadcasts:
            pgn, data = self._broadcasts.popleft()
            self._bam = _Outgoing(pgn, packets(data), GLOBAL_ADDRESS, tick + self._gap)
            out.append(cm({"ControlByte": BAM, "BAM_TotalSize": len(data),
                            "BAM_TotalPackets": len(self._bam.chunks), "BAM_PGN": pgn}, GLOBAL_ADDRESS))
        elif bam is not None and tick >= bam.deadline:
            out.append(dt(bam.next_sequence, bam.chunks[bam.next_sequence - 1], GLOBAL_ADDRESS))
            bam.next_sequence += 1
            bam.deadline = tick + self._gap
            if bam.next_sequence > len(bam.chunks):
                self._bam = None

    def on_cm(self, frame: Received, values: dict[str, int], tick: int) -> None:
        """A connection management frame from the destination of one of our sessions."""
        session = self._sessions.get(frame.source)
        if session is None:
            return
        control = values["ControlByte"]
        if control == CTS and values["CTS_PGN"] == session.pgn:
            count, first = values["CTS_Packets"], values["CTS_NextSequence"]
            if count == 0:
                session.deadline = tick + self._t4
                return
            last = min(first + count - 1, len(session.chunks))
            session.to_send = list(range(max(first, 1), last + 1))
            session.deadline = tick + self._t3
        elif control == EOMA and values["EOMA_PGN"] == session.pgn:
            del self._sessions[frame.source]
        elif control == ABORT:
            self.aborted += 1
            del self._sessions[frame.source]
