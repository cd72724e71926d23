"""A recording replays from any folder: the journal holds the DBC's absolute path and checksum, and
says what to pass when the DBC has moved; a file that is not a recording is named as such."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, Cli


@pytest.fixture
def recorded_with_own_dbc(tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run recorded in ``tmp_path/run`` with ``--dbc dbcs/own.dbc``, a path relative to it."""
    folder = tmp_path / "run"
    (folder / "dbcs").mkdir(parents=True)
    shutil.copy(REPO / "dbc" / "amp.dbc", folder / "dbcs" / "own.dbc")
    monkeypatch.chdir(folder)
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--dbc", "dbcs/own.dbc",
                      "--record", "ecu.log", "--duration", "1")
    assert result.status == 0, result.err
    monkeypatch.chdir(tmp_path)
    return folder / "ecu.log"


def test_a_recording_with_a_relative_dbc_path_replays_from_another_folder(
        recorded_with_own_dbc: Path, cli_main: Cli) -> None:
    result = cli_main("replay", str(recorded_with_own_dbc))
    assert result.status == 0, result.err
    assert "checksum" not in result.err


def test_a_moved_dbc_is_named_with_what_to_pass(recorded_with_own_dbc: Path, cli_main: Cli,
                                                tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere.dbc"
    (recorded_with_own_dbc.parent / "dbcs" / "own.dbc").rename(moved)
    result = cli_main("replay", str(recorded_with_own_dbc))
    assert result.status == 2
    assert str(recorded_with_own_dbc.parent / "dbcs" / "own.dbc") in result.err
    assert "--dbc PATH" in result.err and "Traceback" not in result.err
    assert cli_main("replay", str(recorded_with_own_dbc), "--dbc", str(moved)).status == 0


def test_a_file_that_is_not_a_recording_is_not_suggested_as_one(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("replay", str(tmp_path / "hour.csv"))
    assert result.status == 2
    assert "hour.csv is not a recording" in result.err
    assert "--record" in result.err and "--record hour.csv" not in result.err
