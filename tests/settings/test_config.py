"""Configuration: defaults < INI file < environment < command line; every mistake named."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.runs.prepare import prepare
from ecu_sim.settings import load as config
from ecu_sim.settings import values
from ecu_sim.settings.model import LOG_LEVELS, RunSettings, Settings
from tests.conftest import PLAIN_DBC


def cli(**given: object) -> argparse.Namespace:
    """A namespace as argparse leaves it: only options the user typed are present."""
    ns = argparse.Namespace(config=given.pop("config", None))
    for key, value in given.items():
        setattr(ns, "cfg:" + key.replace("__", "."), value)
    return ns


def write_ini(tmp_path: Path, text: str) -> str:
    path = tmp_path / "ecu-sim.ini"
    path.write_text(text)
    return str(path)


def prepared(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Settings:
    """Loaded and checked against the DBC, as a run starts."""
    settings, _ = prepare(config.load(args, environ={} if environ is None else environ))
    return settings


def test_defaults_are_the_reference_truck_at_10_hz() -> None:
    settings = prepared(cli())
    assert (settings.truck.mass_kg, settings.run.period_s, settings.profile.name) == (11793.0, 0.1, "amp")


def test_the_period_is_left_open_until_the_dbc_is_known() -> None:
    settings = config.load(cli(), environ={})
    assert settings.run.period_s is None
    with pytest.raises(ValueError, match="prepare"):
        settings.run.input_timeout_s(None)


def test_ini_file_sets_model_controller_and_run_parameters(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[truck]\nmass_kg = 9000\n[controller]\nkp = 7.5\n[run]\nset_speed_kph = 70\n")
    settings = config.load(cli(config=path), environ={})
    assert (settings.truck.mass_kg, settings.controller.kp, settings.run.set_speed_kph) == (9000, 7.5, 70)


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[truck]\nmass_kg = 9000\n")
    settings = config.load(cli(config=path), environ={"ECU_SIM_TRUCK_MASS_KG": "9500"})
    assert settings.truck.mass_kg == 9500


def test_command_line_overrides_the_environment() -> None:
    settings = config.load(cli(run__initial_speed_kph=50.0), environ={"ECU_SIM_RUN_INITIAL_SPEED_KPH": "60"})
    assert settings.run.initial_speed_kph == 50.0


def test_bus_section_is_passed_through_as_text(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[bus]\ninterface = socketcan\nchannel = can1\n")
    bus = dict(config.load(cli(config=path), environ={}).bus)
    assert bus == {"interface": "socketcan", "channel": "can1"}


def test_source_addresses_accept_hex(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[profile]\napp_source = 0x26\n")
    assert config.load(cli(config=path), environ={}).profile.app_source == 0x26


def test_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[truck]\nmas_kg = 9000\n")
    with pytest.raises(ConfigError, match=r"'mas_kg'.*ecu-sim\.ini"):
        config.load(cli(config=path), environ={})


def test_unknown_section_is_an_error(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[engine]\nrpm = 1\n")
    with pytest.raises(ConfigError, match=r"unknown section \[engine\]"):
        config.load(cli(config=path), environ={})


def test_unparsable_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "mass_kg = 1\n")
    with pytest.raises(ConfigError, match="not a valid INI file"):
        config.load(cli(config=path), environ={})


def test_non_numeric_value_names_key_and_origin(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[truck]\nmass_kg = heavy\n")
    with pytest.raises(ConfigError, match=r"mass_kg must be a float.*'heavy'.*ecu-sim\.ini"):
        config.load(cli(config=path), environ={})


def test_physically_meaningless_mass_is_rejected_with_its_origin(tmp_path: Path) -> None:
    path = write_ini(tmp_path, "[truck]\nmass_kg = -5\n")
    with pytest.raises(ConfigError, match=r"mass_kg.*\[truck\] mass_kg in .*ecu-sim\.ini"):
        config.load(cli(config=path), environ={})


def test_missing_file_is_an_error() -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration file"):
        config.load(cli(config="/nonexistent/ecu-sim.ini"), environ={})


def test_environment_variable_with_an_unknown_key_of_a_section_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"'mas_kg'.*ECU_SIM_TRUCK_MAS_KG"):
        config.load(cli(), environ={"ECU_SIM_TRUCK_MAS_KG": "1"})


def test_environment_variables_outside_the_config_sections_are_ignored() -> None:
    assert config.load(cli(), environ={"ECU_SIM_SOAK": "600"}) == config.load(cli(), environ={})


def test_default_input_timeout_is_three_periods() -> None:
    settings = prepared(cli(run__period_s=0.05))
    assert settings.run.input_timeout_s(settings.run.app_timeout_s) == pytest.approx(0.15)


# --- settings checked against the message profile (the DBC) --------------------------------------

def plain_dbc(tmp_path: Path, text: str = PLAIN_DBC) -> dict[str, object]:
    path = tmp_path / "plain.dbc"
    path.write_text(text)
    return {"profile__dbc": str(path), "profile__speed_signal": "VEH.Speed",
            "profile__app_signal": "PEDAL.Pedal"}


def test_the_period_defaults_to_the_gen_msg_cycle_time_of_the_speed_message(tmp_path: Path) -> None:
    settings = prepared(cli(**plain_dbc(tmp_path)))
    assert settings.run.period_s == pytest.approx(0.02)
    assert settings.run.input_timeout_s(settings.run.app_timeout_s) == pytest.approx(0.06)


def test_the_period_defaults_to_100_ms_when_the_dbc_gives_no_cycle_time(tmp_path: Path) -> None:
    no_cycle = PLAIN_DBC.replace('BA_ "GenMsgCycleTime" BO_ 291 20;\n', "")
    assert prepared(cli(**plain_dbc(tmp_path, no_cycle))).run.period_s == 0.1


def test_period_option_ini_and_environment_override_the_dbc_cycle_time(tmp_path: Path) -> None:
    given = plain_dbc(tmp_path)
    assert prepared(cli(run__period_s=0.05, **given)).run.period_s == 0.05
    ini = write_ini(tmp_path, "[run]\nperiod_s = 0.2\n")
    assert prepared(cli(config=ini, **given)).run.period_s == 0.2
    assert prepared(cli(**given), {"ECU_SIM_RUN_PERIOD_S": "0.5"}).run.period_s == 0.5


@pytest.mark.parametrize("key", ["initial_speed_kph", "set_speed_kph"])
@pytest.mark.parametrize("value", [-0.5, 251.0, 300.0, float("nan"), float("inf")])
def test_speeds_outside_the_dbc_speed_range_are_rejected_naming_key_and_range(key: str, value: float) -> None:
    with pytest.raises(ConfigError) as info:
        prepared(cli(**{f"run__{key}": value}))
    text = str(info.value)
    assert key in text and "command line" in text
    if math.isfinite(value):
        assert "CCVS1.WheelBasedVehicleSpeed" in text and "0..250.996 km/h" in text and "amp.dbc" in text


@pytest.mark.parametrize("name", ["amp", "j1939"])
def test_the_top_of_the_dbc_speed_range_is_accepted(name: str) -> None:
    given = cli(profile__name=name, run__initial_speed_kph=250.996, run__set_speed_kph=250.996)
    settings = prepared(given)
    assert settings.run.set_speed_kph == 250.996


def test_the_speed_range_is_the_loaded_dbc_s_not_a_fixed_one(tmp_path: Path) -> None:
    given = plain_dbc(tmp_path)
    assert prepared(cli(run__set_speed_kph=110.0, **given)).run.set_speed_kph == 110.0
    ini = write_ini(tmp_path, "[run]\nset_speed_kph = 130\n")
    with pytest.raises(ConfigError, match=r"set_speed_kph .*VEH\.Speed.*0\.\.120 km/h.*130.*ecu-sim\.ini"):
        prepared(cli(config=ini, **given))


def test_a_default_speed_outside_the_dbc_range_says_it_is_the_default(tmp_path: Path) -> None:
    given = plain_dbc(tmp_path, PLAIN_DBC.replace("[0|120]", "[0|60]"))
    with pytest.raises(ConfigError, match=r"initial_speed_kph .*0\.\.60 km/h \(got 80, the default\)"):
        prepared(cli(**given))


@pytest.mark.parametrize("key", ["app_timeout_s", "speed_timeout_s"])
def test_an_input_timeout_below_one_period_is_rejected_saying_the_minimum(tmp_path: Path, key: str) -> None:
    ini = write_ini(tmp_path, f"[run]\nperiod_s = 0.1\n{key} = 0.05\n")
    with pytest.raises(ConfigError, match=rf"{key} must be at least one period, period_s = 0\.1 s.*"
                                          rf"0\.05.*\[run\] {key} in .*ecu-sim\.ini"):
        prepared(cli(config=ini))


def test_an_input_timeout_of_one_period_is_accepted() -> None:
    given = cli(run__period_s=0.1, run__app_timeout_s=0.1, run__speed_timeout_s=0.3)
    settings = prepared(given)
    assert (settings.run.app_timeout_s, settings.run.speed_timeout_s) == (0.1, 0.3)


def test_an_input_timeout_is_checked_against_the_dbc_period(tmp_path: Path) -> None:
    # 0.05 s is 2.5 periods of the DBC's 20 ms, but less than one of the 100 ms given explicitly.
    given = plain_dbc(tmp_path)
    assert prepared(cli(run__app_timeout_s=0.05, **given)).run.app_timeout_s == 0.05
    with pytest.raises(ConfigError, match="app_timeout_s must be at least one period"):
        prepared(cli(run__app_timeout_s=0.05, run__period_s=0.1, **given))


def test_an_input_timeout_below_the_dbc_period_is_rejected_once_the_period_is_known(tmp_path: Path) -> None:
    given = cli(run__app_timeout_s=0.01, **plain_dbc(tmp_path))
    assert config.load(given, environ={}).run.app_timeout_s == 0.01  # no period yet to compare with
    with pytest.raises(ConfigError, match=r"app_timeout_s must be at least one period, period_s = 0\.02 s"):
        prepared(given)


def test_the_origin_of_a_period_taken_from_the_dbc_names_the_message_and_the_file(tmp_path: Path) -> None:
    settings, _ = prepare(config.load(cli(**plain_dbc(tmp_path)), environ={}))
    assert settings.origins["run.period_s"] == f"GenMsgCycleTime 20 ms of VEH in {tmp_path / 'plain.dbc'}"


def test_prepare_keeps_a_given_period_and_its_origin(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[run]\nperiod_s = 0.2\n")
    settings, profile = prepare(config.load(cli(config=ini, **plain_dbc(tmp_path)), environ={}))
    assert settings.run.period_s == 0.2 and profile.period_s == pytest.approx(0.02)
    assert settings.origins["run.period_s"] == f"[run] period_s in {ini}"


def test_prepare_checks_settings_built_in_code_too() -> None:
    with pytest.raises(ConfigError, match=r"set_speed_kph must be within the DBC range .*got 300"):
        prepare(Settings(run=RunSettings(set_speed_kph=300.0)))


@pytest.mark.parametrize(("key", "role", "message"),
                         [("app_source", "APP", "PEDAL"), ("speed_source", "speed", "VEH")])
def test_a_source_filter_on_a_message_that_is_no_j1939_pg_is_rejected(
        tmp_path: Path, key: str, role: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        prepared(cli(**{f"profile__{key}": 0x26}, **plain_dbc(tmp_path)))
    text = str(info.value)
    assert f"{key} (" in text and "command line" in text
    assert f"{role} message {message}" in text and "not a J1939 parameter group" in text


def test_a_source_filter_from_the_file_names_the_file(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[profile]\nspeed_source = 0x25\n")
    with pytest.raises(ConfigError, match=r"speed_source \(\[profile\] speed_source in .*ecu-sim\.ini\)"):
        prepared(cli(config=ini, **plain_dbc(tmp_path)))


@pytest.mark.parametrize("raw", ["300", "254", "-1", "0x100", "engine"])
def test_a_source_address_outside_0_to_253_states_the_range_and_the_origin(tmp_path: Path, raw: str) -> None:
    ini = write_ini(tmp_path, f"[profile]\napp_source = {raw}\n")
    with pytest.raises(ConfigError, match=rf"app_source: .*0\.\.253.*{raw!r}.*ecu-sim\.ini"):
        config.load(cli(config=ini), environ={})


def test_the_source_address_type_tells_argparse_the_range() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"0\.\.253.*'300'"):
        values.source_address("300")
    assert (values.source_address("0"), values.source_address("0xFD")) == (0, 253)


def test_a_bad_fault_in_the_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[faults]\ninject = drop=0.1\n    drop=2\n")
    with pytest.raises(ConfigError, match=r"^\[faults\] inject in .*ecu-sim\.ini 'drop=2': .*probability"):
        config.load(cli(config=ini), environ={})


def test_a_bad_fault_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"^environment variable ECU_SIM_FAULTS_INJECT 'wobble'"):
        config.load(cli(), environ={"ECU_SIM_FAULTS_INJECT": "wobble"})


def test_a_bad_fault_on_the_command_line_names_the_option() -> None:
    with pytest.raises(ConfigError, match=r"^--fault 'drop=2'"):
        config.load(cli(faults__inject=["drop=2"]), environ={})


def test_speed_and_app_in_one_frame_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"both in frame 0x18FEF100"):
        prepared(cli(profile__name="j1939", profile__app_signal="CCVS1.CruiseCtrlSetSpeed"))


# --- where each value came from, and the words the checks use -------------------------------------

def test_origins_name_the_file_the_variable_and_the_option_of_each_given_key(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[truck]\nmass_kg = 9000\n[bus]\nchannel = can1\n")
    settings = config.load(cli(config=ini, run__set_speed_kph=70.0), environ={"ECU_SIM_CONTROLLER_KP": "3"})
    assert settings.origins["truck.mass_kg"] == f"[truck] mass_kg in {ini}"
    assert settings.origins["bus.channel"] == f"[bus] channel in {ini}"
    assert settings.origins["controller.kp"] == "environment variable ECU_SIM_CONTROLLER_KP"
    assert settings.origins["run.set_speed_kph"].endswith("command line")
    assert "run.initial_speed_kph" not in settings.origins  # a default was given nowhere


def test_origins_do_not_make_equal_settings_differ(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[truck]\nmass_kg = 9000\n")
    from_file = config.load(cli(config=ini), environ={})
    assert from_file == config.load(cli(), environ={"ECU_SIM_TRUCK_MASS_KG": "9000"})


def test_a_log_level_outside_the_shared_list_is_rejected_listing_it(tmp_path: Path) -> None:
    assert LOG_LEVELS == ("debug", "info", "warning", "error")
    ini = write_ini(tmp_path, "[run]\nlog_level = verbose\n")
    with pytest.raises(ConfigError, match=r"log_level must be debug, info, warning or error \(got 'verb"):
        config.load(cli(config=ini), environ={})
