"""A recording survives what ends a run badly: SIGKILL, a full disk, a file it cannot create.

Real processes: a recording node on the test's private udp_multicast bus, killed or starved of
disk, then ``ecu-sim replay`` on what it left. A kill is timed by the node's own status lines
(an event it reports), never by a guess of how long something takes.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Node, Udp, run_cli

pytestmark = pytest.mark.slow

#: a status line after at least 20 frames sent: the recorder has flushed at least once (it
#: flushes after every second's worth of ticks, ten at the default period)
PAST_A_FLUSH = r"ecu_sim: speed .* tx ([2-9]\d|\d{3,}) "


def journal_ticks(log: Path) -> int:
    """The complete tick lines the journal of ``log`` holds (a killed run's last line may be half)."""
    text = (log.parent / (log.name + ".ticks")).read_text()
    lines = text.split("\n")[1:-1]
    return sum(1 for line in lines if re.fullmatch(r"\d+ \d+( [sf]+)?", line))


def test_a_killed_recording_replays_every_tick_its_journal_holds(
        tmp_path: Path, udp: Udp, start: Callable[..., Node]) -> None:
    log = tmp_path / "ecu.log"
    ecu = start(*udp.args(), "--record", str(log))
    start("ccm", *udp.args())
    ecu.wait_for(PAST_A_FLUSH)
    ecu.kill()
    assert ecu.process.returncode == -9
    ticks = journal_ticks(log)
    assert ticks >= 9  # the first flush, less the tick whose frame was still on its way
    result = run_cli("replay", str(log))
    assert result.returncode == 0, result.stderr
    assert f"ECU replayed {ticks} ticks" in result.stdout
    assert f"the recording ends at tick {ticks - 1} " in result.stdout
    assert "killed" in result.stdout


def test_a_recording_killed_at_random_moments_replays_up_to_its_last_flushed_tick(
        tmp_path: Path, udp: Udp, start: Callable[..., Node]) -> None:
    """The crash test: wherever the kill falls (mid-flush, mid-line, between ticks), exit 0."""
    rng = random.SystemRandom()
    start("ccm", *udp.args())
    for attempt in range(4):
        log = tmp_path / f"ecu{attempt}.log"
        ecu = start(*udp.args(), "--record", str(log))
        ecu.wait_for(r"recording every frame")
        if attempt:  # the first is killed as soon as it records: a journal of no tick at all
            ecu.wait_for(r"ecu_sim: speed")
            with contextlib.suppress(subprocess.TimeoutExpired):
                ecu.process.wait(rng.uniform(0.0, 2.5))
        ecu.kill()
        ticks = journal_ticks(log)
        result = run_cli("replay", str(log))
        assert result.returncode == 0, (attempt, result.stderr)
        assert f"ECU replayed {ticks} ticks" in result.stdout, (attempt, result.stdout)
        assert ("holds no tick" in result.stdout if ticks == 0
                else f"ends at tick {ticks - 1} " in result.stdout), (attempt, result.stdout)


def test_a_killed_rotated_recording_replays_across_the_parts_its_journal_lists(
        tmp_path: Path, udp: Udp, start: Callable[..., Node]) -> None:
    log = tmp_path / "ecu.log"
    ecu = start(*udp.args(), "--record", str(log), "--record-max-bytes", "1500")
    start("ccm", *udp.args())
    ecu.wait_for(r"ecu_sim: speed .* tx ([4-9]\d|\d{3,}) ")  # a few rotations and flushes
    ecu.kill()
    assert list(tmp_path.glob("ecu_*#*.log")), "no rotation happened"
    result = run_cli("replay", str(log))
    assert result.returncode == 0, result.stderr
    assert f"ECU replayed {journal_ticks(log)} ticks" in result.stdout


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of three pages, one of them taken: room for a journal and a few seconds of log."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(folder)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (folder / "filler").write_bytes(b"x" * 4096)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_full_disk_ends_the_run_with_exit_74_and_keeps_a_replayable_recording(
        small_disk: Path, udp: Udp, start: Callable[..., Node]) -> None:
    log = small_disk / "ecu.log"
    start("ccm", *udp.args())
    ecu = start(*udp.args(), "--record", str(log), "--duration", "600")
    status = ecu.wait()
    assert status == 74, ecu.log
    assert "Traceback" not in ecu.log
    error = [line for line in ecu.log.splitlines() if "error:" in line]
    assert len(error) == 1 and "No space left on device" in error[0], ecu.log
    assert f"ecu-sim replay {log}" in error[0]
    result = run_cli("replay", str(log))
    assert result.returncode == 0, result.stderr
    assert f"ECU replayed {journal_ticks(log)} ticks" in result.stdout


def test_a_full_disk_at_the_start_exits_73_and_leaves_no_files(
        small_disk: Path, udp: Udp) -> None:
    (small_disk / "more").write_bytes(b"x" * 8192)
    result = run_cli(*udp.args(), "--record", str(small_disk / "ecu.log"), "--duration", "1")
    assert result.returncode == 73, result.stderr
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "more"]


def test_a_recording_that_cannot_be_created_leaves_no_tick_journal(tmp_path: Path, udp: Udp) -> None:
    log = tmp_path / "d1.log"
    log.mkdir()  # the log's name is taken by a folder
    result = run_cli(*udp.args(), "--record", str(log), "--duration", "1")
    assert result.returncode == 73, result.stderr
    assert f"cannot write the recording {log}" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "d1.log.ticks").exists()


def test_a_run_that_fails_before_its_first_tick_leaves_no_recording(tmp_path: Path, udp: Udp) -> None:
    log = tmp_path / "ecu.log"
    # A fault that needs the kernel's transmitter fails while the node is built, after the
    # recorder opened its files.
    result = run_cli(*udp.args(), "--record", str(log), "--duration", "1", "--tx-mode", "kernel")
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
