"""A campaign runs the CCM as a longitudinal controller: ``driver.mode = "tsc1"`` on the powertrain
network gives the usual key figures, as ``ccm`` does with the pedals."""

from __future__ import annotations

import csv
from pathlib import Path

from ecu_sim.campaign import matrix, spec
from tests.conftest import Cli

CAMPAIGN = """
[base]
run.duration_s = 120
run.grade_pct = 0
run.initial_speed_kph = 80
run.set_speed_kph = 90
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"

[matrix]
driver.mode = ["ccm", "tsc1"]
"""


def test_driver_mode_tsc1_is_the_ccm_commanding_by_tsc1_and_xbr(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    pedal, tsc1 = matrix.expand(spec.load(path))
    assert (pedal.driver()[0], tsc1.driver()[0]) == ("ccm", "ccm")
    assert (pedal.settings().ccm.command, tsc1.settings().ccm.command) == ("app", "tsc1")
    assert pedal.id != tsc1.id


def test_a_tsc1_campaign_case_settles_at_its_set_speed_with_the_usual_figures(
        cli_main: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out"))
    assert result.status == 0, result.err
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        rows = {row["driver.mode"]: row for row in csv.DictReader(handle)}
    assert [rows[mode]["status"] for mode in ("ccm", "tsc1")] == ["ok", "ok"], rows
    for mode in ("ccm", "tsc1"):
        assert 0.0 < float(rows[mode]["settle_time_s"]) < 120.0, (mode, rows[mode])
        assert float(rows[mode]["error_max_kph"]) <= 1.0  # the campaign's default band
        assert rows[mode]["dtcs_raised"] == "0"  # the engine's pedal input never went missing
