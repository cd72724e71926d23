"""The transport protocol (J1939-21) for payloads over eight bytes, sent and received on ticks.

Broadcast (BAM): the announcement goes out at a tick, then one data packet every
:func:`~ecu_sim.j1939.timing.bam_gap_ticks` ticks, so packets are never closer than the standard's
minimum gap; one broadcast at a time per sender, the node's own before its answers. Connection mode
(RTS/CTS) to one destination: request to send, then the packets each clear to send asks for, at
the tick after it arrived; the end of message acknowledgement closes the session. A session whose
partner stays silent past T1..T4 is aborted (and the abort sent where connection mode asks for
it). The timeouts count ticks (:func:`~ecu_sim.j1939.timing.expired_after`). The layouts come
from the layer's DBC (:mod:`ecu_sim.j1939.layouts`).

Under attack the sender follows the Linux kernel's J1939-21 rules where the standard leaves a
choice (a CTS for packets the message does not have ends the session; an abort or end of message
acknowledgement counts only with the session's PGN), and keeps what waits bounded
(:mod:`ecu_sim.j1939.pending`): a stranger can neither queue answers without end nor hold a
session open for ever.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, Pdu, Received
from ecu_sim.j1939.ids import GLOBAL_ADDRESS
from ecu_sim.j1939.pending import SESSIONS, Pending
from ecu_sim.j1939.timing import T3_S, T4_S, bam_gap_ticks, expired_after

log = logging.getLogger(__name__)

RTS: Final = 16
CTS: Final = 17
EOMA: Final = 19
BAM: Final = 32
ABORT: Final = 255
#: abort reasons (the Linux kernel's numbers): already in a session, timeout, retransmit limit (the
#: kernel's reason for a CTS that asks for what the message does not have), bad sequence number,
#: a CTS of another PGN, any other reason
ABORT_BUSY: Final = 1
ABORT_TIMEOUT: Final = 3
ABORT_RETRANSMIT_LIMIT: Final = 5
ABORT_BAD_SEQUENCE: Final = 7
ABORT_CTS_PGN: Final = 14
ABORT_OTHER: Final = 250
MIN_SIZE: Final = 9
MAX_SIZE: Final = 1785
#: CTS that may ask again for packets already sent: a receiver that lost one asks once or twice;
#: one that keeps asking holds the session open without ever taking the message
MAX_RETRANSMITS: Final = 3
#: the longest a connection-mode session may stay open, whatever its partner sends: fetching the
#: largest message in windows takes a receiver a few CTS, each answered at the next tick
SESSION_LIFETIME_S: Final = 5.0
_PRIORITY: Final = 7


def packet_count(size: int) -> int:
    """How many TP.DT packets a message of ``size`` bytes takes."""
    return -(-size // 7)


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
    #: connection mode: the tick the session ends whatever its partner says, the highest packet
    #: sent so far, and the CTS that asked again for packets already sent
    ends: int = 0
    sent_up_to: int = 0
    retransmits: int = 0


class TransportSender:
    """Sends payloads over eight bytes: broadcasts one after another, the node's own first, and
    sessions to at most :data:`~ecu_sim.j1939.pending.SESSIONS` destinations at once."""

    def __init__(self, period_s: float) -> None:
        self._gap = bam_gap_ticks(period_s)
        self._t3 = expired_after(T3_S, period_s)
        self._t4 = expired_after(T4_S, period_s)
        self._lifetime = expired_after(SESSION_LIFETIME_S, period_s)
        self.pending = Pending(period_s)
        self._bam: _Outgoing | None = None
        self._sessions: dict[int, _Outgoing] = {}
        #: sessions this node aborted (its partner went silent or broke the rules) or saw aborted
        self.aborted = 0

    def send(self, pgn: int, data: bytes, destination: int, own: bool = False) -> None:
        """Queue ``data`` (9..1785 bytes) for ``destination``: broadcast when it is global.
        ``own``: one of the node's own broadcasts, which no answer delays."""
        if not 8 < len(data) <= MAX_SIZE:
            raise ValueError(f"the transport protocol carries 9..{MAX_SIZE} bytes, got {len(data)}")
        if destination == GLOBAL_ADDRESS:
            self.pending.broadcast(pgn, data, own)
        else:
            self.pending.answer(pgn, data, destination)

    @property
    def busy(self) -> bool:
        return bool(self.pending or self._bam or self._sessions)

    def sending_to(self, destination: int) -> bool:
        """Whether a message to ``destination`` waits or is under way in connection mode."""
        return destination in self._sessions or destination in self.pending.addressed

    @property
    def sessions(self) -> int:
        """Connection-mode sessions open now."""
        return len(self._sessions)

    def tick(self, tick: int, out: list[Pdu]) -> None:
        """This tick's announcement or packet of the broadcast, new sessions, timeouts."""
        self._tick_broadcast(tick, out)
        pending, sessions = self.pending, self._sessions
        while len(sessions) < SESSIONS and (start := pending.next_answer(sessions)) is not None:
            destination, pgn, data = start
            session = _Outgoing(pgn, packets(data), destination, tick + self._t3, ends=tick + self._lifetime)
            sessions[destination] = session
            out.append(cm({"ControlByte": RTS, "RTS_TotalSize": len(data),
                            "RTS_TotalPackets": len(session.chunks), "RTS_PGN": pgn}, destination))
        for destination, session in list(sessions.items()):
            for sequence in session.to_send:
                out.append(dt(sequence, session.chunks[sequence - 1], destination))
            session.to_send = []
            if tick >= session.deadline:
                log.info("transport to 0x%02X timed out waiting for its partner: aborted", destination)
                self._cancel(session, ABORT_TIMEOUT, out)
            elif tick >= session.ends:
                log.info("transport to 0x%02X still open after its lifetime: aborted", destination)
                self._cancel(session, ABORT_OTHER, out)
        pending.log_drops(tick)

    def _tick_broadcast(self, tick: int, out: list[Pdu]) -> None:
        bam = self._bam
        if bam is None:
            first = self.pending.next_broadcast()
            if first is not None:
                pgn, data = first
                self._bam = _Outgoing(pgn, packets(data), GLOBAL_ADDRESS, tick + self._gap)
                out.append(cm({"ControlByte": BAM, "BAM_TotalSize": len(data),
                                "BAM_TotalPackets": len(self._bam.chunks), "BAM_PGN": pgn}, GLOBAL_ADDRESS))
        elif tick >= bam.deadline:
            out.append(dt(bam.next_sequence, bam.chunks[bam.next_sequence - 1], GLOBAL_ADDRESS))
            bam.next_sequence += 1
            bam.deadline = tick + self._gap
            if bam.next_sequence > len(bam.chunks):
                self._bam = None

    def on_cm(self, frame: Received, values: dict[str, int], tick: int, out: list[Pdu]) -> None:
        """A connection management frame from the destination of one of our sessions."""
        session = self._sessions.get(frame.source)
        if session is None:
            return
        control = values["ControlByte"]
        if control == CTS:
            self._on_cts(session, values, tick, out)
        elif control == EOMA and values["EOMA_PGN"] == session.pgn:
            del self._sessions[frame.source]
        elif control == ABORT and values["Abort_PGN"] == session.pgn:
            self.aborted += 1
            del self._sessions[frame.source]

    def _on_cts(self, session: _Outgoing, values: dict[str, int], tick: int, out: list[Pdu]) -> None:
        """The kernel's checks of a CTS: another PGN is refused and the session kept; a CTS for more
        packets than the message has, or from packet 0, ends it; asking again for packets already
        sent more than :data:`MAX_RETRANSMITS` times ends it too."""
        if values["CTS_PGN"] != session.pgn:
            out.append(abort(values["CTS_PGN"], ABORT_CTS_PGN, session.destination))
            return
        count, first, total = values["CTS_Packets"], values["CTS_NextSequence"], len(session.chunks)
        if count == 0:
            session.deadline = tick + self._t4
            return
        if count > total or first == 0:
            self._cancel(session, ABORT_RETRANSMIT_LIMIT, out)
            return
        if first <= session.sent_up_to:
            session.retransmits += 1
            if session.retransmits > MAX_RETRANSMITS:
                self._cancel(session, ABORT_RETRANSMIT_LIMIT, out)
                return
        last = min(first + count - 1, total)
        session.to_send = list(range(first, last + 1))
        session.sent_up_to = max(session.sent_up_to, last)
        session.deadline = tick + self._t3

    def _cancel(self, session: _Outgoing, reason: int, out: list[Pdu]) -> None:
        self.aborted += 1
        del self._sessions[session.destination]
        out.append(abort(session.pgn, reason, session.destination))
