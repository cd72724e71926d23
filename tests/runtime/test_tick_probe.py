"""The tick probe (ecu_sim.runtime.probe) blames a late tick on the step that made it late.

Time is injected: each fake step advances a fake clock by a chosen amount, so the attribution is
tested without reading a real clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecu_sim.runtime import probe as p


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeBus:
    def __init__(self, time: FakeTime, send_s: float) -> None:
        self.time, self.send_s = time, send_s
        self.channel_info = "fake"

    def send(self, msg: Any, timeout: float | None = None) -> None:
        self.time.t += self.send_s

    def recv(self, timeout: float | None = None) -> Any:
        return None


class FakeNode:
    """Steps for ``step_s``, with a collection of ``gc_s`` in the middle, then sends."""

    def __init__(self, time: FakeTime, bus: Any, probe: p.TickProbe, step_s: float,
                 gc_s: float = 0.0) -> None:
        self.time, self.bus, self.probe, self.step_s, self.gc_s = time, bus, probe, step_s, gc_s
        self.tick_index = 7

    def poll(self, timeout_s: float) -> None:
        pass

    def drain(self) -> None:
        self.bus.recv(0.0)

    def tick(self, deadline: float, transmit: bool) -> None:
        self.time.t += self.step_s
        if self.gc_s:
            self.probe.on_gc("start", {})
            self.time.t += self.gc_s
            self.probe.on_gc("stop", {})
        self.bus.send(object())


def run_tick(wake_late_s: float = 0.0, step_s: float = 20e-6, send_s: float = 30e-6,
             gc_s: float = 0.0) -> p.TickProbe:
    """One tick through the probe's wrappers, then the next wait (which closes the tick)."""
    time = FakeTime()
    probe = p.TickProbe(now=time, cpu=time)
    bus = p.ProbedBus(FakeBus(time, send_s), probe)
    node = p.ProbedNode(FakeNode(time, bus, probe, step_s, gc_s), probe)
    deadline = 1.0
    time.t = 0.9
    probe.begin(deadline)
    time.t = deadline - 0.001
    probe.switch(p.DRAIN_BEFORE)
    node.drain()
    probe.drained()
    probe.switch(p.SPIN_TO_DEADLINE)
    time.t = deadline + wake_late_s
    probe.woke()
    probe.switch(p.DRAIN_AT)
    node.drain()
    node.tick(deadline, True)
    probe.on_tick(0, time.t, True)
    time.t += 10e-6
    probe.begin(deadline + 0.1)
    return probe


@pytest.mark.parametrize(("kwargs", "cause"), [
    ({"wake_late_s": 2e-3}, "wake-up"),
    ({"step_s": 3e-3}, "step"),
    ({"send_s": 1e-3}, "send"),
    ({"gc_s": 4e-3}, "gc"),
])
def test_a_late_tick_is_blamed_on_the_step_that_made_it_late(kwargs: dict[str, float], cause: str) -> None:
    probe = run_tick(**kwargs)
    (record,) = probe.ticks
    assert record["lateness"] > p.LATE_US * 1e-6
    assert p.TickProbe.cause(record) == cause
    assert probe.summary()["late_by_cause"][cause] == 1


def test_an_on_time_tick_is_not_late_and_lands_in_the_first_bins() -> None:
    summary = run_tick().summary()
    assert summary["late"] == 0
    assert summary["lateness_histogram_us"]["25..50"] == 1


def test_each_step_gets_the_time_spent_in_it() -> None:
    (record,) = run_tick(step_s=3e-3, send_s=1e-3).ticks
    assert record[p.STEP] == pytest.approx(3e-3)
    assert record[p.SEND] == pytest.approx(1e-3)
    assert record[p.OBSERVERS] == pytest.approx(10e-6)
    assert record["lateness"] == pytest.approx(4e-3)


def test_a_collection_is_charged_to_the_step_it_interrupted() -> None:
    probe = run_tick(gc_s=1e-3)
    ((step, pause),) = probe.gc_pauses
    assert step == p.STEP and pause == pytest.approx(1e-3)


def test_the_summary_is_written_as_json(tmp_path: Path) -> None:
    probe = run_tick(step_s=3e-3)
    probe.start()
    probe.write(str(tmp_path / "probe.json"))
    written = json.loads((tmp_path / "probe.json").read_text())
    assert written["ticks"] == 1 and written["late_by_cause"]["step"] == 1


def test_the_probed_bus_and_node_pass_everything_else_through() -> None:
    time = FakeTime()
    probe = p.TickProbe(now=time, cpu=time)
    bus = p.ProbedBus(FakeBus(time, 0.0), probe)
    node = p.ProbedNode(FakeNode(time, bus, probe, 0.0), probe)
    assert bus.channel_info == "fake" and node.tick_index == 7
