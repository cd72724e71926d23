"""``--network powertrain`` everywhere the truck goes: a recording replays bit for bit (every hosted
node's frames, claims, DM1s, EC1's BAM and the commands' effects), the trace and the plot show who
controls the engine, and a co-simulation peer's TSC1 acts in the tick it is given for."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from pathlib import Path

import can
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.cosim.protocol import Frame
from ecu_sim.cosim.stepper import Stepper
from ecu_sim.plot.figure import draw
from ecu_sim.plot.series import load_series
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from tests.conftest import Cli, Node, Udp
from tests.helpers.powertrainrig import command
from tests.helpers.powertrainrig import settings as powertrain_settings

MODE, PRIORITY, TORQUE, RATE, PURPOSE = 695, 897, 518, 3349, 3350


def test_a_powertrain_recording_with_tsc1_replays_bit_for_bit(
        tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    database = Profile.load("j1939").database
    log = tmp_path / "powertrain.log"
    with can.Bus(interface="virtual", channel=virtual_channel, receive_own_messages=False) as bus:
        for counter in range(3):  # taken at the first tick; the sender then falls silent: a DTC
            bus.send(command(database, "TSC1", counter, {MODE: 2, PRIORITY: 3, RATE: 7, PURPOSE: 1},
                             {TORQUE: 10.0}))
        result = cli_main("-i", "virtual", "-c", virtual_channel, "--vehicle", "class6", "--profile", "j1939",
                          "--network", "powertrain", "--grade", "0", "--record", str(log), "--duration", "6")
    assert result.status == 0, result.err
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0, replayed.err
    assert "replayed 600 ticks (6.0 s)" in replayed.out and "bit for bit as recorded" in replayed.out
    sent = re.search(r": (\d+) frames sent bit for bit", replayed.out)
    # ETC1 alone goes every 10 ms tick once the transmission's claim stands
    assert sent is not None and int(sent[1]) > 600


def test_a_powertrain_simulation_traces_and_plots_the_torque_mode_and_controlling_address(
        cli_main: Cli, tmp_path: Path) -> None:
    csv = tmp_path / "powertrain.csv"
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                      "--duration", "2", "--out", str(csv))
    assert result.status == 0, result.err
    lines = csv.read_text().splitlines()
    assert lines[0].endswith(",torque_mode,controlling_address,engine_demand_pct,accel_mps2")
    assert len(lines) == 1 + 200  # a row per 10 ms tick
    figure = draw(load_series(str(csv)))
    labels = {ax.get_ylabel() for ax in figure.axes}
    assert {"torque mode (SPN 899)", "controlling address (SPN 1483)"} <= labels


def test_a_cosim_peers_tsc1_frame_acts_in_the_tick_it_is_given_for() -> None:
    settings, profile = prepare(powertrain_settings())
    tsc1 = command(profile.database, "TSC1", 0, {MODE: 2, PRIORITY: 3, RATE: 7, PURPOSE: 1}, {TORQUE: 0.0})
    with Stepper(settings, profile, load_vehicle_route(settings)) as stepper:
        names = [e.name for e in stepper.contract.outputs]
        stepper.step(50, (80.0, math.nan, 0.0))  # every claim stands
        controller = stepper.ecu.powertrain.commanded if stepper.ecu.powertrain else None
        assert controller is not None and controller.engine_request.controller == 0x00
        outputs, sent = stepper.step(3, (80.0, math.nan, 0.0),
                                     (Frame(tsc1.arbitration_id, bytes(tsc1.data), offset=2),))
        assert controller.engine_request.controller == 0x2A  # the step's last tick took it
        assert sent is not None and any(f.offset == 2 for f in sent)
        # ETC2 comes from the transmission at 0x03, and the contract's signals still read it
        assert not math.isnan(dict(zip(names, outputs, strict=True))["ETC2.TransCurrentGear"])


def test_a_cosim_peers_xbr_frame_acts_in_the_tick_it_is_given_for() -> None:
    settings, profile = prepare(powertrain_settings())
    xbr = command(profile.database, "XBR", 0, {2914: 2, 2915: 2, 2916: 2}, {2920: -2.0})
    with Stepper(settings, profile, load_vehicle_route(settings)) as stepper:
        stepper.step(50, (80.0, math.nan, 0.0))  # every claim stands
        commanded = stepper.ecu.powertrain.commanded if stepper.ecu.powertrain else None
        assert commanded is not None and commanded.brake_output is not None
        assert commanded.brake_output.controller == 0x0B
        stepper.step(3, (80.0, math.nan, 0.0), (Frame(xbr.arbitration_id, bytes(xbr.data), offset=2),))
        assert commanded.brake_output.controller == 0x2A and commanded.brake_output.foundation_pct > 0.0


CAMPAIGN = """
[base]
run.duration_s = 60
run.grade_pct = 0
run.initial_speed_kph = 70
run.set_speed_kph = 80
vehicle.preset = "class6"
profile.name = "j1939"
j1939.network = "powertrain"

[matrix]
driver.mode = ["ccm", "tsc1"]
"""


def test_a_campaign_of_the_powertrain_drives_the_ccm_by_pedal_and_by_tsc1_alike(
        cli_main: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "powertrain.toml"
    spec.write_text(CAMPAIGN)
    result = cli_main("campaign", str(spec), "--out", str(tmp_path / "out"))
    assert result.status == 0, result.err
    with (tmp_path / "out" / "results.csv").open() as handle:
        rows = {row["driver.mode"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"ccm", "tsc1"}
    for row in rows.values():  # each holds its set speed after settling, at 6000 ticks of 10 ms
        assert row["status"] == "ok" and float(row["error_max_kph"]) < 1.5 and row["ticks"] == "6000"


@pytest.mark.slow
def test_a_powertrain_recorded_on_an_echoing_bus_under_a_tsc1_ccm_replays_bit_for_bit(
        tmp_path: Path, start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    """udp_multicast hands every frame back, the four nodes' claims and DM1s too: the replay must
    tell them from the frames received, and a real CCM's TSC1 and XBR must act again as recorded."""
    log = tmp_path / "powertrain.log"
    class6 = ("--vehicle", "class6", "--profile", "j1939")
    ecu = start(*udp.args(), *class6, "--network", "powertrain", "--grade", "0", "--record", str(log),
                "--duration", "4")
    ccm = start("ccm", *udp.args(), *class6, "--command", "tsc1", "--duration", "4")
    assert (ecu.wait(), ccm.wait()) == (0, 0), ecu.log + ccm.log
    result = cli_main("replay", str(log))
    assert result.status == 0, result.err
    compared = re.search(r"(\d+) frames sent bit for bit", result.out)
    # every frame the journal counts as sent was compared, however many ticks a loaded machine skipped
    ticks = [m for line in Path(f"{log}.ticks").read_text().splitlines()
             if (m := re.fullmatch(r"(\d+) (\d+)(?: (\w+))?", line))]
    sent = sum(int(m[2]) for m in ticks if "f" not in (m[3] or ""))  # a frame that failed is not compared
    transmitted = sum(1 for m in ticks if "s" not in (m[3] or ""))
    assert sent >= transmitted // 2, f"{sent} frames in {transmitted} transmitted ticks"  # ETC1: each 10 ms
    assert compared is not None and int(compared[1]) == sent, result.out
