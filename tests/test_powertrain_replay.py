"""A recording of ``--network powertrain`` replays bit for bit: every hosted node's frames, the claims,
DM1s, EC1's BAM and the commands' effects, tick by tick."""

from __future__ import annotations

import re
from pathlib import Path

import can

from ecu_sim.codec.profile import Profile
from ecu_sim.plot.figure import draw
from ecu_sim.plot.series import load_series
from tests.conftest import Cli
from tests.powertrainrig import command

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
