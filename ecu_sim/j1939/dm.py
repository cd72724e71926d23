"""Diagnostic trouble codes (J1939-73): which faults are active, which were, and DM1/DM2 bytes.

A DTC goes active while its condition holds and previously active when it clears; each time it
goes active its occurrence count rises (up to 126, the largest J1939-73 allows). DM11 erases the
active DTCs: a condition that still holds sets its DTC again, counted from one.

DM1 and DM2 are packed here by hand, not from a DBC: their length varies with the number of DTCs
(two lamp bytes, then four bytes per DTC, through the transport protocol beyond one), and a DTC's
SPN is split around its FMI (16 low bits, FMI, 3 high bits), which a DBC signal cannot describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

DM1_PGN: Final = 65226
DM2_PGN: Final = 65227
DM11_PGN: Final = 65235
#: the largest occurrence count J1939-73 sends (127 means not available)
MAX_OCCURRENCES: Final = 126
#: lamp bits of the first byte (two bits each: 00 off, 01 on); the flash byte is "do not flash"
_AMBER_WARNING_ON: Final = 0b01 << 2
_NO_FLASH: Final = 0xFF
#: the DTC field of a DM1 or DM2 without any DTC
_NO_DTC: Final = b"\x00\x00\x00\x00\xff\xff"


class Dtc(NamedTuple):
    """A fault: the suspect parameter (SPN) and how it fails (FMI)."""

    spn: int
    fmi: int

    def __str__(self) -> str:
        return f"SPN {self.spn} FMI {self.fmi}"


def pack_dtc(dtc: Dtc, occurrences: int) -> bytes:
    """The four bytes of a DTC in SPN conversion method 0."""
    if not 0 <= dtc.spn < 1 << 19 or not 0 <= dtc.fmi < 32:
        raise ValueError(f"a DTC has SPN 0..524287 and FMI 0..31, got {dtc}")
    count = min(occurrences, MAX_OCCURRENCES)
    return bytes((dtc.spn & 0xFF, (dtc.spn >> 8) & 0xFF, ((dtc.spn >> 16) << 5) | dtc.fmi, count))


def unpack_dtcs(data: bytes) -> list[tuple[Dtc, int]]:
    """The DTCs and occurrence counts of a DM1 or DM2 payload (none for the empty field)."""
    found = []
    for at in range(2, len(data) - 3, 4):
        b = data[at:at + 4]
        spn = b[0] | (b[1] << 8) | ((b[2] >> 5) << 16)
        if spn == 0 and b[2] & 0x1F == 0:
            continue
        found.append((Dtc(spn, b[2] & 0x1F), b[3] & 0x7F))
    return found


@dataclass
class _Record:
    occurrences: int
    active: bool


class DtcTable:
    """Every DTC the node has set, active or previously active, in the order they first occurred."""

    def __init__(self) -> None:
        self._records: dict[Dtc, _Record] = {}

    def update(self, present: set[Dtc]) -> None:
        """The conditions that hold this tick: set what started, move what ended to previously active."""
        for dtc, record in self._records.items():
            if record.active and dtc not in present:
                record.active = False
        for dtc in sorted(present):
            record = self._records.setdefault(dtc, _Record(0, False))
            if not record.active:
                record.active = True
                record.occurrences += 1

    def active(self) -> list[tuple[Dtc, int]]:
        return [(d, r.occurrences) for d, r in self._records.items() if r.active]

    def previously_active(self) -> list[tuple[Dtc, int]]:
        return [(d, r.occurrences) for d, r in self._records.items() if not r.active]

    def clear_active(self) -> None:
        """DM11: forget the active DTCs (previously active ones stay for DM2)."""
        self._records = {d: r for d, r in self._records.items() if not r.active}

    def clear_all(self) -> None:
        """UDS ClearDiagnosticInformation of every group: active and previously active alike."""
        self._records = {}

    def dm1(self) -> bytes:
        """DM1: the amber warning lamp while any DTC is active, and the active DTCs."""
        return _message(self.active())

    def dm2(self) -> bytes:
        """DM2: the previously active DTCs; no lamp is lit for a fault that is gone."""
        return _message(self.previously_active(), lamps=False)


def _message(dtcs: list[tuple[Dtc, int]], lamps: bool = True) -> bytes:
    lamp = _AMBER_WARNING_ON if dtcs and lamps else 0
    if not dtcs:
        return bytes((lamp, _NO_FLASH)) + _NO_DTC
    data = bytes((lamp, _NO_FLASH)) + b"".join(pack_dtc(d, n) for d, n in dtcs)
    return data + b"\xff" * (8 - len(data)) if len(data) < 8 else data
