"""``ecu-sim link`` in-process against the fake IPRoute: what it prints and the status it exits with."""

from __future__ import annotations

import pytest

pytest.importorskip("pyroute2")

from ecu_sim.cli import main
from tests.link.test_link import FakeIPRoute, FakeLink, install_fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeIPRoute:
    return install_fake(monkeypatch)


def test_cli_create_and_show(fake: FakeIPRoute, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["link", "vcan0", "--create", "--show"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["vcan0: created, brought up", "vcan0"]
    assert "  kind:      vcan" in out
    assert main(["link", "vcan0", "--create"]) == 0
    assert capsys.readouterr().out == "vcan0: unchanged\n"


def test_cli_configures_a_controller(fake: FakeIPRoute, capsys: pytest.CaptureFixture[str]) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=False)
    assert main(["link", "can0", "--bitrate", "250000", "--berr-reporting", "on", "--listen-only", "on"]) == 0
    expected = "can0: bitrate unset -> 250000, berr-reporting on, listen-only on, brought up\n"
    assert capsys.readouterr().out == expected
    assert main(["link", "can0"]) == 0
    assert "controller state: ERROR_ACTIVE" in capsys.readouterr().out


def test_cli_reports_a_missing_interface_with_status_69(fake: FakeIPRoute,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["link", "vcan0"]) == 69
    assert capsys.readouterr().err == (
        "ecu-sim: error: vcan0 does not exist; create it with `sudo ecu-sim link vcan0 --create`\n")


def test_cli_on_off_switches_reject_other_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["link", "can0", "--listen-only", "maybe"])
    assert exit_info.value.code == 2
    assert "expected on or off, not 'maybe'" in capsys.readouterr().err


def test_cli_restart(fake: FakeIPRoute, capsys: pytest.CaptureFixture[str]) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, bus_off=True)
    assert main(["link", "can0", "--restart"]) == 0
    assert capsys.readouterr().out == "can0: restarted after bus-off\n"
    assert main(["link", "can0", "--restart", "--show"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("can0: unchanged (not bus-off)\ncan0\n")
    assert "controller state: ERROR_ACTIVE" in out


def test_cli_restart_of_an_auto_restarting_controller_exits_2(fake: FakeIPRoute,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake.links["can0"] = FakeLink("can0", 3, "can", up=True, bitrate=250000, restart_ms=100, bus_off=True)
    assert main(["link", "can0", "--restart"]) == 2
    assert "restarts itself 100 ms after a bus-off" in capsys.readouterr().err


def test_cli_help_documents_restart(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["link", "--help"])
    out = capsys.readouterr().out
    assert "--restart " in out and "bus-off" in out and "type can restart" in out


def test_cli_refuses_a_bad_bitrate_before_creating_anything(fake: FakeIPRoute,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["link", "vcan0", "--create", "--bitrate", "0"]) == 2
    assert fake.requests == []
