"""The recorder notes a tick's frames as they pass and writes them at the flush.

In one process, through the recorder's listener and observer interface: what is on disk between
flushes, and which recordings a thread keeps synced.
"""

from __future__ import annotations

import threading
from pathlib import Path

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.io.recorder import Recorder

SPEED = 0x18FEF100
APP = 0x0CF00300


def _tick(recorder: Recorder, tick: int) -> None:
    """One 10 Hz tick of the testbed ECU: the APP it received, the speed it sent."""
    recorder.on_frame(can.Message(arbitration_id=APP, data=bytes(8), timestamp=tick / 10), Direction.RECEIVED)
    recorder.on_frame(can.Message(arbitration_id=SPEED, data=bytes([tick % 256] * 8)), Direction.SENT)
    recorder.on_tick(tick, tick / 10, True)


def _syncing() -> int:
    return sum(thread.name == "ecu-sim fsync" for thread in threading.enumerate())


def test_nothing_is_written_before_the_first_seconds_flush(tmp_path: Path) -> None:
    log = tmp_path / "ecu.log"
    with Recorder(str(log), 0, {"node": "ecu"}, period_s=0.1) as recorder:
        for tick in range(9):
            _tick(recorder, tick)
        assert log.stat().st_size == 0
        assert len((tmp_path / "ecu.log.ticks").read_text().splitlines()) == 1  # the header alone


def test_the_flush_writes_every_frame_and_tick_noted_before_it(tmp_path: Path) -> None:
    log = tmp_path / "ecu.log"
    with Recorder(str(log), 0, {"node": "ecu"}, period_s=0.1) as recorder:
        for tick in range(10):
            _tick(recorder, tick)
        # the tenth tick's sent frame waits for the next tick (an echo could still come)
        assert len(log.read_text().splitlines()) == 19
        assert (tmp_path / "ecu.log.ticks").read_text().splitlines()[1:] == ["1 1"] * 9


def test_a_temporary_recording_is_handed_over_every_ten_seconds(tmp_path: Path) -> None:
    journal = tmp_path / "session.log.ticks"
    path = str(tmp_path / "session.log")
    with Recorder(path, 0, {"node": "ecu"}, period_s=0.1, temporary=True) as recorder:
        for tick in range(99):
            _tick(recorder, tick)
        assert len(journal.read_text().splitlines()) == 1  # the header alone
        _tick(recorder, 99)
        assert len(journal.read_text().splitlines()) == 1 + 99


def test_a_recording_that_is_kept_has_a_thread_that_syncs_it(tmp_path: Path) -> None:
    before = _syncing()
    with Recorder(str(tmp_path / "ecu.log"), 0, {"node": "ecu"}):
        assert _syncing() == before + 1


def test_a_temporary_recording_has_no_thread_that_syncs_it(tmp_path: Path) -> None:
    before = _syncing()
    with Recorder(str(tmp_path / "session.log"), 0, {"node": "ecu"}, temporary=True):
        assert _syncing() == before
