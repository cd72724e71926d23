"""The attacks on the diagnostic door as a campaign: ``attack.kind x diagnostics.flaw``, each
attack unlocking the flawed node and not the default one, its figures in the row."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import Cli

FLAWED = "static-seed+reset-seed+weak-key+no-attempt-limit"
CAMPAIGN = f"""
[base]
run.duration_s = 12
run.grade_pct = 0
run.initial_speed_kph = 80
run.set_speed_kph = 90
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"

[matrix]
diagnostics.flaw = ["none", "{FLAWED}"]
attack.kind = ["bruteforce@2", "keyreplay@2", "seedpredict@2", "commctl@2+4"]
"""


def rows(cli_main: Cli, folder: Path) -> dict[tuple[str, str], dict[str, str]]:
    path = folder / "door.toml"
    path.write_text(CAMPAIGN, encoding="utf-8")
    result = cli_main("campaign", str(path), "--workers", "1", "--keep-traces", "--out", str(folder / "out"))
    assert result.status == 0, result.err
    with open(folder / "out" / "results.csv", newline="", encoding="utf-8") as handle:
        return {(row["attack.kind"].split("@")[0], row["diagnostics.flaw"]): row
                for row in csv.DictReader(handle)}


def test_each_key_attack_unlocks_the_flawed_node_and_not_the_default_one(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    table = rows(cli_main, tmp_path)
    assert {row["status"] for row in table.values()} == {"ok"}
    for kind in ("bruteforce", "keyreplay", "seedpredict"):
        assert table[kind, "none"]["attack_time_to_unlock_s"] == "", kind
        assert float(table[kind, FLAWED]["attack_time_to_unlock_s"]) < 10.0, kind
    brute = table["bruteforce", FLAWED]
    assert 0 < int(brute["attack_key_tries"]) <= 256
    assert int(table["bruteforce", "none"]["attack_lockouts"]) >= 1
    silenced = table["commctl", "none"]
    assert float(silenced["attack_engine_silent_s"]) >= 4.0  # the window, then the session's S3
    assert silenced["attack_cruise_disengaged"] == "1"
    assert table["bruteforce", "none"]["attack_engine_silent_s"] == "0.00"
