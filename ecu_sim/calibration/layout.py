"""Where each calibration parameter of a node lives in its memory, and how its bytes read.

The area of every node kind starts with a header (a magic, the node kind, the layout version, the
calibration ID) and ends with an integrity field; the parameters lie between, each at a fixed
address with its UDS data identifier. Continuous quantities are IEEE binary64, little-endian, in
the unit the parameter names, with no scaling: a value any setting accepts comes back from the
image as the same float, so the built-in image drives exactly as the settings did. Counts are
unsigned 32-bit integers. The erased bytes between the last parameter and the integrity field
are 0xFF, as a flash sector's are after an erase.

The integrity field is Adler-32 over everything before it, not CRC-32: the CVN is CRC-32 over the
whole area, and a CRC-32 appended to the data it covers would give every image the same CVN.
Our choices (the header's bytes, the addresses, the identifiers from 0x0100 up per node, NUL
padding of the calibration ID) are marked as such in docs/diagnostics.md.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

MAGIC: Final = b"ECAL"
LAYOUT_VERSION: Final = 1
#: the first address of every node's calibration area: what a tester downloads to
AREA_START: Final = 0x0008_0000
AREA_SIZE: Final = 256
CALIBRATION_ID_LENGTH: Final = 16
#: magic, kind, version, two reserved bytes, the calibration ID
HEADER_SIZE: Final = 4 + 1 + 1 + 2 + CALIBRATION_ID_LENGTH
INTEGRITY_SIZE: Final = 4
FIRST_DID: Final = 0x0100

#: type -> struct format (little-endian) and what it holds
TYPES: Final = {"f64": "<d", "u32": "<I"}

Number = float | int


class CalibrationError(ValueError):
    """An image or a value that a node cannot take: the message is one line a person can act on."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of a layout; ``offset`` is from the area's start, ``address`` absolute."""

    name: str
    offset: int
    type: str
    low: float
    high: float
    unit: str
    did: int
    help: str

    @property
    def size(self) -> int:
        return struct.calcsize(TYPES[self.type])

    @property
    def address(self) -> int:
        return AREA_START + self.offset

    @property
    def scaling(self) -> str:
        return "1 (the value itself)"

    def encode(self, value: Number) -> bytes:
        """The bytes of the parameter (as in the image and its data identifier); refuses one out of range."""
        problem = self.problem(value)
        if problem is not None:
            raise CalibrationError(problem)
        return struct.pack(TYPES[self.type], int(value) if self.type == "u32" else float(value))

    def decode(self, data: bytes) -> Number:
        """The value of the parameter's bytes; not range-checked (see :meth:`problem`)."""
        if len(data) != self.size:
            raise CalibrationError(f"{self.name} takes {self.size} bytes, not {len(data)}")
        value: Number = struct.unpack(TYPES[self.type], data)[0]
        return value

    def problem(self, value: Number) -> str | None:
        """None if ``value`` fits the parameter, else a sentence naming it and its range."""
        if self.type == "u32" and (isinstance(value, bool) or not isinstance(value, int)
                                   or value != math.floor(value)):
            return f"{self.name} is a count: give a whole number (got {value!r})"
        if not self.low <= value <= self.high:  # NaN is never in range
            span = f"{_bound(self.low)}..{_bound(self.high)}"
            return f"{self.name} must be within {span} {self.unit} (got {value!r})"
        return None


def _bound(value: float) -> str:
    return "inf" if value == math.inf else f"{value:g}"


