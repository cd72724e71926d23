"""A node on a real bus at its configured rate, until stopped or until the duration is over.

Everything the run opens (the bus, the recording, the systemd notifier, the signal handlers) is
entered into one ExitStack, so it is closed in the reverse order however the run ends: SIGINT or
SIGTERM, a bus that fails for good, or a mistake found while wiring.
"""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from ecu_sim.bus import options as bus_options
from ecu_sim.bus.hostlocal import describe
from ecu_sim.bus.port import Port
from ecu_sim.codec.profile import Profile
from ecu_sim.faults import injector
from ecu_sim.faults.spec import FaultSchedule, after_the_run
from ecu_sim.io.recorder import Recorder, header
from ecu_sim.nodes.factory import Built, NodeKind, build_node
from ecu_sim.runs.prepare import load_route, prepare
from ecu_sim.runs.status import StatusReporter
from ecu_sim.runtime.clock import MonotonicClock
from ecu_sim.runtime.loop import LoopStats, TickLoop
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.service.notify import Notifier
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger("ecu_sim")


def run_realtime(kind: NodeKind, args: argparse.Namespace, settings: Settings) -> int:
    """Check everything that can be checked, open the bus, run the node; 0 when it stopped in order."""
    settings, profile = prepare(settings)
    route = load_route(settings) if kind is NodeKind.ECU else None
    schedule = FaultSchedule.load(settings.faults.inject, settings.faults.scenario, settings.faults.seed)
    injector.check(schedule.faults, kind.sends(profile), settings.run.resolved_period_s)
    for fault in after_the_run(schedule.faults, settings.run.duration_s):
        log.warning("fault %s starts at %g s, when the run is already over (--duration %g); it will "
                    "not act", fault, fault.start_s, settings.run.duration_s)
    options = bus_options.resolve_bus_options(args, settings.bus)
    with ExitStack() as stack:
        port = stack.enter_context(Port(bus_options.open_bus(options), own_ids=[kind.sends(profile).frame_id],
                                        reopen=lambda: bus_options.open_bus(options)))
        log.info("%s on %s, profile %s (%s)", kind.name,
                 describe(options.interface, getattr(options, "channel", None),
                          getattr(options, "bus_kwargs", {})),
                 profile.name, profile.dbc_path)
        recorder = _recorder(stack, kind, settings, profile, route, schedule)
        built = build_node(kind, port, profile, settings, route=route, schedule=schedule,
                           tx_mode=settings.run.tx_mode)
        if recorder is not None:
            port.add_listener(recorder)
        notifier = stack.enter_context(Notifier())
        stats = LoopStats()
        loop = _loop(built, port, notifier, settings, stats, recorder)
        if built.faults is not None:
            faults = built.faults
            stack.callback(lambda: faults.finish(built.node.tick_index))
        stack.enter_context(_stop_on_signals(loop))
        loop.run(_max_ticks(settings))
        bus_state = port.state_text()
    log.info("stopped after %d ticks: %d late, %d skipped, %s | %s", stats.ticks, stats.late,
             stats.skipped, built.counters_text(), bus_state)
    return 0


def _loop(built: Built, port: Port, notifier: Notifier, settings: Settings, stats: LoopStats,
          recorder: Recorder | None) -> TickLoop:
    period = settings.run.resolved_period_s
    return TickLoop(MonotonicClock(period), period, [built.node], stats=stats, observers=[
        StatusReporter(lambda: f"{built.status_line()} | late {stats.late} | {port.state_text()}",
                       notifier, period, settings.run.status_interval_s),
        *([recorder] if recorder is not None else []),
    ])


def _recorder(stack: ExitStack, kind: NodeKind, settings: Settings, profile: Profile,
              route: GradeSchedule | None, schedule: FaultSchedule) -> Recorder | None:
    """``--record``: a listener on the node's port and an observer of its loop (ecu_sim.io)."""
    path = settings.record.file
    if path is None:
        return None
    head = header(kind.value, settings, profile, None if route is None else route.points, schedule, path)
    recorder = stack.enter_context(Recorder(path, settings.record.max_bytes, head))
    log.info("recording every frame to %s", path)
    return recorder


def _max_ticks(settings: Settings) -> int | None:
    duration = settings.run.duration_s
    return None if duration is None else max(1, ticks_in(duration, settings.run.resolved_period_s))


@contextmanager
def _stop_on_signals(loop: TickLoop) -> Iterator[None]:
    """SIGINT and SIGTERM end the run after the current tick, so output is flushed and exit is 0."""
    def handler(signum: int, frame: object) -> None:
        log.info("%s received, stopping", signal.Signals(signum).name)
        loop.stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
