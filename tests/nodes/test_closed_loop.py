"""ECU and CCM on python-can's virtual bus in virtual time, with real encoding and decoding."""

from __future__ import annotations

import dataclasses
import io

import pytest

from ecu_sim.runs import simulation
from ecu_sim.runs.simulation import DriverSetup
from ecu_sim.settings.model import RunSettings, Settings
from tests.helpers.nodebench import Bench


def settings(**run: object) -> Settings:
    return Settings(run=dataclasses.replace(RunSettings(), **run))  # type: ignore[arg-type]


def trace(result_csv: str) -> list[tuple[float, ...]]:
    return [tuple(float(x) for x in line.split(",")) for line in result_csv.splitlines()[1:]]


def run_csv(s: Settings, driver: DriverSetup) -> str:
    out = io.StringIO()
    simulation.run(s, driver, out)
    return out.getvalue()


def test_closed_loop_settles_within_half_a_kph_of_set_speed_within_60_s() -> None:
    rows = trace(run_csv(settings(duration_s=120.0, grade_pct=0.0, set_speed_kph=90.0), DriverSetup("ccm")))
    after_60 = [speed for t, speed, *_ in rows if t >= 60.0]
    assert all(abs(speed - 90.0) <= 0.5 for speed in after_60)


def test_closed_loop_overshoot_is_under_1_kph() -> None:
    rows = trace(run_csv(settings(duration_s=120.0, grade_pct=0.0, set_speed_kph=90.0), DriverSetup("ccm")))
    assert max(speed for _, speed, *_ in rows) < 91.0


def test_closed_loop_holds_set_speed_within_1_kph_over_the_testbed_route() -> None:
    rows = trace(run_csv(settings(duration_s=900.0, set_speed_kph=90.0), DriverSetup("ccm")))
    settled = [speed for t, speed, *_ in rows if t >= 60.0]
    assert max(abs(speed - 90.0) for speed in settled) <= 1.0


def test_two_runs_give_bit_identical_traces() -> None:
    s = settings(duration_s=300.0, set_speed_kph=85.0)
    assert run_csv(s, DriverSetup("ccm")) == run_csv(s, DriverSetup("ccm"))


def test_csv_has_the_documented_columns_and_one_row_per_tick_from_t0() -> None:
    rows = run_csv(settings(duration_s=2.0), DriverSetup("none")).splitlines()
    assert rows[0] == "t_s,speed_kph,app_pct,grade_pct,distance_m"
    assert rows[1].startswith("0.000,80.0")


def test_a_duration_of_n_periods_is_n_ticks_from_t0_as_in_every_command() -> None:
    rows = run_csv(settings(duration_s=2.0), DriverSetup("none")).splitlines()[1:]
    assert len(rows) == 20 and rows[-1].startswith("1.900,")


def test_constant_pedal_reaches_the_ecu_through_the_codec() -> None:
    rows = trace(run_csv(settings(duration_s=1.0, grade_pct=0.0), DriverSetup("pedal", 40.0)))
    assert rows[-1][2] == 40.0


def test_coastdown_through_the_whole_stack_matches_the_reference_at_60_s() -> None:
    rows = trace(run_csv(settings(duration_s=60.1, grade_pct=0.0), DriverSetup("none")))
    assert rows[-1][0] == 60.0 and rows[-1][1] == pytest.approx(51.5666, abs=0.01)


def test_ecu_coasts_once_the_held_app_would_be_older_than_the_timeout() -> None:
    """With the default timeout of three periods, an APP value is used by three ticks, never a fourth."""
    bench = Bench("ecu", settings(grade_pct=0.0))
    try:
        for _ in range(10):
            bench.send_value(60.0)
            bench.tick()
        assert bench.ecu.app_pct == 60.0  # the pedal falls silent after its frame of t = 0.9 s
        bench.tick(2)  # 1.0 s took that frame; 1.1 and 1.2 s still use it
        assert bench.ecu.app_pct == 60.0 and not bench.ecu.app_missing
        bench.tick()  # at 1.3 s it would be older than the timeout: missing, the ECU coasts
        assert bench.ecu.app_pct == 0.0 and bench.ecu.app_missing
    finally:
        bench.close()


def test_not_available_app_means_coasting_at_once() -> None:
    bench = Bench("ecu", settings(grade_pct=0.0))
    try:
        bench.send_value(50.0)
        bench.tick(2)
        assert bench.ecu.app_pct == 50.0
        bench.send(b"\xff" * 8)
        bench.tick()
        assert bench.ecu.app_missing and bench.ecu.invalid["not_available"] == 1
    finally:
        bench.close()
