"""``--fms``: FMS1 (PGN 64893) carries the tell-tales the truck has a state for, one block a second in
turn (blocks 0, 1, 2): the parking brake, the fuel reserve, the coolant, the engine's amber lamp (its
DM1) and the retarder. The frames of a drive in virtual time (the real nodes with the CCM), decoded
by cantools with dbc/fms.dbc alone.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from ecu_sim.settings.model import FaultSettings, FmsSettings, RunSettings, Settings
from tests.helpers.fms import fms_dbc, sent_frames
from tests.helpers.powertrainrig import settings as powertrain_settings

FMS1 = 0x18FD7D4A
OFF, RED, YELLOW, INFO = 0, 1, 2, 3
#: the engine's DTC from 5 s on: its DM1 lights the amber lamp
FAULT_FROM_TICK = 500


def drive(tmp_path: Path, in_tank_l: float | None = None) -> list[tuple[int, dict[str, int]]]:
    """Ten seconds at 80 km/h with the CCM, the engine's DTC from 5 s on; FMS1 as (tick, raw values)."""
    state = None
    if in_tank_l is not None:
        state = tmp_path / "fms.json"
        totals = {"distance_m": 0.0, "fuel_l": 0.0, "hours_h": 0.0, "in_tank_l": in_tank_l}
        state.write_text(json.dumps(totals))
    base = powertrain_settings()
    given: Settings = dataclasses.replace(
        base, run=RunSettings(grade_pct=0.0, initial_speed_kph=80.0, duration_s=10.0, set_speed_kph=80.0),
        fms=FmsSettings(enabled=True, tank_l=100.0, state_file=None if state is None else str(state)),
        faults=FaultSettings(inject=(f"dtc=110:0@{FAULT_FROM_TICK / 100.0}",)))
    dbc = fms_dbc()
    found = []
    for tick, m in sent_frames(given):
        if m.arbitration_id == FMS1:
            values = dbc.decode_message(FMS1, bytes(m.data), decode_choices=False, scaling=False)
            assert isinstance(values, dict)
            found.append((tick, {name: int(value) for name, value in values.items()}))  # type: ignore[arg-type]
    return found


@pytest.fixture(scope="module")
def telltales(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, dict[str, int]]]:
    return drive(tmp_path_factory.mktemp("full"))


def test_the_dbc_reads_the_fms_standards_own_example_frame() -> None:
    # FMS-Standard v05: B0 FF FF 9F FA A8 9B FF is block 0 with tell-tale 7 red, 10 off, 11 yellow
    values = fms_dbc().decode_message(FMS1, bytes.fromhex("B0FFFF9FFAA89BFF"), decode_choices=False)
    assert values == {"BlockID": 0, "ParkingBrake": RED, "FuelLevel": OFF, "EngineCoolantTemperature": YELLOW}


def test_fms1_sends_the_next_block_every_second(telltales: list[tuple[int, dict[str, int]]]) -> None:
    ticks = [tick for tick, _ in telltales]
    blocks = [values["BlockID"] for _, values in telltales]
    assert {b - a for a, b in itertools.pairwise(ticks)} == {100}
    assert all(b == (a + 1) % 3 for a, b in itertools.pairwise(blocks))


def test_the_engine_tell_tale_is_yellow_while_its_dm1_lights_the_amber_lamp(
        telltales: list[tuple[int, dict[str, int]]]) -> None:
    engine = [(tick, values["EngineMilIndicator"]) for tick, values in telltales if values["BlockID"] == 1]
    assert {state for tick, state in engine if tick < FAULT_FROM_TICK} == {OFF}
    assert {state for tick, state in engine if tick > FAULT_FROM_TICK} == {YELLOW}


def test_a_full_tank_a_cold_engine_and_a_released_parking_brake_light_nothing(
        telltales: list[tuple[int, dict[str, int]]]) -> None:
    block0 = [values for _, values in telltales if values["BlockID"] == 0]
    assert block0
    assert all((v["ParkingBrake"], v["FuelLevel"], v["EngineCoolantTemperature"]) == (OFF, OFF, OFF)
               for v in block0)


def test_the_retarder_tell_tale_is_off_while_the_retarder_does_not_brake(
        telltales: list[tuple[int, dict[str, int]]]) -> None:
    assert {values["Retarder"] for _, values in telltales if values["BlockID"] == 2} == {OFF}


def test_the_fuel_tell_tale_is_yellow_at_the_reserve(tmp_path: Path) -> None:
    block0 = [values for _, values in drive(tmp_path, in_tank_l=5.0) if values["BlockID"] == 0]  # 5 % left
    assert block0 and {v["FuelLevel"] for v in block0} == {YELLOW}
