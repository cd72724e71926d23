"""A reflash through a script in `simulate`: the engine reprogrammed with a lower road speed limit
while the truck stands, reset, and then the truck stays under the new limit; the recording of it
replays bit for bit."""

from __future__ import annotations

import csv
from pathlib import Path

from ecu_sim.calibration.files import read_image
from tests.conftest import Cli
from tests.tester.test_tester_simulate import POWERTRAIN, write

LIMIT_KPH = 20.0
#: the truck stands while it is reprogrammed: the engine held at zero torque by a TSC1 for 3 s
HOLD = ("--attack", "tsc1:torque=0@0+3")
REFLASH = ("0.1 0x00 session extended", "0.2 0x00 session programming", "0.3 0x00 unlock",
           "0.4 0x00 erase", "1.0 0x00 download slow.s19", "1.2 0x00 check", "1.4 0x00 reset",
           "2.0 0x00 read F182 F1A0")


def drive(cli_main: Cli, folder: Path, *args: str) -> list[float]:
    """20 s from standing with the cruise control set to 40 km/h; the speed at each tick."""
    folder.mkdir(exist_ok=True)
    out = folder / "run.csv"
    result = cli_main("simulate", *POWERTRAIN, "--initial-speed", "0", "--set-speed", "40", "--grade", "0",
                      "--duration", "20", *HOLD, "--out", str(out), *args)
    assert result.status == 0, result.err
    with out.open(encoding="utf-8") as file:
        return [float(row["speed_kph"]) for row in csv.DictReader(file)]


def reflash(cli_main: Cli, folder: Path, *args: str) -> tuple[list[float], list[dict[str, str]]]:
    """The drive with the script of :data:`REFLASH` and an image of the lower limit; the speeds and
    the answers' rows."""
    folder.mkdir()
    built = cli_main("calibration", "build", "--node", "engine", "--id", "SLOW-20",
                     "--set", f"road_speed_limit_kph={LIMIT_KPH:g}", "-o", str(folder / "slow.s19"))
    assert built.status == 0, built.err
    speeds = drive(cli_main, folder, "--diag-script", write(folder, "reflash.txt", *REFLASH),
                   "--diag-answers", str(folder / "answers.csv"), *args)
    with (folder / "answers.csv").open(encoding="utf-8") as file:
        return speeds, list(csv.DictReader(file))


def test_a_reflashed_engine_keeps_the_truck_under_its_new_road_speed_limit(cli_main: Cli,
                                                                          tmp_path: Path) -> None:
    speeds, rows = reflash(cli_main, tmp_path / "reflashed")
    answered = {row["request"][:8]: row["answer"] for row in rows}
    assert answered["3101FF01"] == "7101FF0100"
    assert answered["1101"] == "5101" and [row["answer"][:2] for row in rows if row["line"] == "5"] == [
        "74", "76", "77"]
    cvn = read_image(tmp_path / "reflashed" / "slow.s19").cvn
    assert answered["22F182F1"] == "62F182" + b"SLOW-20".hex().upper() + f"F1A0{cvn:08X}"
    assert max(speeds) <= LIMIT_KPH + 0.5 < 30.0 < max(drive(cli_main, tmp_path / "original"))


def test_the_erase_in_simulate_is_answered_after_response_pending_when_it_is_done(cli_main: Cli,
                                                                                  tmp_path: Path) -> None:
    _, rows = reflash(cli_main, tmp_path / "reflashed")
    erase = next(row for row in rows if row["request"] == "3101FF00")
    assert float(erase["answer_s"]) - float(erase["sent_s"]) >= 0.5 and erase["answer"] == "7101FF00"


def test_a_run_with_a_reflash_replays_bit_for_bit(cli_main: Cli, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    reflash(cli_main, tmp_path / "run", "--record", str(log))
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "bit for bit as recorded" in replayed.out + replayed.err
