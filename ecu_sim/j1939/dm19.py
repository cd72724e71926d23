"""DM19, calibration information (J1939-73): what proves which calibration a node runs.

Each calibration is 20 bytes: its CVN (4 bytes, little-endian) then its calibration ID (16 bytes,
ASCII). A node that answers with more than one calibration sends them one after another (by the
transport protocol, past 8 bytes); ours each have one. Unused bytes of the ID are NUL (our choice).
"""

from __future__ import annotations

from typing import Final, NamedTuple

DM19_PGN: Final = 54016
ID_LENGTH: Final = 16


class NodeCalibration(NamedTuple):
    """The calibration a node runs, as DM19 and the software identification report it."""

    cvn: int
    calibration_id: str
    #: the software identification names it too (an image given to the node, not its built-in one)
    named: bool = False


def dm19(calibrations: tuple[NodeCalibration, ...]) -> bytes:
    """DM19's payload for ``calibrations``."""
    return b"".join(c.cvn.to_bytes(4, "little") + c.calibration_id.encode("ascii").ljust(ID_LENGTH, b"\0")
                    for c in calibrations)


def parse_dm19(data: bytes) -> list[tuple[int, str]]:
    """(CVN, calibration ID) of each 20-byte calibration in a DM19 payload."""
    return [(int.from_bytes(data[i:i + 4], "little"), data[i + 4:i + 20].rstrip(b"\0").decode("ascii"))
            for i in range(0, len(data) - 19, 20)]
