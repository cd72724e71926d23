"""The reflash of a calibration image, the steps a real tester takes, and the proof it took.

Extended session, then programming (the node allows the programming session only from another
non-default one, and only with the truck standing), security access with the key algorithm the
node uses (the same ``module:function`` the server loads), the erase (the node answers "response
pending" until it is done), RequestDownload of the image's area, TransferData in the largest
blocks the node accepts, RequestTransferExit, the dependency check (the node commits the image
only if it finds it valid), and a hard ECUReset, after which the node runs the new calibration.
A node in boot mode may refuse the extended session; the programming session is asked anyway.

Then the tester reads the calibration ID and the CVN back until the node reports the image's (a
node answers again once it has restarted), so a reflash that did not take is an error, not a
silence.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from udsoncan import MemoryLocation

from ecu_sim.calibration.image import Image
from ecu_sim.diag.client import WorkshopTester
from ecu_sim.diag.refusals import RefusedError
from ecu_sim.errors import EXIT_PROTOCOL, ConfigError, EcuSimError
from ecu_sim.uds.codes import (
    DID_CALIBRATION_ID,
    DID_CVN,
    ROUTINE_CHECK_DEPENDENCIES,
    ROUTINE_ERASE_MEMORY,
    DiagnosticSession,
)
from ecu_sim.uds.security import LEVEL, KeyAlgorithm, load_algorithm

#: ECUReset's hard reset
HARD_RESET: Final = 0x01
#: TransferData's own bytes in each block: the service identifier and the block sequence counter
_BLOCK_OVERHEAD: Final = 2

Progress = Callable[[int], None]


class NotTakenError(EcuSimError):
    """The node reports another calibration than the one just flashed."""

    exit_status = EXIT_PROTOCOL


@dataclass(frozen=True)
class Flashed:
    """What a reflash did: the bytes, in how many blocks, and what the node reports after it."""

    size: int
    blocks: int
    calibration_id: str
    cvn: int


def load_key(spec: str | None) -> KeyAlgorithm:
    """The key algorithm ``module:function`` names (None: the default), loaded as the node's
    server loads its own, so tester and node cannot differ in how a name is found."""
    try:
        return load_algorithm(spec)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def flash(tester: WorkshopTester, image: Image, key: KeyAlgorithm, progress: Progress) -> Flashed:
    """Program ``image`` into the node; ``progress(n)`` is told of every ``n`` bytes sent."""
    programming_session(tester)
    tester.client.config["security_algo"] = lambda level, seed, params: key(bytes(seed), level)
    tester.ask("security access", lambda c: c.unlock_security_access(LEVEL))
    tester.ask("the erase", lambda c: c.start_routine(ROUTINE_ERASE_MEMORY))
    area = MemoryLocation(address=image.layout.start, memorysize=len(image.data), address_format=32,
                          memorysize_format=32)
    accepted = tester.ask("RequestDownload", lambda c: c.request_download(area))
    assert accepted is not None  # udsoncan returns None only when a positive answer is suppressed
    block = max(1, int(accepted.service_data.max_length) - _BLOCK_OVERHEAD)
    blocks = 0
    for blocks, at in enumerate(range(0, len(image.data), block), start=1):
        _transfer(tester, blocks, image.data[at:at + block])
        progress(min(block, len(image.data) - at))
    tester.ask("RequestTransferExit", lambda c: c.request_transfer_exit())
    tester.ask("the dependency check", lambda c: c.start_routine(ROUTINE_CHECK_DEPENDENCIES))
    tester.ask("ECUReset", lambda c: c.ecu_reset(HARD_RESET))
    calibration_id, cvn = _reported(tester, image)
    return Flashed(len(image.data), blocks, calibration_id, cvn)


def _transfer(tester: WorkshopTester, number: int, data: bytes) -> None:
    """One TransferData block; the block sequence counter wraps from 0xFF to 0x00."""
    tester.ask(f"TransferData block {number}", lambda c: c.transfer_data(number & 0xFF, data))


def programming_session(tester: WorkshopTester) -> None:
    with contextlib.suppress(RefusedError):  # a node in boot mode may take the programming one alone
        tester.ask("the extended session", lambda c: c.change_session(DiagnosticSession.EXTENDED))
    tester.ask("the programming session", lambda c: c.change_session(DiagnosticSession.PROGRAMMING))


def _reported(tester: WorkshopTester, image: Image) -> tuple[str, int]:
    """The calibration ID and CVN the node reports once it runs ``image``; NotTakenError if it
    still reports another after the tester's timeout."""
    deadline = time.monotonic() + tester.timeout_s
    while True:
        calibration_id = tester.read(DID_CALIBRATION_ID, "the calibration ID").decode("ascii", "replace")
        cvn = int.from_bytes(tester.read(DID_CVN, "the CVN"), "big")
        if (calibration_id, cvn) == (image.calibration_id, image.cvn) or time.monotonic() > deadline:
            break
    if (calibration_id, cvn) != (image.calibration_id, image.cvn):
        raise NotTakenError(
            f"node 0x{tester.target:02X} took the download but after its reset reports calibration "
            f"{calibration_id!r} (CVN 0x{cvn:08X}), not {image.calibration_id!r} "
            f"(CVN 0x{image.cvn:08X}); its log says why")
    return calibration_id, cvn
