"""Controls given ahead (``--control``, ``[controls] apply``) are the page's controls at a time: the
recorded log, read by cantools, shows each one from its tick; the recording replays bit for bit;
a simulation's trace is unchanged before the control's time and changed after it; a control that
cannot be applied stops the command before it runs, in one line, with exit 2.

The bus's clock is the transmission's ETC1, sent every 10 ms tick: the frames are counted by it,
never by their timestamps (in virtual time those are the host's).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import can
import cantools
import pytest
from cantools.database.can import Database

from tests.conftest import Cli

REPO = Path(__file__).resolve().parents[2]
TCO1, ETC1, DM1_TACHOGRAPH = 0x0CFE6CEE, 0x0CF00203, 0x00FECAEE
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0", "--fms")
SIMULATE = ("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
            "--duration", "20", "--initial-speed", "60")


def record(cli_main: Cli, channel: str, log: Path, *args: str) -> None:
    result = cli_main("-i", "virtual", "-c", channel, *RUN, "--record", str(log), "--duration", "3", *args)
    assert result.status == 0, result.err


def by_tick(log: Path) -> list[list[can.Message]]:
    """The log's frames, split at each ETC1 (one a tick): list k holds tick k's ETC1 and what followed."""
    ticks: list[list[can.Message]] = []
    with can.LogReader(str(log)) as reader:
        for msg in reader:
            if msg.arbitration_id == ETC1:
                ticks.append([])
            if ticks:
                ticks[-1].append(msg)
    return ticks


def ids(ticks: list[list[can.Message]]) -> set[int]:
    return {m.arbitration_id for tick in ticks for m in tick}


@pytest.fixture
def stopped_and_fixed(cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path) -> Path:
    log = tmp_path / "truck.log"
    record(cli_main, virtual_channel, log, "--control", "stop:TCO1@1-2",
           "--control", "signal:TCO1.Driver1WorkingState=2@0.5", "--control", "dtc:TACHOGRAPH=1624:2@0")
    return log


def test_a_message_stopped_for_a_window_is_off_the_bus_for_the_window_alone(stopped_and_fixed: Path) -> None:
    at = [k for k, tick in enumerate(by_tick(stopped_and_fixed)) for m in tick if m.arbitration_id == TCO1]
    gaps = sorted(later - earlier for earlier, later in itertools.pairwise(at))
    # every 50 ms (5 ticks) but once: the window's second (100 ticks), and what was due in it
    assert gaps[-2] == 5 and 100 <= gaps[-1] <= 105, gaps


def test_a_fixed_signal_goes_out_with_its_value_from_its_time(stopped_and_fixed: Path) -> None:
    fms = cantools.database.load_file(str(REPO / "dbc" / "fms.dbc"))
    assert isinstance(fms, Database)
    decoded = [fms.decode_message(TCO1, bytes(m.data), decode_choices=False)
               for tick in by_tick(stopped_and_fixed)[60:] for m in tick if m.arbitration_id == TCO1]
    states = [d["Driver1WorkingState"] for d in decoded if isinstance(d, dict)]
    assert states and set(states) == {2}  # work, instead of the settings' drive


def test_a_dtc_raised_at_the_start_is_in_the_nodes_dm1_with_its_lamp(stopped_and_fixed: Path) -> None:
    dm1 = next(m for tick in by_tick(stopped_and_fixed) for m in tick
               if m.arbitration_id & 0x00FFFFFF == DM1_TACHOGRAPH)
    spn = dm1.data[2] | dm1.data[3] << 8 | (dm1.data[4] & 0xE0) << 11
    assert (spn, dm1.data[4] & 0x1F, dm1.data[0] & 0x0C) == (1624, 2, 0x04)  # amber lamp on


def test_a_run_with_controls_from_the_command_line_replays_bit_for_bit(stopped_and_fixed: Path,
                                                                      cli_main: Cli) -> None:
    journal = stopped_and_fixed.with_name(stopped_and_fixed.name + ".ticks").read_text()
    assert 'control {"message":"TCO1","send":false}' in journal
    replayed = cli_main("replay", str(stopped_and_fixed))
    assert replayed.status == 0 and "bit for bit as recorded" in replayed.out, replayed.out + replayed.err


def test_a_run_with_controls_from_the_ini_replays_bit_for_bit(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path) -> None:
    ini = tmp_path / "truck.ini"
    ini.write_text("[controls]\napply =\n    cycle:TCO1=200@0.5\n    signal:AMB.AmbientAirTemperature=-5\n")
    log = tmp_path / "truck.log"
    record(cli_main, virtual_channel, log, "--config", str(ini))
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "bit for bit as recorded" in replayed.out, replayed.out + replayed.err


def test_a_control_leaves_a_simulation_as_it_was_before_its_time_and_changes_it_after(
        cli_main: Cli, tmp_path: Path) -> None:
    plain, controlled = tmp_path / "plain.csv", tmp_path / "controlled.csv"
    assert cli_main(*SIMULATE, "--out", str(plain)).status == 0
    # the CCM holds its integral while ETC2's selected gear differs from the current one
    result = cli_main(*SIMULATE, "--out", str(controlled), "--control", "signal:ETC2.TransSelectedGear=1@10")
    assert result.status == 0, result.err
    rows = list(zip(plain.read_text().splitlines()[1:], controlled.read_text().splitlines()[1:], strict=True))
    assert all(a == b for a, b in rows[:1000]) and any(a != b for a, b in rows[1000:])


def test_controls_written_ahead_beside_the_page_are_applied_once_by_its_desk_and_replay(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path) -> None:
    log = tmp_path / "paged.log"
    record(cli_main, virtual_channel, log, "--web", "127.0.0.1:0", "--control", "stop:TCO1@1-2")
    assert Path(f"{log}.ticks").read_text().count("\ncontrol ") == 2  # the stop and its end
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "bit for bit as recorded" in replayed.out, replayed.out + replayed.err


def test_a_simulation_recorded_with_controls_journals_them_and_replays_bit_for_bit(
        cli_main: Cli, tmp_path: Path) -> None:
    log = tmp_path / "simulated.log"
    result = cli_main(*SIMULATE, "--fms", "--record", str(log), "--control", "stop:TCO1@5-8",
                      "--control", "signal:ETC2.TransSelectedGear=1@10")
    assert result.status == 0, result.err
    journal = Path(f"{log}.ticks").read_text()
    assert journal.count("\ncontrol ") == 3  # the stop, its end, the signal
    replayed = cli_main("replay", str(log))
    assert replayed.status == 0 and "bit for bit as recorded" in replayed.out, replayed.out + replayed.err


@pytest.mark.parametrize(("control", "says"), [
    ("stop:NOPE@1", "no message 'NOPE' is sent here"),
    ("signal:ETC2.NoSuchSignal=1", "ETC2 has no signal 'NoSuchSignal'"),
    ("signal:ETC2.TransSelectedGear=999", "must be within its DBC range -125..125"),
    ("stop:ETC2@soon", "the time must be @FROM"),
    ("stop:ETC2@15-10", "the window ends before it starts"),
    ("send:ETC2@5-10", "send takes a time @FROM, not a window"),
    ("cycle:ETC2=0", "cycle_ms must be 1..3600000 ms"),
    ("dtc:NOBODY=1624:2", "no node 'NOBODY' here"),
    ("warp:ETC2", "unknown control 'warp'"),
])
def test_a_control_that_cannot_be_applied_is_one_line_and_exit_2(cli_main: Cli, control: str,
                                                                 says: str) -> None:
    result = cli_main(*SIMULATE, "--control", control)
    assert result.status == 2 and says in result.err and "--control" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1, result.err


def test_a_control_in_the_ini_that_cannot_be_read_names_the_file(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "truck.ini"
    ini.write_text("[controls]\napply = stop:ETC2@-1\n")
    result = cli_main(*SIMULATE, "--config", str(ini))
    assert result.status == 2 and f"[controls] apply in {ini}" in result.err, result.err


def test_a_control_due_after_the_run_is_over_is_a_warning_and_the_run_goes_on(cli_main: Cli) -> None:
    result = cli_main(*SIMULATE, "--control", "stop:ETC2@30")
    assert result.status == 0, result.err
    assert "stop:ETC2@30 acts at 30 s, when the run of 20 s is already over" in result.err
