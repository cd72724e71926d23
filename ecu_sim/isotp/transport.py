"""The server side of ISO-TP for one node, on the node's ticks: messages in from testers, answers out.

Why not can-isotp: its thread-less ``TransportLayerLogic`` keeps its timers (N_Bs, N_Cr, STmin)
in a ``Timer`` that reads ``time.perf_counter_ns``, so it runs on the wall clock, not on the loop's
ticks: in virtual time (``simulate``, replay, the tests) its timeouts would fire by how fast the
host runs, and the same session would not give the same bytes twice. The layer is small, so it
is written here on tick counts, as :mod:`ecu_sim.j1939` is; can-isotp is the independent client
the tests check it against.

Frames are taken as the node drains its port (:meth:`IsoTpServer.receive`); every frame the layer
sends goes at a tick (:meth:`IsoTpServer.tick`): a flow control for a first frame that arrived
in the last period, the frames of an answer. A complete request is handed over at the tick
(:meth:`IsoTpServer.take`). One message at a time in each direction per tester: a new first
frame replaces the one being received (as ISO 15765-2 says), a new answer replaces the one
being sent.

Bounds, so nothing a tester sends makes the layer grow without end:

- at most :attr:`Limits.testers` testers are tracked at once (a reception or a multi-frame
  answer in progress); a first frame from one more is answered with flow control Overflow;
- a reception holds at most a first frame's 4095 bytes and is dropped after N_Cr without its
  next consecutive frame, so a flood of first frames never followed holds a tracked tester's
  slot for N_Cr at most;
- an answer waiting for flow control is dropped after N_Bs, and after :attr:`Limits.max_waits`
  Wait frames in a row (ISO 15765-2's N_WFTmax), so a tester that waits without end frees it;
- with STmin 0 at most :attr:`Limits.burst` consecutive frames go in one tick, so a long answer
  never fills a tick; with STmin above 0 at most one frame goes per tick, at least STmin apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, NamedTuple

from ecu_sim.isotp import frames
from ecu_sim.isotp.frames import FlowStatus, FrameKind
from ecu_sim.runtime.ticks import ticks_in

#: target addresses of a functional request a node takes beside its own: the global address, and
#: 0x33, the functional address OBD testers use on 29-bit identifiers (ISO 15765-4)
FUNCTIONAL_TARGETS: Final = frozenset({0xFF, 0x33})


@dataclass(frozen=True)
class Limits:
    """What the layer grants and how far it goes (module docstring)."""

    #: the block size and STmin of the server's flow control (0: no limit, no gap)
    block_size: int = 0
    st_min: int = 0
    testers: int = 8
    burst: int = 32
    max_waits: int = 10
    #: N_Bs (waiting for a flow control) and N_Cr (waiting for a consecutive frame)
    timeout_s: float = 1.0


class RequestFromTester(NamedTuple):
    """A whole request: from which tester, whether functional, its bytes."""

    tester: int
    functional: bool
    payload: bytes


@dataclass
class _Reception:
    size: int
    data: bytearray
    sequence: int = 1
    block_left: int = 0
    deadline: int = 0


@dataclass
class _Transmission:
    payload: bytes
    offset: int = 0
    sequence: int = 1
    started: bool = False
    #: waiting for a flow control until ``deadline``; else sending from ``next_tick``
    waiting: bool = False
    deadline: int = 0
    block_left: int = 0
    gap_ticks: int = 0
    next_tick: int = 0
    waits: int = 0


@dataclass
class _Counters:
    """What went wrong, for the status line and the tests: never more than a count each."""

    overflows: int = 0
    timeouts: int = 0
    wrong_sequence: int = 0
    aborted: int = 0


class IsoTpServer:
    """ISO-TP for the node at ``address``; ``period_s`` turns the timeouts into ticks."""

    def __init__(self, address: int, period_s: float, limits: Limits = Limits()) -> None:
        self.address = address
        self.limits = limits
        self._period_s = period_s
        self._timeout = max(1, ticks_in(limits.timeout_s, period_s))
        self._receptions: dict[int, _Reception] = {}
        self._transmissions: dict[int, _Transmission] = {}
        self._flow: list[tuple[int, bytes]] = []
        self._inbox: list[RequestFromTester] = []
        self._now = 0
        self.counters = _Counters()

    @property
    def busy(self) -> bool:
        """Whether the next tick has anything to do (a frame to send, a timer running)."""
        return bool(self._receptions or self._transmissions or self._flow or self._inbox)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        """Take a diagnostic frame addressed to this node (True); False for any other frame."""
        where = frames.addressed(can_id)
        if where is None or where.tester == self.address:
            return False
        if where.functional:
            if where.target != self.address and where.target not in FUNCTIONAL_TARGETS:
                return False
        elif where.target != self.address:
            return False
        if not data:
            return True
        kind = data[0] >> 4
        if kind == FrameKind.SINGLE:
            self._single(where.tester, where.functional, data)
        elif where.functional:
            pass  # ISO 15765-2: functional addressing carries single frames only
        elif kind == FrameKind.FIRST:
            self._first(where.tester, data)
        elif kind == FrameKind.CONSECUTIVE:
            self._consecutive(where.tester, data)
        elif kind == FrameKind.FLOW_CONTROL:
            self._flow_control(where.tester, data)
        return True

    def take(self) -> list[RequestFromTester]:
        """The requests completed since the last call, in the order they completed."""
        inbox, self._inbox = self._inbox, []
        return inbox

    def send(self, tester: int, payload: bytes) -> None:
        """Send ``payload`` to ``tester`` from the next tick on (replacing an answer in progress)."""
        if not 0 < len(payload) <= frames.MAX_MESSAGE:
            raise ValueError(f"an ISO-TP message has 1..{frames.MAX_MESSAGE} bytes, got {len(payload)}")
        if tester not in self._transmissions and len(payload) > frames.SINGLE_MAX and self._full():
            self.counters.overflows += 1
            return
        self._transmissions[tester] = _Transmission(payload)

    def tick(self, tick: int) -> list[tuple[int, bytes]]:
        """Advance to ``tick``: drop what timed out; the frames (identifier, data) to send now."""
        self._now = tick
        out, self._flow = self._flow, []
        for tester in [t for t, r in self._receptions.items() if r.deadline < tick]:
            del self._receptions[tester]
            self.counters.timeouts += 1
        for tester, sending in list(self._transmissions.items()):
            if sending.waiting:
                if sending.deadline < tick:
                    del self._transmissions[tester]
                    self.counters.timeouts += 1
                continue
            if sending.next_tick <= tick and self._emit(tester, sending, tick, out):
                del self._transmissions[tester]
        return out

    @property
    def tracked(self) -> int:
        """Testers with a reception or a multi-frame answer in progress."""
        return len(self._receptions.keys() | self._transmissions.keys())

    def _full(self) -> bool:
        return self.tracked >= self.limits.testers

    def _single(self, tester: int, functional: bool, data: bytes | bytearray) -> None:
        size = data[0] & 0x0F
        if 0 < size < len(data):
            self._inbox.append(RequestFromTester(tester, functional, bytes(data[1:1 + size])))

    def _first(self, tester: int, data: bytes | bytearray) -> None:
        if len(data) < frames.FRAME_BYTES:
            return  # a first frame fills its CAN frame
        size = ((data[0] & 0x0F) << 8) | data[1]
        if 0 < size <= frames.SINGLE_MAX:
            return  # ISO 15765-2: a first frame of a single frame's length is ignored
        if size == 0 or (tester not in self._receptions and self._full()):
            self.counters.overflows += 1
            self._flow.append(self._flow_frame(tester, FlowStatus.OVERFLOW))
            return
        self._receptions[tester] = _Reception(size, bytearray(data[2:]), block_left=self.limits.block_size,
                                              deadline=self._now + self._timeout + 1)
        self._flow.append(self._flow_frame(tester, FlowStatus.CONTINUE))

    def _consecutive(self, tester: int, data: bytes | bytearray) -> None:
        receiving = self._receptions.get(tester)
        if receiving is None:
            return  # not expected: ignored
        if data[0] & 0x0F != receiving.sequence:
            del self._receptions[tester]  # N_WRONG_SN: the message is lost
            self.counters.wrong_sequence += 1
            return
        receiving.sequence = (receiving.sequence + 1) & 0x0F
        receiving.data += data[1:1 + receiving.size - len(receiving.data)]
        receiving.deadline = self._now + self._timeout + 1
        if len(receiving.data) >= receiving.size:
            del self._receptions[tester]
            self._inbox.append(RequestFromTester(tester, False, bytes(receiving.data)))
            return
        if receiving.block_left:
            receiving.block_left -= 1
            if receiving.block_left == 0:
                receiving.block_left = self.limits.block_size
                self._flow.append(self._flow_frame(tester, FlowStatus.CONTINUE))

    def _flow_control(self, tester: int, data: bytes | bytearray) -> None:
        sending = self._transmissions.get(tester)
        if sending is None or not sending.waiting or len(data) < 3:
            return  # not expected: ignored
        status = data[0] & 0x0F
        if status == FlowStatus.WAIT:
            sending.waits += 1
            sending.deadline = self._now + self._timeout + 1
            if sending.waits > self.limits.max_waits:
                del self._transmissions[tester]
                self.counters.aborted += 1
            return
        if status != FlowStatus.CONTINUE:
            del self._transmissions[tester]  # overflow (or a reserved status): the answer is given up
            self.counters.aborted += 1
            return
        sending.waiting = False
        sending.waits = 0
        sending.block_left = data[1]
        gap = frames.st_min_s(data[2])
        sending.gap_ticks = 0 if gap == 0.0 else max(1, math.ceil(gap / self._period_s - 1e-9))
        sending.next_tick = self._now + 1

    def _emit(self, tester: int, sending: _Transmission, tick: int, out: list[tuple[int, bytes]]) -> bool:
        """The frames of an answer due at ``tick``; True when it is all out."""
        can_id = frames.answer_id(self.address, tester)
        payload = sending.payload
        if not sending.started:
            sending.started = True
            if len(payload) <= frames.SINGLE_MAX:
                out.append((can_id, frames.single(payload)))
                return True
            out.append((can_id, frames.first(payload)))
            sending.offset = frames.FIRST_DATA
            self._await_flow(sending, tick)
            return False
        count = self.limits.burst if sending.gap_ticks == 0 else 1
        while count and sending.offset < len(payload):
            chunk = payload[sending.offset:sending.offset + frames.CONSECUTIVE_DATA]
            out.append((can_id, frames.consecutive(sending.sequence, chunk)))
            sending.offset += len(chunk)
            sending.sequence = (sending.sequence + 1) & 0x0F
            count -= 1
            if sending.block_left:
                sending.block_left -= 1
                if sending.block_left == 0 and sending.offset < len(payload):
                    self._await_flow(sending, tick)
                    return False
        sending.next_tick = tick + max(1, sending.gap_ticks)
        return sending.offset >= len(payload)

    def _await_flow(self, sending: _Transmission, tick: int) -> None:
        sending.waiting = True
        sending.deadline = tick + self._timeout

    def _flow_frame(self, tester: int, status: FlowStatus) -> tuple[int, bytes]:
        return (frames.answer_id(self.address, tester),
                frames.flow_control(status, self.limits.block_size, self.limits.st_min))
