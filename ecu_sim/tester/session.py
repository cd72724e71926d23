"""A script's steps held as a session on the loop's ticks: each step's requests and their answers.

A step is a generator of requests: it yields a request, is sent the answer (None: none came in
time) and yields the next, so a step that needs what it was answered (the key from the seed,
the block length RequestDownload grants) reads as the exchange itself. A step that is refused
ends there (the next step still goes at its time): what came of every request is kept, in order,
as the session's :class:`StepRecord`\\ s, for the log and the answers' file.

The key of ``unlock`` is ``[diagnostics] key_algorithm``'s, loaded by the one function the
nodes use (:func:`ecu_sim.uds.security.load_algorithm`), for SecurityAccess level 1.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from typing import NamedTuple

from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.tester.client import TESTER_ADDRESS, Exchange, UdsClient, positive
from ecu_sim.tester.script import ImageDownload, ScriptStep
from ecu_sim.uds.codes import ROUTINE_CHECK_DEPENDENCIES, ROUTINE_ERASE_MEMORY, Service
from ecu_sim.uds.security import LEVEL, KeyAlgorithm

log = logging.getLogger(__name__)

#: a step's requests: each yield a request, each send its answer
Requests = Generator[bytes, bytes | None, None]


class StepRecord(NamedTuple):
    """One request of a step and what came of it, at the run's times."""

    line: int
    step: str
    sent_s: float
    request: bytes
    answer_s: float
    answer: bytes | None


def requests(step: ScriptStep, algorithm: KeyAlgorithm) -> Requests:
    """The requests of ``step``, one after the other's answer."""
    name, arguments = step.name, step.arguments
    if name == "raw":
        assert isinstance(arguments, bytes)
        yield arguments
    elif name in ("session", "reset"):
        assert isinstance(arguments, int)
        service = Service.DIAGNOSTIC_SESSION_CONTROL if name == "session" else Service.ECU_RESET
        yield bytes((service, arguments))
    elif name == "read":
        assert isinstance(arguments, tuple)
        yield bytes((Service.READ_DATA_BY_IDENTIFIER,)) + b"".join(
            int(did).to_bytes(2, "big") for did in arguments)
    elif name == "write":
        assert isinstance(arguments, tuple) and isinstance(arguments[1], bytes)
        yield bytes((Service.WRITE_DATA_BY_IDENTIFIER,)) + int(arguments[0]).to_bytes(2, "big") + arguments[1]
    elif name in ("erase", "check"):
        routine = ROUTINE_ERASE_MEMORY if name == "erase" else ROUTINE_CHECK_DEPENDENCIES
        yield bytes((Service.ROUTINE_CONTROL, 0x01)) + routine.to_bytes(2, "big")
    elif name == "unlock":
        yield from _unlock(algorithm)
    else:
        assert isinstance(arguments, ImageDownload)
        yield from _download(arguments)


def _unlock(algorithm: KeyAlgorithm) -> Requests:
    seed_request = bytes((Service.SECURITY_ACCESS, LEVEL))
    answer = yield seed_request
    if answer is None or not positive(answer, seed_request) or not any(answer[2:]):
        return  # refused, or a seed of zeros: unlocked already
    yield bytes((Service.SECURITY_ACCESS, LEVEL + 1)) + algorithm(answer[2:], LEVEL)


def _download(image: ImageDownload) -> Requests:
    """RequestDownload (4-byte address and size), TransferData blocks as long as the node grants,
    RequestTransferExit."""
    ask = bytes((Service.REQUEST_DOWNLOAD, 0x00, 0x44)) + image.address.to_bytes(4, "big") + \
        len(image.data).to_bytes(4, "big")
    answer = yield ask
    if answer is None or not positive(answer, ask) or len(answer) < 2 + (answer[1] >> 4):
        return
    block = int.from_bytes(answer[2:2 + (answer[1] >> 4)], "big") - 2  # less the SID and the counter
    if block < 1:
        return
    counter = 1
    for offset in range(0, len(image.data), block):
        transfer = bytes((Service.TRANSFER_DATA, counter)) + image.data[offset:offset + block]
        answer = yield transfer
        if not positive(answer, transfer):
            return
        counter = (counter + 1) & 0xFF
    yield bytes((Service.REQUEST_TRANSFER_EXIT,))


class ScriptedSession:
    """``steps`` from the tester at ``tester`` on a loop of ``period_s``, one after the other."""

    def __init__(self, steps: Sequence[ScriptStep], period_s: float, algorithm: KeyAlgorithm,
                 tester: int = TESTER_ADDRESS) -> None:
        self.client = UdsClient(tester, period_s)
        self.period_s = period_s
        self.rows: list[StepRecord] = []
        self._steps = list(steps)
        self._next = 0
        self._algorithm = algorithm
        self._running: tuple[ScriptStep, Requests] | None = None

    @property
    def done(self) -> bool:
        """Every step has run to its end."""
        return self._running is None and self._next == len(self._steps)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        return self.client.receive(can_id, data)

    def tick(self, tick: int) -> list[tuple[int, bytes]]:
        """Take what was answered, send the next request that is due; the frames to send now."""
        ended = self.client.finished(tick)
        request: bytes | None = None
        if ended is not None and self._running is not None:
            step, running = self._running
            self._row(step, ended)
            request = _next(running, ended.answer)
            if request is None:
                self._running = None
        while request is None and self._running is None and self._next < len(self._steps):
            step = self._steps[self._next]
            if ticks_in(step.at_s, self.period_s) > tick:
                break
            self._next += 1
            running = requests(step, self._algorithm)
            request = _next(running, None)
            self._running = None if request is None else (step, running)
        if request is not None and self._running is not None:
            self.client.request(self._running[0].node, request)
        return self.client.tick(tick)

    def _row(self, step: ScriptStep, ended: Exchange) -> None:
        row = StepRecord(step.line, step.text, ended.sent_tick * self.period_s, ended.request,
                  ended.ended_tick * self.period_s, ended.answer)
        self.rows.append(row)
        log.info("diagnostic script line %d (%s) at %.3f s: %s -> %s", row.line, row.step, row.sent_s,
                 _short(row.request), "no answer" if row.answer is None else _short(row.answer))


def _next(running: Requests, answer: bytes | None) -> bytes | None:
    """The step's next request, given the answer to its last (None first); None at its end."""
    try:
        return running.send(answer)
    except StopIteration:
        return None


def _short(data: bytes) -> str:
    """A request or answer for a log line: its hex, the middle of a long one left out."""
    text = data.hex().upper()
    return text if len(data) <= 16 else f"{text[:24]}...({len(data)} bytes)"
