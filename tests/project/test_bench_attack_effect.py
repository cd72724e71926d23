"""The real-time attack benchmark's figures (bench/attack_effect.py): the campaign's effect figures
of a run aligned on its attack's first frame."""

from __future__ import annotations

import can
import pytest

from bench import attack_effect
from bench.attack_effect import FROM_S, Figures
from ecu_sim.plot.series import Series


def series(speeds: list[float], start_s: float = 0.0, period_s: float = 0.5) -> Series:
    run = Series("test")
    for k, speed in enumerate(speeds):
        run.add(start_s + k * period_s, {"speed_kph": speed})
    return run


def test_a_run_is_compared_with_the_twin_at_the_same_time_after_the_attacks_start() -> None:
    twin = series([90.0] * 80)
    run = series([90.0] * 20 + [90.5, 92.0, 95.0], start_s=FROM_S - 7.0)
    figures = attack_effect.score("real time", "tsc1", run, twin, FROM_S + 3.0, "")
    assert figures.speed_dev_max_kph == pytest.approx(5.0)
    assert figures.time_to_effect_s == pytest.approx(0.5)


def test_the_deviation_before_the_attack_is_kept_apart_from_the_effect() -> None:
    twin = series([90.0] * 80)
    run = series([91.5] * 20 + [90.0] * 10)
    figures = attack_effect.score("real time", "xbr", run, twin, 10.0, "")
    assert figures.before_dev_max_kph == pytest.approx(1.5)
    assert figures.speed_dev_max_kph == pytest.approx(0.0) and figures.time_to_effect_s is None


def test_only_the_dtcs_first_sent_after_the_attacks_start_are_raised() -> None:
    dm1 = 0x18FECA00
    old = can.Message(timestamp=1.0, arbitration_id=dm1, data=bytes([0x04, 0xFF, 91, 0, 9, 1, 0xFF, 0xFF]))
    spn_898 = [0x82, 0x03, 9, 1]
    new = can.Message(timestamp=3.0, arbitration_id=dm1, data=bytes([0x04, 0xFF, *spn_898, 0xFF, 0xFF]))
    again = can.Message(timestamp=4.0, arbitration_id=dm1, data=old.data)
    assert attack_effect.raised([old, new, again], 2.0) == "898:9"


def test_the_real_time_spread_is_the_median_and_range_and_counts_runs_without_effect() -> None:
    runs = [Figures("real time", "a", dev, hit, "898:9", 0.1) for dev, hit in
            ((6.0, 1.5), (7.0, None), (6.5, 1.6))]
    assert attack_effect.spread(runs) == ("6.50 (6.00 .. 7.00) | 1.55 (1.50 .. 1.60), 1 never | 898:9 | "
                                          "0.10 (0.10 .. 0.10)")


def test_the_acc_examples_minimum_gap_is_read_from_what_it_prints_when_it_stops() -> None:
    said = "lost the truck's speed for 1.2 s: released\nminimum gap 12.3 m at 15.9 s (limit 10 m)\n"
    assert attack_effect.minimum_gap(said) == pytest.approx(12.3)


def test_an_acc_example_that_prints_no_gap_ends_the_benchmark_saying_what_it_printed() -> None:
    with pytest.raises(SystemExit, match="no CCVS1"):
        attack_effect.minimum_gap("no CCVS1 (the truck's speed) on the bus within 10 s")
