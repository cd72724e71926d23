"""A UDS tester's side of the bus on the loop's ticks: one request at a time, its answer or a timeout.

Why our own: udsoncan's client and can-isotp's transport run a thread each and time their
requests, N_Bs, N_Cr and STmin on the wall clock (``time.perf_counter_ns``), so in virtual time
(``simulate``, ``cosim``, replay, the tests) a session would depend on how fast the host runs
and would not give the same bytes twice. This tester is advanced by ticks, as the nodes are.

Its ISO-TP is the nodes' own layer, :class:`~ecu_sim.isotp.transport.IsoTpServer`, at the
tester's address: normal fixed addressing is symmetric (a node's answer to the tester on
``18DA<tester><node>`` is, to the layer at the tester's address, a message from a peer; what the
layer sends that peer goes on ``18DA<node><tester>``, a physical request), so the first frame,
the wait for flow control, the node's block size and STmin, the consecutive frames, the flow
control for a multi-frame answer and the timeouts are one mechanism in both directions, with
:mod:`ecu_sim.isotp.frames` the one frame codec.

On top, the UDS exchange: a request is answered within P2 (counted from the last tick the
transport still carried part of it); an answer 0x78 (response pending) makes the tester wait
P2* more, as often as the node sends it; an answer of another service (a late one to a request
given up before) is ignored. Use: :meth:`UdsClient.finished` at a tick, then
:meth:`UdsClient.request` if there is a next request, then :meth:`UdsClient.tick` for the frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

from ecu_sim.isotp.transport import IsoTpServer
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.uds.codes import NEGATIVE, POSITIVE, Nrc

#: the address a script's tester has: J1939's off-board diagnostic-service tool #1
TESTER_ADDRESS: Final = 0xF9
#: how long the tester waits for an answer, and after each 0x78 (the server's P2* is 5 s)
P2_S: Final = 1.0
P2_STAR_S: Final = 5.0


class Exchange(NamedTuple):
    """A request and what came of it: the answer's bytes, or None when none came in time."""

    node: int
    request: bytes
    answer: bytes | None
    #: the tick the request was handed over at and the tick the exchange ended at
    sent_tick: int
    ended_tick: int


@dataclass
class _Pending:
    node: int
    request: bytes
    sent_tick: int
    deadline: int


class UdsClient:
    """A tester at ``tester`` on a loop of ``period_s``: requests to any node, one at a time."""

    def __init__(self, tester: int = TESTER_ADDRESS, period_s: float = 0.1, p2_s: float = P2_S,
                 p2_star_s: float = P2_STAR_S) -> None:
        self.tester = tester
        #: the ISO-TP layer (its counters say what the transport gave up)
        self.transport = IsoTpServer(tester, period_s)
        self._p2 = max(1, ticks_in(p2_s, period_s))
        self._p2_star = max(1, ticks_in(p2_star_s, period_s))
        self._pending: _Pending | None = None
        self._tick = 0

    @property
    def waiting(self) -> bool:
        """A request is out and neither its answer nor its timeout came yet."""
        return self._pending is not None

    def request(self, node: int, payload: bytes) -> None:
        """Send ``payload`` to ``node`` at the next :meth:`tick` (a request still waiting is
        given up: its answer, should it come, is ignored)."""
        self.transport.send(node, payload)
        self._pending = _Pending(node, bytes(payload), self._tick, self._tick + self._p2)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        """Take a frame from the bus: True when it was one for this tester."""
        return self.transport.receive(can_id, data)

    def finished(self, tick: int) -> Exchange | None:
        """The exchange that ended by ``tick`` (its answer came whole, or its time ran out)."""
        self._tick = tick
        pending = self._pending
        for message in self.transport.take():
            if pending is None or message.tester != pending.node or not _answers(message.payload,
                                                                                  pending.request):
                continue
            if _is_pending(message.payload):
                pending.deadline = tick + self._p2_star
                continue
            return self._end(message.payload, tick)
        if pending is None:
            return None
        if self.transport.tracked:
            pending.deadline = max(pending.deadline, tick + self._p2)  # still on its way, either way
        return self._end(None, tick) if tick > pending.deadline else None

    def tick(self, tick: int) -> list[tuple[int, bytes]]:
        """The frames (identifier, data) to send at ``tick``."""
        self._tick = tick
        return self.transport.tick(tick)

    def _end(self, answer: bytes | None, tick: int) -> Exchange:
        pending = self._pending
        assert pending is not None
        self._pending = None
        return Exchange(pending.node, pending.request, answer, pending.sent_tick, tick)


def _answers(answer: bytes, request: bytes) -> bool:
    """Whether ``answer`` is one to ``request``'s service: positive, or negative naming it."""
    if answer[0] == NEGATIVE:
        return len(answer) >= 3 and answer[1] == request[0]
    return answer[0] == request[0] + POSITIVE


def _is_pending(answer: bytes) -> bool:
    return answer[0] == NEGATIVE and answer[2] == Nrc.REQUEST_CORRECTLY_RECEIVED_RESPONSE_PENDING


def positive(answer: bytes | None, request: bytes) -> bool:
    """Whether ``answer`` is the positive answer to ``request``."""
    return answer is not None and answer[0] == request[0] + POSITIVE
