"""Calibration images as S-record and Intel HEX files, through bincopy."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ecu_sim.calibration.files import read_image, write_image
from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import CalibrationError

IMAGE = Image.build("engine", {"road_speed_limit_kph": 72.5, "torque_limit_nm": math.inf,
                               "idle_rpm": 650.0, "governed_rpm": 2500.0}, "FILE-TEST")


@pytest.mark.parametrize("name", ["cal.s19", "cal.srec", "cal.hex"])
def test_an_image_written_to_a_file_reads_back_byte_for_byte(tmp_path: Path, name: str) -> None:
    write_image(IMAGE, tmp_path / name)
    assert read_image(tmp_path / name, "engine") == IMAGE


@pytest.mark.parametrize(("name", "start"), [("cal.s19", "S"), ("cal.hex", ":")])
def test_each_line_of_a_file_is_a_record_of_its_format(tmp_path: Path, name: str, start: str) -> None:
    write_image(IMAGE, tmp_path / name)
    assert all(line.startswith(start) for line in (tmp_path / name).read_text().split())


def test_a_malformed_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.hex").write_text(":10000000GARBAGE\n")
    with pytest.raises(CalibrationError, match=r"bad\.hex: not a valid Intel HEX file") as caught:
        read_image(tmp_path / "bad.hex")
    assert "\n" not in str(caught.value)


def test_a_file_for_another_node_kind_is_refused(tmp_path: Path) -> None:
    write_image(IMAGE, tmp_path / "cal.s19")
    with pytest.raises(CalibrationError, match="an image for the engine, not for the brakes"):
        read_image(tmp_path / "cal.s19", "brakes")


def test_a_file_at_another_address_is_refused(tmp_path: Path) -> None:
    import bincopy

    records = bincopy.BinFile()
    records.add_binary(IMAGE.data, address=0)
    (tmp_path / "low.s19").write_text(records.as_srec())
    with pytest.raises(CalibrationError, match=r"covers 0x80000\.\.0x80100"):
        read_image(tmp_path / "low.s19")


def test_a_file_whose_name_says_no_format_is_refused_and_nothing_written(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match=r"ends in \.s19"):
        write_image(IMAGE, tmp_path / "cal.bin")
    assert not (tmp_path / "cal.bin").exists()
