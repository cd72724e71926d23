"""Receiving through the transport protocol (J1939-21): broadcasts and sessions addressed to us.

A broadcast is collected from its announcement and dropped if a packet is missing, out of order
or later than T1. At most :data:`SESSIONS_IN` messages are collected at once, each of 9..1785
bytes and never more than its announced packets, so announcements cannot exhaust memory. A
request to send addressed to this node is answered with one clear to send for every packet, the
packets collected, and the end of message acknowledged at the tick after the last one; silence
past T2 aborts the session. What was whole is handed back as a
:class:`~ecu_sim.j1939.frames.Received` of the carried PGN, as if it had come in one frame.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import Pdu, Received
from ecu_sim.j1939.ids import GLOBAL_ADDRESS
from ecu_sim.j1939.timing import T1_S, T2_S, expired_after
from ecu_sim.j1939.transport import (
    ABORT,
    ABORT_BAD_SEQUENCE,
    ABORT_BUSY,
    ABORT_RETRANSMIT_LIMIT,
    ABORT_TIMEOUT,
    BAM,
    CTS,
    EOMA,
    MAX_SIZE,
    MIN_SIZE,
    RTS,
    abort,
    cm,
)

log = logging.getLogger(__name__)

#: messages received at once, from all senders: a few nodes broadcast long messages at the same
#: time on a truck's bus; announcements from dozens of spoofed addresses are refused, so what the
#: node holds is at most this many times 1785 bytes
SESSIONS_IN: Final = 8


@dataclass
class _Incoming:
    pgn: int
    size: int
    total: int
    destination: int
    deadline: int
    chunks: list[bytes] = field(default_factory=list)


class Reassembler:
    """Collects multi-packet messages, keyed by sender and by broadcast or addressed."""

    def __init__(self, period_s: float) -> None:
        self._t1 = expired_after(T1_S, period_s)
        self._t2 = expired_after(T2_S, period_s)
        self._sessions: dict[tuple[int, bool], _Incoming] = {}
        #: messages dropped or aborted before they were whole, and announcements refused
        self.dropped = 0
        self.refused = 0

    @property
    def busy(self) -> bool:
        return bool(self._sessions)

    @property
    def sessions(self) -> int:
        """Messages being received now (broadcast and addressed)."""
        return len(self._sessions)

    def on_cm(self, frame: Received, values: dict[str, int], own: int, tick: int,
              out: list[Pdu]) -> None:
        """An announcement or request to send (or an abort) from ``frame.source``."""
        control = values["ControlByte"]
        if control == BAM and frame.destination == GLOBAL_ADDRESS:
            self._on_bam(frame.source, values, tick)
        elif control == RTS and frame.destination == own:
            self._on_rts(frame.source, values, own, tick, out)
        elif control == ABORT and frame.destination == own:
            session = self._sessions.get((frame.source, False))
            if session is not None and session.pgn == values["Abort_PGN"]:
                del self._sessions[(frame.source, False)]
                self.dropped += 1

    def _on_bam(self, source: int, values: dict[str, int], tick: int) -> None:
        """The kernel's rule for a second BAM from one sender: of the same PGN it cancels the open
        one and starts nothing, of another PGN it is ignored. One that does not fit the pool or
        the size limits is ignored (there is no abort on broadcasts)."""
        key = (source, True)
        size, total = values["BAM_TotalSize"], values["BAM_TotalPackets"]
        open_one = self._sessions.get(key)
        if open_one is not None:
            if open_one.pgn == values["BAM_PGN"]:
                del self._sessions[key]
                self.dropped += 1
            return
        if not MIN_SIZE <= size <= MAX_SIZE or total == 0 or len(self._sessions) >= SESSIONS_IN:
            self.refused += 1
            return
        self._sessions[key] = _Incoming(values["BAM_PGN"], size, total, GLOBAL_ADDRESS, tick + self._t1)

    def _on_rts(self, source: int, values: dict[str, int], own: int, tick: int, out: list[Pdu]) -> None:
        """A second RTS from a sender with a session open is refused (busy) and the open one kept, so
        a spoofed RTS cannot resize it; a size outside 9..1785 gets the kernel's abort 5, and a
        full pool the busy abort."""
        key, pgn = (source, False), values["RTS_PGN"]
        size, total = values["RTS_TotalSize"], values["RTS_TotalPackets"]
        if key in self._sessions or len(self._sessions) >= SESSIONS_IN:
            self.refused += 1
            out.append(abort(pgn, ABORT_BUSY, source))
            return
        if not MIN_SIZE <= size <= MAX_SIZE or total == 0:
            self.refused += 1
            out.append(abort(pgn, ABORT_RETRANSMIT_LIMIT, source))
            return
        self._sessions[key] = _Incoming(pgn, size, total, own, tick + self._t2)
        out.append(cm({"ControlByte": CTS, "CTS_Packets": total, "CTS_NextSequence": 1,
                        "CTS_PGN": pgn}, source))

    def on_dt(self, frame: Received, tick: int, out: list[Pdu]) -> Received | None:
        """A data packet; the whole message when this was its last packet."""
        key = (frame.source, frame.destination == GLOBAL_ADDRESS)
        session = self._sessions.get(key)
        if session is None or len(frame.data) < 8:
            return None
        values = layouts.decode(layouts.TP_DT, frame.data)
        if values["SequenceNumber"] != len(session.chunks) + 1:
            self._drop(key, session, ABORT_BAD_SEQUENCE, out)
            return None
        session.chunks.append(frame.data[1:8])
        session.deadline = tick + (self._t1 if key[1] else self._t2)
        if len(session.chunks) < session.total:
            return None
        del self._sessions[key]
        if not key[1]:
            out.append(cm({"ControlByte": EOMA, "EOMA_TotalSize": session.size,
                            "EOMA_TotalPackets": session.total, "EOMA_PGN": session.pgn}, frame.source))
        data = b"".join(session.chunks)[:session.size]
        return Received(session.pgn, frame.source, session.destination, frame.priority, data)

    def tick(self, tick: int, out: list[Pdu]) -> None:
        """Drop (broadcast) or abort (addressed) what went silent past its timeout."""
        for key, session in list(self._sessions.items()):
            if tick >= session.deadline:
                log.info("transport from 0x%02X of PGN %d timed out", key[0], session.pgn)
                self._drop(key, session, ABORT_TIMEOUT, out)

    def _drop(self, key: tuple[int, bool], session: _Incoming, reason: int, out: list[Pdu]) -> None:
        del self._sessions[key]
        self.dropped += 1
        if not key[1]:
            out.append(abort(session.pgn, reason, key[0]))
