"""``--fms``: the FMS-Standard set over a 30-minute Appendix D drive, read with cantools and the DBCs
(dbc/fms.dbc for the FMS set, dbc/j1939.dbc for the powertrain's own messages), agrees with itself:
distance is the integral of the speed sent, fuel used the integral of the rate sent, the level falls
with it, hours count the running engine, the coolant warms up.

The drive runs in virtual time (the real nodes, codec and loop on an in-process bus); the frames are
taken as the ECU's port sends them and decoded by cantools alone.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import can
import cantools
import pytest
from cantools.database.can import Database

from ecu_sim.settings.model import FmsSettings, RunSettings, Settings
from tests.conftest import REPO
from tests.helpers.fms import sent_frames
from tests.helpers.powertrainrig import settings as powertrain_settings

DRIVE_S = 1800.0
TICK_S = 0.01
TANK_L = 300.0
CCVS1, LFE1, LFC1, EEC1 = 0x18FEF100, 0x18FEF200, 0x18FEE900, 0x0CF00400
VDHR, HOURS, DD1, ET1, HRLFC, TCO1, CVW, FMS = (0x18FEC14A, 0x18FEE54A, 0x18FEFC4A, 0x18FEEE4A, 0x18FD094A,
                                                0x0CFE6CEE, 0x18FE704A, 0x1CFDD14A)


def database(name: str) -> Database:
    loaded = cantools.database.load_file(str(REPO / "dbc" / f"{name}.dbc"))
    assert isinstance(loaded, Database)
    return loaded


def drive(state_file: Path | None = None, duration_s: float = DRIVE_S) -> list[tuple[int, can.Message]]:
    base = powertrain_settings()
    settings: Settings = dataclasses.replace(
        base, run=RunSettings(grade_file="appendix-d", duration_s=duration_s, set_speed_kph=90.0),
        fms=FmsSettings(enabled=True, tank_l=TANK_L,
                        state_file=None if state_file is None else str(state_file)))
    return sent_frames(settings)


@pytest.fixture(scope="module")
def frames() -> Iterator[list[tuple[int, can.Message]]]:
    yield drive()


def decoded(frames: list[tuple[int, can.Message]], can_id: int, signal: str,
            db: str = "fms") -> list[tuple[int, float]]:
    dbc = database(db)
    return [(tick, float(dbc.decode_message(can_id, bytes(m.data))[signal]))  # type: ignore[call-overload,arg-type]
            for tick, m in frames if m.arbitration_id == can_id]


def integral_until(samples: list[tuple[int, float]], every_s: float, tick: int, scale: float) -> float:
    """The sum of each sample held for its interval, up to ``tick``: a reader's rectangle rule."""
    return sum(value * every_s for t, value in samples if t < tick) * scale


def test_the_distance_is_the_integral_of_the_speed_sent(frames: list[tuple[int, can.Message]]) -> None:
    speeds = decoded(frames, TCO1, "TachographVehicleSpeed")
    tick, distance_m = decoded(frames, VDHR, "HighResTotalVehicleDistance")[-1]
    integrated_m = integral_until(speeds, 0.05, tick, 1.0 / 3.6)
    assert distance_m > 10_000.0
    assert distance_m == pytest.approx(integrated_m, rel=0.001)


def test_the_fuel_used_is_the_integral_of_the_fuel_rate_sent(frames: list[tuple[int, can.Message]]) -> None:
    rates = decoded(frames, LFE1, "EngFuelRate", "j1939")
    tick, used_l = decoded(frames, HRLFC, "HighResEngineTotalFuelUsed")[-1]
    integrated_l = integral_until(rates, 0.1, tick, 1.0 / 3600.0)
    assert used_l > 2.0
    assert used_l == pytest.approx(integrated_l, rel=0.001)


def test_the_engines_total_fuel_used_agrees_with_the_high_resolution_total(
        frames: list[tuple[int, can.Message]]) -> None:
    total = decoded(frames, LFC1, "EngTotalFuelUsed", "j1939")[-1][1]
    high_resolution = decoded(frames, HRLFC, "HighResEngineTotalFuelUsed")[-1][1]
    assert abs(total - high_resolution) <= 0.5  # LFC's resolution


def test_the_fuel_level_falls_with_the_fuel_used(frames: list[tuple[int, can.Message]]) -> None:
    levels = decoded(frames, DD1, "FuelLevel1")
    used = dict(decoded(frames, HRLFC, "HighResEngineTotalFuelUsed"))
    assert all(b <= a for (_, a), (_, b) in itertools.pairwise(levels))
    tick, level = levels[-1]
    assert level == pytest.approx(100.0 * (TANK_L - used[tick]) / TANK_L, abs=0.4)  # DD1's resolution
    assert level < 100.0


def test_the_engine_hours_sent_are_within_one_step_of_the_running_time(
        frames: list[tuple[int, can.Message]]) -> None:
    assert all(rpm > 0.0 for _, rpm in decoded(frames, EEC1, "EngSpeed", "j1939"))
    tick, hours = decoded(frames, HOURS, "EngineTotalHoursOfOperation")[-1]
    assert abs(hours - tick * TICK_S / 3600.0) <= 0.05  # HOURS' resolution


def test_the_persisted_engine_hours_are_the_running_ticks_within_one_tick(tmp_path: Path) -> None:
    state = tmp_path / "fms.json"
    speeds = decoded(drive(state, 25.0), EEC1, "EngSpeed", "j1939")
    assert speeds and all(rpm > 0.0 for _, rpm in speeds)
    # the file is written every 10 simulated seconds: last after the 2000th tick, all of them running
    saved_s = json.loads(state.read_text(encoding="utf-8"))["hours_h"] * 3600.0
    assert abs(saved_s - 2000 * TICK_S) <= TICK_S


def test_the_coolant_warms_up_from_the_ambient_temperature(frames: list[tuple[int, can.Message]]) -> None:
    temperatures = [value for _, value in decoded(frames, ET1, "EngineCoolantTemperature")]
    assert temperatures[0] <= 25.0 and temperatures[-1] >= 80.0
    assert all(b >= a - 1.0 for a, b in itertools.pairwise(temperatures))


def test_the_combination_weight_is_the_trucks_mass(frames: list[tuple[int, can.Message]]) -> None:
    assert decoded(frames, CVW, "GrossCombinationVehicleWeight")[-1][1] == pytest.approx(11408.0, abs=10.0)


def test_each_fms_message_goes_at_the_standards_rate(frames: list[tuple[int, can.Message]]) -> None:
    for can_id, every_ticks in ((VDHR, 100), (HOURS, 100), (DD1, 100), (ET1, 100), (HRLFC, 100),
                                (TCO1, 5), (CVW, 1000), (FMS, 1000)):
        ticks = [tick for tick, m in frames if m.arbitration_id == can_id]
        assert {b - a for a, b in itertools.pairwise(ticks)} == {every_ticks}, hex(can_id)


def test_the_totals_persist_across_runs_in_the_state_file(tmp_path: Path) -> None:
    state = tmp_path / "fms.json"
    first = decoded(drive(state, 25.0), VDHR, "HighResTotalVehicleDistance")
    second = decoded(drive(state, 5.0), VDHR, "HighResTotalVehicleDistance")
    # the file is written every 10 simulated seconds: the second run starts at the first's 20 s
    twenty_s = [value for tick, value in first if tick < 2000][-1]
    assert second[0][1] >= twenty_s > 0.0
    assert not [p for p in tmp_path.iterdir() if p.name != "fms.json"]  # no temporary file left
