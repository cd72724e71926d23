"""Reprogramming: the erase and dependency-check routines and the download state machine.

The memory is the node's :class:`~ecu_sim.uds.node.ServedMemory`. A node without one
answers every routine and download with 0x31 (request out of range: there is no memory at any
address a tester could name), as a node that cannot be programmed does.

An erase takes :attr:`Programming.erase_ticks` ticks, as a flash erase takes its time: the
request is answered at once with 0x78 (response pending) and the positive answer follows when
the erase is done; meanwhile any other request is answered 0x21 (busy, repeat the request).
A download accepts its blocks in order, the block sequence counter running from 1 and wrapping
from 0xFF to 0x00; the block accepted last may be sent again (a tester that missed the answer)
and is answered without being written twice. The dependency check commits the staged image
only when the memory finds it valid; the new image is used from the next start of the
application (ECUReset), as the memory's contract says.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from ecu_sim.isotp.frames import MAX_MESSAGE
from ecu_sim.uds.codes import POSITIVE, ROUTINE_CHECK_DEPENDENCIES, ROUTINE_ERASE_MEMORY, Nrc, Service
from ecu_sim.uds.node import ServedMemory

log = logging.getLogger(__name__)

#: RoutineControl's one sub-function the routines have: start
START_ROUTINE: Final = 0x01
#: RequestDownload's answer: the block length in two bytes, the longest ISO-TP message
_LENGTH_FORMAT: Final = 0x20


@dataclass
class _Download:
    address: int
    size: int
    written: int = 0
    expected: int = 1
    last: int | None = None


class Programming:
    """The routines and the download against ``memory`` (None: a node that cannot be programmed)."""

    def __init__(self, memory: ServedMemory | None, erase_ticks: int) -> None:
        self.memory = memory
        self.erase_ticks = erase_ticks
        self._download: _Download | None = None
        #: the tester waiting for an erase and the tick it ends at
        self.erasing: tuple[int, int] | None = None

    @property
    def busy(self) -> bool:
        return self._download is not None or self.erasing is not None

    def abort(self) -> None:
        """The session ended (or a reset): a download in progress is given up."""
        self._download = None

    def routine(self, request: bytes, tester: int, tick: int) -> bytes | Nrc:
        if request[1] & 0x7F != START_ROUTINE:
            return Nrc.SUB_FUNCTION_NOT_SUPPORTED
        routine = int.from_bytes(request[2:4], "big")
        memory = self.memory
        if memory is None or routine not in (ROUTINE_ERASE_MEMORY, ROUTINE_CHECK_DEPENDENCIES):
            return Nrc.REQUEST_OUT_OF_RANGE
        if self._download is not None:
            return Nrc.REQUEST_SEQUENCE_ERROR
        if routine == ROUTINE_ERASE_MEMORY:
            self.erasing = (tester, tick + self.erase_ticks)
            return Nrc.REQUEST_CORRECTLY_RECEIVED_RESPONSE_PENDING
        reason = memory.check()
        if reason is None:
            try:
                memory.commit()
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            log.warning("the downloaded image was refused: %s", reason)
            return Nrc.GENERAL_PROGRAMMING_FAILURE
        return bytes((Service.ROUTINE_CONTROL + POSITIVE, START_ROUTINE)) + request[2:4] + b"\x00"

    def erase_done(self, tick: int) -> tuple[int, bytes] | None:
        """The erase that ends at ``tick``: the tester and its positive answer."""
        if self.erasing is None or tick < self.erasing[1]:
            return None
        tester = self.erasing[0]
        self.erasing = None
        if self.memory is not None:
            self.memory.erase()
        return tester, bytes((Service.ROUTINE_CONTROL + POSITIVE, START_ROUTINE, 0xFF, 0x00))

    def request_download(self, request: bytes) -> bytes | Nrc:
        """After the server's checks of session, security and speed."""
        formats = request[2]
        size_bytes, address_bytes = formats >> 4, formats & 0x0F
        if not (1 <= size_bytes <= 4 and 1 <= address_bytes <= 4):
            return Nrc.REQUEST_OUT_OF_RANGE
        if len(request) != 3 + address_bytes + size_bytes:
            return Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT
        memory = self.memory
        if request[1] != 0x00 or memory is None:
            return Nrc.REQUEST_OUT_OF_RANGE  # compressed or encrypted data, or no memory
        if self._download is not None:
            return Nrc.CONDITIONS_NOT_CORRECT
        address = int.from_bytes(request[3:3 + address_bytes], "big")
        size = int.from_bytes(request[3 + address_bytes:], "big")
        if not (memory.start <= address and size > 0 and address + size <= memory.start + memory.size):
            return Nrc.REQUEST_OUT_OF_RANGE
        if memory.application_valid:
            return Nrc.UPLOAD_DOWNLOAD_NOT_ACCEPTED  # erase first: the active image stays until then
        self._download = _Download(address, size)
        return bytes((Service.REQUEST_DOWNLOAD + POSITIVE, _LENGTH_FORMAT)) + MAX_MESSAGE.to_bytes(2, "big")

    def transfer(self, request: bytes) -> bytes | Nrc:
        download = self._download
        if download is None or self.memory is None:
            return Nrc.REQUEST_SEQUENCE_ERROR
        counter, data = request[1], request[2:]
        answer = bytes((Service.TRANSFER_DATA + POSITIVE, counter))
        if counter == download.last:
            return answer  # the same block again: its answer was lost
        if counter != download.expected:
            return Nrc.WRONG_BLOCK_SEQUENCE_COUNTER
        if download.written + len(data) > download.size:
            return Nrc.TRANSFER_DATA_SUSPENDED
        try:
            self.memory.write(download.address + download.written, bytes(data))
        except ValueError:
            return Nrc.REQUEST_OUT_OF_RANGE
        download.written += len(data)
        download.last = counter
        download.expected = (counter + 1) & 0xFF
        return answer

    def transfer_exit(self) -> bytes | Nrc:
        download = self._download
        if download is None or download.written != download.size:
            return Nrc.REQUEST_SEQUENCE_ERROR
        self._download = None
        return bytes((Service.REQUEST_TRANSFER_EXIT + POSITIVE,))
