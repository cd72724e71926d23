"""The tick journal's control lines: a person's controls between two ticks (``--web``), written
where they acted and read back to the tick they acted before, which is all a replay needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.io import journal
from ecu_sim.io.journal import JournalWriter


def _written(path: Path, steps: list[tuple[str, object]], keep: int | None = None) -> str:
    writer = JournalWriter(str(path), {"node": "ccm"})
    for kind, value in steps:
        if kind == "tick":
            writer.tick(1, 1, False, False)
        else:
            assert isinstance(value, dict)
            writer.control(value)
    if keep is None:
        writer.close(0)
    else:
        writer.flush(keep=keep)
    return path.read_text()


def test_a_control_is_read_back_at_the_tick_it_acted_before(tmp_path: Path) -> None:
    path = tmp_path / "run.log.ticks"
    _written(path, [("tick", None), ("tick", None), ("control", {"set_speed_kph": 85.0}),
                    ("control", {"fault": "drop=0.5", "on": True}), ("tick", None)])
    read = journal.read(str(path), str(tmp_path / "run.log"))
    assert read.controls == {2: [{"set_speed_kph": 85.0}, {"fault": "drop=0.5", "on": True}]}
    assert len(read.ticks) == 3


def test_a_flush_that_holds_the_last_tick_back_holds_its_controls_too(tmp_path: Path) -> None:
    """The held tick line's frames are not in the log yet; the controls after it stay with it."""
    text = _written(tmp_path / "run.log.ticks",
                    [("tick", None), ("tick", None), ("control", {"cruise": False})], keep=1)
    assert text.splitlines()[1:] == ["1 1"]


def test_a_control_line_that_is_not_a_json_object_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "run.log.ticks"
    _written(path, [("tick", None)])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], "control [1, 2]", *lines[2:]]) + "\n")
    with pytest.raises(ConfigError, match="line 3: expected 'control"):
        journal.read(str(path), str(tmp_path / "run.log"))
