"""The real-time levers (ecu_sim.runtime.tuning): parsing, checks, and what a refusal says."""

from __future__ import annotations

import errno
import os
import time

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.runtime import tuning
from ecu_sim.runtime.clock import MonotonicClock
from ecu_sim.settings.load import build
from ecu_sim.settings.sources import Given


@pytest.mark.parametrize(("text", "cores"), [("1", {1}), ("0,1", {0, 1}), ("0-2", {0, 1, 2}),
                                             (" 3 , 0-1 ", {0, 1, 3})])
def test_cores_are_read_as_lists_and_ranges(text: str, cores: set[int]) -> None:
    assert tuning.parse_cpus(text) == cores


@pytest.mark.parametrize("text", ["", "a", "2-1", "-1", "1-x"])
def test_a_bad_core_list_says_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match="core"):
        tuning.parse_cpus(text)


@pytest.mark.parametrize(("key", "raw", "words"), [
    ("cpu_affinity", "x", "cpu_affinity"),
    ("realtime_priority", "100", "realtime_priority must be 0"),
    ("gc", "never", "gc must be"),
    ("spin_us", "20000", "spin_us must be"),
    ("timer_slack_us", "0", "timer_slack_us must be > 0"),
])
def test_a_bad_lever_is_a_config_error_naming_where_it_was_set(key: str, raw: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        build([Given("run", key, raw, f"--{key}")])
    assert f"--{key}" in str(caught.value)
    assert caught.value.exit_status == 2


def test_good_levers_load() -> None:
    settings = build([Given("run", "cpu_affinity", "0", "x"), Given("run", "realtime_priority", "10", "x"),
                      Given("run", "gc", "between-ticks", "x"), Given("run", "lock_memory", "yes", "x"),
                      Given("run", "spin_us", "200", "x")])
    assert settings.run.realtime_priority == 10 and settings.run.lock_memory is True


def test_without_cap_sys_nice_fifo_is_a_warning_that_says_what_gives_it() -> None:
    def refuse(pid: int, policy: int, param: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    warning = tuning.apply_priority(10, refuse)
    assert warning is not None
    assert "CAP_SYS_NICE" in warning and "CPUSchedulingPolicy=fifo" in warning


def test_fifo_is_asked_for_at_the_given_priority() -> None:
    asked: list[tuple[int, int]] = []

    def accept(pid: int, policy: int, param: object) -> None:
        asked.append((policy, param.sched_priority))  # type: ignore[attr-defined]

    assert tuning.apply_priority(12, accept) is None
    assert asked == [(os.SCHED_FIFO, 12)]


def test_a_memory_lock_refused_is_a_warning_naming_the_limit() -> None:
    warning = tuning.apply_memory_lock(lambda flags: errno.ENOMEM)
    assert warning is not None and "LimitMEMLOCK" in warning
    assert tuning.apply_memory_lock(lambda flags: 0) is None


def test_a_core_the_process_may_not_use_is_a_config_error() -> None:
    def refuse(pid: int, cores: frozenset[int]) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    with pytest.raises(ConfigError, match="cpu_affinity 7"):
        tuning.apply_affinity(frozenset({7}), "--cpu-affinity", refuse)


def test_a_filtered_affinity_call_is_a_warning_naming_the_unit_option() -> None:
    def refuse(pid: int, cores: frozenset[int]) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    warning = tuning.apply_affinity(frozenset({0}), "--cpu-affinity", refuse)
    assert warning is not None and "CPUAffinity=" in warning


def test_the_cores_the_process_already_has_can_be_set_again() -> None:
    cores = frozenset(os.sched_getaffinity(0))
    tuning.apply_affinity(cores, "test")
    assert os.sched_getaffinity(0) == cores


@pytest.mark.parametrize(("counts", "generation"), [((699, 0, 0), None), ((700, 0, 0), 0),
                                                    ((700, 10, 0), 1), ((700, 10, 10), 2)])
def test_collection_between_ticks_collects_what_python_would_have(
        counts: tuple[int, int, int], generation: int | None) -> None:
    collected: list[int] = []

    def collect(gen: int) -> int:
        collected.append(gen)
        return 0

    between = tuning.BetweenTicks(lambda: counts, collect, (700, 10, 10))
    between.on_tick(0, 0.0, True)
    assert collected == ([] if generation is None else [generation])


def test_a_spinning_clock_returns_at_its_deadline_not_before() -> None:
    clock = MonotonicClock(0.1, spin_s=0.0005)
    deadline = time.monotonic() + 0.002
    clock.spin_until(deadline)
    assert time.monotonic() >= deadline


class CountingNode:
    def __init__(self) -> None:
        self.drains = 0

    def poll(self, timeout_s: float) -> None:
        pass

    def drain(self) -> None:
        self.drains += 1

    def prepare(self) -> None:
        pass

    def tick(self, deadline: float, transmit: bool) -> None:
        pass


class InstantClock(MonotonicClock):
    """Waits for nothing: only whether the drain happens inside the wait matters here."""

    def sleep_until(self, deadline: float) -> None:
        pass


def test_without_the_drain_at_the_deadline_frames_are_taken_only_while_the_clock_waits() -> None:
    from ecu_sim.runtime.loop import TickLoop

    node = CountingNode()
    clock = InstantClock(0.1)
    TickLoop(clock, 0.1, [tuning.DrainBeforeDeadline(node, clock)]).run(3)
    assert node.drains == 3  # the clock's drain before each deadline, none after it
    plain = CountingNode()
    TickLoop(InstantClock(0.1), 0.1, [plain]).run(3)
    assert plain.drains == 6
