"""A tester in a virtual-time rig: UDS requests one at a time, each sent at the tick after the
node's last answer. Requests go in ISO-TP single frames only (a download in blocks of five
bytes); a longer answer is taken with one flow control (block size 0, STmin 0). The node's
ISO-TP layer and server are the real ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import can

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import AREA_START
from ecu_sim.uds.security import default_key
from tests.helpers.powertrainrig import Controller

TESTER = 0xF9
#: a step: the request, or how to make it from the answer to the step before
Step = bytes | Callable[[bytes], bytes]
_BLOCK = 5


def request_frame(node: int, payload: bytes) -> can.Message:
    data = bytes((len(payload), *payload)).ljust(8, b"\xcc")
    return can.Message(arbitration_id=0x18DA0000 | (node << 8) | TESTER, data=data, is_extended_id=True)


def unlock(session: int) -> list[Step]:
    return [bytes((0x10, session)), b"\x27\x01", lambda seed: b"\x27\x02" + default_key(seed[2:], 1)]


def download(image: Image, erase: bool = True) -> list[Step]:
    """Erase (unless told not to), RequestDownload, the blocks, RequestTransferExit, the check."""
    size = len(image.data)
    steps: list[Step] = [b"\x31\x01\xff\x00"] if erase else []
    steps.append(b"\x34\x00\x44" + AREA_START.to_bytes(4, "big") + size.to_bytes(4, "big"))
    for counter, at in enumerate(range(0, size, _BLOCK), start=1):
        steps.append(bytes((0x36, counter & 0xFF)) + image.data[at:at + _BLOCK])
    return [*steps, b"\x37", b"\x31\x01\xff\x01"]


def reflash(image: Image) -> list[Step]:
    """Extended session, programming session, unlocked, the download and its check, a reset."""
    return [*unlock(0x03), *unlock(0x02), *download(image), b"\x11\x01"]


class Flasher:
    """Sends ``steps`` to ``node`` from tick ``start`` on; ``answers`` holds each final answer."""

    def __init__(self, node: int, steps: Sequence[Step], start: int) -> None:
        self.node = node
        self.steps = list(steps)
        self.start = start
        self.answers: list[bytes] = []
        self.controller: Controller | None = None
        self._sent = 0
        self._seen = 0
        #: an answer coming in consecutive frames: its length and the bytes so far
        self._long: tuple[int, bytearray] | None = None
        self._flow: list[can.Message] = []

    @property
    def done(self) -> bool:
        return len(self.answers) == len(self.steps)

    @property
    def refused(self) -> bytes | None:
        """The first negative answer, which ends the script."""
        return next((a for a in self.answers if a[0] == 0x7F), None)

    def __call__(self, tick: int) -> list[can.Message]:
        controller = self.controller
        if controller is None or tick < self.start or self.refused is not None:
            return []
        self._take(controller)
        flow, self._flow = self._flow, []
        if self._sent > len(self.answers) or self._sent == len(self.steps):
            return flow
        step = self.steps[self._sent]
        payload = step if isinstance(step, bytes) else step(self.answers[-1])
        self._sent += 1
        return [*flow, request_frame(self.node, payload)]

    def _take(self, controller: Controller) -> None:
        heard = controller.heard
        answer_id = 0x18DA0000 | (TESTER << 8) | self.node
        for h in heard[self._seen:]:
            if h.msg.arbitration_id == answer_id:
                payload = self._payload(bytes(h.msg.data))
                if payload is None or (payload[:1] == b"\x7f" and payload[2:3] == b"\x78"):
                    continue  # more to come, or response pending: the final answer follows
                self.answers.append(payload)
        self._seen = len(heard)

    def _payload(self, data: bytes) -> bytes | None:
        """The answer a frame completes, None while one is still coming."""
        kind = data[0] >> 4
        if kind == 0:
            return data[1:1 + (data[0] & 0x0F)]
        if kind == 1:
            self._long = (((data[0] & 0x0F) << 8) | data[1], bytearray(data[2:]))
            self._flow.append(can.Message(arbitration_id=0x18DA0000 | (self.node << 8) | TESTER,
                                          data=b"\x30\x00\x00".ljust(8, b"\xcc"), is_extended_id=True))
            return None
        if kind == 2 and self._long is not None:
            length, got = self._long
            got += data[1:]
            if len(got) >= length:
                self._long = None
                return bytes(got[:length])
        return None
