"""Eco-roll: the predictive CCM asks the transmission for neutral (TC1) where a coast in neutral pays,
the class6 ECU obeys while it hears the request, and the runs and recordings stay bit for bit.

The simulations drive the class6 truck (j1939 profile) at 80 km/h over a long gentle descent, on
which a truck in neutral keeps its speed and one in gear slows down.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import can
import pytest

from ecu_sim.cruise.modes import ControllerSettings
from ecu_sim.runs import replay
from ecu_sim.settings.model import VehicleSettings
from ecu_sim.vehicle.class6 import Class6Model, Class6Params, Class6State
from tests.conftest import Cli
from tests.helpers.nodebench import Bench, settings

#: flat, a 2.5 % descent of 2 km, flat again
DESCENT = "distance_m,elevation_m\n0,0\n1000,0\n3000,-50\n9000,-50\n"
SET_KPH = 80.0
IDLE_FUEL_LPH = Class6Model(Class6Params()).fuel.rate_lph(Class6Params().idle_rpm, 0.0)
#: TC1 from the cruise control (0x11) to the transmission (0x03), priority 3
TC1_ID = 0x0C010311
NEUTRAL = bytes.fromhex("FFFF7DFFFFFFFFFF")
NO_REQUEST = bytes(8 * [0xFF])


def drive(tmp_path: Path, cli_main: Cli, controller: str, *extra: str,
          name: str = "") -> list[dict[str, float]]:
    """``simulate --out`` rows of four simulated minutes at 80 km/h over the descent."""
    road = tmp_path / "descent.csv"
    road.write_text(DESCENT)
    out = tmp_path / f"{controller}{name}.csv"
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", "--route", str(road),
                      "--set-speed", str(SET_KPH), "--initial-speed", str(SET_KPH), "--duration", "240",
                      "--controller", controller, "--out", str(out), *extra)
    assert result.status == 0, result.err
    with open(out, newline="") as handle:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def in_neutral(rows: list[dict[str, float]]) -> list[dict[str, float]]:
    return [row for row in rows if row["gear"] == 0]


def test_the_predictive_controller_rolls_down_a_gentle_descent_in_neutral(tmp_path: Path,
                                                                          cli_main: Cli) -> None:
    assert len(in_neutral(drive(tmp_path, cli_main, "predictive"))) > 100


def test_the_pi_controller_never_asks_for_neutral(tmp_path: Path, cli_main: Cli) -> None:
    assert in_neutral(drive(tmp_path, cli_main, "pi")) == []


def test_in_an_eco_roll_the_engine_idles_on_idle_fuel(tmp_path: Path, cli_main: Cli) -> None:
    rolling = in_neutral(drive(tmp_path, cli_main, "predictive"))[5:-5]  # not the ticks of a gear change
    assert rolling
    assert {row["engine_rpm"] for row in rolling} == {Class6Params().idle_rpm}
    assert all(row["fuel_rate_lph"] == pytest.approx(IDLE_FUEL_LPH, abs=1e-4) for row in rolling)


def test_an_eco_roll_keeps_the_speed_within_the_band(tmp_path: Path, cli_main: Cli) -> None:
    speeds = [row["speed_kph"] for row in drive(tmp_path, cli_main, "predictive")]
    assert min(speeds) >= SET_KPH - 8.0 and max(speeds) <= SET_KPH + 5.0


def test_without_eco_roll_the_predictive_controller_coasts_in_gear(tmp_path: Path, cli_main: Cli) -> None:
    ini = tmp_path / "no-eco-roll.ini"
    ini.write_text("[controller]\neco_roll = no\n")
    assert in_neutral(drive(tmp_path, cli_main, "predictive", "--config", str(ini))) == []


def test_an_eco_roll_run_repeats_bit_for_bit(tmp_path: Path, cli_main: Cli) -> None:
    assert drive(tmp_path, cli_main, "predictive", name="-1") == drive(tmp_path, cli_main, "predictive",
                                                                        name="-2")


# -- the ECU as the transmission, through its bus ------------------------------------------------------


def class6_ecu(tmp_path: Path, record: bool = False) -> Bench:
    road = tmp_path / "flat.csv"
    road.write_text("distance_m,elevation_m\n0,0\n20000,0\n")
    s = settings("j1939", grade_pct=None, grade_file=str(road), initial_speed_kph=SET_KPH)
    s = dataclasses.replace(s, vehicle=VehicleSettings(preset="class6"))
    return Bench("ecu", s, record_to=str(tmp_path / "ecu.log") if record else None)


def gear(bench: Bench) -> int:
    driveline = bench.ecu.vehicle.driveline()
    assert driveline is not None
    return driveline.gear


def rolling_in_neutral(bench: Bench) -> bool:
    """In neutral, not synchronising to engage a gear."""
    state = bench.ecu.vehicle.state
    assert isinstance(state, Class6State)
    return state.neutral and state.shift_left_s <= 0.0


def tc1(data: bytes) -> can.Message:
    return can.Message(arbitration_id=TC1_ID, data=data, is_extended_id=True)


def test_a_tc1_asking_for_neutral_puts_the_ecus_truck_in_neutral_at_the_next_tick(tmp_path: Path) -> None:
    bench = class6_ecu(tmp_path)
    bench.tick(2)
    bench.send_raw(tc1(NEUTRAL))
    bench.tick(1)
    assert gear(bench) == 0
    bench.close()


def test_a_silent_tc1_sender_gets_its_gear_back_once_the_hold_time_is_over(tmp_path: Path) -> None:
    bench = class6_ecu(tmp_path)
    bench.tick(1)
    bench.send_raw(tc1(NEUTRAL))
    hold = bench.ecu.gear_held.hold_ticks
    held = []
    for _ in range(hold + 1):
        bench.tick(1)
        held.append(rolling_in_neutral(bench))
    assert held[:hold] == [True] * hold
    assert held[hold] is False  # synchronising to engage a gear
    bench.close()


def test_tc1_with_no_request_leaves_the_transmission_to_its_schedule(tmp_path: Path) -> None:
    bench = class6_ecu(tmp_path)
    bench.tick(1)
    bench.send_raw(tc1(NEUTRAL))
    bench.tick(3)
    bench.send_raw(tc1(NO_REQUEST))
    bench.tick(1 + round(Class6Params().shift_time_s / bench.settings.run.resolved_period_s))
    assert gear(bench) == 6
    bench.close()


def test_an_ecu_recording_with_tc1_replays_bit_for_bit(tmp_path: Path) -> None:
    bench = class6_ecu(tmp_path, record=True)
    for tick in range(80):
        bench.send_raw(tc1(NEUTRAL if 10 <= tick < 40 else NO_REQUEST))
        bench.tick(1)
    bench.close()
    result = replay.replay(str(tmp_path / "ecu.log"))
    assert result.identical


def test_the_predictive_ccm_sends_tc1_only_with_eco_roll(tmp_path: Path) -> None:
    road = tmp_path / "flat.csv"
    road.write_text("distance_m,elevation_m\n0,0\n20000,0\n")
    sent_tc1 = []
    for eco_roll in (True, False):
        s = settings("j1939", grade_pct=None, grade_file=str(road), set_speed_kph=SET_KPH)
        s = dataclasses.replace(s, vehicle=VehicleSettings(preset="class6"),
                                controller=ControllerSettings(mode="predictive", eco_roll=eco_roll))
        bench = Bench("ccm", s)
        bench.send_value(SET_KPH)
        bench.tick(3)
        sent_tc1.append([m.data for m in bench.sent() if (m.arbitration_id >> 8) & 0x3FF00 == 0x100])
        bench.close()
    assert sent_tc1 == [[NO_REQUEST] * 3, []]


def test_a_predictive_ccm_recording_with_its_eco_rolls_replays_bit_for_bit(tmp_path: Path) -> None:
    road = tmp_path / "descent.csv"
    road.write_text(DESCENT)
    s = settings("j1939", grade_pct=None, grade_file=str(road), set_speed_kph=SET_KPH)
    s = dataclasses.replace(s, vehicle=VehicleSettings(preset="class6"),
                            controller=ControllerSettings(mode="predictive"))
    log = tmp_path / "ccm.log"
    bench = Bench("ccm", s, record_to=str(log))
    rolled = []
    for _ in range(600):  # 80 km/h heard for a minute: 1333 m, into the descent
        bench.send_value(SET_KPH)
        bench.tick(1)
        rolled.append(bench.ccm.neutral)
    bench.close()
    assert any(rolled) and not all(rolled)
    assert NEUTRAL in [m.data for m in bench.sent() if m.arbitration_id == TC1_ID]
    assert replay.replay(str(log)).identical
