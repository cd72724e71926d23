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
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from ecu_sim.isotp.transport import IsoTpServer
from ecu_sim.j1939.dm import DtcTable
from ecu_sim.j1939.ident import Identification
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.uds.codes import DID_SERIAL_NUMBER, DID_SOFTWARE_VERSION, DID_SPARE_PART_NUMBER, DID_VIN
from ecu_sim.uds.endpoint import DiagnosticEndpoint
from ecu_sim.uds.node import Parameters, ProgrammableMemory
from ecu_sim.uds.security import Security, SecurityStore, load_algorithm
from ecu_sim.uds.server import UdsServer

log = logging.getLogger(__name__)


class NodeSide:
    """What a node lends its server; the part reads back what the server switched."""

    def __init__(self, kind: str, dtcs: DtcTable, identification: Mapping[int, bytes],
                 speed: Callable[[], float]) -> None:
        """``speed``: the vehicle speed the node knew at its last tick (NaN: none)."""
        self._kind = kind
        self._dtcs = dtcs
        self._identification = dict(identification)
        self._speed = speed
        #: CommunicationControl held the node's application messages back
        self.silenced = False
        #: ControlDTCSetting off: the DTCs stay as they are
        self.dtcs_held = False
        self.resets = 0

    @property
    def identification(self) -> Mapping[int, bytes]:
        return self._identification

    @property
    def dtcs(self) -> DtcTable:
        return self._dtcs

    @property
    def parameters(self) -> Parameters | None:
        return None

    @property
    def memory(self) -> ProgrammableMemory | None:
        return None

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
                        settings.attempts, ticks_in(settings.delay_s, period_s))
    return DiagnosticEndpoint(IsoTpServer(address, period_s), UdsServer(side, security, period_s))
