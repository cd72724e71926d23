"""Seconds to ticks: one rule, the whole periods in a span, for every part of ecu-sim."""

from __future__ import annotations

import pytest

from ecu_sim.runtime.ticks import is_whole, ticks_in


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
