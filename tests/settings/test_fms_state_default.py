"""Run as the service, the FMS totals persist in the unit's state directory by default: systemd's
``StateDirectory=`` hands it over as ``STATE_DIRECTORY``, and ``[fms] state_file`` defaults to
``fms.json`` in it; a file, variable or option that sets the state file still wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli

RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0", "--fms",
       "--duration", "12")


def test_the_fms_totals_persist_in_the_services_state_directory(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    result = cli_main("-i", "virtual", "-c", virtual_channel, *RUN)
    assert result.status == 0, result.err
    saved = json.loads((tmp_path / "fms.json").read_text(encoding="utf-8"))
    assert saved["distance_m"] > 0.0


def test_the_first_of_several_state_directories_holds_them(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.setenv("STATE_DIRECTORY", f"{first}:{second}")
    assert cli_main("-i", "virtual", "-c", virtual_channel, *RUN).status == 0
    assert [p.name for p in first.iterdir()] == ["fms.json"] and not list(second.iterdir())


def test_an_fms_state_option_wins_over_the_state_directory(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    directory, chosen = tmp_path / "state", tmp_path / "mine.json"
    directory.mkdir()
    monkeypatch.setenv("STATE_DIRECTORY", str(directory))
    assert cli_main("-i", "virtual", "-c", virtual_channel, *RUN, "--fms-state", str(chosen)).status == 0
    assert chosen.exists() and not list(directory.iterdir())


def test_outside_a_service_no_state_file_is_written(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main("-i", "virtual", "-c", virtual_channel, *RUN).status == 0
    assert not list(tmp_path.iterdir())


def test_a_simulation_under_a_state_directory_neither_reads_nor_writes_it(
        cli_main: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """simulate repeats bit for bit: an odometer a service left there must not be where it starts."""
    directory = tmp_path / "state"
    directory.mkdir()
    (directory / "fms.json").write_text('{"distance_m": 123456.0}', encoding="utf-8")
    before = (directory / "fms.json").read_text(encoding="utf-8")
    monkeypatch.setenv("STATE_DIRECTORY", str(directory))
    simulate = ("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                "--fms", "--duration", "2", "--no-progress")
    assert cli_main(*simulate).status == 0
    assert (directory / "fms.json").read_text(encoding="utf-8") == before
    assert [p.name for p in directory.iterdir()] == ["fms.json"]

