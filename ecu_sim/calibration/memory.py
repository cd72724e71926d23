"""The programmable memory of a node: two banks and the application-valid flag.

The active bank holds the image the node runs; a download goes into the staging bank, and only a
staged image that passes its check becomes the active one, so the last valid image is never lost
before a new one is verified. An erase clears the application-valid flag before anything else,
and the flag is kept: a process killed during a download starts next time with the flag clear
(boot mode) and the old image still in the active bank.

Given a directory, each bank and the flag are a file there, written atomically (a temporary
file, fsync, rename, then the directory's fsync), so a kill at any moment leaves either the old
or the new file whole. Without one the memory lives in the process alone.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from ecu_sim.calibration.image import Image, image_problem
from ecu_sim.calibration.layout import AREA_SIZE, AREA_START

_ACTIVE, _STAGING, _VALID = "active.bin", "staging.bin", "application-valid"
_ERASED = 0xFF


class MemoryRangeError(ValueError):
    """A write that does not lie inside the calibration area."""


class ProgrammableMemory:
    """One node's calibration memory; ``builtin`` is the image it has before anything is programmed."""

    def __init__(self, builtin: Image, directory: Path | None = None,
                 accepts: Callable[[Image], str | None] | None = None) -> None:
        """``accepts``: what the node checks of an image beyond the image itself (that its
        application can run it beside the other nodes' images: the programming dependencies);
        None when it can, else the reason in one line."""
        self.kind = builtin.kind
        self._accepts = accepts
        self.start = AREA_START
        self.size = AREA_SIZE
        self._directory = directory
        self._staging = bytearray([_ERASED] * self.size)
        self._active = builtin
        self._valid = True
        #: the kept active image ran (it was found and passed its check), not ``builtin``
        self.kept = False
        #: why a kept active image was not run (another node kind's, damaged), None when none was refused
        self.kept_problem: str | None = None
        if directory is not None and directory.is_dir():  # made at the first write: none before
            self._load(directory)

    def _load(self, directory: Path) -> None:
        active = directory / _ACTIVE
        if active.exists():
            data = active.read_bytes()
            # a kept image that no longer passes (another node's file, a damaged disk) is not run
            self.kept_problem = image_problem(data, self.kind)
            if self.kept_problem is None and self._accepts is not None:
                self.kept_problem = self._accepts(Image.parse(data, self.kind))
            if self.kept_problem is None:
                self._active = Image.parse(data, self.kind)
                self.kept = True
        staging = directory / _STAGING
        if staging.exists() and len(staging.read_bytes()) == self.size:
            self._staging[:] = staging.read_bytes()
        valid = directory / _VALID
        self._valid = not valid.exists() or valid.read_text().strip() == "1"

    @property
    def directory(self) -> Path | None:
        """Where the banks and the flag are kept; None: in the process alone."""
        return self._directory

    @property
    def application_valid(self) -> bool:
        """False: boot mode (an erase began and no verified image followed)."""
        return self._valid

    @property
    def active(self) -> Image:
        return self._active

    @property
    def calibration_id(self) -> str:
        return self._active.calibration_id

    @property
    def cvn(self) -> int:
        return self._active.cvn

    def erase(self) -> None:
        """Clear the application-valid flag (kept first) and the staging bank; the active image stays."""
        self._valid = False
        self._keep(_VALID, b"0\n")
        self._staging[:] = bytes([_ERASED] * self.size)
        self._keep(_STAGING, bytes(self._staging))

    def write(self, address: int, data: bytes) -> None:
        """Into the staging bank; the bank is kept after each write, as flash keeps what it was given."""
        if not (self.start <= address and address + len(data) <= self.start + self.size):
            raise MemoryRangeError(
                f"0x{address:X}..0x{address + len(data):X} is outside the calibration area "
                f"0x{self.start:X}..0x{self.start + self.size:X}")
        offset = address - self.start
        self._staging[offset:offset + len(data)] = data
        self._keep(_STAGING, bytes(self._staging))

    def stage_active(self) -> None:
        """The staging bank becomes a copy of the active image (kept), so a write of a few bytes
        stages a whole image: the rest of it is the image the node runs."""
        self._staging[:] = self._active.data
        self._keep(_STAGING, bytes(self._staging))

    def check(self) -> str | None:
        """None if the staged image is a valid image for this node, else the reason in one line."""
        problem = image_problem(bytes(self._staging), self.kind)
        if problem is None and self._accepts is not None:
            problem = self._accepts(Image.parse(bytes(self._staging), self.kind))
        return problem

    def commit(self) -> None:
        """The checked staging image becomes the active one (kept), and the application is valid."""
        problem = self.check()
        if problem is not None:
            raise ValueError(f"the staged image cannot be committed: {problem}")
        self._active = Image.parse(bytes(self._staging), self.kind)
        self._keep(_ACTIVE, self._active.data)
        self._valid = True
        self._keep(_VALID, b"1\n")

    def replace_active(self, image: Image) -> None:
        """A checked image made from the active one (a parameter written by its identifier) becomes
        the active one, kept in one atomic step; the staging bank and the flag are left as they are."""
        if image.kind != self.kind:
            raise ValueError(f"an image for the {image.kind} cannot be the {self.kind}'s")
        problem = None if self._accepts is None else self._accepts(image)
        if problem is not None:
            raise ValueError(problem)
        self._active = image
        self._keep(_ACTIVE, image.data)

    def _keep(self, name: str, data: bytes) -> None:
        if self._directory is None:
            return
        self._directory.mkdir(parents=True, exist_ok=True)
        target = self._directory / name
        temporary = target.with_name(f".{name}.tmp")
        with open(temporary, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        with contextlib.suppress(OSError):  # not every file system lets a directory be fsynced
            fd = os.open(self._directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
