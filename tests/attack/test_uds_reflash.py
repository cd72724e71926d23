"""A malicious reflash in `simulate`: against the node with a weak key and no attempt limit the
brute force unlocks and the image raising the road speed limit lets the truck past it; against
the default node the lockout stops it and the CVN stays; the same bytes on two runs. A second
tester in the middle of a workshop tool's download needs no key on the ``any-tester`` node, and
is refused by the default one, whose session is the workshop tool's."""

from __future__ import annotations

import csv
from pathlib import Path

from ecu_sim.attack.plan import BENIGN
from tests.conftest import Cli
from tests.helpers.attacked import POWERTRAIN, labelled

LIMIT_KPH = 50.0
BRUTE = "weak-key+no-attempt-limit"


def images(cli_main: Cli, folder: Path) -> Path:
    """The start image (limited to LIMIT_KPH) in ``folder``, and the attacker's (no limit), returned."""
    for name, limit in (("slow", str(LIMIT_KPH)), ("fast", "inf")):
        result = cli_main("calibration", "build", "--node", "engine", "--id", name.upper(),
                          "--set", f"road_speed_limit_kph={limit}", "-o", str(folder / f"{name}.s19"))
        assert result.status == 0, result.err
    return folder / "fast.s19"


def attacks(image: Path, kind: str = "reflash") -> tuple[str, str]:
    """The brakes hold the truck while the engine is reprogrammed (programming needs it standing)."""
    return "xbr:accel=-4@0+10", f"{kind}:file={image}@0"


def drive(cli_main: Cli, folder: Path, flaw: str, name: str, kind: str = "reflash") -> tuple[float, bytes]:
    """The highest speed of a standing start at full pedal under ``kind``, and the capture."""
    fast = images(cli_main, folder)
    config = folder / f"{name}.ini"
    config.write_text(f"[calibration]\nengine = {folder / 'slow.s19'}\n[diagnostics]\nflaw = {flaw}\n",
                      encoding="ascii")
    args = [arg for attack in attacks(fast, kind) for arg in ("--attack", attack)]
    capture, trace = folder / f"{name}.log", folder / f"{name}.csv"
    result = cli_main("simulate", *POWERTRAIN, "--config", str(config), "--duration", "40", "--app", "100",
                      "--initial-speed", "0", *args, "--capture", str(capture), "--out", str(trace))
    assert result.status == 0, result.err
    with trace.open(encoding="ascii") as handle:
        top = max(float(row["speed_kph"]) for row in csv.DictReader(handle))
    return top, capture.read_bytes()


def test_a_reflash_with_a_brute_forced_key_lets_the_truck_past_its_road_speed_limit(cli_main: Cli,
                                                                                    tmp_path: Path) -> None:
    top, _ = drive(cli_main, tmp_path, BRUTE, "flawed")
    assert top > LIMIT_KPH + 20.0


def test_the_default_node_keeps_its_road_speed_limit_the_lockout_stopping_the_reflash(cli_main: Cli,
                                                                                     tmp_path: Path) -> None:
    top, capture = drive(cli_main, tmp_path, "none", "default")
    assert top < LIMIT_KPH + 1.0
    assert b"18DAF900#037F2736" in capture  # attempts exceeded: the delay started


def test_a_second_tester_reflashes_the_any_tester_node_inside_a_workshop_tools_download(
        cli_main: Cli, tmp_path: Path) -> None:
    top, capture = drive(cli_main, tmp_path, "any-tester", "hijacked", kind="hijack")
    assert top > LIMIT_KPH + 20.0
    assert b"18DA00F9#" in capture
    assert b"18DA00F9#0227" not in capture and b"18DA00F9#0627" not in capture  # no SecurityAccess


def test_the_default_node_refuses_a_second_testers_blocks_and_keeps_its_road_speed_limit(
        cli_main: Cli, tmp_path: Path) -> None:
    top, capture = drive(cli_main, tmp_path, "none", "withstood", kind="hijack")
    assert top < LIMIT_KPH + 1.0
    assert b"18DAF900#037F3622" in capture  # the first block: conditions not correct


def test_a_reflash_gives_the_same_bytes_on_two_runs(cli_main: Cli, tmp_path: Path) -> None:
    for flaw in (BRUTE, "none"):
        assert drive(cli_main, tmp_path, flaw, "first") == drive(cli_main, tmp_path, flaw, "second")


def campaign(cli_main: Cli, folder: Path, kind: str, flaw: str) -> tuple[dict[str, str], dict[str, str], str]:
    """The rows of ``kind`` on the default node and on ``flaw``'s, and ``calibration show`` of the
    attacker's image."""
    fast = images(cli_main, folder)
    path = folder / f"{kind}.toml"
    path.write_text(f"""
[base]
run.duration_s = 20
run.initial_speed_kph = 0
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"
driver.mode = "pedal"
driver.app_pct = 100
calibration.engine = "slow.s19"
attack.kind = "{';'.join(attacks(fast, kind))}"

[matrix]
diagnostics.flaw = ["none", "{flaw}"]
""", encoding="utf-8")
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(folder / kind))
    assert result.status == 0, result.err
    with open(folder / kind / "results.csv", newline="", encoding="utf-8") as handle:
        rows = {row["diagnostics.flaw"]: row for row in csv.DictReader(handle)}
    return rows["none"], rows[flaw], cli_main("calibration", "show", str(fast)).out


def test_the_campaign_row_shows_the_cvn_changed_on_the_flawed_node_alone(cli_main: Cli,
                                                                         tmp_path: Path) -> None:
    default, flawed, shown = campaign(cli_main, tmp_path, "reflash", BRUTE)
    assert default["attack_cvn_after"] == default["attack_cvn_before"] == flawed["attack_cvn_before"]
    assert flawed["attack_cvn_after"] != flawed["attack_cvn_before"]
    assert f"CVN 0x{flawed['attack_cvn_after']}" in shown
    assert default["attack_time_to_unlock_s"] == "" and flawed["attack_time_to_unlock_s"] != ""


def test_the_hijack_changes_the_cvn_of_the_any_tester_node_alone(cli_main: Cli, tmp_path: Path) -> None:
    default, flawed, shown = campaign(cli_main, tmp_path, "hijack", "any-tester")
    assert default["attack_cvn_after"] == default["attack_cvn_before"] == flawed["attack_cvn_before"]
    assert f"CVN 0x{flawed['attack_cvn_after']}" in shown


def test_every_frame_of_the_multi_frame_download_is_labelled_with_the_reflash(cli_main: Cli,
                                                                              tmp_path: Path) -> None:
    drive(cli_main, tmp_path, BRUTE, "labelled")
    frames = labelled(tmp_path / "labelled.log")
    sent = [(msg.data[0] >> 4, label) for msg, label in frames if msg.arbitration_id == 0x18DA00F9]
    kinds = {kind for kind, _ in sent}
    assert {0, 1, 2} <= kinds  # single, first and consecutive frames
    assert {label for _, label in sent} == {2}  # the second attack: the reflash
    assert {label for msg, label in frames if msg.arbitration_id == 0x18DAF900} == {BENIGN}
