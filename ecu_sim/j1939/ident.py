"""Identification parameter groups: Component ID, Software ID and ECU ID (J1939-71).

They are ASCII fields each ended by ``*``, so their length follows the text: a DBC describes
fixed bit positions only, and these are packed here by hand. Software ID starts with the number
of fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

COMPONENT_ID_PGN: Final = 65259
SOFTWARE_ID_PGN: Final = 65242
ECU_ID_PGN: Final = 64965
DELIMITER: Final = "*"


@dataclass(frozen=True)
class Identification:
    """The texts a node answers with; a field must not hold the delimiter."""

    make: str = "ecu-sim"
    model: str = ""
    serial: str = ""
    unit: str = ""
    software: tuple[str, ...] = ()
    ecu_part: str = ""
    ecu_serial: str = ""
    ecu_location: str = ""
    ecu_type: str = ""
    ecu_manufacturer: str = "ecu-sim"

    def __post_init__(self) -> None:
        for field in (self.make, self.model, self.serial, self.unit, *self.software, self.ecu_part,
                      self.ecu_serial, self.ecu_location, self.ecu_type, self.ecu_manufacturer):
            if DELIMITER in field or not field.isascii():
                raise ValueError(f"an identification field is ASCII without {DELIMITER!r}: {field!r}")

    def payloads(self) -> dict[int, bytes]:
        """Each identification PGN's payload."""
        return {
            COMPONENT_ID_PGN: _fields(self.make, self.model, self.serial, self.unit),
            SOFTWARE_ID_PGN: bytes((len(self.software),)) + _fields(*self.software),
            ECU_ID_PGN: _fields(self.ecu_part, self.ecu_serial, self.ecu_location, self.ecu_type,
                                self.ecu_manufacturer),
        }


def _fields(*texts: str) -> bytes:
    return "".join(text + DELIMITER for text in texts).encode("ascii")


def split_fields(data: bytes) -> list[str]:
    """The fields of an identification payload (Software ID: after its count byte)."""
    return data.decode("ascii", errors="replace").split(DELIMITER)[:-1]
