"""Fault injection: each kind does what it says to the frames a node sends, repeatably, and is logged.

The ECU coasting from 80 km/h sends a different speed every tick, so a fault's effect on each
frame can be read off against the same ECU without faults. Times: ``@1-2`` is ticks 10..19.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import can
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.errors import ConfigError
from ecu_sim.faults.injector import check
from ecu_sim.faults.spec import Fault, FaultSchedule, after_the_run, describe, parse_fault
from tests.conftest import Cli, summary_of
from tests.helpers.nodebench import Bench

Frames = list[list[float | str]]


def run(faults: tuple[str, ...] = (), ticks: int = 40, kind: str = "ecu", seed: int = 0) -> Frames:
    """What the node sent, tick by tick (an empty list for a tick that sent nothing)."""
    bench = Bench(kind, faults=faults, seed=seed)
    try:
        if kind == "ccm":
            bench.send_value(85.0)
        per_tick: Frames = []
        for _ in range(ticks):
            bench.tick()
            per_tick.append(bench.sent_values())
        return per_tick
    finally:
        bench.close()


CLEAN = run()
WINDOW = range(10, 20)


def test_without_faults_the_coasting_ecu_sends_one_distinct_speed_per_tick() -> None:
    values = [frames[0] for frames in CLEAN]
    assert all(len(frames) == 1 for frames in CLEAN) and len(set(values)) == len(values)


def test_drop_in_a_window_withholds_exactly_the_frames_of_that_window() -> None:
    frames = run(("drop@1-2",))
    assert [t for t, sent in enumerate(frames) if not sent] == list(WINDOW)
    assert all(frames[t] == CLEAN[t] for t in range(40) if t not in WINDOW)


def test_drop_with_a_probability_withholds_about_that_share_of_frames() -> None:
    frames = run(("drop=0.3",), ticks=1000)
    assert 250 <= sum(not sent for sent in frames) <= 350


def test_random_drops_repeat_exactly_with_the_same_seed() -> None:
    assert run(("drop=0.5",), seed=7) == run(("drop=0.5",), seed=7)


def test_a_different_seed_drops_different_frames() -> None:
    assert run(("drop=0.5",), seed=7) != run(("drop=0.5",), seed=8)


def test_delay_sends_the_value_of_that_many_periods_earlier_at_the_same_rate() -> None:
    frames = run(("delay=0.3@1-2",))
    assert [frames[t] for t in WINDOW] == [CLEAN[t - 3] for t in WINDOW]
    assert frames[20:] == CLEAN[20:]


def test_delay_from_the_start_sends_nothing_until_a_value_that_old_exists() -> None:
    frames = run(("delay=0.2",))
    assert frames[:2] == [[], []] and frames[2:] == CLEAN[:-2]


def test_freeze_repeats_the_value_of_the_windows_first_tick() -> None:
    frames = run(("freeze@1-2",))
    assert [frames[t] for t in WINDOW] == [CLEAN[10]] * 10
    assert frames[20] == CLEAN[20]


def test_error_sends_the_j1939_error_indicator() -> None:
    frames = run(("error@1-2",))
    assert [frames[t] for t in WINDOW] == [["error_indicator"]] * 10 and frames[9] == CLEAN[9]


def test_not_available_sends_the_j1939_not_available_value() -> None:
    frames = run(("na@1-2",))
    assert [frames[t] for t in WINDOW] == [["not_available"]] * 10 and frames[20] == CLEAN[20]


def test_offset_adds_to_the_value_in_the_signals_unit() -> None:
    frames = run(("offset=-5@1-2",))
    assert [frames[t][0] for t in WINDOW] == [float(CLEAN[t][0]) - 5.0 for t in WINDOW]


def test_scale_multiplies_the_value_to_the_signals_resolution() -> None:
    frames = run(("scale=0.5@1-2",))
    assert all(abs(float(frames[t][0]) - float(CLEAN[t][0]) / 2) <= 1 / 512 for t in WINDOW)


def test_silent_sends_nothing_for_the_duration() -> None:
    frames = run(("silent@1+1",))
    assert [t for t, sent in enumerate(frames) if not sent] == list(WINDOW)


def test_faults_change_what_is_sent_but_never_the_model() -> None:
    faulty, clean = Bench("ecu", faults=("offset=7", "drop=0.5")), Bench("ecu")
    try:
        faulty.tick(50)
        clean.tick(50)
        assert faulty.ecu.state == clean.ecu.state
    finally:
        faulty.close()
        clean.close()


def test_faults_apply_to_the_ccms_app_too() -> None:
    frames = run(("error@1-2",), kind="ccm")
    assert frames[10] == ["error_indicator"] and isinstance(frames[9][0], float)


def test_each_fault_window_is_logged_with_its_start_and_end_tick(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ecu_sim"):
        run(("silent@1-2",))
    assert "fault silent@1-2 starts at tick 10 (1.0 s)" in caplog.text
    assert "fault silent@1-2 ended at tick 20 (2.0 s): 10 frames affected" in caplog.text


def test_a_window_still_open_when_the_run_ends_is_logged_with_that_tick(
        caplog: pytest.LogCaptureFixture) -> None:
    bench = Bench("ecu", faults=("freeze@1",))
    try:
        with caplog.at_level(logging.INFO, logger="ecu_sim"):
            for _ in range(25):
                bench.tick()
            assert bench.built.faults is not None
            bench.built.faults.finish(bench.node.tick_index)
    finally:
        bench.close()
    assert ("fault freeze@1 still active when the run ended at tick 25 (2.5 s): 15 frames affected"
            in caplog.text)


def test_a_fault_after_the_end_of_the_run_is_warned_about(cli_main: Cli, virtual_time: None,
                                                          virtual_channel: str) -> None:
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--duration", "0.3", "--fault", "silent@100")
    assert result.status == 0, result.err
    assert "fault silent@100 starts at 100 s, when the run is already over (--duration 0.3)" in result.err


def test_the_status_line_counts_injected_frames_by_kind() -> None:
    bench = Bench("ecu", faults=("silent@1-2", "offset=1@3-3.5"))
    try:
        bench.tick(40)
        assert bench.built.status_line().endswith("| faults offset 5, silent 10")
    finally:
        bench.close()


def test_a_scenario_file_gives_faults_and_seed_and_the_command_line_seed_wins(tmp_path: Path) -> None:
    scenario = tmp_path / "dropouts.txt"
    scenario.write_text("# a flaky link, then a stuck sensor\nseed = 11\ndrop=0.2\nfreeze@30+5  # stuck\n")
    from_file = FaultSchedule.load((), str(scenario), None)
    overridden = FaultSchedule.load(("na@1",), str(scenario), 3)
    assert from_file == FaultSchedule((parse_fault("drop=0.2"), parse_fault("freeze@30-35")), 11)
    assert overridden.seed == 3 and overridden.faults[-1] == parse_fault("na@1")


def test_a_schedule_without_a_scenario_or_a_seed_has_seed_0() -> None:
    assert FaultSchedule.load(["drop=0.5", "silent@60+5"], None, None) == FaultSchedule(
        (parse_fault("drop=0.5"), parse_fault("silent@60-65")), 0)


@pytest.mark.parametrize(("text", "fault"), [
    ("drop", Fault("drop")), ("DROP=0.25", Fault("drop", 0.25)),
    ("na@120+2", Fault("not_available", None, 120, 122)),
    ("offset=+3.5@150-170", Fault("offset", 3.5, 150, 170)), ("delay=.3@2", Fault("delay", 0.3, 2, None)),
])
def test_a_fault_spec_parses_into_kind_value_and_window(text: str, fault: Fault) -> None:
    assert parse_fault(text) == fault


@pytest.mark.parametrize(("text", "says"), [
    ("wobble", "unknown fault 'wobble'"), ("drop=1.5", "probability"), ("freeze=2", "takes no value"),
    ("offset", "needs a value"), ("silent@5-4", "ends before it starts"), ("silent@soon", "window"),
])
def test_a_bad_fault_spec_says_what_is_wrong_and_where(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=rf"^scenario file x, line 3: {re.escape(repr(text))}: .*{says}"):
        parse_fault(text, "scenario file x, line 3:")


def test_a_fault_prints_as_the_spec_it_was_parsed_from() -> None:
    assert [str(parse_fault(t)) for t in ("drop=0.5", "silent@60+5", "na@1")] == [
        "drop=0.5", "silent@60-65", "not_available@1"]
    assert describe([]) == "none"


def test_only_faults_starting_at_or_after_the_end_of_the_run_are_after_it() -> None:
    faults = [parse_fault(t) for t in ("silent@0.2", "silent@0.3", "drop")]
    assert after_the_run(faults, 0.3) == [faults[1]] and after_the_run(faults, None) == []


def test_a_scenario_seed_that_is_not_an_integer_names_file_and_line(tmp_path: Path) -> None:
    scenario = tmp_path / "seed.txt"
    scenario.write_text("drop=0.1\nseed = many\n")
    with pytest.raises(ConfigError, match=rf"scenario file {re.escape(str(scenario))}, line 2: the seed"):
        FaultSchedule.load((), str(scenario), None)


def test_a_delay_that_is_not_whole_periods_is_refused_before_the_bus_is_opened() -> None:
    codec = Profile.load("amp").speed
    with pytest.raises(ConfigError, match="whole number of periods"):
        check([parse_fault("delay=0.25")], codec, 0.1)
    check([parse_fault("delay=0.3"), parse_fault("error"), parse_fault("na")], codec, 0.1)


# -- through the command line, in virtual time, on a virtual bus that loses nothing ----------------


def test_a_fault_given_on_the_command_line_withholds_its_windows_frames_from_the_bus(
        cli_main: Cli, virtual_time: None, virtual_channel: str) -> None:
    with can.Bus(interface="virtual", channel=virtual_channel) as ear:
        result = cli_main("-i", "virtual", "-c", virtual_channel, "--fault", "silent@1+1", "--duration", "3")
        heard = list(iter(lambda: ear.recv(0.0), None))
    assert result.status == 0, result.err
    assert "fault silent@1-2 starts at tick 10" in result.err
    assert summary_of(result.err).faults == {"silent": 10}
    assert len(heard) == 30 - 10 == summary_of(result.err).tx


def test_a_scenario_file_given_to_the_ccm_changes_exactly_the_frames_of_its_window_on_the_bus(
        cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.txt"
    scenario.write_text("error@0.5+0.5\n")
    with can.Bus(interface="virtual", channel=virtual_channel) as ear:
        result = cli_main("ccm", "-i", "virtual", "-c", virtual_channel, "--scenario", str(scenario),
                          "--duration", "1.5")
        app_bytes = [msg.data[6] for msg in iter(lambda: ear.recv(0.0), None)]
    assert result.status == 0, result.err
    assert app_bytes == [0x7D] * 5 + [0xFE] * 5 + [0x7D] * 5, "APP 0 %, error indicator, APP 0 %"
