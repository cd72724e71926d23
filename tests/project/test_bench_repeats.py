"""The benchmark's repetitions (bench/repeats.py): ratios, bootstrap intervals, verdicts, noise."""

from __future__ import annotations

import math

import pytest

from bench import levers, probe, repeats
from ecu_sim.runtime.probe import LABELS


def test_a_ratio_of_constant_errors_has_no_spread() -> None:
    interval = repeats.ratio_interval([1.0] * 50, [2.0] * 80, repeats.p99)
    assert (interval.value, interval.lo, interval.hi) == (0.5, 0.5, 0.5)


def test_the_bootstrap_interval_is_reproducible_and_holds_the_measured_ratio() -> None:
    ours = [0.01 * (k % 17) for k in range(300)]
    theirs = [0.02 * (k % 13) for k in range(300)]
    first = repeats.ratio_interval(ours, theirs, repeats.p99)
    again = repeats.ratio_interval(ours, theirs, repeats.p99)
    assert first == again
    assert first.lo <= first.value <= first.hi


def test_fewer_frames_give_a_wider_interval() -> None:
    def width(n: int) -> float:
        ours = [((k * 7919) % 101) / 100 for k in range(n)]
        theirs = [((k * 104729) % 89) / 50 for k in range(n)]
        iv = repeats.ratio_interval(ours, theirs, repeats.p99)
        return iv.hi - iv.lo

    assert width(60) > width(3000)


def test_a_ratio_without_a_baseline_is_not_a_number() -> None:
    assert math.isnan(repeats.ratio_interval([1.0], [], repeats.worst).value)
    assert math.isnan(repeats.ratio_interval([1.0], [0.0], repeats.worst).value)


def _rep(index: int, ratio: float, background: float) -> repeats.Repetition:
    return repeats.Repetition(index, background, {name: repeats.Interval(ratio, ratio, ratio)
                                                  for name in repeats.STATISTICS})


def test_the_verdict_reads_the_median_and_the_worst_of_the_counted_repetitions() -> None:
    verdict = repeats.verdict([_rep(0, 0.5, 0.1), _rep(1, 0.8, 0.2), _rep(2, 0.6, 0.0)])
    assert verdict.counted == 3 and verdict.excluded == 0
    assert verdict.median["p99"] == pytest.approx(0.6)
    assert verdict.worst["p99"] == pytest.approx(0.8)
    assert verdict.p99_better_in_every is True


def test_one_repetition_worse_than_send_periodic_fails_the_verdict() -> None:
    assert repeats.verdict([_rep(0, 0.5, 0.1), _rep(1, 1.2, 0.1)]).p99_better_in_every is False


def test_a_noisy_repetition_is_shown_but_not_counted() -> None:
    noisy = _rep(1, 3.0, repeats.NOISY_BACKGROUND_CORES + 0.1)
    unknown = _rep(2, 3.0, math.nan)
    assert noisy.noisy and unknown.noisy
    verdict = repeats.verdict([_rep(0, 0.5, 0.1), noisy, unknown])
    assert verdict.counted == 1 and verdict.excluded == 2
    assert verdict.worst["p99"] == 0.5 and verdict.p99_better_in_every is True


def test_with_every_repetition_noisy_there_is_no_verdict_rather_than_a_pass() -> None:
    verdict = repeats.verdict([_rep(0, 0.5, 0.9)])
    assert verdict.p99_better_in_every is None and math.isnan(verdict.median["p99"])


def test_the_start_order_alternates_between_repetitions() -> None:
    names = ["ecu-sim", "send_periodic", "testbed"]
    assert repeats.start_order(names, 0) == names
    assert repeats.start_order(names, 1) == names[::-1]
    assert repeats.start_order(names, 2) == names


def test_the_levers_start_in_rotated_order() -> None:
    assert [levers.rotated("abc", rep)[0] for rep in range(4)] == ["a", "b", "c", "a"]


def test_probe_summaries_of_repetitions_add_up_weighted_by_ticks() -> None:
    def summary(ticks: int, step_us: float, late: int) -> dict[str, object]:
        labels = dict.fromkeys(LABELS, 0.0) | {"step": step_us}
        return {"ticks": ticks, "late": late, "late_threshold_us": 200.0,
                "late_by_cause": {"step": late}, "lateness_histogram_us": {"0..25": ticks - late,
                                                                           "> 5000": late},
                "mean_wall_us": labels, "mean_cpu_us": labels, "worst_us": {"lateness": 1.0},
                "gc": {"pauses": 1, "total_us": 5.0, "max_us": 5.0, "by_step": {"step": 1}}}

    combined = probe.combine([summary(100, 10.0, 1), summary(300, 30.0, 2)])
    assert combined["ticks"] == 400 and combined["late"] == 3
    assert combined["mean_cpu_us"]["step"] == pytest.approx(25.0)
    assert combined["late_by_cause"]["step"] == 3
    assert combined["gc"]["by_step"] == {"step": 2}
    assert any("step" in line for line in probe.tables({"quiet": [summary(10, 1.0, 0)]}))
