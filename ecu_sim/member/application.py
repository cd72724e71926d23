"""A node's application and the programmable memory it runs from: which image runs, boot mode, restarts.

Every node with a calibration has one :class:`~ecu_sim.calibration.memory.ProgrammableMemory`,
made at the node's construction from its start image (the ``[calibration]`` file, else the
built-in one from the settings). With ``[diagnostics] state_dir`` it is kept in
``calibration-KIND-ADDRESS/`` there, and **a kept programmed image wins over the start image**:
as on a real ECU, what was last programmed is the ECU's memory, and the start image is only what
the memory held before anything was programmed. A kept image that no longer passes its check
(another node kind's, a damaged file) is not run: one warning, and the node starts from its
start image.

The application runs the image :attr:`Application.image`, read from the memory's active bank at
the start and at every :meth:`Application.apply` (ECUReset, memory access's "operation
completed"): a commit or a parameter written by identifier takes effect there, not in the middle
of a drive. The node's restart is given at construction and rebuilds the node's control functions
or model parameters as a whole from the images; the vehicle's physical state is carried over.

Boot mode: the memory's application-valid flag clear at the start, or cleared by an erase while
the node runs. The node then claims its address and answers UDS (the programming session), holds
the DTC :data:`APPLICATION_NOT_VALID` and sends no application messages, until a checked image is
committed and applied. Our choice of DTC: SPN 630 (calibration memory) with FMI 13 (out of
calibration): what is not valid is the calibration area a download writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.errors import EcuSimError
from ecu_sim.j1939.dm import Dtc
from ecu_sim.j1939.dm19 import NodeCalibration

log = logging.getLogger(__name__)

#: SPN 630 calibration memory, FMI 13 out of calibration: the application is not valid (boot mode)
APPLICATION_NOT_VALID: Final = Dtc(630, 13)

#: the node's restart: its control functions rebuilt from the images its applications run
Restart = Callable[[], None]


def memory_directory(state_dir: str | None, kind: str, address: int) -> Path | None:
    """Where the node's memory is kept: ``<state_dir>/calibration-<kind>-<address:02x>/``."""
    return None if state_dir is None else Path(state_dir) / f"calibration-{kind}-{address:02x}"


class Application:
    """The image a node runs from its memory, whether it is in boot mode, and its restart."""

    def __init__(self, memory: ProgrammableMemory, start: Image, named: bool,
                 restart: Restart | None = None) -> None:
        """``start``: the image the memory was made from; ``named``: it was given to the node (a
        ``[calibration]`` file), not built from the settings; ``restart``: the node's (None: the
        node reads :attr:`image` as it is built and has nothing to restart)."""
        self.kind = start.kind
        self.memory = memory
        self.start = start
        self._named = named
        self._restart = restart
        self.image = memory.active
        self.boot = not memory.application_valid
        #: applies done (ECUReset, operation completed)
        self.applied = 0
        where = memory.directory
        if memory.kept_problem is not None:
            log.warning("%s: the kept calibration in %s is not run (%s); the node starts from its start "
                        "image %r: program it again, or remove the directory", self.kind, where,
                        memory.kept_problem, start.calibration_id)
        elif memory.kept and memory.active.data != start.data:
            log.info("%s: runs the calibration %r last programmed (kept in %s), not its start image %r",
                     self.kind, memory.active.calibration_id, where, start.calibration_id)
        if self.boot:
            log.warning("%s: the application is not valid (a download did not complete): boot mode, "
                        "UDS in the programming session only, until an image is downloaded, checked "
                        "and the node reset", self.kind)

    @property
    def reported(self) -> NodeCalibration:
        """What DM19 and the software identification say: the image that runs."""
        named = self._named or self.image.data != self.start.data
        return NodeCalibration(self.image.cvn, self.image.calibration_id, named=named)

    def follow(self) -> bool:
        """After the server's tick: an erase that began stops the application now (boot mode).
        True when the node just entered boot mode."""
        if self.boot or self.memory.application_valid:
            return False
        self.boot = True
        log.warning("%s: an erase began: the application stops (boot mode) until a new image is "
                    "committed and the node reset", self.kind)
        self._run()
        return True

    def apply(self) -> None:
        """The active image takes effect now: the application restarts from it (or stays in boot
        mode while the memory holds no valid application)."""
        self.applied += 1
        before, was_boot = self.image, self.boot
        self.image, self.boot = self.memory.active, not self.memory.application_valid
        if self.boot:
            log.warning("%s: reset without a valid application: boot mode", self.kind)
        else:
            log.info("%s: the application restarts from calibration %r (CVN 0x%08X)", self.kind,
                     self.image.calibration_id, self.image.cvn)
        try:
            self._run()
        except (ValueError, EcuSimError) as exc:  # the images together cannot drive the truck
            log.warning("%s: calibration %r cannot run: %s; boot mode until another image is "
                        "programmed", self.kind, self.image.calibration_id, exc)
            self.image, self.boot = before, True
            self._run()
        if was_boot and not self.boot:
            log.info("%s: out of boot mode", self.kind)

    def _run(self) -> None:
        if self._restart is not None:
            self._restart()


@dataclass(frozen=True)
class Calibrated:
    """What a node with a calibration gives its network part, which makes the memory (it knows the
    address): the start image, whether it was given to the node, the node's restart."""

    start: Image
    named: bool
    restart: Restart | None = None


def build_application(calibrated: Calibrated, state_dir: str | None, address: int) -> Application:
    """The node's memory (kept under ``state_dir`` when given) and the application running from it."""
    kind = calibrated.start.kind
    memory = ProgrammableMemory(calibrated.start, memory_directory(state_dir, kind, address))
    return Application(memory, calibrated.start, calibrated.named, calibrated.restart)
