"""Configuration: defaults < INI file < environment < command line; every mistake named."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ecu_sim import config
from ecu_sim.errors import ConfigError


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


def test_defaults_are_the_reference_truck_at_10_hz() -> None:
    settings = config.load(cli(), environ={})
    assert (settings.truck.mass_kg, settings.run.period_s, settings.profile.name) == (11793.0, 0.1, "amp")


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
    settings = config.load(cli(run__period_s=0.05), environ={})
    assert settings.run.input_timeout_s(settings.run.app_timeout_s) == pytest.approx(0.15)
