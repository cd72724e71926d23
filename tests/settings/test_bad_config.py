"""Bad configuration ends the command with exit status 2 and a message naming the file, line or key.

Checked before the bus is opened, through the real command line (``ecu_sim.cli.main`` in this process).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PLAIN_DBC, Cli

#: a DBC with the speed message but without the accelerator pedal position
SPEED_ONLY_DBC = """VERSION ""
NS_ :
BS_:
BU_: ECU
BO_ 2566844709 CCVS1: 8 ECU
 SG_ WheelBasedVehicleSpeed : 40|16@1+ (0.00390625,0) [0|250.996] "km/h" Vector__XXX
BA_DEF_ SG_ "SPN" INT 0 524287;
BA_DEF_DEF_ "SPN" 0;
BA_ "SPN" SG_ 2566844709 WheelBasedVehicleSpeed 84;
"""


def test_a_dbc_without_the_app_signal_exits_2_naming_the_file_and_the_spn(
        cli_main: Cli, tmp_path: Path) -> None:
    dbc = tmp_path / "speed-only.dbc"
    dbc.write_text(SPEED_ONLY_DBC)
    result = cli_main("--dbc", str(dbc), "--duration", "0.1")
    assert result.status == 2
    assert str(dbc) in result.err and "SPN 91" in result.err


def test_an_app_signal_the_dbc_lacks_exits_2_listing_the_signals_it_has(cli_main: Cli) -> None:
    result = cli_main("ccm", "--app-signal", "EEC2.NoSuchSignal", "--duration", "0.1")
    assert result.status == 2
    assert "NoSuchSignal" in result.err and "AccelPedalPos1" in result.err


def test_a_grade_file_not_increasing_in_distance_exits_2_naming_file_and_line(
        cli_main: Cli, tmp_path: Path) -> None:
    route = tmp_path / "route.csv"
    route.write_text("distance_m,grade_pct\n0,0\n500,1.0\n400,2.0\n")
    result = cli_main("--grade-file", str(route), "--duration", "0.1")
    assert result.status == 2
    assert f"{route}, line 4" in result.err


def test_negative_rated_power_in_the_configuration_exits_2_naming_key_and_file(
        cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "truck.ini"
    ini.write_text("[truck]\nrated_power_kw = -179\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert "rated_power_kw must be > 0" in result.err and str(ini) in result.err


def test_an_unparsable_configuration_file_exits_2_naming_it(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "broken.ini"
    ini.write_text("mass_kg = 1\n[truck\n")
    result = cli_main("ccm", "--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert str(ini) in result.err and "not a valid INI file" in result.err


def test_an_inconsistent_configuration_exits_2_saying_what_excludes_what(
        cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "both.ini"
    ini.write_text("[run]\ngrade_pct = 1\ngrade_file = /etc/route.csv\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert "grade_pct and grade_file exclude each other" in result.err


def test_an_unknown_key_exits_2_naming_key_and_file(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "typo.ini"
    ini.write_text("[faults]\nsed = 4\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert "'sed'" in result.err and str(ini) in result.err


def test_a_malformed_fault_exits_2_quoting_it(cli_main: Cli) -> None:
    result = cli_main("--fault", "wobble=3", "--duration", "0.1")
    assert result.status == 2
    assert "'wobble=3'" in result.err and "drop" in result.err


def test_a_bad_line_of_a_scenario_file_exits_2_naming_file_and_line(cli_main: Cli, tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.txt"
    scenario.write_text("# dropouts\nseed = 7\ndrop=0.2@10-20\ndrop=1.5\n")
    result = cli_main("ccm", "--scenario", str(scenario), "--duration", "0.1")
    assert result.status == 2
    assert f"scenario file {scenario}, line 4" in result.err and "probability" in result.err


def test_a_delay_that_is_not_whole_periods_exits_2(cli_main: Cli) -> None:
    result = cli_main("--fault", "delay=0.25", "--duration", "0.1")
    assert result.status == 2
    assert "whole number of periods" in result.err


def test_a_recording_in_a_format_replay_cannot_read_back_exits_2(cli_main: Cli, tmp_path: Path) -> None:
    result = cli_main("--record", str(tmp_path / "run.csv"), "--duration", "0.1")
    assert result.status == 2
    assert "run.csv" in result.err and ".blf" in result.err


def test_replaying_a_file_without_its_tick_journal_exits_2_naming_it(cli_main: Cli, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("(1.000000) can0 18F00326#FFFFFFFFFFFFA5FF R\n")
    result = cli_main("replay", str(log))
    assert result.status == 2
    assert f"{log}.ticks" in result.err


def test_an_initial_speed_beyond_the_dbc_range_exits_2_naming_option_and_range(cli_main: Cli) -> None:
    result = cli_main("--initial-speed", "300", "--duration", "0.1")
    assert result.status == 2
    assert "--initial-speed" in result.err and "0..250.996 km/h" in result.err


def test_an_input_timeout_shorter_than_the_period_exits_2_saying_the_minimum(cli_main: Cli) -> None:
    result = cli_main("--app-timeout", "0.05", "--period", "0.1", "--duration", "0.1")
    assert result.status == 2
    assert "app_timeout_s must be at least one period, period_s = 0.1 s" in result.err
    assert "--app-timeout" in result.err


def test_speed_and_app_in_one_frame_exits_2(cli_main: Cli) -> None:
    result = cli_main("ccm", "--profile", "j1939", "--app-signal", "CCVS1.CruiseCtrlSetSpeed",
                     "--duration", "0.1")
    assert result.status == 2
    assert "both in frame 0x18FEF100" in result.err


def test_a_source_filter_on_a_plain_can_message_exits_2_naming_option_and_message(
        cli_main: Cli, tmp_path: Path) -> None:
    dbc = tmp_path / "plain.dbc"
    dbc.write_text(PLAIN_DBC)
    result = cli_main("--dbc", str(dbc), "--speed-signal", "VEH.Speed", "--app-signal", "PEDAL.Pedal",
                     "--app-source", "0x26", "--duration", "0.1")
    assert result.status == 2
    assert "--app-source" in result.err and "PEDAL" in result.err
    assert "not a J1939 parameter group" in result.err


def test_a_source_address_out_of_range_exits_2_stating_the_range(cli_main: Cli) -> None:
    result = cli_main("--app-source", "300", "--duration", "0.1")
    assert result.status == 2
    assert "--app-source" in result.err and "0..253" in result.err and "'300'" in result.err


def test_a_bad_fault_in_the_configuration_file_exits_2_naming_file_and_key(
        cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "faults.ini"
    ini.write_text("[faults]\ninject = drop=2\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert f"[faults] inject in {ini} 'drop=2'" in result.err and "probability" in result.err


def test_faults_separated_by_a_semicolon_in_the_configuration_exit_2_saying_how_to_separate_them(
        cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "faults.ini"
    ini.write_text("[faults]\ninject = drop=0.1;silent@60+5\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert f"[faults] inject in {ini}" in result.err and "one fault per line" in result.err


def test_a_vin_outside_the_vin_alphabet_exits_2_naming_key_and_file(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "truck.ini"
    ini.write_text("[fms]\nvin = 1M8GDM9AXKP04278O\n")  # O is not in a VIN: it reads as 0
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2 and len(result.err.strip().splitlines()) == 1
    assert "vin must be 17 characters" in result.err and str(ini) in result.err


def test_a_front_axle_share_outside_0_to_1_exits_2_naming_key_and_file(cli_main: Cli, tmp_path: Path) -> None:
    ini = tmp_path / "truck.ini"
    ini.write_text("[fms]\nfront_axle_share = 1.2\n")
    result = cli_main("--config", str(ini), "--duration", "0.1")
    assert result.status == 2
    assert "front_axle_share must be within 0..1" in result.err and str(ini) in result.err
