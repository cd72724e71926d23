"""Attacks as a campaign dimension: each case attacked and beside its attack-free twin, its effect
as figures in its row, its labelled capture a dataset's run."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import Cli

CAMPAIGN = """
[base]
run.duration_s = 12
run.grade_pct = 0
run.initial_speed_kph = 80
run.set_speed_kph = 90
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"
attack.seed = 7

[matrix]
attack.kind = ["none", "xbr:accel=-4@4+3", "claim@4", "dm11@4"]
"""


def run_campaign(cli_main: Cli, folder: Path, text: str = CAMPAIGN) -> dict[str, dict[str, str]]:
    path = folder / "attacks.toml"
    path.write_text(text, encoding="utf-8")
    result = cli_main("campaign", str(path), "--workers", "1", "--keep-traces", "--out", str(folder / "out"))
    assert result.status == 0, result.err
    with open(folder / "out" / "results.csv", newline="", encoding="utf-8") as handle:
        return {row["attack.kind"]: row for row in csv.DictReader(handle)}


def test_each_attacked_case_has_its_effect_beside_its_attack_free_twin(cli_main: Cli,
                                                                       tmp_path: Path) -> None:
    rows = run_campaign(cli_main, tmp_path)
    assert {row["status"] for row in rows.values()} == {"ok"}
    assert rows["none"]["attack_speed_dev_max_kph"] == ""
    braked = rows["xbr:accel=-4@4+3"]
    assert float(braked["attack_speed_dev_max_kph"]) > 10.0
    assert float(braked["attack_time_to_effect_s"]) < 3.0
    assert braked["attack_dtc_list"] == "2920:9"  # the XBR stream ended without a release
    # the engine fell silent, and with it the speed the cruise control needs
    assert rows["claim@4"]["attack_cruise_disengaged"] == "1"
    assert float(rows["dm11@4"]["attack_speed_dev_max_kph"]) == 0.0


def test_a_campaigns_captures_make_one_dataset_with_a_run_per_attacked_case(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    rows = run_campaign(cli_main, tmp_path)
    captures = sorted((tmp_path / "out" / "traces").glob("*.log"))
    assert {c.stem for c in captures} == {row["id"] for kind, row in rows.items() if kind != "none"}
    result = cli_main("dataset", *map(str, captures), "--out", str(tmp_path / "dataset"))
    assert result.status == 0, result.err


def test_an_unknown_attack_in_a_campaign_exits_2_naming_its_line(cli_main: Cli, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(CAMPAIGN.replace('"dm11@4"', '"nuke@4"'), encoding="utf-8")
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / "out"))
    assert result.status == 2
    assert "unknown attack 'nuke'" in result.err and "line 13" in result.err
