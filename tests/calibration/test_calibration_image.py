"""The calibration image: its layout, its bytes, its CVN, and what it refuses."""

from __future__ import annotations

import math
import struct
import zlib

import pytest

from ecu_sim.calibration.image import Image, image_problem
from ecu_sim.calibration.layout import AREA_SIZE, AREA_START, LAYOUTS, CalibrationError, layout_of

ENGINE = {"road_speed_limit_kph": math.inf, "torque_limit_nm": math.inf, "idle_rpm": 700.0,
          "governed_rpm": 2600.0}


def test_every_parameter_lies_inside_its_area_between_header_and_integrity_field() -> None:
    for layout in LAYOUTS.values():
        ends = [p.offset + p.size for p in layout.parameters]
        assert layout.parameters[0].offset == 24 and max(ends) <= AREA_SIZE - 4
        pairs = zip(layout.parameters, layout.parameters[1:], strict=False)
        assert all(a.offset + a.size == b.offset for a, b in pairs)


def test_data_identifiers_are_unique_within_a_node_and_found_by_parameter_by_did() -> None:
    for layout in LAYOUTS.values():
        dids = [p.did for p in layout.parameters]
        assert len(set(dids)) == len(dids) and min(dids) == 0x0100
        assert all(layout.parameter_by_did(p.did) is p for p in layout.parameters)
        assert layout.parameter_by_did(0xF190) is None


def test_awkward_floats_round_trip_exactly_through_the_image() -> None:
    values = {**ENGINE, "torque_limit_nm": 0.1 + 0.2, "idle_rpm": 700.0000000000001}
    image = Image.parse(Image.build("engine", values, "X").data, "engine")
    assert image.values == values


def test_a_parameter_encodes_to_the_bytes_it_has_in_the_image() -> None:
    image = Image.build("engine", ENGINE, "X")
    idle = layout_of("engine").parameter("idle_rpm")
    assert idle.encode(700.0) == image.data[idle.offset:idle.offset + 8] == struct.pack("<d", 700.0)
    assert idle.decode(idle.encode(700.0)) == 700.0
    assert idle.address == AREA_START + idle.offset


def test_the_cvn_is_crc32_of_the_whole_area_and_differs_between_images() -> None:
    one = Image.build("engine", ENGINE, "A")
    other = Image.build("engine", {**ENGINE, "road_speed_limit_kph": 80.0}, "A")
    assert one.cvn == zlib.crc32(one.data) and other.cvn == zlib.crc32(other.data)
    assert one.cvn != other.cvn


def test_the_calibration_id_is_kept_in_the_header() -> None:
    assert Image.build("ccm", {"kp": 20.0, "ki": 2.0, "app_min_pct": 0.0, "app_max_pct": 100.0},
                       "MY-CAL-0001").calibration_id == "MY-CAL-0001"


@pytest.mark.parametrize("calibration_id", ["X" * 17, "é", "A*B"])
def test_a_calibration_id_that_cannot_be_reported_is_refused(calibration_id: str) -> None:
    with pytest.raises(CalibrationError, match="calibration ID"):
        Image.build("engine", ENGINE, calibration_id)


def test_a_value_out_of_range_is_refused_naming_the_parameter_and_its_range() -> None:
    with pytest.raises(CalibrationError, match=r"idle_rpm must be within 400\.\.1200 rpm"):
        Image.build("engine", {**ENGINE, "idle_rpm": 50.0}, "X")


def test_not_a_number_is_never_in_range() -> None:
    assert layout_of("engine").parameter("idle_rpm").problem(math.nan) is not None


def test_an_unknown_parameter_name_is_refused() -> None:
    with pytest.raises(CalibrationError, match="no calibration parameter 'top_speed'"):
        Image.build("engine", ENGINE, "X").changed({"top_speed": 1.0})


def test_an_image_for_another_node_kind_is_refused() -> None:
    data = Image.build("engine", ENGINE, "X").data
    assert image_problem(data, "transmission") == "this is an image for the engine, not for the transmission"


def test_a_damaged_byte_breaks_the_integrity_field() -> None:
    data = bytearray(Image.build("engine", ENGINE, "X").data)
    data[30] ^= 1
    assert "integrity" in (image_problem(bytes(data)) or "")


def test_an_out_of_range_value_with_a_good_integrity_field_is_still_refused() -> None:
    data = bytearray(Image.build("engine", ENGINE, "X").data)
    idle = layout_of("engine").parameter("idle_rpm")
    data[idle.offset:idle.offset + 8] = struct.pack("<d", 5000.0)
    data[-4:] = struct.pack("<I", zlib.adler32(bytes(data[:-4])))
    assert "idle_rpm must be within" in (image_problem(bytes(data)) or "")


@pytest.mark.parametrize(("data", "reason"),
                         [(b"", "256 bytes"), (b"NOPE" + bytes(252), "not a calibration image")])
def test_bytes_that_are_no_image_are_refused(data: bytes, reason: str) -> None:
    assert reason in (image_problem(data) or "")


def test_an_unknown_node_kind_is_named_with_the_kinds_there_are() -> None:
    kinds = "the kinds are ecu, engine, transmission, brakes, retarder, ccm"
    with pytest.raises(CalibrationError, match=kinds):
        layout_of("gearbox")
