"""Fuel on the bus (LFE1, LFC1), in co-simulation's outputs, and in a campaign's rows."""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import can
import pytest
from cantools.database.can import Database

from ecu_sim.codec.profile import Profile
from ecu_sim.cosim.contract import contract
from ecu_sim.cosim.stepper import Stepper
from ecu_sim.j1939.ids import make_id, pgn_of
from ecu_sim.j1939.request import request
from ecu_sim.powertrain.engine_frames import EngineFrames
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from ecu_sim.vehicle.class6 import Class6Model, Class6Params
from ecu_sim.vehicle.drive import Driveline
from ecu_sim.vehicle.fuel import CO2_G_PER_L
from tests.conftest import Cli
from tests.helpers.nodebench import Bench, settings


class Sent:
    """An output that keeps what it is given."""

    def __init__(self) -> None:
        self.payloads: list[bytes] = []

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        self.payloads.append(data)


def decoded(database: Database, name: str, data: bytes) -> dict[str, float]:
    message = database.get_message_by_name(name)
    values = message.decode(data, decode_choices=False)
    assert isinstance(values, dict)
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


def test_lfe1_and_lfc1_carry_the_drivelines_fuel_in_the_j1939_71_layout() -> None:
    database = Profile.load("j1939").database
    outputs: dict[str, Sent] = {}
    frames = EngineFrames.build(database, True, 0.1, lambda m: outputs.setdefault(m.name, Sent()))
    assert frames is not None
    frames.send(0, 0.0, Driveline(4, 4, 1500.0, 40.0, 45.0, 21.35, 123.4, 4.2, 3.9))
    lfe1 = decoded(database, "LFE1", outputs["LFE1"].payloads[-1])
    lfc1 = decoded(database, "LFC1", outputs["LFC1"].payloads[-1])
    assert lfe1["EngFuelRate"] == pytest.approx(21.35, abs=0.025)
    assert lfe1["EngInstantaneousFuelEconomy"] == pytest.approx(4.2, abs=1 / 1024)
    assert lfe1["EngAverageFuelEconomy"] == pytest.approx(3.9, abs=1 / 1024)
    assert lfc1["EngTripFuel"] == lfc1["EngTotalFuelUsed"] == 123.5
    assert outputs["LFE1"].payloads[-1][6:] == b"\xff\xff"  # no throttle valve: not available


def test_while_the_fuel_is_cut_lfe1_says_the_instantaneous_economy_is_not_available() -> None:
    database = Profile.load("j1939").database
    outputs: dict[str, Sent] = {}
    frames = EngineFrames.build(database, True, 0.1, lambda m: outputs.setdefault(m.name, Sent()))
    assert frames is not None
    frames.send(0, 0.0, Driveline(4, 4, 1500.0, -8.0, -8.0, 0.0, 2.0, math.nan, 5.0))
    assert outputs["LFE1"].payloads[-1][2:4] == b"\xff\xff"


def test_a_recording_of_a_class6_ecu_decodes_lfe1_at_100_ms_and_lfc1_with_cantools(
        cli_main: Cli, tmp_path: Path, virtual_channel: str) -> None:
    path = tmp_path / "ecu.log"
    result = cli_main("run", "-i", "virtual", "-c", virtual_channel, "--profile", "j1939",
                      "--no-address-claim", "--vehicle", "class6", "--initial-speed", "0",
                      "--duration", "2", "--record", str(path))
    assert result.status == 0, result.err
    database = Profile.load("j1939").database
    seen: dict[str, list[dict[str, float]]] = {"LFE1": [], "LFC1": []}
    for msg in can.LogReader(str(path)):
        message = database.get_message_by_frame_id(msg.arbitration_id) if msg.is_extended_id else None
        if message is not None and message.name in seen:
            values = database.decode_message(msg.arbitration_id, bytes(msg.data), decode_choices=False)
            assert isinstance(values, dict)
            seen[message.name].append({k: float(v) for k, v in values.items() if isinstance(v, int | float)})
    idle_lph = Class6Model(Class6Params()).initial(0.0).fuel_rate_lph
    assert len(seen["LFE1"]) == 20 and len(seen["LFC1"]) == 2
    # each send carries the last one's rounding (docs/j1939.md): within one 0.05 L/h step, not half of one
    assert all(m["EngFuelRate"] == pytest.approx(idle_lph, abs=0.05) for m in seen["LFE1"])
    assert all(m["EngTotalFuelUsed"] == m["EngTripFuel"] == 0.0 for m in seen["LFC1"])


def test_the_cosim_contract_of_class6_names_the_fuel_outputs() -> None:
    names = [e.name for e in contract(Profile.load("j1939"), "class6").outputs]
    assert {"fuel_rate_lph", "fuel_used_l", "LFE1.EngFuelRate", "LFC1.EngTotalFuelUsed"} <= set(names)
    assert "fuel_rate_lph" not in [e.name for e in contract(Profile.load("j1939"), "testbed").outputs]


