"""The fixed-rate schedule: absolute deadlines, sample and hold, late-tick accounting."""

from __future__ import annotations

import pytest

from ecu_sim.runtime.clock import Inputs, MonotonicClock, VirtualClock, WakeLead
from ecu_sim.runtime.held import HeldInput
from ecu_sim.runtime.loop import TickLoop


class RecordingNode:
    def __init__(self) -> None:
        self.ticks: list[tuple[float, bool]] = []
        self.drains = 0
        #: the number of ticks run when the node was asked to prepare the next one
        self.prepared: list[int] = []

    def poll(self, timeout_s: float) -> None:
        pass

    def drain(self) -> None:
        self.drains += 1

    def prepare(self) -> None:
        self.prepared.append(len(self.ticks))

    def tick(self, now: float, transmit: bool) -> None:
        self.ticks.append((now, transmit))


class StallingClock(VirtualClock):
    """A virtual clock that loses ``stall_s`` once, at the given wait, like a preempted process."""

    def __init__(self, stall_at_wait: int, stall_s: float) -> None:
        super().__init__()
        self.waits = 0
        self.stall_at_wait = stall_at_wait
        self.stall_s = stall_s

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        super().wait_until(deadline, inputs)
        self.waits += 1
        if self.waits == self.stall_at_wait:
            self._now += self.stall_s


def test_ticks_fall_on_absolute_deadlines_of_the_period() -> None:
    node = RecordingNode()
    TickLoop(VirtualClock(100.0), 0.1, [node]).run(max_ticks=5)
    assert [round(t, 9) for t, _ in node.ticks] == [100.0, 100.1, 100.2, 100.3, 100.4]


def test_every_tick_drains_input_before_it_ticks() -> None:
    node = RecordingNode()
    TickLoop(VirtualClock(), 0.1, [node]).run(max_ticks=3)
    assert node.drains == 3


def test_a_late_tick_is_counted_and_overdue_slots_are_not_sent_as_a_burst() -> None:
    node = RecordingNode()
    loop = TickLoop(StallingClock(stall_at_wait=3, stall_s=0.25), 0.1, [node])
    stats = loop.run(max_ticks=10)
    transmitted = [t for t, sent in node.ticks if sent]
    assert stats.late == 1
    assert stats.skipped == 2
    assert len(node.ticks) == 10
    assert len(transmitted) == 8
    assert stats.max_lateness_s == pytest.approx(0.25)


def test_after_a_stall_the_schedule_returns_to_the_original_grid() -> None:
    node = RecordingNode()
    TickLoop(StallingClock(stall_at_wait=3, stall_s=0.25), 0.1, [node]).run(max_ticks=10)
    last_deadlines = [round(t, 9) for t, _ in node.ticks[-3:]]
    assert last_deadlines == [0.7, 0.8, 0.9]


def test_a_tick_within_a_tenth_of_a_period_is_not_late() -> None:
    node = RecordingNode()
    stats = TickLoop(StallingClock(stall_at_wait=2, stall_s=0.009), 0.1, [node]).run(max_ticks=4)
    assert stats.late == 0


class Observer:
    """Keeps what it hears of each tick, and can stop the loop at a given tick."""

    def __init__(self, loop: TickLoop | None = None, stop_at: int = -1) -> None:
        self.heard: list[tuple[int, float, bool]] = []
        self.loop = loop
        self.stop_at = stop_at

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self.heard.append((tick, round(now, 9), transmitted))
        if tick == self.stop_at and self.loop is not None:
            self.loop.stop()


def test_observers_hear_every_tick_with_its_index_and_time() -> None:
    observer = Observer()
    TickLoop(VirtualClock(), 0.1, [RecordingNode()], observers=[observer]).run(max_ticks=3)
    assert observer.heard == [(0, 0.0, True), (1, 0.1, True), (2, 0.2, True)]


def test_observers_hear_the_overdue_ticks_as_not_transmitted() -> None:
    observer = Observer()
    clock = StallingClock(stall_at_wait=3, stall_s=0.25)
    loop = TickLoop(clock, 0.1, [RecordingNode()], observers=[observer])
    loop.run(max_ticks=6)
    assert [(tick, sent) for tick, _, sent in observer.heard] == [
        (0, True), (1, True), (2, False), (3, False), (4, True), (5, True)]


