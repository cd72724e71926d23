"""Receiving through the transport protocol (J1939-21): broadcasts and sessions addressed to us.

A broadcast is collected from its announcement and dropped if a packet is missing, out of order
or later than T1. A request to send addressed to this node is answered with one clear to send for
every packet, the packets collected, and the end of message acknowledged at the tick after the
last one; silence past T2 aborts the session. What was whole is handed back as a
:class:`~ecu_sim.j1939.frames.Received` of the carried PGN, as if it had come in one frame.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import Pdu, Received
from ecu_sim.j1939.ids import GLOBAL_ADDRESS
from ecu_sim.j1939.timing import T1_S, T2_S, expired_after
from ecu_sim.j1939.transport import (
    ABORT,
    ABORT_BAD_SEQUENCE,
    ABORT_BUSY,
    ABORT_TIMEOUT,
    BAM,
    CTS,
    EOMA,
    RTS,
    abort,
    cm,
)

log = logging.getLogger(__name__)


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
        #: messages dropped or aborted before they were whole
        self.dropped = 0

    @property
    def busy(self) -> bool:
        return bool(self._sessions)

    def on_cm(self, frame: Received, values: dict[str, int], own: int, tick: int,
              out: list[Pdu]) -> None:
        """An announcement or request to send (or an abort) from ``frame.source``."""
        control, source = values["ControlByte"], frame.source
        if control == BAM and frame.destination == GLOBAL_ADDRESS:
            self._sessions[(source, True)] = _Incoming(
                values["BAM_PGN"], values["BAM_TotalSize"], values["BAM_TotalPackets"],
                GLOBAL_ADDRESS, tick + self._t1)
        elif control == RTS and frame.destination == own:
            key = (source, False)
            if key in self._sessions:
                out.append(abort(values["RTS_PGN"], ABORT_BUSY, source))
                return
            total = values["RTS_TotalPackets"]
            self._sessions[key] = _Incoming(values["RTS_PGN"], values["RTS_TotalSize"], total, own,
                                            tick + self._t2)
            out.append(cm({"ControlByte": CTS, "CTS_Packets": total, "CTS_NextSequence": 1,
                            "CTS_PGN": values["RTS_PGN"]}, source))
        elif (control == ABORT and frame.destination == own
              and self._sessions.pop((source, False), None) is not None):
            self.dropped += 1

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
