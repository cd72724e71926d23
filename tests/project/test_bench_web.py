"""The page's cost as bench.web reports it: its budget is a share of one core, taken within each
round (docs/performance.md, "The page: CPU, memory, lateness")."""

from __future__ import annotations

import pytest

from bench.web import CONFIGURATIONS, summary

PLAIN, NO_PAGE = CONFIGURATIONS[0], CONFIGURATIONS[1]


def test_the_pages_extra_is_the_median_over_rounds_of_each_rounds_extra_over_its_tick_period() -> None:
    # extra CPU a tick within each round: 10, 100 and 30 us of a 100 ms tick; the medians of the
    # two configurations differ by 10 us, which is not the figure
    runs = {PLAIN: [250.0, 300.0, 200.0], NO_PAGE: [260.0, 400.0, 230.0]}
    found = summary(runs, 0.1)[NO_PAGE]
    assert found["extra_core_pct_median"] == pytest.approx(0.03)
    assert found["extra_core_pct_range"] == pytest.approx([0.01, 0.1])


def test_the_same_extra_a_tick_is_ten_times_the_share_of_a_core_on_a_tick_ten_times_shorter() -> None:
    runs = {PLAIN: [300.0], NO_PAGE: [330.0]}
    assert summary(runs, 0.01)[NO_PAGE]["extra_core_pct_median"] == pytest.approx(
        10 * summary(runs, 0.1)[NO_PAGE]["extra_core_pct_median"])