def test_a_cosim_step_of_class6_reports_the_fuel_rate_and_the_fuel_used_so_far() -> None:
    settings = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                        run=RunSettings(initial_speed_kph=80.0, log_level="warning"))
    settings, profile = prepare(settings)
    with Stepper(settings, profile, load_vehicle_route(settings)) as stepper:
        names = [e.name for e in stepper.contract.outputs]
        first = dict(zip(names, stepper.step(100, (50.0, 0.0, 0.0))[0], strict=True))
        second = dict(zip(names, stepper.step(100, (50.0, 0.0, 0.0))[0], strict=True))
    assert first["fuel_rate_lph"] > 5.0 and second["fuel_used_l"] > first["fuel_used_l"] > 0.0
    # LFE1 is the mean since its last send with the last send's rounding carried: one 0.05 L/h step
    assert second["LFE1.EngFuelRate"] == pytest.approx(second["fuel_rate_lph"], abs=0.05)


CAMPAIGN = """
[base]
run.duration_s = 120
run.grade_pct = 0
run.initial_speed_kph = 80
vehicle.preset = "class6"
vehicle.payload_kg = {payload}
[matrix]
run.set_speed_kph = [{speeds}]
"""


def campaign(cli_main: Cli, tmp_path: Path, name: str, payload: float = 0.0,
             speeds: str = "80, 90") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(CAMPAIGN.format(payload=payload, speeds=speeds))
    result = cli_main("campaign", str(path), "--workers", "1", "--out", str(tmp_path / name))
    assert result.status == 0, result.err
    return tmp_path / name / "results.csv"


def test_a_class6_campaign_row_has_its_fuel_per_100_km_and_co2_per_tonne_km_of_payload(
        cli_main: Cli, tmp_path: Path) -> None:
    standard = {r["run.set_speed_kph"]: r for r in csv.DictReader(campaign(cli_main, tmp_path, "a").open())}
    loaded = {r["run.set_speed_kph"]: r
              for r in csv.DictReader(campaign(cli_main, tmp_path, "b", payload=2000.0).open())}
    for speed, row in standard.items():
        fuel, km = float(row["fuel_l"]), float(row["distance_m"]) / 1000.0
        assert float(row["fuel_l_per_100km"]) == pytest.approx(100.0 * fuel / km, rel=1e-6)
        assert float(row["co2_g_per_tkm"]) == pytest.approx(fuel * CO2_G_PER_L / (5.080234544 * km), rel=1e-6)
        # more payload: more fuel, but less CO2 per tonne of it
        assert float(loaded[speed]["fuel_l_per_100km"]) > float(row["fuel_l_per_100km"])
        assert float(loaded[speed]["co2_g_per_tkm"]) < float(row["co2_g_per_tkm"])
    assert float(standard["90"]["fuel_l_per_100km"]) > float(standard["80"]["fuel_l_per_100km"])


def test_a_testbed_campaign_row_has_no_fuel_figures(tmp_path: Path) -> None:
    from ecu_sim.campaign import matrix, spec
    from ecu_sim.campaign.case import run_case

    path = tmp_path / "t.toml"
    path.write_text("[base]\nrun.duration_s = 10\n[[case]]\nrun.set_speed_kph = 85\n")
    (case,) = matrix.expand(spec.load(path))
    row = run_case(case)
    assert row["fuel_l"] == row["fuel_l_per_100km"] == row["co2_g_per_tkm"] == ""


def test_compare_judges_the_fuel_figures_like_any_other(cli_main: Cli, tmp_path: Path) -> None:
    before = campaign(cli_main, tmp_path, "before")
    after = tmp_path / "after.csv"
    rows = list(csv.DictReader(before.open()))
    for row in rows:
        row["fuel_l_per_100km"] = str(float(row["fuel_l_per_100km"]) * 1.10)  # beyond the 5 % allowance
    with after.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = cli_main("campaign", "compare", str(before), str(after))
    worse = [line for line in result.out.splitlines() if line.startswith("worse:")]
    assert result.status == 1 and len(worse) == 2 and all("fuel_l_per_100km" in line for line in worse)
    assert cli_main("campaign", "compare", str(after), str(before)).status == 0


def test_a_class6_ecu_answers_a_request_for_lfc1_with_its_latest_payload() -> None:
    lfc1_pgn, tool = 65257, 0xF9
    s = dataclasses.replace(settings(profile="j1939", address_claim=None, initial_speed_kph=50.0),
                            vehicle=VehicleSettings(preset="class6"))
    bench = Bench("ecu", s)
    try:
        bench.tick(12)
        periodic = [m for m in bench.sent() if pgn_of(m.arbitration_id) == lfc1_pgn]
        pdu = request(lfc1_pgn, 0x00)
        bench.send_raw(can.Message(arbitration_id=make_id(pdu.pgn, tool, 0x00), data=pdu.data))
        bench.tick(1)
        answers = [m for m in bench.sent() if pgn_of(m.arbitration_id) == lfc1_pgn]
    finally:
        bench.close()
    assert len(periodic) == 1, "LFC1 every 10 ticks (1000 ms) once the claim stands"
    assert len(answers) == 1 and bytes(answers[0].data) == bytes(periodic[-1].data)
