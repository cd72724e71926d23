"""The co-simulation datagrams, byte by byte: one module holds both encodings, reader and writer.

No library describes this layout: a DBC describes CAN payloads, not UDP datagrams, and the
fixed-format array of doubles is what Simulink's UDP blocks and BeamNG-style interfaces send, so
a peer needs nothing but ``struct`` (or a Byte Unpack block). docs/cosim.md is the reference.

Every datagram starts with four little-endian float64: protocol version, sequence number, n (the
ticks of the step; negative in an error answer: the error code) and tick index, followed by the
values in the order the contract gives (:mod:`ecu_sim.cosim.contract`). The header is doubles
too, so a peer that can only send and receive a vector of doubles can speak the protocol.

A datagram that goes on after the doubles carries CAN frames (the CAN encoding): a little-endian
uint32 frame count, then one record per frame: uint32 identifier (bit 31 extended, bit 30 remote,
as in SocketCAN), uint32 tick offset within the step, uint8 length, uint8 flags (bit 0 FD, bit 1
bit-rate switch, bit 2 error state indicator), two zero bytes, and the data padded with zeros to
8 bytes (64 for an FD frame).

A request with n = 0 is a control by name: the header, then the control as UTF-8 text in the
``--control`` grammar without a time (``stop:TCO1``), which acts before the next tick. Its answer
is the header with n = 0 and that tick, then what was done as text; or an error answer.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Final

VERSION: Final = 1
HEADER: Final = struct.Struct("<4d")
HEADER_SIZE: Final = HEADER.size
_COUNT: Final = struct.Struct("<I")
_RECORD: Final = struct.Struct("<IIBBH")
CAN_EFF_FLAG: Final = 0x80000000
CAN_RTR_FLAG: Final = 0x40000000
_ID_MASK: Final = 0x1FFFFFFF
FLAG_FD: Final = 0x01
FLAG_BRS: Final = 0x02
FLAG_ESI: Final = 0x04
#: the largest UDP payload over IPv4
MAX_DATAGRAM: Final = 65507
#: integers a double holds exactly
_MAX_EXACT: Final = 2.0 ** 53


class ErrorCode:
    """Error answers carry ``-code`` in the ``n`` field, then a UTF-8 sentence for the person."""

    MALFORMED = 1
    VERSION = 2
    STALE = 3
    TOO_LONG = 4
    #: a control by name that this ECU cannot apply (an unknown message, a value out of range)
    REFUSED = 5


class ProtocolError(ValueError):
    """A datagram that cannot be read; ``code`` goes back to the peer with the message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Frame:
    """A CAN frame of the step, ``offset`` ticks after the step's first tick."""

    arbitration_id: int
    data: bytes
    offset: int = 0
    is_extended_id: bool = True
    is_remote_frame: bool = False
    is_fd: bool = False
    bitrate_switch: bool = False
    error_state_indicator: bool = False


@dataclass(frozen=True)
class Datagram:
    """A request (``n`` ticks to run, the peer's inputs) or an answer (the outputs at ``tick``).

    ``frames`` is None in the fixed-format encoding and a tuple (maybe empty) in the CAN encoding.
    """

    seq: int
    n: int
    tick: int
    values: tuple[float, ...]
    frames: tuple[Frame, ...] | None = None
    version: int = VERSION
    message: str = field(default="", compare=True)

    @property
    def is_error(self) -> bool:
        return self.n < 0

    @property
    def is_control(self) -> bool:
        """A control by name (n = 0), its text in ``message``."""
        return self.n == 0


def encode(datagram: Datagram) -> bytes:
    """The bytes of a request or answer; an error answer when ``datagram.n`` is negative."""
    head = HEADER.pack(float(datagram.version), float(datagram.seq), float(datagram.n),
                       float(datagram.tick))
    if datagram.n <= 0:
        return head + datagram.message.encode("utf-8")
    body = struct.pack(f"<{len(datagram.values)}d", *datagram.values)
    if datagram.frames is None:
        return head + body
    return head + body + encode_frames(datagram.frames)


def encode_frames(frames: tuple[Frame, ...]) -> bytes:
    parts = [_COUNT.pack(len(frames))]
    for frame in frames:
        ident = frame.arbitration_id & _ID_MASK
        if frame.is_extended_id:
            ident |= CAN_EFF_FLAG
        if frame.is_remote_frame:
            ident |= CAN_RTR_FLAG
        flags = ((FLAG_FD if frame.is_fd else 0) | (FLAG_BRS if frame.bitrate_switch else 0)
                 | (FLAG_ESI if frame.error_state_indicator else 0))
        size = 64 if frame.is_fd else 8
        parts.append(_RECORD.pack(ident, frame.offset, len(frame.data), flags, 0))
        parts.append(bytes(frame.data).ljust(size, b"\0"))
    return b"".join(parts)


