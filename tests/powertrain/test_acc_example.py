"""examples/acc.py, a user's adaptive cruise control (python-can, cantools and the DBC), follows a lead
vehicle through a braking event against a real ``ecu-sim --network powertrain`` over a real bus.

Both run in real time on the test's own udp_multicast group; the example's frames stay on this host
(hop limit 0). What it did is judged from its log, row by row, never from how long anything took.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import HANG_S, REPO, Node, Udp, clean_env

EXAMPLE = REPO / "examples" / "acc.py"
LEAD = REPO / "examples" / "lead.csv"
MIN_GAP_M = 10.0
#: the lead brakes from 80 to 40 km/h between these times (examples/lead.csv) and holds 40 km/h
BRAKING_FROM_S, HOLDING_UNTIL_S = 10.0, 30.0


def lead_profile() -> list[tuple[float, float]]:
    with LEAD.open(newline="") as handle:
        return [(float(row["time_s"]), float(row["lead_speed_kph"])) for row in csv.DictReader(handle)]


def test_the_lead_profile_brakes_from_80_to_40_kph_at_about_2_mps2_and_holds() -> None:
    profile = dict(lead_profile())
    assert profile[BRAKING_FROM_S] == 80.0 and profile[HOLDING_UNTIL_S] == 40.0
    start, end = max(t for t, v in profile.items() if v == 80.0 and t <= 20), min(
        t for t, v in profile.items() if v == 40.0)
    assert (80.0 - 40.0) / 3.6 / (end - start) == pytest.approx(2.0, abs=0.05)


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acc_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "values", "frame"), [
    ("tsc1", {695: 2, 696: 0, 897: 3, 518: 40, 3349: 7, 3350: 31}, "0c00002a f2ffffa5ffffff40"),
    ("xbr", {2920: -2.0, 2914: 2, 2915: 2, 2916: 2}, "0c040b2a 7f6deaffffffff80"),
])
def test_the_examples_first_frames_are_the_standards_worked_frames(
        name: str, values: dict[int, float], frame: str) -> None:
    acc = example()
    db = acc.load_dbc(None)
    if name == "tsc1":
        command = acc.Command(acc.find(db, 518, destination=0), 4206, 4207, 8, acc.tsc1_checksum)
    else:
        command = acc.Command(acc.find(db, 2920), 3189, 3188, 16, acc.xbr_checksum)
    msg = command.frame(values)
    assert f"{msg.arbitration_id:08x} {bytes(msg.data).hex()}" == frame


def test_the_example_gives_up_on_the_speed_after_speed_lost_seconds_one_by_default() -> None:
    acc = example()
    assert acc.parse(["--lead", str(LEAD)]).speed_lost == 1.0
    assert acc.parse(["--lead", str(LEAD), "--speed-lost", "3"]).speed_lost == 3.0


def test_the_examples_xbr_release_carries_a_valid_demand_of_zero() -> None:
    acc = example()
    db = acc.load_dbc(None)
    tsc1 = acc.Command(acc.find(db, 518, destination=0), 4206, 4207, 8, acc.tsc1_checksum)
    xbr = acc.Command(acc.find(db, 2920), 3189, 3188, 16, acc.xbr_checksum)
    frame = acc.release(tsc1, xbr)[1]
    decoded = acc.find(db, 2920).decode(bytes(frame.data), decode_choices=False)
    assert decoded["XBRCtrlMode"] == 0
    assert decoded["ExternalAccelerationDemand"] == pytest.approx(0.0, abs=1e-3)


@pytest.mark.slow
def test_acc_follows_the_lead_through_its_braking_without_the_gap_going_below_its_minimum(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    truck = start(*udp.args(), "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                  "--grade", "0", "--initial-speed", "80")
    truck.wait_for(r"speed +\d")  # its first status line: the truck is on the bus
    log = tmp_path / "acc.csv"
    acc = subprocess.run(
        [sys.executable, str(EXAMPLE), "-i", "udp_multicast", "-c", udp.group, "--port", str(udp.port),
         "--hop-limit", "0", "--lead", str(LEAD), "--duration", "40", "--min-gap", str(MIN_GAP_M),
         "--log", str(log), "--speed-lost", "3"],  # a loaded machine may stall the truck a while
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_env(), timeout=40 + HANG_S)
    assert truck.stop() == 0, truck.log
    assert not re.search(r"(tsc1|xbr)_(checksum|counter)", truck.log), "the truck refused its frames"
    assert acc.returncode == 0, acc.stdout + acc.stderr
    with log.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert float(rows[-1]["t_s"]) > HOLDING_UNTIL_S
    gap = min(float(r["gap_m"]) for r in rows)
    assert gap >= MIN_GAP_M, f"minimum gap {gap:.1f} m"
    holding = [r for r in rows if BRAKING_FROM_S <= float(r["t_s"]) <= HOLDING_UNTIL_S]
    slowest = min(float(r["own_speed_kph"]) for r in holding)
    assert slowest < 55.0, f"the truck slowed only to {slowest:.1f} km/h behind a lead at 40 km/h"
    assert any(r["xbr_mps2"] for r in holding), "it never asked the brakes"
    assert "minimum gap" in acc.stdout
