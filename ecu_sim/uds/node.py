"""What a node lends its UDS server: the server reads and asks through these, never the node itself.

The protocols are structural, so the node's own objects satisfy them as they are: its J1939
layer's DTC table is the :class:`DtcStore` (one store, which DM1/DM2 and ReadDTCInformation
both show), and the calibration's memory is the :class:`ServedMemory` (the names and types
the diagnostics contract fixes), without either importing this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class ServedMemory(Protocol):
    """The calibration area a download goes to: staged, checked, then made the active image."""

    start: int
    size: int

    @property
    def application_valid(self) -> bool:
        """False: boot mode (an erase began and no verified image followed)."""

    def erase(self) -> None: ...

    def write(self, address: int, data: bytes) -> None: ...

    def check(self) -> str | None: ...

    def commit(self) -> None: ...

    @property
    def calibration_id(self) -> str: ...

    @property
    def cvn(self) -> int: ...


class DtcStore(Protocol):
    """A node's DTCs, each an (SPN, FMI) pair with its occurrence count."""

    def active(self) -> Sequence[tuple[tuple[int, int], int]]: ...

    def previously_active(self) -> Sequence[tuple[tuple[int, int], int]]: ...

    def clear_all(self) -> None: ...


class Parameters(Protocol):
    """A node's calibration parameters by data identifier."""

    def read(self, did: int) -> bytes | None:
        """The parameter's bytes; None when no parameter has ``did``."""

    def write(self, did: int, data: bytes) -> str | None:
        """Write a parameter of ``did`` (its length checked by the server); a reason when the
        value is refused (out of range), else None."""


class ServedNode(Protocol):
    """The node behind a server."""

    @property
    def identification(self) -> Mapping[int, bytes]:
        """The identification DIDs the node has, by DID (VIN, part and serial numbers, software)."""

    @property
    def dtcs(self) -> DtcStore: ...

    @property
    def parameters(self) -> Parameters | None: ...

    @property
    def memory(self) -> ServedMemory | None:
        """None: the node has no programmable memory, and the programming services refuse."""

    @property
    def boot(self) -> bool:
        """The node's application is not valid: the server serves as its boot loader."""

    def speed_kph(self) -> float:
        """The vehicle's speed as the node knows it; NaN when it does not."""

    def communicate(self, enabled: bool) -> None:
        """Send (True) or hold back (False) the node's application messages."""

    def set_dtc_recording(self, enabled: bool) -> None:
        """Let DTCs change state (True) or hold them as they are (False): ControlDTCSetting."""

    def reset(self, kind: int) -> None:
        """ECUReset of ``kind`` (1 hard, 2 key off/on, 3 soft), after its answer went out."""