def test_observers_hear_a_tick_after_every_node_ran_it() -> None:
    node = RecordingNode()

    class Checker:
        def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
            assert len(node.ticks) == tick + 1

    TickLoop(VirtualClock(), 0.1, [node], observers=[Checker()]).run(max_ticks=3)


def test_a_second_run_continues_on_the_same_grid() -> None:
    node = RecordingNode()
    loop = TickLoop(VirtualClock(), 0.1, [node])
    loop.run(max_ticks=2)
    loop.run(max_ticks=2)
    assert [round(t, 9) for t, _ in node.ticks] == [0.0, 0.1, 0.2, 0.3]


def test_stop_ends_the_loop_after_the_current_tick() -> None:
    observer = Observer(stop_at=4)
    loop = TickLoop(VirtualClock(), 0.1, [RecordingNode()], observers=[observer])
    observer.loop = loop
    assert loop.run().ticks == 5


def test_held_input_is_missing_before_anything_arrives() -> None:
    assert HeldInput(3).get(0) is None


def test_held_input_is_used_by_hold_ticks_ticks_from_the_tick_it_arrived_before() -> None:
    held = HeldInput(3)
    held.update(40.0, tick=10, source=0x26)
    assert [held.get(k) for k in (10, 11, 12)] == [40.0, 40.0, 40.0]
    assert (held.received_at, held.source) == (10, 0x26)


def test_held_input_is_missing_from_hold_ticks_ticks_after_it_arrived() -> None:
    held = HeldInput(3)
    held.update(40.0, tick=10)
    assert held.get(13) is None


def test_held_input_of_one_tick_is_used_by_that_tick_only() -> None:
    held = HeldInput(1)
    held.update(40.0, tick=10)
    assert (held.get(10), held.get(11)) == (40.0, None)


def test_held_input_needs_at_least_one_tick() -> None:
    with pytest.raises(ValueError, match="at least one tick"):
        HeldInput(0)


class ScriptedRealClock(MonotonicClock):
    """A MonotonicClock whose time is scripted, recording how it was asked to wait."""

    def __init__(self, spin_s: float = 0.0) -> None:
        super().__init__(0.1, spin_s=spin_s)
        self.t = 0.0
        #: how each period was waited for until the drain: "sleep", or "receive" frame by frame
        self.waits: list[str] = []
        self.spun_to: list[float] = []
        #: frames the next receive_until hands over one by one
        self.arriving = 0

    def now(self) -> float:
        return self.t

    def sleep_until(self, deadline: float) -> None:
        self.waits.append("sleep")
        self.t = max(self.t, deadline)

    def spin_until(self, deadline: float) -> None:
        self.spun_to.append(round(deadline, 9))
        self.t = max(self.t, deadline)

    def receive_until(self, deadline: float, inputs: Inputs) -> int:
        self.waits.append("receive")
        self.t = max(self.t, deadline)
        return self.arriving


class CostlyNode(RecordingNode):
    """Taking a period's frames costs the time the script says, tick by tick; the drain right at
    the deadline, which finds the queue empty, costs nothing."""

    def __init__(self, clock: ScriptedRealClock, costs_s: list[float]) -> None:
        super().__init__()
        self.clock = clock
        self.costs_s = costs_s
        self.drained_at: list[float] = []

    def drain(self) -> None:
        super().drain()
        self.drained_at.append(round(self.clock.t, 9))
        if self.drains % 2:
            self.clock.t += self.costs_s[len(self.ticks)]


def test_a_quiet_bus_is_slept_through_and_a_busy_one_received_frame_by_frame() -> None:
    clock = ScriptedRealClock()
    # receiving takes 0.1 ms, then 5 ms a period (busy: over 1 % of 100 ms), then 0.1 ms again
    node = CostlyNode(clock, [0.0001, 0.005, 0.005, 0.0001, 0.0001])
    TickLoop(clock, 0.1, [node]).run(max_ticks=5)
    assert clock.waits == ["sleep", "sleep", "receive", "receive", "sleep"]


