"""The co-simulation datagrams: every field of both encodings, and what a broken one gets back."""

from __future__ import annotations

import math
import struct

import pytest

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram, ErrorCode, Frame, ProtocolError


def test_fixed_format_is_four_header_doubles_then_the_values_little_endian() -> None:
    data = protocol.encode(Datagram(seq=7, n=3, tick=42, values=(12.5, math.nan)))
    assert len(data) == 8 * 6
    version, seq, n, tick, app, grade = struct.unpack("<6d", data)
    assert (version, seq, n, tick, app) == (1.0, 7.0, 3.0, 42.0, 12.5)
    assert math.isnan(grade)


def test_a_fixed_format_datagram_reads_back_field_for_field() -> None:
    sent = Datagram(seq=2**40, n=1000, tick=5, values=(1.0, -2.5, 3e300))
    assert protocol.decode(protocol.encode(sent), 3) == sent


def test_the_can_encoding_appends_a_count_and_one_record_per_frame() -> None:
    frames = (Frame(0x18FEF125, b"\x01\x02", offset=3),
              Frame(0x123, b"", offset=0, is_extended_id=False, is_remote_frame=True),
              Frame(0x1ABCDEF0, bytes(range(12)), offset=1, is_fd=True, bitrate_switch=True,
                    error_state_indicator=True))
    data = protocol.encode(Datagram(seq=1, n=4, tick=0, values=(50.0,), frames=frames))
    at = 8 * 5
    assert struct.unpack_from("<I", data, at) == (3,)
    ident, offset, length, flags, reserved = struct.unpack_from("<IIBBH", data, at + 4)
    assert (ident, offset, length, flags, reserved) == (0x80000000 | 0x18FEF125, 3, 2, 0, 0)
    assert data[at + 16:at + 24] == b"\x01\x02" + bytes(6)
    ident, offset, length, flags, _ = struct.unpack_from("<IIBBH", data, at + 24)
    assert (ident, offset, length, flags) == (0x40000000 | 0x123, 0, 0, 0)
    ident, offset, length, flags, _ = struct.unpack_from("<IIBBH", data, at + 44)
    assert (ident, offset, length, flags) == (0x80000000 | 0x1ABCDEF0, 1, 12, 0x07)
    assert data[at + 56:at + 56 + 64] == bytes(range(12)) + bytes(52)
    assert len(data) == at + 56 + 64


def test_a_can_encoded_datagram_reads_back_frame_for_frame() -> None:
    frames = (Frame(0x18FEF125, b"\xff" * 8, offset=0), Frame(0x7FF, b"\x00", 1, is_extended_id=False),
              Frame(0x1, bytes(64), 2, is_fd=True))
    sent = Datagram(seq=9, n=3, tick=0, values=(1.0, 2.0), frames=frames)
    assert protocol.decode(protocol.encode(sent), 2) == sent


def test_a_can_encoded_datagram_without_frames_is_still_the_can_encoding() -> None:
    sent = Datagram(seq=1, n=1, tick=0, values=(1.0,), frames=())
    assert protocol.decode(protocol.encode(sent), 1).frames == ()


def test_an_error_answer_carries_minus_the_code_in_n_and_a_sentence() -> None:
    data = protocol.encode(protocol.error(4, 10, ErrorCode.VERSION, "protocol version 2"))
    assert struct.unpack_from("<4d", data) == (1.0, 4.0, -2.0, 10.0)
    assert data[32:] == b"protocol version 2"
    back = protocol.decode(data, 2)
    assert back.is_error and back.message == "protocol version 2"


def test_another_protocol_version_is_refused_naming_both_versions() -> None:
    data = struct.pack("<6d", 2.0, 1.0, 1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ProtocolError, match=r"version 2.*speaks version 1") as caught:
        protocol.decode(data, 2)
    assert caught.value.code == ErrorCode.VERSION


@pytest.mark.parametrize("size", [0, 1, 31])
def test_a_datagram_shorter_than_the_header_is_malformed(size: int) -> None:
    with pytest.raises(ProtocolError, match="shorter than the 32-byte header") as caught:
        protocol.decode(bytes(size), 2)
    assert caught.value.code == ErrorCode.MALFORMED


def test_a_datagram_short_of_its_values_says_how_long_it_must_be() -> None:
    with pytest.raises(ProtocolError, match=r"40 bytes is too short.*take 48 bytes"):
        protocol.decode(struct.pack("<5d", 1.0, 1.0, 1.0, 0.0, 0.0), 2)


@pytest.mark.parametrize("field", [1, 2, 3])
@pytest.mark.parametrize("value", [0.5, math.nan, math.inf])
def test_a_header_field_that_is_not_an_integer_is_malformed(field: int, value: float) -> None:
    header = [1.0, 1.0, 1.0, 0.0]
    header[field] = value
    with pytest.raises(ProtocolError, match="not an integer"):
        protocol.decode(struct.pack("<6d", *header, 0.0, 0.0), 2)


@pytest.mark.parametrize("cut", [1, 4, 10, 20])
def test_a_can_encoding_cut_short_is_malformed(cut: int) -> None:
    data = protocol.encode(Datagram(1, 1, 0, (0.0,), (Frame(0x100, b"\x01", 0),)))
    with pytest.raises(ProtocolError) as caught:
        protocol.decode(data[:-cut], 1)
    assert caught.value.code == ErrorCode.MALFORMED


def test_bytes_after_the_last_frame_are_malformed() -> None:
    data = protocol.encode(Datagram(1, 1, 0, (0.0,), ()))
    with pytest.raises(ProtocolError, match="after the last of 0 frames"):
        protocol.decode(data + b"\0", 1)


def test_a_classic_frame_longer_than_8_bytes_is_malformed() -> None:
    data = bytearray(protocol.encode(Datagram(1, 1, 0, (0.0,), (Frame(0x100, bytes(8), 0),))))
    data[32 + 8 + 4 + 8] = 9  # the length byte of the first record
    with pytest.raises(ProtocolError, match="length 9 exceeds 8"):
        protocol.decode(bytes(data), 1)


def test_a_datagram_of_unknown_length_reads_every_double_after_the_header() -> None:
    data = protocol.encode(Datagram(3, 1, 0, (1.0, 2.0, 3.0, 4.0, 5.0)))
    assert protocol.decode(data, None).values == (1.0, 2.0, 3.0, 4.0, 5.0)
    with pytest.raises(ProtocolError, match="not a whole number of float64"):
        protocol.decode(data + b"\0", None)
