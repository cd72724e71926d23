"""The request/answer loop of ``ecu-sim cosim``: one datagram in, exactly n ticks, one datagram out.

UDP may lose or repeat a datagram, so every request carries a sequence number and the peer
retries after a timeout. A request with the sequence number of the last one answered is a retry
(its answer was lost): the stored answer goes out again and nothing advances, so a retry can never
run a step twice. A request numbered lower than that is stale and refused. A request that skips
numbers still runs (the numbers are the peer's to choose) and is logged as a gap. A datagram that
cannot be read gets an error answer, and the run goes on; a peer silent for the peer timeout
ends the run, as does SIGINT or SIGTERM.

A peer in lockstep sends its next request moments after it has read an answer. Blocked in the
kernel meanwhile, the server would pay a wake-up and cold caches on every step, which costs more
than a one-tick step itself; so after each answer it can poll the socket without blocking for a
short while (``busy_poll_s``) before it blocks again. That spends a core while it polls, which is
why the command only does it where the process may run on more than one core (docs/cosim.md).
"""

from __future__ import annotations

import logging
import math
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram, ErrorCode, ProtocolError
from ecu_sim.cosim.stepper import Stepper

log = logging.getLogger("ecu_sim")

#: most ticks one request of the CAN encoding may ask for: the frames of the step must fit its answer
MAX_CAN_STEP_TICKS = 2000
#: most ticks one request may ask for at all (a mistyped n would otherwise run for days)
MAX_STEP_TICKS = 10_000_000
#: applies a control by name before the given tick: None when applied, else why not
Controls = Callable[[str, int], str | None]


@dataclass
class ServerStats:
    steps: int = 0
    retries: int = 0
    gaps: int = 0
    errors: int = 0

    def text(self) -> str:
        return f"{self.steps} steps, {self.retries} retries answered, {self.gaps} gaps, {self.errors} errors"


