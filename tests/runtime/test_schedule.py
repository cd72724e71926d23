"""The one schedule of periodic sends (runtime/schedule.py): each rule of skipped and late ticks once.

Every periodic frame goes through it: the engine's and the powertrain's messages, the ECU's own
frame in the powertrain, the driver's brake and cruise messages and DM1. Their own tests check
the frames on the wire; these check the rule itself, tick by tick.
"""

from __future__ import annotations

import random

import pytest

from ecu_sim.runtime.schedule import Schedule


def sends(schedule: Schedule, asked: list[int]) -> list[int]:
    """The ticks among ``asked`` at which ``schedule`` sends."""
    return [tick for tick in asked if schedule.due(tick)]


def test_with_every_tick_asked_it_sends_exactly_when_tick_modulo_every_is_zero() -> None:
    for every in (1, 2, 5, 10):
        assert sends(Schedule(every), list(range(60))) == [t for t in range(60) if t % every == 0]


def test_a_phase_moves_the_grid() -> None:
    assert sends(Schedule(5, phase=3), list(range(20))) == [3, 8, 13, 18]


def test_a_due_tick_skipped_goes_once_at_the_next_asked_tick_and_keeps_the_grid() -> None:
    asked = [t for t in range(40) if t not in (10, 11, 12)]
    assert sends(Schedule(10), asked) == [0, 13, 20, 30]


def test_several_due_ticks_skipped_go_once_not_as_a_burst() -> None:
    asked = [0, 1, 25, 26, 27, 28, 29, 30, 31]
    assert sends(Schedule(10), asked) == [0, 25, 30]


def test_ticks_skipped_between_due_ticks_change_nothing() -> None:
    asked = [t for t in range(40) if t % 10 not in (3, 4, 5)]
    assert sends(Schedule(10), asked) == [0, 10, 20, 30]


def test_asking_before_the_due_tick_commits_nothing() -> None:
    schedule = Schedule(10)
    assert schedule.due(0)
    assert [schedule.due(t) for t in (3, 3, 9)] == [False, False, False]
    assert schedule.due(10)


def test_next_due_is_the_first_tick_a_send_is_owed_so_a_node_may_sleep_until_it() -> None:
    schedule = Schedule(10)
    assert schedule.next_due == 0
    schedule.due(0)
    assert schedule.next_due == 10
    schedule.due(17)  # late: the grid stays
    assert schedule.next_due == 20
    schedule.restart(23)
    assert schedule.next_due == 23


def test_an_expedited_send_goes_at_once_and_restarts_the_phase() -> None:
    schedule = Schedule(10)
    assert sends(schedule, list(range(7))) == [0]
    schedule.restart(7)
    assert sends(schedule, list(range(7, 40))) == [7, 17, 27, 37]


def test_an_expedited_send_answered_late_starts_the_grid_at_the_send() -> None:
    schedule = Schedule(10)
    assert schedule.due(0)
    schedule.restart(4)
    assert sends(schedule, [t for t in range(1, 40) if not 4 <= t < 9]) == [9, 19, 29, 39]


def test_a_schedule_restarted_at_each_send_counts_every_interval_from_the_last_send() -> None:
    """DM1's use: the next interval counts from the DM1 last sent, however late it went."""
    schedule = Schedule(10)
    schedule.restart(0)
    sent = []
    for tick in [t for t in range(50) if t not in (2, 10, 11, 12)]:
        if schedule.due(tick):
            schedule.restart(tick + schedule.every)
            sent.append(tick)
    assert sent == [0, 13, 23, 33, 43]


def test_it_sends_what_the_engine_messages_sent_before_under_any_skipped_ticks() -> None:
    """The grid rule the engine's messages had: the first asked tick at or after each grid tick
    not yet served, the next grid tick after it."""
    rng = random.Random(31)
    for _ in range(200):
        every = rng.randint(1, 12)
        asked = sorted(rng.sample(range(200), rng.randint(1, 200)))
        expected, following = [], 0
        for tick in asked:
            if tick >= following:
                expected.append(tick)
                following = (tick // every + 1) * every
        assert sends(Schedule(every), asked) == expected


def test_it_sends_dm1_when_its_own_countdown_did_under_any_asks_and_dtc_changes() -> None:
    """DM1's former timing: due at once at the start and on a change, then ``every`` after each send."""
    rng = random.Random(73)
    for _ in range(200):
        every = rng.randint(1, 12)
        schedule = Schedule(every)
        schedule.restart(0)
        former: int | None = None
        for tick in range(200):
            if rng.random() < 0.05:  # a DTC changes state
                schedule.restart(tick)
                former = tick
            if rng.random() < 0.3:
                continue  # not asked: an overdue tick, or the claim does not stand
            expected = former is None or tick >= former
            if expected:
                former = tick + every
            sent = schedule.due(tick)
            if sent:
                schedule.restart(tick + every)
            assert sent == expected
            assert schedule.next_due == former


def test_an_interval_below_one_tick_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Schedule(0)
