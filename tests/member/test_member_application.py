"""A node's programmable memory and the image its application runs, through its UDS server: the
calibration ID and CVN it reads out, parameters by identifier, the kept image, boot mode, apply."""

from __future__ import annotations

import logging
import math
import struct
from pathlib import Path

import pytest

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import AREA_START
from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.j1939.dm import DtcTable
from ecu_sim.member.application import Application, memory_directory
from ecu_sim.member.diagnostics import NodeSide
from ecu_sim.uds.security import default_key
from ecu_sim.uds.server import UdsServer
from tests.helpers.udsbench import PERIOD, security

ENGINE = {"road_speed_limit_kph": math.inf, "torque_limit_nm": math.inf, "idle_rpm": 700.0,
          "governed_rpm": 2600.0}
START = Image.build("engine", ENGINE, "START")
SLOW = Image.build("engine", {**ENGINE, "road_speed_limit_kph": 60.0}, "SLOW-60")
ROAD_SPEED_LIMIT_DID = 0x0100


def no_limit_below_50(image: Image) -> str | None:
    """A node whose application cannot run a road speed limit under 50 km/h (its dependencies)."""
    return "the limit is too low for this truck" if image.value("road_speed_limit_kph") < 50.0 else None


class Node:
    """A node's side and its server, at ticks of their own; ``restarts`` counts the application's."""

    def __init__(self, directory: Path | None = None, start: Image = START, speed: float = 0.0) -> None:
        self.restarts = 0
        self.memory = ProgrammableMemory(start, directory, no_limit_below_50)
        self.application = Application(self.memory, start, named=False, restart=self._restart)
        self.dtcs = DtcTable()
        self.side = NodeSide("ECU", self.dtcs, {}, lambda: speed, self.application)
        self.server = UdsServer(self.side, security(), PERIOD)
        self.tick = 0

    def _restart(self) -> None:
        self.restarts += 1

    def ask(self, *request: int) -> bytes | None:
        self.tick += 1
        answer = self.server.handle(0xF9, False, bytes(request), self.tick)
        self.application.follow()
        return answer

    def wait(self, seconds: float) -> None:
        for _ in range(round(seconds / PERIOD)):
            self.tick += 1
            self.server.tick(self.tick)
            self.application.follow()

    def unlock(self, session: int = 0x03) -> None:
        assert self.ask(0x10, session) is not None
        seed = self.ask(0x27, 0x01)
        assert seed is not None and seed[:2] == b"\x67\x01"
        assert self.ask(0x27, 0x02, *default_key(seed[2:], 1)) == b"\x67\x02"

    def download(self, image: Image, erase: bool = True) -> None:
        if erase:
            assert self.ask(0x31, 0x01, 0xFF, 0x00) == b"\x7f\x31\x78"
            self.wait(1.0)
        size = len(image.data).to_bytes(4, "big")
        answer = self.ask(0x34, 0x00, 0x44, *AREA_START.to_bytes(4, "big"), *size)
        assert answer is not None and answer[0] == 0x74, answer
        for counter, at in enumerate(range(0, len(image.data), 128), start=1):
            assert self.ask(0x36, counter, *image.data[at:at + 128]) == bytes((0x76, counter))
        assert self.ask(0x37) == b"\x77"

    def reflash(self, image: Image) -> bytes | None:
        """Programming session, unlocked, erase, download, check: the check's answer."""
        self.unlock()
        self.unlock(0x02)
        self.download(image)
        return self.ask(0x31, 0x01, 0xFF, 0x01)

    def read(self, did: int) -> bytes | None:
        answer = self.ask(0x22, did >> 8, did & 0xFF)
        return None if answer is None or answer[0] != 0x62 else answer[3:]


def test_the_node_reads_out_the_calibration_id_and_the_cvn_of_the_image_it_runs() -> None:
    node = Node()
    assert node.read(0xF182) == b"START" and node.read(0xF1A0) == START.cvn.to_bytes(4, "big")


def test_a_parameter_reads_by_its_identifier_as_its_bytes_in_the_image() -> None:
    assert Node().read(ROAD_SPEED_LIMIT_DID) == struct.pack("<d", math.inf)


