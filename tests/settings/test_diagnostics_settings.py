"""``[diagnostics]``: on by default, the key algorithm's form, attempts, delay and the state directory."""

from __future__ import annotations

import argparse

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.settings.load import load


def test_diagnostics_are_on_by_default_with_the_state_kept_in_memory() -> None:
    settings = load(argparse.Namespace(), environ={})
    assert settings.diagnostics == DiagnosticsSettings(enabled=True, state_dir=None)


def test_under_a_service_the_security_state_is_kept_in_its_state_directory() -> None:
    settings = load(argparse.Namespace(command="run"), environ={"STATE_DIRECTORY": "/var/lib/ecu-sim"})
    assert settings.diagnostics.state_dir == "/var/lib/ecu-sim"


def test_a_simulation_keeps_the_security_state_in_memory_even_under_a_service() -> None:
    settings = load(argparse.Namespace(command="simulate"), environ={"STATE_DIRECTORY": "/var/lib/ecu-sim"})
    assert settings.diagnostics.state_dir is None


def test_the_settings_come_from_the_environment_too() -> None:
    environ = {"ECU_SIM_DIAGNOSTICS_ATTEMPTS": "5", "ECU_SIM_DIAGNOSTICS_KEY_ALGORITHM": "mykeys:key"}
    settings = load(argparse.Namespace(), environ=environ)
    assert (settings.diagnostics.attempts, settings.diagnostics.key_algorithm) == (5, "mykeys:key")


@pytest.mark.parametrize(("key", "value", "says"), [
    ("KEY_ALGORITHM", "mykeys.key", "MODULE:FUNCTION"),
    ("ATTEMPTS", "300", "0..255"),
    ("DELAY_S", "-1", "0..86400"),
])
def test_a_bad_value_names_the_item_and_its_range(key: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load(argparse.Namespace(), environ={f"ECU_SIM_DIAGNOSTICS_{key}": value})
