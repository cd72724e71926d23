"""The tick journal's labels lines (version 5): the labels of a tick's received frames, read back
to the tick line before them; journals of the versions before them still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.io import journal
from ecu_sim.io.journal import JournalWriter


def _journal(path: Path) -> Path:
    writer = JournalWriter(str(path), {"node": "ecu"})
    writer.tick(1, 1, False, False)
    writer.tick(3, 1, False, False)
    writer.labels([0, 2, 1])
    writer.tick(0, 1, False, False)
    writer.close(0)
    return path


def test_a_labels_line_belongs_to_the_tick_line_before_it(tmp_path: Path) -> None:
    read = journal.read(str(_journal(tmp_path / "run.log.ticks")), str(tmp_path / "run.log"))
    assert read.labels == {1: [0, 2, 1]}
    assert [tick.rx for tick in read.ticks] == [1, 3, 0]


def test_a_flush_that_holds_the_last_tick_back_holds_its_labels_too(tmp_path: Path) -> None:
    writer = JournalWriter(str(tmp_path / "run.log.ticks"), {"node": "ecu"})
    writer.tick(1, 1, False, False)
    writer.tick(2, 1, False, False)
    writer.labels([1, 1])
    writer.flush(keep=1)
    assert (tmp_path / "run.log.ticks").read_text().splitlines()[1:] == ["1 1"]


def test_a_labels_line_that_is_not_whole_numbers_is_refused_with_its_line(tmp_path: Path) -> None:
    path = _journal(tmp_path / "run.log.ticks")
    path.write_text(path.read_text().replace("labels 0 2 1", "labels 0 tsc1 1"))
    with pytest.raises(ConfigError, match="line 4: expected 'labels L"):
        journal.read(str(path), str(tmp_path / "run.log"))


def test_a_version_4_journal_without_labels_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "run.log.ticks"
    head = {"format": journal.FORMAT, "version": 4, "node": "ecu"}
    path.write_text(json.dumps(head) + "\n1 1\n0 1 s\nend 0\n")
    read = journal.read(str(path), str(tmp_path / "run.log"))
    assert len(read.ticks) == 2 and read.labels == {} and read.trailing == 0
