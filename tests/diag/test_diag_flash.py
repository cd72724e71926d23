"""``ecu-sim diag flash`` as a person runs it, against a real ``ecu-sim run`` process (the class6
truck's single-node ECU, standing) on a private udp_multicast bus: the node then reports the new
calibration ID and CVN, and the truck stays under the image's lower road speed limit; a node left
in boot mode by a download killed half-way is recovered by the command the same way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Node, Udp, private_udp, run_cli
from tests.member.test_member_reflash_client import (
    LIMIT_KPH,
    download,
    drive,
    programming,
    slow_image,
    sniffing,
    start_engine,
)
from tests.uds.test_uds_client import client

ROUTINE_ERASE = 0xFF00


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The ECU's settings: a state directory, where its memory is kept across a restart."""
    path = tmp_path / "ecu.ini"
    path.write_text(f"[diagnostics]\nstate_dir = {tmp_path / 'state'}\n", encoding="utf-8")
    return path


def diag(udp: Udp, *args: str) -> tuple[int, list[str], str]:
    done = run_cli("diag", *args, *udp.args())
    return done.returncode, done.stdout.splitlines(), done.stderr


@pytest.mark.slow
def test_a_flash_makes_the_node_report_the_image_and_keep_under_its_road_speed_limit(
        start: Callable[..., Node], tmp_path: Path, config: Path) -> None:
    image = slow_image(tmp_path, config)
    udp = private_udp()
    start_engine(start, udp, config)
    status, out, err = diag(udp, "flash", str(tmp_path / "slow.s19"))
    assert status == 0, err
    assert out[-1] == (f"0x00: 256 bytes in 1 block; after its reset the node runs calibration 'SLOW-20' "
                       f"(CVN 0x{image.cvn:08X})")
    status, out, err = diag(udp, "read", "calibration-id", "cvn", "road_speed_limit_kph", "--node", "ecu")
    assert (status, out) == (0, ["0x00 calibration ID (F182): SLOW-20", f"0x00 CVN (F1A0): 0x{image.cvn:08X}",
                                 f"0x00 road_speed_limit_kph (0100): {LIMIT_KPH!r} km/h"]), err
    with sniffing(udp) as sniffer:
        speeds = drive(udp, sniffer, 8.0)
    assert speeds and max(speeds) <= LIMIT_KPH + 0.5 and max(speeds) > LIMIT_KPH - 3.0, speeds


@pytest.mark.slow
def test_a_flash_recovers_a_node_left_in_boot_mode(
        start: Callable[..., Node], tmp_path: Path, config: Path) -> None:
    image = slow_image(tmp_path, config)
    udp = private_udp()
    first = start_engine(start, udp, config)
    with client(udp) as tester:  # udsoncan: a download killed half-way
        programming(tester)
        tester.routine_control(ROUTINE_ERASE, 1)
        download(tester, image, upto=128)
    first.kill()
    start_engine(start, udp, config).wait_for("boot mode")
    status, out, err = diag(udp, "flash", str(tmp_path / "slow.s19"))
    assert status == 0, err
    assert out[-1].endswith(f"the node runs calibration 'SLOW-20' (CVN 0x{image.cvn:08X})")
