"""The real-time run's clock, nodes and observers as the levers and the tick probe ask for them.

Everything is decided here, before the loop is built: a run without the probe gets the plain
clock, node and bus; a run with ``gc = between-ticks`` gets the observer that collects after the
send. Nothing is swapped in once the loop runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ecu_sim.runtime import tuning
from ecu_sim.runtime.clock import MonotonicClock
from ecu_sim.runtime.probe import ProbedBus, ProbedClock, ProbedNode, TickProbe
from ecu_sim.settings.model import Settings

log = logging.getLogger("ecu_sim")


def clock(settings: Settings, probe: TickProbe | None) -> MonotonicClock:
    """The real clock with the run's spin and timer slack, told to the probe when there is one."""
    run = settings.run
    options: dict[str, Any] = {"spin_s": run.spin_us * 1e-6,
                               "timer_slack_ns": max(1, round(run.timer_slack_us * 1000))}
    period = run.resolved_period_s
    return MonotonicClock(period, **options) if probe is None else ProbedClock(period, probe, **options)


def node(node: Any, clock: MonotonicClock, settings: Settings, probe: TickProbe | None) -> Any:
    """The node, draining only before the deadline if asked, labelled by the probe if there is one."""
    if not settings.run.drain_at_deadline:
        node = tuning.DrainBeforeDeadline(node, clock)
    return node if probe is None else ProbedNode(node, probe)


def bus_opener(open_bus: Callable[[], Any], probe: TickProbe | None) -> Callable[[], Any]:
    """``open_bus``, its buses' receive and send labelled by the probe when there is one."""
    if probe is None:
        return open_bus
    return lambda: _probed_bus(open_bus(), probe)


def _probed_bus(bus: Any, probe: TickProbe) -> Any:
    return None if bus is None else ProbedBus(bus, probe)


def collector(settings: Settings) -> tuning.BetweenTicks | None:
    """The observer that collects garbage after the send, with ``gc = between-ticks``."""
    return tuning.BetweenTicks() if settings.run.gc == "between-ticks" else None


@contextmanager
def levers(settings: Settings, between: tuning.BetweenTicks | None) -> Iterator[None]:
    """Apply the process-wide levers once the start-up is done; undo them on exit, since a
    campaign's worker runs one case after another in the same process."""
    with tuning.restored_scheduling(settings.run.lock_memory), _levers(settings, between):
        yield


@contextmanager
def _levers(settings: Settings, between: tuning.BetweenTicks | None) -> Iterator[None]:
    run = settings.run
    where = settings.origins
    if run.cpu_affinity is not None:
        cores = tuning.parse_cpus(run.cpu_affinity)
        problem = tuning.apply_affinity(cores, where.get("run.cpu_affinity", "[run] cpu_affinity"))
        _warn(problem)
        if problem is None:
            log.info("running on cores %s", ",".join(map(str, sorted(cores))))
    if run.realtime_priority:
        _warn(tuning.apply_priority(run.realtime_priority))
    if run.lock_memory:
        _warn(tuning.apply_memory_lock())
    if between is not None:
        between.start()
    try:
        yield
    finally:
        if between is not None:
            between.stop()


def _warn(problem: str | None) -> None:
    if problem is not None:
        log.warning("%s", problem)
