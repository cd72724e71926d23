"""What a person names to read, the data identifier behind each name, and how its bytes read.

A name is one of the identification DIDs the node answers (ISO 14229-1 Annex C, and ecu-sim's
own for the calibration ID and the CVN), a data identifier in hex, or a calibration parameter by
its name. A parameter's identifier depends on the node kind (each kind numbers its parameters
from 0x0100), so a parameter named, or a DID read as a value, needs ``--node KIND``; its bytes
are then decoded by the calibration's layout, the same bytes as in the image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecu_sim.calibration.layout import CalibrationError, Parameter, layout_of
from ecu_sim.errors import ConfigError
from ecu_sim.uds.codes import (
    DID_ACTIVE_SESSION,
    DID_CALIBRATION_ID,
    DID_CVN,
    DID_SERIAL_NUMBER,
    DID_SOFTWARE_VERSION,
    DID_SPARE_PART_NUMBER,
    DID_VIN,
    DiagnosticSession,
)

#: name -> (DID, what it is), in the order a read of everything shows them
IDENTIFICATION: Final = {
    "vin": (DID_VIN, "VIN"),
    "part": (DID_SPARE_PART_NUMBER, "spare part number"),
    "serial": (DID_SERIAL_NUMBER, "ECU serial number"),
    "software": (DID_SOFTWARE_VERSION, "software version"),
    "calibration-id": (DID_CALIBRATION_ID, "calibration ID"),
    "cvn": (DID_CVN, "CVN"),
    "session": (DID_ACTIVE_SESSION, "active session"),
}


@dataclass(frozen=True)
class Item:
    """One thing to read: its DID, what to call it, and the parameter it is (if one)."""

    did: int
    title: str
    parameter: Parameter | None = None

    def show(self, data: bytes) -> str:
        """The value as a person reads it."""
        if self.parameter is not None:
            if len(data) != self.parameter.size:
                return f"{data.hex(' ')} (not {self.parameter.size} bytes: another node kind?)"
            return f"{self.parameter.decode(data)!r} {self.parameter.unit}".rstrip()
        if self.did == DID_CVN and len(data) == 4:
            return f"0x{int.from_bytes(data, 'big'):08X}"
        if self.did == DID_ACTIVE_SESSION and len(data) == 1:
            try:
                return DiagnosticSession(data[0]).name.lower()
            except ValueError:
                return f"0x{data[0]:02X}"
        if self.did in {did for did, _ in IDENTIFICATION.values()} and data.isascii():
            return data.decode("ascii")
        return data.hex(" ") or "(no bytes)"


def item(name: str, kind: str | None) -> Item:
    """The item ``name`` means; ConfigError saying what names there are. ``kind`` is a node kind
    of the calibration (the command line offers only those)."""
    if name.lower() in IDENTIFICATION:
        did, title = IDENTIFICATION[name.lower()]
        return Item(did, title)
    if name.lower().startswith("0x"):
        return _by_did(name, kind)
    if kind is None:
        raise ConfigError(f"{name!r} is none of {', '.join(IDENTIFICATION)} nor a DID (0x....); "
                          "a calibration parameter by name needs --node KIND (its identifier "
                          "depends on the node kind: `ecu-sim calibration show --node KIND`)")
    try:
        parameter = layout_of(kind).parameter(name)
    except CalibrationError as exc:
        raise ConfigError(str(exc)) from None
    return Item(parameter.did, parameter.name, parameter)


def _by_did(text: str, kind: str | None) -> Item:
    try:
        did = int(text, 16)
    except ValueError:
        did = -1
    if not 0 <= did <= 0xFFFF:
        raise ConfigError(f"a data identifier is 0x0000..0xFFFF, e.g. 0xF190 (got {text!r})")
    known = next((title for d, title in IDENTIFICATION.values() if d == did), None)
    if known is not None:
        return Item(did, known)
    parameter = None if kind is None else layout_of(kind).parameter_by_did(did)
    return Item(did, parameter.name if parameter else f"DID {did:04X}", parameter)

