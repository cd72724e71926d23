"""A flawed node beside its patched twin: with no attack the two drive the truck the same, case by
case, as ``campaign compare --traces`` judges two versions (the flaw comes from the INI file every
case starts from, which is not part of a case's id)."""

from __future__ import annotations

from pathlib import Path

from ecu_sim.campaign.runner import load
from tests.conftest import Cli

FLAWS = "static-seed+reset-seed+no-attempt-limit+weak-key"
CASES = """
[base]
run.duration_s = 6
run.initial_speed_kph = 80
run.set_speed_kph = 90
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"

[matrix]
run.grade_pct = [0, 2]
"""


def campaign(folder: Path, name: str, config: str | None) -> Path:
    head = "[campaign]\n" + (f'config = "{config}"\n' if config else "")
    path = folder / f"{name}.toml"
    path.write_text(head + CASES, encoding="utf-8")
    return path


def test_the_flawed_campaign_gives_every_case_the_flaws(tmp_path: Path) -> None:
    (tmp_path / "flawed.ini").write_text(f"[diagnostics]\nflaw = {FLAWS}\n", encoding="utf-8")
    cases = load(str(campaign(tmp_path, "flawed", "flawed.ini")))
    assert {case.settings().diagnostics.flaw for case in cases} == {FLAWS}


def test_a_flawed_node_and_its_patched_twin_drive_the_same_without_an_attack(cli_main: Cli,
                                                                            tmp_path: Path) -> None:
    (tmp_path / "flawed.ini").write_text(f"[diagnostics]\nflaw = {FLAWS}\n", encoding="utf-8")
    tables = []
    for name, config in (("patched", None), ("flawed", "flawed.ini")):
        out = tmp_path / name
        result = cli_main("campaign", str(campaign(tmp_path, name, config)), "--workers", "1",
                          "--keep-traces", "--out", str(out))
        assert result.status == 0, result.err
        tables.append(str(out / "results.csv"))
    result = cli_main("campaign", "compare", *tables, "--traces")
    assert result.status == 0, result.out
    assert "2 cases: 2 same, 0 differs, 0 inconclusive" in result.out
