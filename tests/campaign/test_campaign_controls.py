"""A campaign case carries controls (``controls.apply``, the ``--control`` grammar): they act in its
run as they do in ``simulate``, and a control the case's node cannot take fails that case alone."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import Cli

POWERTRAIN = """
[base]
run.duration_s = 40
run.set_speed_kph = 80
profile.name = "j1939"
vehicle.preset = "class6"
j1939.network = "powertrain"
"""


def rows(cli_main: Cli, tmp_path: Path, cases: str) -> list[dict[str, str]]:
    path = tmp_path / "c.toml"
    path.write_text(POWERTRAIN + cases)
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out"))
    assert result.status == 0, result.err
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_dtc_a_case_raises_at_30_s_is_counted_in_its_row(cli_main: Cli, tmp_path: Path) -> None:
    plain, raised = rows(cli_main, tmp_path, '[[case]]\n[[case]]\ncontrols.apply = ["dtc=524:2@30"]\n')
    assert (plain["dtcs_raised"], raised["dtcs_raised"]) == ("0", "1")


def test_a_message_a_case_stops_at_30_s_changes_its_frames(cli_main: Cli, tmp_path: Path) -> None:
    plain, stopped = rows(cli_main, tmp_path, '[[case]]\n[[case]]\ncontrols.apply = ["stop:ETC2@30"]\n')
    assert plain["status"] == stopped["status"] == "ok" and plain["frame_hash"] != stopped["frame_hash"]


def test_a_control_the_case_cannot_take_fails_that_case_alone(cli_main: Cli, tmp_path: Path) -> None:
    ok, failed = rows(cli_main, tmp_path, '[[case]]\n[[case]]\ncontrols.apply = ["stop:NOPE@30"]\n')
    assert (ok["status"], failed["status"]) == ("ok", "failed")
    assert "no message 'NOPE' is sent here" in failed["error"]