def test_a_parameter_written_by_identifier_reads_back_at_once_and_runs_from_the_next_reset() -> None:
    node = Node()
    node.unlock()
    assert node.ask(0x2E, 0x01, 0x00, *struct.pack("<d", 80.0)) == b"\x6e\x01\x00"
    assert node.read(ROAD_SPEED_LIMIT_DID) == struct.pack("<d", 80.0)
    assert node.read(0xF1A0) == START.cvn.to_bytes(4, "big") and node.restarts == 0  # still the old one
    assert node.ask(0x11, 0x01) == b"\x51\x01"
    node.wait(0.05)
    assert node.restarts == 1 and node.application.image.value("road_speed_limit_kph") == 80.0
    assert node.read(0xF1A0) == node.memory.active.cvn.to_bytes(4, "big") != START.cvn.to_bytes(4, "big")


def test_a_parameter_out_of_its_range_is_refused_and_nothing_changes() -> None:
    node = Node()
    node.unlock()
    assert node.ask(0x2E, 0x01, 0x00, *struct.pack("<d", 1.0)) == b"\x7f\x2e\x31"
    assert node.memory.active == START


def test_a_parameter_the_nodes_application_cannot_run_is_refused() -> None:
    node = Node()
    node.unlock()
    assert node.ask(0x2E, 0x01, 0x00, *struct.pack("<d", 40.0)) == b"\x7f\x2e\x31"
    assert node.memory.active == START


def test_a_download_the_nodes_application_cannot_run_fails_the_dependency_check() -> None:
    node = Node()
    assert node.reflash(START.changed({"road_speed_limit_kph": 40.0})) == b"\x7f\x31\x72"
    assert node.memory.active == START


def test_a_kept_image_the_nodes_application_cannot_run_is_not_run(tmp_path: Path) -> None:
    (tmp_path / "active.bin").write_bytes(START.changed({"road_speed_limit_kph": 40.0}).data)
    assert Node(tmp_path).application.image == START


def test_a_checked_download_runs_after_the_reset_and_the_identifiers_report_it() -> None:
    node = Node()
    assert node.reflash(SLOW) == b"\x71\x01\xff\x01\x00"
    assert node.read(0xF182) == b"START"  # committed, not yet running
    node.ask(0x11, 0x01)
    node.wait(0.05)
    assert node.application.image == SLOW and not node.application.boot
    assert node.read(0xF182) == b"SLOW-60" and node.read(0xF1A0) == SLOW.cvn.to_bytes(4, "big")
    assert node.application.reported.cvn == SLOW.cvn and node.application.reported.named


def test_an_erase_stops_the_application_boot_mode() -> None:
    node = Node()
    node.unlock()
    node.unlock(0x02)
    assert node.ask(0x31, 0x01, 0xFF, 0x00) == b"\x7f\x31\x78"
    node.wait(1.0)
    assert node.application.boot and node.side.boot and node.restarts == 1


def test_a_reset_before_the_download_is_checked_stays_in_boot_mode() -> None:
    node = Node()
    node.unlock()
    node.unlock(0x02)
    node.download(SLOW)  # no dependency check: nothing committed
    node.ask(0x11, 0x01)
    node.wait(0.05)
    assert node.application.boot and node.application.image == START


def test_the_last_valid_image_runs_again_after_a_reflash_that_fails_its_check() -> None:
    node = Node()
    damaged = SLOW.data[:-1] + bytes((SLOW.data[-1] ^ 0xFF,))
    node.unlock()
    node.unlock(0x02)
    node.ask(0x31, 0x01, 0xFF, 0x00)
    node.wait(1.0)
    answer = node.ask(0x34, 0x00, 0x44, *AREA_START.to_bytes(4, "big"), *len(damaged).to_bytes(4, "big"))
    assert answer is not None and answer[0] == 0x74
    assert node.ask(0x36, 0x01, *damaged) == b"\x76\x01" and node.ask(0x37) == b"\x77"
    assert node.ask(0x31, 0x01, 0xFF, 0x01) == b"\x7f\x31\x72"
    assert node.application.boot and node.memory.active == START
    node.download(SLOW, erase=False)  # the boot loader takes a second download
    assert node.ask(0x31, 0x01, 0xFF, 0x01) == b"\x71\x01\xff\x01\x00"
    node.ask(0x11, 0x01)
    node.wait(0.05)
    assert not node.application.boot and node.application.image == SLOW


def test_a_kept_programmed_image_wins_over_the_start_image(tmp_path: Path) -> None:
    first = Node(tmp_path)
    first.reflash(SLOW)
    again = Node(tmp_path)
    assert again.application.image == SLOW and again.read(0xF182) == b"SLOW-60"


