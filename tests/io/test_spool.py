"""The page's spool notes frames and ticks and makes the recording only when a download asks.

The rule that matters: a spool's cut at a stop, made a recording by the separate process the
download starts, holds the bytes a recorder of the same frames flushed at that stop holds.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import can
import pytest

from ecu_sim.bus.listener import Direction
from ecu_sim.errors import OutputError
from ecu_sim.io.recorder import Recorder
from ecu_sim.io.spool import Spool, SpoolCut
from ecu_sim.web.session import Flushed

SPEED = 0x18FEF100
APP = 0x0CF00300
HEAD = {"node": "ecu", "settings": {"run": {"period_s": 0.1}}}


class Sink:
    """Either recording, fed the same run."""

    def __init__(self, recording: Recorder | Spool) -> None:
        self.recording = recording

    def run(self, ticks: range, channel: Any = "vcan0", stamp: Callable[[float], float] = float) -> None:
        """Ticks of a node that receives an APP (a bad one every seventh tick) and sends its speed,
        a frame that never reached the bus at tick 12 and a control applied after tick 20."""
        for tick in ticks:
            data = bytes([tick % 256] * (3 if tick % 7 == 0 else 8))
            stamped = stamp(100 + tick / 10)
            heard = can.Message(arbitration_id=APP, data=data, timestamp=stamped, channel=channel)
            self.recording.on_frame(heard, Direction.RECEIVED)
            way = Direction.NOT_SENT if tick == 12 else Direction.SENT
            self.recording.on_frame(can.Message(arbitration_id=SPEED, data=bytes([tick % 256] * 8),
                                                is_rx=False), way)
            self.recording.on_tick(tick, 0.0, tick % 11 != 5)
            if tick == 20:
                self.recording.control({"set_speed_kph": 80.0})


def _clock() -> Callable[[], float]:
    counter = itertools.count()
    return lambda: 1000.0 + next(counter) / 10


def _flushed_at(tmp_path: Path, ticks: int, channel: Any = "vcan0",
                stamp: Callable[[float], float] = float) -> tuple[bytes, bytes]:
    path = tmp_path / "live" / "session.log"
    path.parent.mkdir()
    with Recorder(str(path), 0, HEAD, period_s=0.1, now=_clock(), temporary=True) as recorder:
        Sink(recorder).run(range(ticks), channel, stamp)
        return Flushed(str(path), *recorder.flush_now()).files()


def _spooled_at(tmp_path: Path, ticks: int, more: int = 0, channel: Any = "vcan0",
                stamp: Callable[[float], float] = float) -> tuple[bytes, bytes]:
    path = tmp_path / "spool" / "session.log"
    path.parent.mkdir()
    with Spool(str(path), HEAD, period_s=0.1, now=_clock()) as spool:
        Sink(spool).run(range(ticks), channel, stamp)
        cut = spool.cut()
        Sink(spool).run(range(ticks, ticks + more), channel, stamp)  # the run goes on after the stop
        return cut.files()


def test_a_spools_cut_holds_the_bytes_a_recorder_flushed_at_the_stop_holds(tmp_path: Path) -> None:
    assert _spooled_at(tmp_path, 250) == _flushed_at(tmp_path, 250)


def test_what_the_node_did_after_the_stop_is_not_in_the_cut(tmp_path: Path) -> None:
    assert _spooled_at(tmp_path, 120, more=150) == _flushed_at(tmp_path, 120)


def test_a_cut_before_the_first_tick_is_a_journal_with_its_head_alone(tmp_path: Path) -> None:
    log, journal = _spooled_at(tmp_path, 0)
    assert log == b""
    assert journal.decode().count("\n") == 1


class Port:
    """A channel python-can's writers print as text, of a type marshal cannot write."""

    def __str__(self) -> str:
        return "0"


class Stamp(float):
    """A timestamp of a float's subclass (a numpy scalar is one): marshal refuses it too."""


def test_a_channel_marshal_cannot_write_keeps_its_type_and_bytes(tmp_path: Path) -> None:
    assert _spooled_at(tmp_path, 60, channel=Port()) == _flushed_at(tmp_path, 60, channel=Port())


def test_a_timestamp_marshal_cannot_write_keeps_its_bytes(tmp_path: Path) -> None:
    spooled = _spooled_at(tmp_path, 60, stamp=Stamp)
    assert spooled == _flushed_at(tmp_path, 60, stamp=Stamp)
    assert spooled[0].startswith(b"(100.000000) ")


def test_two_downloads_of_one_cut_at_once_each_get_the_whole_recording(tmp_path: Path) -> None:
    path = tmp_path / "session.log"
    with Spool(str(path), HEAD, period_s=0.1, now=_clock()) as spool:
        Sink(spool).run(range(150))
        cut = spool.cut()
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda _: cut.files(), range(2))
    assert first == second == _flushed_at(tmp_path, 150)


def test_a_spool_that_cannot_be_read_is_an_error_that_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "session.log.spool"
    broken.write_bytes(b"not a spool")
    with pytest.raises(OutputError, match="making the recording up to the stop failed"):
        SpoolCut(str(broken), broken.stat().st_size, ".log", set()).files()


def test_a_download_still_being_made_when_the_run_ends_is_stopped_with_an_error(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "session.log"), HEAD, period_s=0.1, now=_clock())
    Sink(spool).run(range(100_000))
    cut = spool.cut()
    with ThreadPoolExecutor(1) as pool:
        making = pool.submit(cut.files)
        while not cut.making and not making.done():
            time.sleep(0.01)
        spool.__exit__(None, None, None)  # the run ends: its folder goes next
        assert isinstance(making.exception(), OutputError)


def test_a_note_no_recording_can_hold_is_a_bug_not_a_failed_write(tmp_path: Path) -> None:
    with Spool(str(tmp_path / "session.log"), HEAD, period_s=0.1, now=_clock()) as spool:
        spool.control({"callback": lambda: None})
        with pytest.raises(TypeError, match="holds a value no recording can"):
            spool.cut()


def test_a_spool_of_records_ecu_sim_does_not_write_is_a_bug_not_a_damaged_file(tmp_path: Path) -> None:
    import marshal

    odd = tmp_path / "session.log.spool"
    odd.write_bytes(marshal.dumps({"no head": True}))
    with pytest.raises(RuntimeError, match=r"hit a bug in ecu-sim: .*not one ecu-sim writes"):
        SpoolCut(str(odd), odd.stat().st_size, ".log", set()).files()
