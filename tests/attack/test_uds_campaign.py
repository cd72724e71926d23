"""The attacks on the diagnostic door as a campaign: ``attack.kind x diagnostics.flaw``, each
attack unlocking the flawed node and not the default one, its figures in the row."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from ecu_sim.campaign.runner import load
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


def test_the_campaigns_dataset_labels_every_diagnostic_request_with_its_attack_inside_its_window(
        cli_main: Cli, tmp_path: Path) -> None:
    rows(cli_main, tmp_path)
    captures = sorted(str(path) for path in (tmp_path / "out" / "traces").glob("*.log"))
    result = cli_main("dataset", *captures, "--out", str(tmp_path / "dataset"))
    assert result.status == 0, result.err
    frames = pd.read_csv(tmp_path / "dataset" / "frames.csv",
                         dtype={"CAN ID": str, "attack": str, "run": str})
    manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text(encoding="utf-8"))
    diagnostic = frames["CAN ID"].str.lower().str.startswith("18da")
    requests = frames[diagnostic & (frames["CAN ID"].str[4:6] == "00")]  # to the engine
    answers = frames[diagnostic & (frames["CAN ID"].str[6:8] == "00")]  # from it
    assert len(requests) > 0 and (requests["label"] == 1).all() and (requests["Flag"] == "T").all()
    assert (answers["attack"] == "benign").all()
    for run in manifest["runs"]:
        (attack,) = run["attacks"]
        mine = frames[(frames["run"] == run["run"]) & (frames["label"] == attack["label"])]
        end = attack["end_s"] if attack["end_s"] is not None else float("inf")
        assert mine["Timestamp"].between(attack["start_s"], end, inclusive="left").all()
        assert len(mine) == run["frames_by_kind"][attack["kind"]]


def test_the_example_campaigns_stage_every_door_attack_against_each_node_variant() -> None:
    for name in ("door", "door-test"):
        cases = load(str(Path(__file__).parents[2] / "examples" / f"{name}.toml"))
        variants = {case.settings().diagnostics.flaw for case in cases}
        kinds = {spec.split(":")[0].split("@")[0] for case in cases for spec in case.attack()[0]}
        assert variants == {"none", "weak-key+no-attempt-limit", "static-seed", "reset-seed"}
        assert kinds == {"bruteforce", "keyreplay", "seedpredict", "commctl", "udsflood", "isotpff", "fcwait"}
