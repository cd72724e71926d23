"""A recording made on vcan0 is the bus as it was: can-utils' canplayer puts the same frames back.

Inside the VM (scripts/vm-test): the ECU records on vcan0 (its frames timed by the kernel's
broadcast manager) while the CCM closes the loop and a raw socket captures the live bus. Then
``canplayer`` plays the recording onto vcan0 while ``candump`` listens. The recording is read
by hand from its text, never through ecu_sim or python-can.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.socketcan.conftest import (
    REQUIRE_VM,
    SOCKETCAN_PROBLEM,
    Frame,
    Node,
    RawCapture,
    create_vcan,
    delete_link,
)
from tests.socketcan.test_nodes_vm import AMP, wait_for_both

pytestmark = pytest.mark.socketcan

LINE = re.compile(r"\((?P<ts>[\d.]+)\) (?P<iface>\S+) (?P<id>[0-9A-F]+)#(?P<data>[0-9A-F]*)"
                  r"(?: (?P<dir>[RT]))?$")


def parse(text: str) -> list[re.Match[str]]:
    matches = [LINE.match(line) for line in text.splitlines() if line.strip()]
    assert all(matches), text[:2000]
    return [m for m in matches if m is not None]


def key(m: re.Match[str]) -> tuple[int, bytes]:
    return int(m["id"], 16), bytes.fromhex(m["data"])


def offset_in(run: list[tuple[int, bytes]], whole: list[tuple[int, bytes]]) -> int:
    """Where ``run`` lies in ``whole`` as one contiguous stretch; the test fails if it does not."""
    for start in range(len(whole) - len(run) + 1):
        if whole[start:start + len(run)] == run:
            return start
    start = whole.index(run[0]) if run and run[0] in whole else 0
    differ = next((i for i, (a, b) in enumerate(zip(run, whole[start:], strict=False)) if a != b),
                  min(len(run), len(whole) - start))
    pytest.fail(f"the {len(run)} recorded frames are not a stretch of the {len(whole)} live ones: "
                f"from live frame {start} they part at recorded frame {differ}: recorded "
                f"{run[max(0, differ - 2):differ + 3]}, "
                f"live {whole[start + max(0, differ - 2):start + differ + 3]}")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Frame]]]:
    """A recording of the ECU on vcan0 in a closed loop, and the live bus while it was made; made
    once for the module's tests (a run takes a while to start under emulation)."""
    if SOCKETCAN_PROBLEM is not None:  # the autouse check comes after a module's fixtures
        (pytest.fail if REQUIRE_VM else pytest.skip)(SOCKETCAN_PROBLEM)
    folder = tmp_path_factory.mktemp("recorded")
    log = folder / "ecu.log"
    create_vcan("vcan0")
    try:
        with RawCapture("vcan0") as capture:
            ecu = Node(["--iface", "vcan0", "--record", str(log), "--grade", "0"], folder / "ecu.txt")
            ccm = Node(["ccm", "--iface", "vcan0"], folder / "ccm.txt")
            try:
                wait_for_both(capture, AMP)
                capture.wait_for(lambda f: f.can_id == AMP.speed_id, count=30, timeout=180)
            finally:
                statuses = (ecu.stop(), ccm.stop())
            assert statuses == (0, 0), ecu.log()[-2000:] + ccm.log()[-2000:]
            live = capture.frames()
        yield log, live
    finally:
        delete_link("vcan0")


def test_each_frame_is_in_the_recording_once_with_its_interface_and_its_time_on_the_bus(
        recorded: tuple[Path, list[Frame]]) -> None:
    log, live = recorded
    frames = parse(log.read_text())
    assert {m["iface"] for m in frames} == {"vcan0"}
    stamps = [float(m["ts"]) for m in frames]
    assert stamps == sorted(stamps)
    for can_id in (AMP.speed_id, AMP.app_id):
        mine = [m for m in frames if int(m["id"], 16) == can_id]
        heard = [f for f in live if f.can_id == can_id]
        start = offset_in([key(m) for m in mine], [(f.can_id, f.data) for f in heard])
        # the same frames at the same times: the kernel's timestamp of each, not when it was handed over
        worst = max(abs(float(m["ts"]) - f.timestamp) for m, f in zip(mine, heard[start:], strict=False))
        assert worst < 0.001, (can_id, worst)
    assert {m["dir"] for m in frames if int(m["id"], 16) == AMP.speed_id} == {"T"}


def test_canplayer_puts_the_recorded_bus_back_frame_for_frame_and_replay_still_matches(
        recorded: tuple[Path, list[Frame]], tmp_path: Path) -> None:
    log, _ = recorded
    if shutil.which("canplayer") is None or shutil.which("candump") is None:
        pytest.fail("can-utils is not installed on the host: apt-get install can-utils "
                    "(scripts/vm-test installs it)")
    dump = tmp_path / "played.log"
    with dump.open("w") as out:
        candump = subprocess.Popen(["candump", "-L", "vcan0"], stdout=out)
        time.sleep(1.0)  # candump's socket is bound before the first frame is played
        played = subprocess.run(["canplayer", "-I", str(log)], capture_output=True, text=True,
                                timeout=300, check=False)
        time.sleep(1.0)
        candump.terminate()
        candump.wait(10)
    assert played.returncode == 0, played.stderr
    recorded_keys = [key(m) for m in parse(log.read_text())]
    assert [key(m) for m in parse(dump.read_text())] == recorded_keys
    replay = Node(["replay", str(log)], tmp_path / "replay.txt")
    replay.process.join(timeout=300)
    assert replay.process.exitcode == 0, replay.log()
