"""The predictive controller on a truck it cannot ask for neutral (no TC1 on the bus: the ``amp``
profile): it coasts in gear only, and its defaults must not cost fuel against the PI controller.
The lift ahead of a climb does there (docs/eco-cruise.md), so unless set it is off."""

from __future__ import annotations

import csv
from pathlib import Path

from ecu_sim.cruise.modes import ControllerSettings
from ecu_sim.cruise.predictive import PredictiveParams
from tests.conftest import Cli


def fuel_per_m(tmp_path: Path, cli_main: Cli, controller: str) -> float:
    """Litres per metre of half an hour on Appendix D at 88 km/h, the amp profile (no TC1)."""
    out = tmp_path / f"{controller}.csv"
    result = cli_main("simulate", "--vehicle", "class6", "--route", "appendix-d", "--set-speed", "88",
                      "--initial-speed", "88", "--duration", "1800", "--controller", controller,
                      "--out", str(out))
    assert result.status == 0, result.err
    with open(out, newline="") as handle:
        last = list(csv.DictReader(handle))[-1]
    return float(last["fuel_used_l"]) / float(last["distance_m"])


def test_without_tc1_the_predictive_defaults_use_no_more_fuel_than_pi_on_appendix_d(
        tmp_path: Path, cli_main: Cli) -> None:
    assert fuel_per_m(tmp_path, cli_main, "predictive") <= fuel_per_m(tmp_path, cli_main, "pi")


def test_without_a_way_to_neutral_an_unset_lift_is_off() -> None:
    params = ControllerSettings(mode="predictive").predictive_for(neutral=False)
    assert params is not None and params.anticipate_kph == 0.0


def test_with_eco_roll_off_an_unset_lift_is_off() -> None:
    params = ControllerSettings(mode="predictive", eco_roll=False).predictive_for(neutral=True)
    assert params is not None and params.anticipate_kph == 0.0


def test_where_the_ccm_may_eco_roll_an_unset_lift_is_the_default() -> None:
    params = ControllerSettings(mode="predictive").predictive_for(neutral=True)
    assert params is not None and params.anticipate_kph == PredictiveParams().anticipate_kph


def test_a_lift_that_is_set_holds_without_a_way_to_neutral() -> None:
    params = ControllerSettings(mode="predictive", anticipate_kph=1.5).predictive_for(neutral=False)
    assert params is not None and params.anticipate_kph == 1.5