class CosimServer:
    """Answers one peer's requests on ``sock`` with ``stepper``'s outputs."""

    def __init__(self, sock: socket.socket, stepper: Stepper, peer_timeout_s: float,
                 max_ticks: int | None = None, busy_poll_s: float = 0.0,
                 controls: Controls | None = None) -> None:
        """``max_ticks``: the run's length (``--duration``); the answer that reaches it ends the run.
        ``busy_poll_s``: how long to poll for the next request without blocking after an answer.
        ``controls``: what applies a peer's control by name (ecu_sim.controls.planned); None: none."""
        self._controls = controls
        self._sock = sock
        self._busy_poll_s = busy_poll_s
        self._max_ticks = max_ticks
        self._stepper = stepper
        self._peer_timeout_s = peer_timeout_s
        self._inputs = len(stepper.contract.inputs)
        self._last_seq: int | None = None
        self._last_answer = b""
        #: when the last request came (time.monotonic); the peer's silence is timed from it
        self._heard_at: float | None = None
        self._stop = threading.Event()
        self.stats = ServerStats()

    def stop(self) -> None:
        """End the loop at the next datagram or timeout; safe from a signal handler."""
        self._stop.set()

    def serve(self) -> str:
        """Answer requests until the peer falls silent or ``stop``; why the run ended."""
        sock = self._sock
        # Short waits so that a stop request is seen promptly; the peer's silence is timed across them.
        _receive_timeout(sock, min(0.2, self._peer_timeout_s))
        answered = False
        while not self._stop.is_set():
            try:
                polled = self._poll() if answered else None
                answered = False
                data, address = polled or sock.recvfrom(protocol.MAX_DATAGRAM)
            except (TimeoutError, BlockingIOError):
                heard = self._heard_at
                if heard is not None and time.monotonic() - heard >= self._peer_timeout_s:
                    return (f"no request from the peer for {self._peer_timeout_s:g} s "
                            "(--peer-timeout): it has finished or gone")
                continue
            except OSError as exc:
                log.warning("receiving a request failed: %s", exc)
                continue
            self._heard_at = time.monotonic()
            answer = self.answer(data)
            try:
                sock.sendto(answer, address)
                answered = True
            except OSError as exc:
                log.warning("answering %s failed: %s (the peer's retry gets the answer again)",
                            address, exc)
            if self._max_ticks is not None and self._stepper.next_tick >= self._max_ticks:
                return f"the run reached its --duration, {self._max_ticks} ticks"
        return "stopped"

    def _poll(self) -> tuple[bytes, Any] | None:
        """The next request if it comes within the busy-poll time after an answer, polled without
        blocking; None (then the socket is waited on) when it does not, or without a busy poll."""
        if self._busy_poll_s <= 0.0:
            return None
        recvfrom, clock = self._sock.recvfrom, time.perf_counter
        until = clock() + self._busy_poll_s
        while True:
            try:
                return recvfrom(protocol.MAX_DATAGRAM, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if clock() >= until:
                    return None

    def answer(self, data: bytes) -> bytes:
        """The answer to one datagram: a step's outputs, the stored answer again, or an error."""
        try:
            request = protocol.decode(data, self._inputs)
            return self._handle(request)
        except ProtocolError as exc:
            seq, tick = _best_effort_header(data)
            self.stats.errors += 1
            log.warning("request %s refused: %s", seq, exc)
            return protocol.encode(protocol.error(seq, tick, exc.code, str(exc)))

    def _handle(self, request: Datagram) -> bytes:
        if request.is_error:
            raise ProtocolError(ErrorCode.MALFORMED, "a request must not carry a negative n")
        last = self._last_seq
        if last is not None:
            if request.seq == last:
                self.stats.retries += 1
                log.debug("request %d again: its answer was lost, sending it again", request.seq)
                return self._last_answer
            if request.seq < last:
                raise ProtocolError(ErrorCode.STALE, f"sequence number {request.seq} is older than the "
                                                     f"last one answered, {last}: a late duplicate")
            if request.seq > last + 1:
                self.stats.gaps += 1
                log.warning("sequence gap: request %d after %d (%d numbers skipped); stepping on",
                            request.seq, last, request.seq - last - 1)
        answer = self._control(request) if request.is_control else self._step(request)
        self._last_seq, self._last_answer = request.seq, answer
        return answer

    def _control(self, request: Datagram) -> bytes:
        """A control by name, applied now, while the loop stands between two ticks."""
        before = self._stepper.next_tick
        if self._controls is None:
            raise ProtocolError(ErrorCode.REFUSED, "this ECU takes no controls by name")
        problem = self._controls(request.message, before)
        if problem is not None:
            raise ProtocolError(ErrorCode.REFUSED, f"{request.message}: {problem}")
        log.info("control %s by the peer, before tick %d", request.message, before)
        return protocol.encode(Datagram(request.seq, 0, before, (),
                                        message=f"{request.message} before tick {before}"))

    def _step(self, request: Datagram) -> bytes:
        self._check(request)
        outputs, frames = self._stepper.step(request.n, request.values, request.frames)
        self.stats.steps += 1
        answer = protocol.encode(Datagram(request.seq, request.n, self._stepper.next_tick - 1, outputs,
                                          frames))
        if len(answer) > protocol.MAX_DATAGRAM:
            answer = protocol.encode(protocol.error(
                request.seq, self._stepper.next_tick - 1, ErrorCode.TOO_LONG,
                f"the step ran, but its {len(frames or ())} frames do not fit one datagram: ask for "
                "fewer ticks"))
        return answer

    def _check(self, request: Datagram) -> None:
        n = request.n
        if n < 1:
            raise ProtocolError(ErrorCode.MALFORMED, f"n = {n}: a step runs at least one tick")
        limit = MAX_STEP_TICKS if request.frames is None else MAX_CAN_STEP_TICKS
        if n > limit:
            raise ProtocolError(ErrorCode.TOO_LONG, f"n = {n} exceeds {limit} ticks a request of this "
                                                    "encoding may ask for")
        left = None if self._max_ticks is None else self._max_ticks - self._stepper.next_tick
        if left is not None and n > left:
            raise ProtocolError(ErrorCode.TOO_LONG, f"n = {n} runs past the end of the run (--duration): "
                                                    f"{left} ticks are left")
        for frame in request.frames or ():
            if not 0 <= frame.offset < n:
                raise ProtocolError(ErrorCode.MALFORMED, f"a frame's tick offset {frame.offset} lies "
                                                         f"outside the step of {n} ticks")
        for entry, value in zip(self._stepper.contract.inputs, request.values, strict=True):
            if math.isinf(value) or (not math.isnan(value)
                                     and not entry.minimum <= value <= entry.maximum):
                raise ProtocolError(ErrorCode.MALFORMED, f"input {entry.index} {entry.name} = {value!r} "
                                                         f"lies outside {entry.minimum:g}..{entry.maximum:g}")


def _receive_timeout(sock: socket.socket, seconds: float) -> None:
    """A blocking socket whose receive gives up after ``seconds`` (the kernel's SO_RCVTIMEO).

    Python's own socket timeout polls before every receive: one system call more per request,
    a measurable share of a one-tick step. Where the option is missing, Python's timeout it is.
    """
    try:
        sock.settimeout(None)
        whole = int(seconds)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                        struct.pack("ll", whole, int((seconds - whole) * 1e6)))
    except (OSError, AttributeError, struct.error):
        sock.settimeout(seconds)


def _best_effort_header(data: bytes) -> tuple[int, int]:
    """Sequence number and tick of a datagram that may be malformed, to address the error answer."""
    if len(data) < protocol.HEADER_SIZE:
        return 0, 0
    _, seq, _, tick = protocol.HEADER.unpack_from(data)
    ok = all(math.isfinite(v) and v == int(v) and abs(v) < 2.0 ** 53 for v in (seq, tick))
    return (int(seq), int(tick)) if ok else (0, 0)
