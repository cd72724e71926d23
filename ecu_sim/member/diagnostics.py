"""A node's UDS server beside its J1939 layer: what the node lends it, and how it is built.

The server reads the node through :class:`NodeSide`, the :class:`~ecu_sim.uds.node.ServedNode`
of every node today: the identification the J1939 layer answers with (the ECU part number as
the spare part number, the ECU serial, else the NAME's identity number, as the serial number,
the first Software ID field as the software version) and ``[fms] vin`` as the VIN; the J1939
layer's own DTC table (one store: DM1, DM2 and ReadDTCInformation show the same DTCs); the
vehicle speed the node last knew, for the conditions of programming. CommunicationControl holds
back the node's application messages (its claim and DM1 go on), ControlDTCSetting holds the DTCs
as they are. No node has a programmable memory yet, so the programming services refuse as such a
node does (:mod:`ecu_sim.uds.programming`), and an ECUReset returns the server to the default
session, locked, with the node's messages and DTC recording back on.

A node with a calibration lends its :class:`~ecu_sim.member.application.Application`: the
programmable memory (downloads, the dependency check), its parameters by data identifier, and
0xF182 / 0xF1A0, the calibration ID and the CVN (big-endian) of the image that runs. A parameter
written by identifier goes into the memory's active image at once (read back as written) and
takes effect, as a real ECU's does, at the next ECUReset: :meth:`NodeSide.apply` restarts the
application from the active image, and DM19, the software identification, 0xF182 and 0xF1A0
report it from then on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from ecu_sim.calibration.memory import ProgrammableMemory as CalibrationMemory
from ecu_sim.isotp.transport import IsoTpServer
from ecu_sim.j1939.dm import DtcTable
from ecu_sim.j1939.ident import Identification
from ecu_sim.member.application import Application
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.uds.codes import (
    DID_CALIBRATION_ID,
    DID_CVN,
    DID_SERIAL_NUMBER,
    DID_SOFTWARE_VERSION,
    DID_SPARE_PART_NUMBER,
    DID_VIN,
)
from ecu_sim.uds.endpoint import DiagnosticEndpoint
from ecu_sim.uds.node import Parameters
from ecu_sim.uds.security import Security, SecurityStore, load_algorithm
from ecu_sim.uds.server import UdsServer

log = logging.getLogger(__name__)


class CalibrationParameters:
    """The calibration parameters of a memory's active image, by their data identifiers."""

    def __init__(self, memory: CalibrationMemory) -> None:
        self._memory = memory

    def read(self, did: int) -> bytes | None:
        image = self._memory.active
        parameter = image.layout.parameter_by_did(did)
        return None if parameter is None else image.data[parameter.offset:parameter.offset + parameter.size]

    def write(self, did: int, data: bytes) -> str | None:
        """Into the active image (kept); it runs from the next apply (ECUReset)."""
        image = self._memory.active
        parameter = image.layout.parameter_by_did(did)
        if parameter is None:
            return f"no calibration parameter has the identifier 0x{did:04X}"
        try:
            self._memory.replace_active(image.changed({parameter.name: parameter.decode(data)}))
        except ValueError as exc:  # out of range, or an image the node's application cannot run
            return str(exc)
        log.info("%s: %s written by identifier 0x%04X; it takes effect at the next ECUReset",
                 image.kind, parameter.name, did)
        return None


class NodeSide:
    """What a node lends its server; the part reads back what the server switched."""

    def __init__(self, kind: str, dtcs: DtcTable, identification: Mapping[int, bytes],
                 speed: Callable[[], float], application: Application | None = None,
                 applied: Callable[[], None] | None = None) -> None:
        """``speed``: the vehicle speed the node knew at its last tick (NaN: none);
        ``application``: the node's calibration and how it restarts (None: it has none);
        ``applied``: told after each apply (the part's identification follows the new image)."""
        self._kind = kind
        self._dtcs = dtcs
        self._identification = dict(identification)
        self._speed = speed
        self.application = application
        self._applied = applied
        self._parameters = None if application is None else CalibrationParameters(application.memory)
        #: CommunicationControl held the node's application messages back
        self.silenced = False
        #: ControlDTCSetting off: the DTCs stay as they are
        self.dtcs_held = False
        self.resets = 0

    @property
    def identification(self) -> Mapping[int, bytes]:
        application = self.application
        if application is None:
            return self._identification
        image = application.image
        return {**self._identification, DID_CALIBRATION_ID: image.calibration_id.encode("ascii"),
                DID_CVN: image.cvn.to_bytes(4, "big")}

    @property
    def dtcs(self) -> DtcTable:
        return self._dtcs

    @property
    def parameters(self) -> Parameters | None:
        """None in boot mode: the boot loader has no application's parameters."""
        application = self.application
        return None if application is None or application.boot else self._parameters

    @property
    def memory(self) -> CalibrationMemory | None:
        return None if self.application is None else self.application.memory

    @property
    def boot(self) -> bool:
        """The node is in boot mode (its application not valid)."""
        return self.application is not None and self.application.boot

    def apply(self) -> None:
        """The active image takes effect now: the node's application restarts from it."""
        if self.application is not None:
            self.application.apply()
            if self._applied is not None:
                self._applied()

    def speed_kph(self) -> float:
        return self._speed()

    def communicate(self, enabled: bool) -> None:
        self.silenced = not enabled

    def set_dtc_recording(self, enabled: bool) -> None:
        self.dtcs_held = not enabled

    def reset(self, kind: int) -> None:
        self.resets += 1
        self.silenced = self.dtcs_held = False
        log.info("%s: ECUReset (kind %d) from a tester: back in the default session", self._kind, kind)
        self.apply()


def identification_dids(identification: Identification, identity_number: int,
                        vin: str | None) -> dict[int, bytes]:
    """The identification DIDs of a node with these J1939 identification texts."""
    software = identification.software[0] if identification.software else ""
    serial = identification.ecu_serial or identification.serial or f"{identity_number:06X}"
    values = {DID_SPARE_PART_NUMBER: identification.ecu_part or identification.model,
              DID_SERIAL_NUMBER: serial, DID_SOFTWARE_VERSION: software, DID_VIN: vin or ""}
    return {did: text.encode("ascii") for did, text in values.items() if text}


def build_endpoint(kind: str, address: int, settings: DiagnosticsSettings, period_s: float,
                   side: NodeSide) -> DiagnosticEndpoint:
    """The node's transport and server; ValueError (a person's to fix) for a key algorithm that
    cannot be loaded."""
    algorithm = load_algorithm(settings.key_algorithm)
    path = (None if settings.state_dir is None else
            os.path.join(settings.state_dir, f"uds-{kind.lower()}-{address:02x}.json"))
    security = Security(f"{kind}@{address:02X}".encode("ascii"), SecurityStore(path), algorithm,
                        settings.attempts, ticks_in(settings.delay_s, period_s), settings.flaws)
    return DiagnosticEndpoint(IsoTpServer(address, period_s), UdsServer(side, security, period_s))
