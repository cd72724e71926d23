"""The programmable memory: two banks and the application-valid flag, kept in a directory."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import AREA_START
from ecu_sim.calibration.memory import MemoryRangeError, ProgrammableMemory

ENGINE = {"road_speed_limit_kph": math.inf, "torque_limit_nm": math.inf, "idle_rpm": 700.0,
          "governed_rpm": 2600.0}
OLD = Image.build("engine", ENGINE, "OLD")
NEW = Image.build("engine", {**ENGINE, "road_speed_limit_kph": 60.0}, "NEW")


def download(memory: ProgrammableMemory, data: bytes, upto: int | None = None) -> None:
    memory.erase()
    for offset in range(0, len(data) if upto is None else upto, 64):
        memory.write(AREA_START + offset, data[offset:offset + 64])


def test_a_new_memory_runs_its_built_in_image() -> None:
    memory = ProgrammableMemory(OLD)
    assert memory.application_valid and memory.calibration_id == "OLD" and memory.cvn == OLD.cvn


def test_erase_write_check_commit_makes_the_new_image_active() -> None:
    memory = ProgrammableMemory(OLD)
    download(memory, NEW.data)
    assert memory.check() is None
    memory.commit()
    assert memory.application_valid and memory.cvn == NEW.cvn and memory.active == NEW


def test_an_erase_clears_the_flag_and_keeps_the_active_image() -> None:
    memory = ProgrammableMemory(OLD)
    memory.erase()
    assert not memory.application_valid and memory.cvn == OLD.cvn


@pytest.mark.parametrize(("address", "length"), [(AREA_START - 1, 4), (AREA_START + 254, 4), (0, 1)])
def test_a_write_outside_the_area_is_refused(address: int, length: int) -> None:
    with pytest.raises(MemoryRangeError, match="outside the calibration area"):
        ProgrammableMemory(OLD).write(address, bytes(length))


def test_check_refuses_another_nodes_image() -> None:
    memory = ProgrammableMemory(OLD)
    other = Image.build("brakes", {"max_brake_decel_g": 0.6}, "BRK")
    download(memory, other.data)
    assert memory.check() == "this is an image for the brakes, not for the engine"
    with pytest.raises(ValueError, match="cannot be committed"):
        memory.commit()


def test_check_refuses_an_image_with_a_value_out_of_range() -> None:
    import struct
    import zlib

    data = bytearray(NEW.data)
    idle = NEW.layout.parameter("idle_rpm")
    data[idle.offset:idle.offset + 8] = struct.pack("<d", 9000.0)
    data[-4:] = struct.pack("<I", zlib.adler32(bytes(data[:-4])))
    memory = ProgrammableMemory(OLD)
    download(memory, bytes(data))
    assert "idle_rpm must be within" in (memory.check() or "")


def test_a_partial_download_fails_its_check() -> None:
    memory = ProgrammableMemory(OLD)
    download(memory, NEW.data, upto=128)
    assert memory.check() is not None


def test_a_download_killed_half_way_starts_in_boot_mode_with_the_old_image(tmp_path: Path) -> None:
    download(ProgrammableMemory(OLD, tmp_path), NEW.data, upto=128)  # the process dies here
    again = ProgrammableMemory(OLD, tmp_path)
    assert not again.application_valid and again.cvn == OLD.cvn


def test_a_committed_image_is_kept_across_a_restart(tmp_path: Path) -> None:
    memory = ProgrammableMemory(OLD, tmp_path)
    download(memory, NEW.data)
    memory.commit()
    again = ProgrammableMemory(OLD, tmp_path)
    assert again.application_valid and again.calibration_id == "NEW"


def test_a_second_download_recovers_from_a_killed_one(tmp_path: Path) -> None:
    download(ProgrammableMemory(OLD, tmp_path), NEW.data, upto=64)
    memory = ProgrammableMemory(OLD, tmp_path)
    download(memory, NEW.data)
    memory.commit()
    assert ProgrammableMemory(OLD, tmp_path).application_valid


def test_the_kept_banks_leave_no_temporary_file_behind(tmp_path: Path) -> None:
    memory = ProgrammableMemory(OLD, tmp_path)
    download(memory, NEW.data)
    memory.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["active.bin", "application-valid", "staging.bin"]


def test_without_a_directory_nothing_is_kept(tmp_path: Path) -> None:
    memory = ProgrammableMemory(OLD)
    download(memory, NEW.data)
    memory.commit()
    assert ProgrammableMemory(OLD).calibration_id == "OLD"
