"""A calibration image: the bytes of a node's whole calibration area, what they say, and the CVN.

The image is the one thing a node's behaviour is read from: the built-in one made from the
settings and one read from a file or downloaded take the same path, :meth:`Image.parse`, which
refuses an image of another node kind or layout, a broken integrity field or a value out of
range, so a node never starts from an image it could not have been given.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from ecu_sim.calibration.layout import (
    AREA_SIZE,
    CALIBRATION_ID_LENGTH,
    HEADER_SIZE,
    INTEGRITY_SIZE,
    LAYOUT_VERSION,
    LAYOUTS,
    MAGIC,
    CalibrationError,
    Layout,
    Number,
    layout_of,
)

_HEADER = struct.Struct(f"<4sBBH{CALIBRATION_ID_LENGTH}s")


def _id_bytes(calibration_id: str) -> bytes:
    """The ID as stored: ASCII, NUL-padded to 16 bytes (our choice of padding)."""
    if not calibration_id.isascii() or not calibration_id.isprintable() or "*" in calibration_id:
        raise CalibrationError(f"a calibration ID is printable ASCII without '*', the delimiter of the "
                               f"software identification that names it (got {calibration_id!r})")
    if len(calibration_id) > CALIBRATION_ID_LENGTH:
        raise CalibrationError(f"a calibration ID has at most {CALIBRATION_ID_LENGTH} characters "
                               f"(got {len(calibration_id)}: {calibration_id!r})")
    return calibration_id.encode("ascii").ljust(CALIBRATION_ID_LENGTH, b"\0")


@dataclass(frozen=True, slots=True)
class Image:
    """A checked image of one node kind's calibration area (make one with :meth:`build` or :meth:`parse`)."""

    layout: Layout
    data: bytes

    @classmethod
    def build(cls, kind: str, values: Mapping[str, Number], calibration_id: str) -> Image:
        """The image of ``values`` (one per parameter of the kind's layout)."""
        layout = layout_of(kind)
        problems = layout.problems(values)
        if problems:
            raise CalibrationError(f"{kind}: {problems[0]}")
        area = bytearray(b"\xff" * AREA_SIZE)
        area[:HEADER_SIZE] = _HEADER.pack(MAGIC, layout.code, LAYOUT_VERSION, 0, _id_bytes(calibration_id))
        for parameter in layout.parameters:
            end = parameter.offset + parameter.size
            area[parameter.offset:end] = parameter.encode(values[parameter.name])
        body = bytes(area[:-INTEGRITY_SIZE])
        return cls(layout, body + struct.pack("<I", zlib.adler32(body)))

    @classmethod
    def parse(cls, data: bytes, kind: str | None = None) -> Image:
        """The image in ``data``, checked whole; ``kind``: the node kind it must be for."""
        problem = image_problem(data, kind)
        if problem is not None:
            raise CalibrationError(problem)
        return cls(LAYOUTS[_kind_of(data)], bytes(data))

    @property
    def kind(self) -> str:
        return self.layout.kind

    @property
    def calibration_id(self) -> str:
        raw = self.data[HEADER_SIZE - CALIBRATION_ID_LENGTH:HEADER_SIZE]
        return raw.rstrip(b"\0").decode("ascii")

    @property
    def cvn(self) -> int:
        """The calibration verification number: CRC-32 (IEEE 802.3) over the whole area as stored."""
        return zlib.crc32(self.data)

    def value(self, name: str) -> Number:
        parameter = self.layout.parameter(name)
        return parameter.decode(self.data[parameter.offset:parameter.offset + parameter.size])

    @property
    def values(self) -> dict[str, Number]:
        return {p.name: self.value(p.name) for p in self.layout.parameters}

    def changed(self, changes: Mapping[str, Number], calibration_id: str | None = None) -> Image:
        """This image with some values (and perhaps the ID) changed; every name must be the layout's."""
        for name in changes:
            self.layout.parameter(name)
        return Image.build(self.kind, {**self.values, **changes},
                           self.calibration_id if calibration_id is None else calibration_id)


def _kind_of(data: bytes) -> str:
    code = data[4]
    for kind, layout in LAYOUTS.items():
        if layout.code == code:
            return kind
    raise CalibrationError(f"node kind byte {code} is none of ours")


def image_problem(data: bytes, kind: str | None = None) -> str | None:
    """None if ``data`` is a valid image (for ``kind``, if given), else the reason in one line."""
    if len(data) != AREA_SIZE:
        return f"a calibration image is {AREA_SIZE} bytes from its start address (got {len(data)})"
    magic, code, version, _, raw_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        return f"not a calibration image of ours: it starts with {magic!r}, not {MAGIC!r}"
    found = next((k for k, layout in LAYOUTS.items() if layout.code == code), None)
    if found is None:
        return f"node kind byte {code} is none of ours"
    if kind is not None and found != kind:
        return f"this is an image for the {found}, not for the {kind}"
    if version != LAYOUT_VERSION:
        return (f"layout version {version} of the {found}'s calibration; this ecu-sim reads "
                f"version {LAYOUT_VERSION}")
    body, stored = data[:-INTEGRITY_SIZE], struct.unpack("<I", data[-INTEGRITY_SIZE:])[0]
    if zlib.adler32(body) != stored:
        return "the image's integrity field does not match its bytes: the image is damaged"
    try:
        raw_id.rstrip(b"\0").decode("ascii")
    except UnicodeDecodeError:
        return "the calibration ID is not ASCII"
    layout = LAYOUTS[found]
    for parameter in layout.parameters:
        value = parameter.decode(data[parameter.offset:parameter.offset + parameter.size])
        problem = parameter.problem(value)
        if problem is not None:
            return problem
    return None
