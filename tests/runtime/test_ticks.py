"""Seconds to ticks: one rule, the whole periods in a span, for every part of ecu-sim."""

from __future__ import annotations

import pytest

from ecu_sim.runtime.ticks import WindowError, is_whole, parse_window, ticks_in


def test_a_span_holds_the_whole_periods_that_fit_into_it() -> None:
    assert ticks_in(10.0, 0.1) == 100


def test_a_span_that_float_division_puts_a_hair_short_still_counts_its_last_period() -> None:
    assert 0.3 / 0.1 < 3
    assert ticks_in(0.3, 0.1) == 3


def test_a_part_of_a_period_does_not_count() -> None:
    assert ticks_in(0.25, 0.1) == 2


def test_no_time_is_no_tick() -> None:
    assert ticks_in(0.0, 0.1) == 0


@pytest.mark.parametrize(("seconds", "whole"), [(0.3, True), (0.25, False), (2.0, True)])
def test_whole_periods_are_recognised_in_spite_of_float_division(seconds: float, whole: bool) -> None:
    assert is_whole(seconds, 0.1) is whole


@pytest.mark.parametrize(("text", "window"), [
    (None, (0.0, None)), ("30", (30.0, None)), ("30-40", (30.0, 40.0)), ("30+10", (30.0, 40.0)),
    (".5+1.5", (0.5, 2.0))])
def test_a_window_is_from_a_time_to_a_time_or_for_a_duration(text: str | None,
                                                              window: tuple[float, float | None]) -> None:
    assert parse_window(text) == window


@pytest.mark.parametrize(("text", "malformed"), [("soon", True), ("-5", True), ("30-", True),
                                                  ("40-30", False), ("30+0", False)])
def test_a_window_that_is_malformed_or_ends_before_it_starts_is_refused(text: str, malformed: bool) -> None:
    with pytest.raises(WindowError) as refused:
        parse_window(text)
    assert refused.value.malformed is malformed
