"""The class6 truck through its real interfaces: the command line, the trace, and frames on a bus."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import can
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.runs.simulation import DriverSetup, Simulation
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings, VehicleSettings
from ecu_sim.vehicle import appendix_d
from tests.conftest import Cli


def simulate(cli_main: Cli, tmp_path: Path, *args: str) -> list[dict[str, float]]:
    out = tmp_path / "run.csv"
    result = cli_main("simulate", "--vehicle", "class6", *args, "--out", str(out))
    assert result.status == 0, result.err
    return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(out.open())]


def test_the_cruise_controller_holds_speed_through_the_gear_changes_of_appendix_d(
        cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, "--route", "appendix-d", "--set-speed", "90", "--duration", "900")
    changes = [(a["gear"], b["gear"], i) for i, (a, b) in enumerate(itertools.pairwise(rows))
               if a["gear"] != b["gear"]]
    assert any(new < old for old, new, _ in changes) and any(new > old for old, new, _ in changes)
    # The first half of the route: its descents are mild enough for engine braking (the amp profile
    # has no brake message), so any overshoot there would be a wound-up integrator after a climb.
    settled = [r for r in rows[300:] if r["distance_m"] < appendix_d.MIDDLE_M]
    assert max(r["speed_kph"] for r in settled) < 90.0 + 1.5
    for _, _, i in changes:
        if i > 300:
            assert all(abs(r["speed_kph"] - 90.0) < 7.0 for r in rows[i:i + 50])


def test_the_trace_of_class6_adds_elevation_gear_engine_speed_brake_and_fuel(
        cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, "--duration", "5")
    assert list(rows[0]) == ["t_s", "speed_kph", "app_pct", "grade_pct", "distance_m", "elevation_m", "gear",
                             "engine_rpm", "brake_pct", "fuel_rate_lph", "fuel_used_l"]


def test_the_ccm_brakes_over_ebc1_to_hold_its_set_speed_down_a_5_pct_descent(
        cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, "--profile", "j1939", "--grade", "-5", "--initial-speed", "60",
                    "--set-speed", "60", "--duration", "120")
    assert max(r["brake_pct"] for r in rows) > 0.0
    assert all(r["speed_kph"] < 60.0 + 5.0 for r in rows)


def test_without_a_brake_message_in_the_dbc_the_same_descent_runs_away(cli_main: Cli, tmp_path: Path) -> None:
    rows = simulate(cli_main, tmp_path, "--profile", "amp", "--grade", "-5", "--initial-speed", "60",
                    "--set-speed", "60", "--duration", "120")
    assert max(r["brake_pct"] for r in rows) == 0.0 and rows[-1]["speed_kph"] > 60.0 + 5.0


def test_a_class6_ecu_sends_eec1_and_etc2_at_their_dbc_cycle_times_or_every_tick_when_faster(
        cli_main: Cli, virtual_channel: str) -> None:
    profile = Profile.load("j1939")
    database = profile.database
    names = ("EEC1", "ETC2", "CCVS1")
    ids = {database.get_message_by_name(n).frame_id: n for n in names}
    with can.Bus(interface="virtual", channel=virtual_channel, receive_own_messages=False) as bus:
        # without the address claim's wait, so every period of the second carries its frames
        result = cli_main("run", "-i", "virtual", "-c", virtual_channel, "--profile", "j1939",
                          "--no-address-claim", "--vehicle", "class6", "--initial-speed", "50",
                          "--duration", "1")
        assert result.status == 0, result.err
        seen: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        while (msg := bus.recv(0.0)) is not None:
            if msg.arbitration_id in ids:
                name = ids[msg.arbitration_id]
                decoded = database.decode_message(msg.arbitration_id, bytes(msg.data), decode_choices=False)
                assert isinstance(decoded, dict)
                seen[name].append({k: float(v) for k, v in decoded.items() if isinstance(v, (int, float))})
    for name in names:
        cycle_ms = database.get_message_by_name(name).cycle_time
        assert cycle_ms is not None
        # the single node ticks every 100 ms (CCVS1's cycle): a faster message goes every tick
        assert len(seen[name]) == round(1000 / max(cycle_ms, 100))
    assert all(700 <= m["EngSpeed"] <= 2600 for m in seen["EEC1"])
    assert all(1 <= m["TransCurrentGear"] <= 6 and m["TransSelectedGear"] >= 1 for m in seen["ETC2"])


def test_on_the_amp_profile_a_class6_ecu_sends_only_the_testbeds_speed_frame(
        cli_main: Cli, virtual_channel: str) -> None:
    speed = Profile.load("amp").speed
    with can.Bus(interface="virtual", channel=virtual_channel, receive_own_messages=False) as bus:
        result = cli_main("run", "-i", "virtual", "-c", virtual_channel, "--vehicle", "class6",
                          "--duration", "0.5")
        assert result.status == 0, result.err
        ids = set()
        while (msg := bus.recv(0.0)) is not None:
            ids.add(msg.arbitration_id)
    assert ids == {speed.frame_id}


@pytest.mark.parametrize("vehicle", ["testbed", "class6"])
def test_an_unknown_route_name_or_missing_file_exits_2(cli_main: Cli, vehicle: str) -> None:
    result = cli_main("simulate", "--vehicle", vehicle, "--route", "no-such-route", "--duration", "1")
    assert result.status == 2 and "no-such-route" in result.err


def test_the_ccm_holds_its_integral_while_etc2_reports_a_gear_change() -> None:
    settings = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                        run=RunSettings(initial_speed_kph=0.0, set_speed_kph=60.0))
    with Simulation(settings, DriverSetup("ccm")) as sim:
        ccm = sim.loop.nodes[1]
        assert isinstance(ccm, Ccm)
        held = moved = 0
        for _ in range(600):
            before = ccm.pi_state.integral
            sim.loop.run(1)
            if ccm.shifting:
                held += ccm.pi_state.integral == before
            else:
                moved += ccm.pi_state.integral != before
    assert held > 0 and moved > 0
    assert sim.ecu.state.speed_kph > 30.0


def test_a_payload_makes_the_class6_truck_slower_to_accelerate(cli_main: Cli, tmp_path: Path) -> None:
    empty = simulate(cli_main, tmp_path, "--initial-speed", "0", "--app", "100", "--duration", "30")
    loaded = simulate(cli_main, tmp_path, "--initial-speed", "0", "--app", "100", "--duration", "30",
                      "--payload", "5000")
    assert loaded[-1]["speed_kph"] < empty[-1]["speed_kph"]