def boot_node(tmp_path: Path) -> Node:
    """A node started again after its last run ended right after an erase."""
    first = Node(tmp_path)
    first.unlock()
    first.unlock(0x02)
    first.ask(0x31, 0x01, 0xFF, 0x00)
    first.wait(1.0)
    return Node(tmp_path)


def test_a_node_killed_after_the_erase_starts_in_boot_mode_with_its_last_valid_image(tmp_path: Path) -> None:
    again = boot_node(tmp_path)
    assert again.application.boot and again.application.image == START


def test_a_damaged_kept_image_is_not_run_the_node_starts_from_its_start_image(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    Node(tmp_path).reflash(SLOW)
    kept = tmp_path / "active.bin"
    kept.write_bytes(kept.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        again = Node(tmp_path)
    assert again.application.image == START
    lines = [r.getMessage() for r in caplog.records if "is not run" in r.getMessage()]
    assert len(lines) == 1 and "starts from its start image 'START'" in lines[0]


def test_a_kept_image_for_another_node_kind_is_not_run(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    retarder = Image.build("retarder", {"retarder_max_nm": 1000.0}, "RET")
    (tmp_path / "active.bin").write_bytes(retarder.data)
    with caplog.at_level(logging.WARNING):
        node = Node(tmp_path)
    assert node.application.image == START
    assert any("an image for the retarder, not for the engine" in r.getMessage() for r in caplog.records)


def test_a_node_never_programmed_writes_nothing_into_its_state_directory(tmp_path: Path) -> None:
    node = Node(tmp_path / "calibration-engine-00")
    assert node.read(0xF182) == b"START" and not (tmp_path / "calibration-engine-00").exists()


def test_the_memory_is_kept_per_node_kind_and_address_under_the_state_directory() -> None:
    kept = memory_directory("/var/lib/ecu-sim", "engine", 0x0B)
    assert kept == Path("/var/lib/ecu-sim/calibration-engine-0b")
    assert memory_directory(None, "engine", 0x00) is None


def test_in_boot_mode_the_default_session_refuses_the_boot_loaders_other_services(tmp_path: Path) -> None:
    node = boot_node(tmp_path)
    assert node.ask(0x22, 0xF1, 0x82) == b"\x7f\x22\x7f"
    assert node.ask(0x19, 0x02, 0xFF) == b"\x7f\x19\x7f"


def test_in_boot_mode_a_service_the_boot_loader_lacks_is_not_supported(tmp_path: Path) -> None:
    node = boot_node(tmp_path)
    assert node.ask(0x14, 0xFF, 0xFF, 0xFF) == b"\x7f\x14\x11"


def test_the_boot_loader_has_no_extended_session(tmp_path: Path) -> None:
    assert boot_node(tmp_path).ask(0x10, 0x03) == b"\x7f\x10\x12"


def test_the_boot_loader_enters_programming_straight_from_the_default_session(tmp_path: Path) -> None:
    node = boot_node(tmp_path)
    answer = node.ask(0x10, 0x02)
    assert answer is not None and answer[:2] == b"\x50\x02"
    assert node.read(0xF182) == b"START"


def test_the_boot_loader_recovers_the_node_with_a_complete_download_and_a_reset(tmp_path: Path) -> None:
    node = boot_node(tmp_path)
    node.unlock(0x02)
    node.download(SLOW, erase=False)
    assert node.ask(0x31, 0x01, 0xFF, 0x01) == b"\x71\x01\xff\x01\x00"
    node.ask(0x11, 0x01)
    node.wait(0.05)
    assert not node.application.boot and node.application.image == SLOW
    assert node.ask(0x19, 0x02, 0xFF) is not None  # the application's services again


def test_parameters_are_not_written_in_boot_mode(tmp_path: Path) -> None:
    node = boot_node(tmp_path)
    node.unlock(0x02)
    assert node.ask(0x2E, 0x01, 0x00, *struct.pack("<d", 80.0)) == b"\x7f\x2e\x11"


def test_an_image_the_node_cannot_run_leaves_it_in_boot_mode_on_its_last_image() -> None:
    memory = ProgrammableMemory(START)
    calls: list[Image] = []

    def restart() -> None:
        calls.append(application.image)
        if application.image == SLOW and not application.boot:
            raise ValueError("the downshift line must lie below the upshift line")

    application = Application(memory, START, named=False, restart=restart)
    memory.erase()
    memory.write(AREA_START, SLOW.data)
    memory.commit()
    application.apply()
    assert application.boot and application.image == START and calls == [SLOW, START]