def test_a_bus_stays_busy_while_frames_keep_arriving_one_by_one() -> None:
    """Received as they come, the period's frames leave the drain short: the count keeps it busy."""
    clock = ScriptedRealClock()
    clock.arriving = 100
    node = CostlyNode(clock, [0.005, 0.0, 0.0, 0.0])
    TickLoop(clock, 0.1, [node]).run(max_ticks=4)
    assert clock.waits == ["sleep", "receive", "receive", "receive"]


def test_a_real_clock_drains_before_the_deadline_and_the_loop_again_at_it() -> None:
    """What arrived in the last moments before the deadline is not left for the next tick."""
    node = RecordingNode()
    TickLoop(ScriptedRealClock(spin_s=0.001), 0.1, [node]).run(max_ticks=5)
    assert node.drains == 10


def test_a_real_clock_wakes_once_a_period() -> None:
    clock = ScriptedRealClock(spin_s=0.001)
    node = CostlyNode(clock, [0.0002] * 20)
    TickLoop(clock, 0.1, [node]).run(max_ticks=20)
    assert clock.waits == ["sleep"] * 20


def test_once_the_lead_is_learned_frames_are_taken_before_the_deadline_and_the_tick_runs_at_it() -> None:
    """Decoding what arrived never stands between the deadline and the send."""
    clock = ScriptedRealClock(spin_s=0.001)
    node = CostlyNode(clock, [0.0002] * 40)
    TickLoop(clock, 0.1, [node]).run(max_ticks=40)
    before = node.drained_at[-2::-2][:5]
    at = node.drained_at[-1::-2][:5]
    deadlines = [round(t, 9) for t, _ in node.ticks[-5:]][::-1]
    assert all(taken < deadline for taken, deadline in zip(before, deadlines, strict=True)), "taken before it"
    assert at == deadlines, "what came in the last moments taken at it"
    assert clock.spun_to[-5:] == deadlines[::-1], "the rest of the lead awake"


def test_without_a_spin_the_clock_wakes_at_the_deadline() -> None:
    clock = ScriptedRealClock(spin_s=0.0)
    node = CostlyNode(clock, [0.0002] * 10)
    TickLoop(clock, 0.1, [node]).run(max_ticks=10)
    assert node.drained_at[::2] == [round(0.1 * k, 9) for k in range(10)]
    assert clock.spun_to == []


def test_the_lead_grows_while_it_is_too_short_and_stops_at_its_cap() -> None:
    lead = WakeLead(cap_s=0.0002, quantile=0.9, step_s=50e-6)
    for _ in range(10):
        lead.learn(0.001)
    assert lead.lead_s == pytest.approx(0.0002)


def test_the_lead_settles_where_the_quantile_of_what_it_takes_lies() -> None:
    lead = WakeLead(cap_s=0.01, quantile=0.9, step_s=10e-6)
    needed = [0.0001 * (k % 10 + 1) for k in range(5000)]  # 0.1 .. 1.0 ms, evenly
    for value in needed:
        lead.learn(value)
    assert 0.0008 <= lead.lead_s <= 0.00101


def test_a_single_stall_only_nudges_the_lead() -> None:
    lead = WakeLead(cap_s=0.01, quantile=0.9, step_s=50e-6)
    lead.learn(0.005)
    assert lead.lead_s == pytest.approx(45e-6)


def test_a_real_clock_lets_the_node_prepare_each_tick_after_taking_its_frames() -> None:
    node = RecordingNode()
    TickLoop(ScriptedRealClock(spin_s=0.001), 0.1, [node]).run(max_ticks=3)
    assert node.prepared == [0, 1, 2]


def test_a_virtual_clock_never_asks_a_node_to_prepare() -> None:
    """In virtual time nothing stands between a deadline and a send: nothing is done ahead."""
    node = RecordingNode()
    TickLoop(VirtualClock(), 0.1, [node]).run(max_ticks=3)
    assert node.prepared == []