@dataclass(frozen=True, slots=True)
class Layout:
    """The calibration area of one node kind."""

    kind: str
    code: int
    parameters: tuple[Parameter, ...]

    @property
    def start(self) -> int:
        return AREA_START

    @property
    def size(self) -> int:
        return AREA_SIZE

    def parameter(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        known = ", ".join(p.name for p in self.parameters)
        raise CalibrationError(f"the {self.kind} has no calibration parameter {name!r}; it has {known}")

    def parameter_by_did(self, did: int) -> Parameter | None:
        """The parameter behind a UDS data identifier, None if the layout has none there."""
        for parameter in self.parameters:
            if parameter.did == did:
                return parameter
        return None

    def problems(self, values: Mapping[str, Number]) -> list[str]:
        """What keeps ``values`` (one per parameter) from this layout, one sentence each."""
        found = [f"the {self.kind} has no calibration parameter {name!r}"
                 for name in values if name not in {p.name for p in self.parameters}]
        for parameter in self.parameters:
            if parameter.name not in values:
                found.append(f"{parameter.name} has no value")
            else:
                problem = parameter.problem(values[parameter.name])
                if problem is not None:
                    found.append(problem)
        return found


#: (name, type, low, high, unit, help) per node kind, in address order
_SPECS: Final[dict[str, tuple[tuple[str, str, float, float, str, str], ...]]] = {}
_ENGINE = (
    ("road_speed_limit_kph", "f64", 5.0, math.inf, "km/h",
     "maximum vehicle speed limit the engine governs the truck to; inf: no limit"),
    ("torque_limit_nm", "f64", 0.0, math.inf, "N m",
     "the engine's torque limit at the crank; at or above the full-load peak it never acts"),
    ("idle_rpm", "f64", 400.0, 1200.0, "rpm", "low idle speed"),
    ("governed_rpm", "f64", 1500.0, 3000.0, "rpm", "high idle: the governor's speed"),
)
_SHIFTS = (
    ("up_rpm_at_0", "f64", 500.0, 3000.0, "rpm", "upshift line at 0 % accelerator pedal"),
    ("up_rpm_at_100", "f64", 500.0, 3000.0, "rpm", "upshift line at 100 % accelerator pedal"),
    ("down_rpm_at_0", "f64", 500.0, 3000.0, "rpm", "downshift line at 0 % accelerator pedal"),
    ("down_rpm_at_100", "f64", 500.0, 3000.0, "rpm", "downshift line at 100 % accelerator pedal"),
)
_BRAKES = (
    ("max_brake_decel_g", "f64", 0.05, 1.5, "g", "what the foundation brakes give at 100 % on a level road"),
)
_RETARDER = (
    ("retarder_max_nm", "f64", 50.0, 5000.0, "N m",
     "the retarder's peak torque; its map over engine speed is scaled to it"),
)
_CCM = (
    ("kp", "f64", 0.0, math.inf, "%/(km/h)", "cruise controller's proportional gain"),
    ("ki", "f64", 0.0, math.inf, "%/(km/h s)", "cruise controller's integral gain"),
    ("app_min_pct", "f64", 0.0, 100.0, "%", "lowest accelerator pedal the controller commands"),
    ("app_max_pct", "f64", 0.0, 100.0, "%", "highest accelerator pedal the controller commands"),
)
_SPECS.update({
    "ecu": _ENGINE + _SHIFTS + _BRAKES,
    "engine": _ENGINE,
    "transmission": _SHIFTS,
    "brakes": _BRAKES,
    "retarder": _RETARDER,
    "ccm": _CCM,
})


def _layout(kind: str, code: int) -> Layout:
    parameters, offset = [], HEADER_SIZE
    for index, (name, type_, low, high, unit, help_) in enumerate(_SPECS[kind]):
        parameter = Parameter(name, offset, type_, low, high, unit, FIRST_DID + index, help_)
        parameters.append(parameter)
        offset += parameter.size
    if offset > AREA_SIZE - INTEGRITY_SIZE:
        raise CalibrationError(f"the {kind}'s parameters do not fit its {AREA_SIZE}-byte area")
    return Layout(kind, code, tuple(parameters))


#: node kind -> its layout; the code is the header's node kind byte
LAYOUTS: Final = {kind: _layout(kind, code) for code, kind in enumerate(_SPECS, start=1)}
NODE_KINDS: Final = tuple(LAYOUTS)


def layout_of(kind: str) -> Layout:
    """The layout of a node kind, or an error naming the kinds there are."""
    try:
        return LAYOUTS[kind]
    except KeyError:
        raise CalibrationError(f"no node kind {kind!r}: the kinds are {', '.join(NODE_KINDS)}") from None
