"""The UDS (ISO 14229-1) server of one node: a request in, an answer out, on the node's ticks.

Each service is one row of :data:`RULES`: the sessions it is served in, the shortest request,
whether its second byte is a sub-function (with the suppress-positive-answer bit), whether it
needs security access. The checks go in the order ISO 14229-1 gives them, so each refusal
carries the code a real server gives: the service (0x11), the session (0x7F), the length
(0x13), the sub-function (0x12), the sub-function in the session (0x7E), security (0x33), then
the service's own conditions. A functional request is not answered with the codes that only say
"not here" (:data:`~ecu_sim.uds.codes.FUNCTIONAL_SILENT`).

Timing: every request is answered at the tick after it arrived, so the P2 the session answer
carries is two periods, and never below the common 50 ms; P2* is 5 s, and a long erase answers
0x78 first. A session other than the default falls back to it S3 after the last request: the
server locks, the node's messages and DTC recording come back, a download is given up.

A session other than the default belongs to the tester that opened it, with its security access
and its download: while it lasts, a physical request from any other tester is refused 0x22
(conditions not correct; ISO 14229-1 leaves the rule to the maker, so the code is our choice, the
one servers commonly give) before any other check, and does not restart S3, so another tester can
neither use the session, nor end it, nor keep it alive. Functional requests are served from any
tester, as before. Once the session ends (S3, a reset, the default session) any tester may open
the next. The ``any-tester`` flaw (:data:`~ecu_sim.uds.security.FLAWS`) takes the rule away.

Boot mode (the node's application not valid): the server is the boot loader's, which has the
default and the programming session only (the programming session entered straight from the
default one, the truck standing) and serves :data:`BOOT_SESSIONS`: in the default session
DiagnosticSessionControl, ECUReset and TesterPresent, in the programming session those, the
download and its routines, and the reads a tester needs to see why the node is there
(identification, DTCs). Another service of the boot loader's, asked in the default session, is
refused 0x7F (service not supported in the active session: ISO 14229-1's answer for a service the
server has in another session); a service it does not have at all 0x11, and the extended session
0x12. Our choice, as a boot loader that knows nothing of the application's services.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ecu_sim.isotp.frames import MAX_MESSAGE
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.uds import services
from ecu_sim.uds.codes import (
    FUNCTIONAL_SILENT,
    POSITIVE,
    ROUTINE_ERASE_MEMORY,
    SUPPRESS,
    DiagnosticSession,
    Nrc,
    Service,
    negative,
)
from ecu_sim.uds.node import ServedNode
from ecu_sim.uds.programming import Programming
from ecu_sim.uds.security import Security

ALL_SESSIONS: Final = frozenset(DiagnosticSession)
_BOOT_LOADER: Final = frozenset({DiagnosticSession.DEFAULT, DiagnosticSession.PROGRAMMING})
_WORKING: Final = frozenset({DiagnosticSession.EXTENDED, DiagnosticSession.PROGRAMMING})
_PROGRAMMING: Final = frozenset({DiagnosticSession.PROGRAMMING})
_RUNNING: Final = frozenset({DiagnosticSession.DEFAULT, DiagnosticSession.EXTENDED})
#: P2 never below this, P2* and S3 (ISO 14229's common values)
P2_FLOOR_MS: Final = 50
P2_STAR_MS: Final = 5000
S3_S: Final = 5.0
#: a flash erase's time, and the speed below which the truck counts as standing
ERASE_S: Final = 0.5
STANDSTILL_KPH: Final = 1.0

Handler = Callable[["UdsServer", bytes, int, int], "bytes | Nrc | None"]


@dataclass(frozen=True)
class Rule:
    """How one service is served; ``sub_functions`` empty: its second byte is no sub-function."""

    handler: Handler
    sessions: frozenset[DiagnosticSession]
    min_length: int
    sub_functions: frozenset[int] = frozenset()
    secured: bool = False


class UdsServer:
    """The server of ``node``; ``security`` is kept by the caller across resets and restarts."""

    def __init__(self, node: ServedNode, security: Security, period_s: float) -> None:
        self.node = node
        self.security = security
        self.session = DiagnosticSession.DEFAULT
        self.p2_ms = max(P2_FLOOR_MS, math.ceil(2000.0 * period_s))
        self.p2_star_ms = P2_STAR_MS
        self._s3 = max(1, ticks_in(S3_S, period_s))
        self._s3_until = 0
        #: the tester whose session this is (None: the default session, anyone's)
        self.owner: int | None = None
        self.programming = Programming(node.memory, max(1, ticks_in(ERASE_S, period_s)))
        self.communication_off = False
        self.dtc_recording_off = False
        #: the ECUReset answered, done at the next tick: (that tick, the reset's kind)
        self.reset_due: tuple[int, int] | None = None
        self.requests = 0
        self.refused = 0

    @property
    def idle(self) -> bool:
        """Nothing to do at any tick until a request comes: the default session, nothing running."""
        return (self.session is DiagnosticSession.DEFAULT and self.reset_due is None
                and not self.programming.busy)

    def next_due(self, tick: int) -> int:
        """The next tick :meth:`tick` has work at (a session's S3, an erase, a reset)."""
        if self.idle:
            return 1 << 62
        if self.reset_due is not None or self.programming.erasing is not None:
            return tick + 1
        return self._s3_until

    def handle(self, tester: int, functional: bool, request: bytes, tick: int) -> bytes | None:
        """The answer to one request, None when none goes (suppressed, or silent to everyone)."""
        self.requests += 1
        if self._stranger(tester, functional):
            self.refused += 1
            return negative(request[0], Nrc.CONDITIONS_NOT_CORRECT)
        self._s3_until = tick + self._s3
        answer = self._answer(tester, request, tick)
        if isinstance(answer, Nrc):
            if functional and answer in FUNCTIONAL_SILENT:
                return None
            self.refused += answer != Nrc.REQUEST_CORRECTLY_RECEIVED_RESPONSE_PENDING
            return negative(request[0], answer)
        if answer is not None and len(answer) > MAX_MESSAGE:
            return negative(request[0], Nrc.RESPONSE_TOO_LONG)
        return answer

    def tick(self, tick: int) -> list[tuple[int, bytes]]:
        """What falls due at ``tick``: an erase's answer (tester, bytes), a reset, S3."""
        if self.reset_due is not None and tick >= self.reset_due[0]:
            kind, self.reset_due = self.reset_due[1], None
            self.enter(DiagnosticSession.DEFAULT)
            self.security.restart()
            self.node.reset(kind)
        done = self.programming.erase_done(tick)
        erasing = self.programming.erasing is not None
        if self.session is not DiagnosticSession.DEFAULT and tick >= self._s3_until and not erasing:
            self.enter(DiagnosticSession.DEFAULT)
        return [] if done is None else [done]

    def enter(self, session: DiagnosticSession, tester: int | None = None) -> None:
        """Change the session: security locks; back in the default one, what the others changed ends
        and the session is no one's; else it stays its owner's, or becomes ``tester``'s."""
        if session is not self.session or session is DiagnosticSession.DEFAULT:
            self.security.lock()
        self.session = session
        if session is not DiagnosticSession.DEFAULT:
            self.owner = tester if self.owner is None else self.owner
            return
        self.owner = None
        self.programming.abort()
        if self.communication_off:
            self.communication_off = False
            self.node.communicate(True)
        if self.dtc_recording_off:
            self.dtc_recording_off = False
            self.node.set_dtc_recording(True)

    def _stranger(self, tester: int, functional: bool) -> bool:
        """A physical request inside another tester's session (and the node not flawed so)."""
        return (not functional and self.owner is not None and tester != self.owner
                and "any-tester" not in self.security.flaws)

    def moving(self) -> bool:
        speed = self.node.speed_kph()
        return not (speed < STANDSTILL_KPH)  # NaN: not known to stand

    def _answer(self, tester: int, request: bytes, tick: int) -> bytes | Nrc | None:
        if self.programming.erasing is not None:
            return Nrc.BUSY_REPEAT_REQUEST
        try:
            service = Service(request[0])
        except ValueError:
            return Nrc.SERVICE_NOT_SUPPORTED
        rule = RULES[service]
        sessions = BOOT_SESSIONS.get(service) if self.node.boot else rule.sessions
        if sessions is None:
            return Nrc.SERVICE_NOT_SUPPORTED  # the boot loader has no such service
        if self.session not in sessions:
            return Nrc.SERVICE_NOT_SUPPORTED_IN_ACTIVE_SESSION
        if len(request) < rule.min_length:
            return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
        suppress = False
        if rule.sub_functions:
            sub = request[1] & 0x7F
            if sub not in rule.sub_functions:
                return Nrc.SUB_FUNCTION_NOT_SUPPORTED
            suppress = bool(request[1] & SUPPRESS)
        if rule.secured and not self.security.unlocked:
            return Nrc.SECURITY_ACCESS_DENIED
        answer = rule.handler(self, request, tester, tick)
        if suppress and isinstance(answer, bytes) and answer[0] == request[0] + POSITIVE:
            return None
        return answer


def _reset(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 2:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    server.reset_due = (tick + 1, request[1] & 0x7F)
    return bytes((Service.ECU_RESET + POSITIVE, request[1] & 0x7F))


def _session(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if len(request) != 2:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    session = DiagnosticSession(request[1] & 0x7F)
    boot = server.node.boot
    if boot and session is DiagnosticSession.EXTENDED:
        return Nrc.SUB_FUNCTION_NOT_SUPPORTED  # the boot loader has no extended session
    if session is DiagnosticSession.PROGRAMMING:
        if server.session is DiagnosticSession.DEFAULT and not boot:
            return Nrc.SUB_FUNCTION_NOT_SUPPORTED_IN_ACTIVE_SESSION  # by way of the extended session
        if server.moving():
            return Nrc.CONDITIONS_NOT_CORRECT
    server.enter(session, tester)
    return (bytes((Service.DIAGNOSTIC_SESSION_CONTROL + POSITIVE, session)) + server.p2_ms.to_bytes(2, "big")
            + (server.p2_star_ms // 10).to_bytes(2, "big"))


def _security(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    sub = request[1] & 0x7F
    head = bytes((Service.SECURITY_ACCESS + POSITIVE, sub))
    if sub == 0x01:
        if len(request) != 2:
            return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
        seed = server.security.request_seed(tick)
        return seed if isinstance(seed, Nrc) else head + seed
    if len(request) < 3:
        return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
    refused = server.security.send_key(request[2:], tick)
    return head if refused is None else refused


def _download(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    if server.moving():
        return Nrc.VEHICLE_SPEED_TOO_HIGH
    return server.programming.request_download(request)


def _routine(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    erase = int.from_bytes(request[2:4], "big") == ROUTINE_ERASE_MEMORY
    if erase and server.programming.memory is not None and server.moving():
        return Nrc.VEHICLE_SPEED_TOO_HIGH
    return server.programming.routine(request, tester, tick)


def _transfer(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    return server.programming.transfer(request)


def _exit(server: UdsServer, request: bytes, tester: int, tick: int) -> bytes | Nrc:
    return server.programming.transfer_exit()


RULES: Final[dict[Service, Rule]] = {
    Service.DIAGNOSTIC_SESSION_CONTROL: Rule(_session, ALL_SESSIONS, 2, frozenset(DiagnosticSession)),
    Service.ECU_RESET: Rule(_reset, ALL_SESSIONS, 2, frozenset({1, 2, 3})),
    Service.CLEAR_DIAGNOSTIC_INFORMATION: Rule(services.clear, _RUNNING, 4),
    Service.READ_DTC_INFORMATION: Rule(services.read_dtcs, _RUNNING, 2, frozenset({1, 2})),
    Service.READ_DATA_BY_IDENTIFIER: Rule(services.read_data, ALL_SESSIONS, 3),
    Service.SECURITY_ACCESS: Rule(_security, _WORKING, 2, frozenset({1, 2})),
    Service.COMMUNICATION_CONTROL: Rule(services.communication, frozenset({DiagnosticSession.EXTENDED}), 3,
                                        frozenset({0, 1, 2, 3})),
    Service.WRITE_DATA_BY_IDENTIFIER: Rule(services.write_data, _WORKING, 4, secured=True),
    Service.ROUTINE_CONTROL: Rule(_routine, _PROGRAMMING, 4, frozenset({1, 2, 3}), secured=True),
    Service.REQUEST_DOWNLOAD: Rule(_download, _PROGRAMMING, 3, secured=True),
    Service.TRANSFER_DATA: Rule(_transfer, _PROGRAMMING, 2, secured=True),
    Service.REQUEST_TRANSFER_EXIT: Rule(_exit, _PROGRAMMING, 1, secured=True),
    Service.TESTER_PRESENT: Rule(services.tester_present, ALL_SESSIONS, 2, frozenset({0})),
    Service.CONTROL_DTC_SETTING: Rule(services.dtc_setting, _WORKING, 2, frozenset({1, 2})),
}

#: boot mode: the services the boot loader serves, in its sessions
BOOT_SESSIONS: Final[dict[Service, frozenset[DiagnosticSession]]] = {
    Service.DIAGNOSTIC_SESSION_CONTROL: _BOOT_LOADER,
    Service.ECU_RESET: _BOOT_LOADER,
    Service.TESTER_PRESENT: _BOOT_LOADER,
    **dict.fromkeys((Service.READ_DATA_BY_IDENTIFIER, Service.READ_DTC_INFORMATION, Service.SECURITY_ACCESS,
                     Service.ROUTINE_CONTROL, Service.REQUEST_DOWNLOAD, Service.TRANSFER_DATA,
                     Service.REQUEST_TRANSFER_EXIT), _PROGRAMMING),
}