def error(seq: int, tick: int, code: int, message: str) -> Datagram:
    return Datagram(seq, -code, tick, (), message=message)


def decode(data: bytes, values: int | None) -> Datagram:
    """Read a datagram that carries ``values`` doubles after the header; ProtocolError says why not.

    The encoding follows from the length: exactly the doubles is the fixed format, more is the
    CAN encoding. An error answer (negative ``n``) carries its message instead of values.
    ``values=None`` reads a fixed-format datagram of any number of doubles (a plant's answer,
    whose contract ecu-sim does not know).
    """
    if len(data) < HEADER_SIZE:
        raise ProtocolError(ErrorCode.MALFORMED, f"datagram of {len(data)} bytes is shorter than the "
                                                 f"{HEADER_SIZE}-byte header (4 float64)")
    version_f, seq_f, n_f, tick_f = HEADER.unpack_from(data)
    version = _integer(version_f, "version")
    if version != VERSION:
        raise ProtocolError(ErrorCode.VERSION, f"protocol version {version_f:g}, but this ecu-sim "
                                               f"speaks version {VERSION}")
    seq, n, tick = _integer(seq_f, "sequence number"), _integer(n_f, "n"), _integer(tick_f, "tick")
    if n < 0:
        return Datagram(seq, n, tick, (), message=data[HEADER_SIZE:].decode("utf-8", "replace"))
    if n == 0:
        return Datagram(seq, n, tick, (), message=_control_text(data[HEADER_SIZE:]))
    if values is None:
        if (len(data) - HEADER_SIZE) % 8:
            raise ProtocolError(ErrorCode.MALFORMED, f"datagram of {len(data)} bytes is not a whole "
                                                     "number of float64")
        values = (len(data) - HEADER_SIZE) // 8
    end = HEADER_SIZE + 8 * values
    if len(data) < end:
        raise ProtocolError(ErrorCode.MALFORMED, f"datagram of {len(data)} bytes is too short: the "
                                                 f"header and {values} float64 values take {end} bytes")
    body = struct.unpack_from(f"<{values}d", data, HEADER_SIZE)
    frames = None if len(data) == end else decode_frames(data, end)
    return Datagram(seq, n, tick, body, frames, version)


def decode_frames(data: bytes, start: int) -> tuple[Frame, ...]:
    if len(data) < start + _COUNT.size:
        raise ProtocolError(ErrorCode.MALFORMED, f"{len(data) - start} bytes after the values: the CAN "
                                                 "encoding starts with a 4-byte frame count")
    (count,) = _COUNT.unpack_from(data, start)
    at = start + _COUNT.size
    frames = []
    for index in range(count):
        if len(data) < at + _RECORD.size:
            raise ProtocolError(ErrorCode.MALFORMED, f"frame {index} of {count}: the datagram ends "
                                                     "inside its record")
        ident, offset, length, flags, _ = _RECORD.unpack_from(data, at)
        size = 64 if flags & FLAG_FD else 8
        if length > size:
            raise ProtocolError(ErrorCode.MALFORMED, f"frame {index}: length {length} exceeds {size} bytes")
        at += _RECORD.size
        if len(data) < at + size:
            raise ProtocolError(ErrorCode.MALFORMED, f"frame {index} of {count}: the datagram ends "
                                                     "inside its data")
        frames.append(Frame(ident & _ID_MASK, bytes(data[at:at + length]), offset,
                            bool(ident & CAN_EFF_FLAG), bool(ident & CAN_RTR_FLAG), bool(flags & FLAG_FD),
                            bool(flags & FLAG_BRS), bool(flags & FLAG_ESI)))
        at += size
    if at != len(data):
        raise ProtocolError(ErrorCode.MALFORMED, f"{len(data) - at} bytes after the last of {count} "
                                                 "frames")
    return tuple(frames)


def _control_text(body: bytes) -> str:
    """The text of a control request; anything else with n = 0 is a step of no ticks."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if not text.strip() or not text.isprintable():
        raise ProtocolError(ErrorCode.MALFORMED, "n = 0 asks for a control by name, whose text must "
                                                 "follow the header (e.g. stop:TCO1); a step runs at "
                                                 "least one tick")
    return text.strip()


def _integer(value: float, what: str) -> int:
    if not (math.isfinite(value) and value == int(value) and abs(value) <= _MAX_EXACT):
        raise ProtocolError(ErrorCode.MALFORMED, f"the {what} in the header is {value!r}, not an integer")
    return int(value)
