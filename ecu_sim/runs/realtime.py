"""Wiring: settings in, nodes on a bus on a loop out. The CLI commands only call these.

Real-time runs, simulations and replays are built by the same functions here, so they share the
codec, the nodes and the loop; only the clock and the bus differ.
"""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from ecu_sim.bus import port as canbus
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import KernelTransmitter, Transmitter, make_transmitter
from ecu_sim.codec.profile import Profile, RoleCodec
from ecu_sim.faults import injector as faults
from ecu_sim.io.recorder import Recorder, header
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.runtime.clock import MonotonicClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.service.notify import Notifier
from ecu_sim.settings.load import Settings
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger("ecu_sim")

NodeKind = Literal["ecu", "ccm"]


def load_profile(settings: Settings) -> Profile:
    """The settings' message profile: the one ``config.load`` parsed already, else loaded now."""
    loaded = settings.loaded_profile
    if loaded is not None and loaded[0] == settings.profile:
        return loaded[1]
    p = settings.profile
    return Profile.load(p.name, p.dbc, speed_signal=p.speed_signal, app_signal=p.app_signal)


def load_route(settings: Settings) -> GradeSchedule:
    run = settings.run
    if run.grade_file is not None:
        return GradeSchedule.from_csv(run.grade_file)
    if run.grade_pct is not None:
        return GradeSchedule.constant(run.grade_pct)
    return GradeSchedule.testbed()


def _transmitter(port: Port, role: RoleCodec, settings: Settings) -> Transmitter:
    return make_transmitter(port, role.frame_id, role.is_extended_id, settings.run.period_s,
                            settings.run.tx_mode)


def make_ecu(port: Port, profile: Profile, settings: Settings,
             route: GradeSchedule | None = None) -> Ecu:
    run = settings.run
    return Ecu(
        port, profile,
        _transmitter(port, profile.speed, settings),
        settings.truck, route or load_route(settings), run.initial_speed_kph, run.period_s,
        run.input_timeout_s(run.app_timeout_s), settings.profile.app_source,
    )


def make_ccm(port: Port, profile: Profile, settings: Settings) -> Ccm:
    run = settings.run
    return Ccm(
        port, profile,
        _transmitter(port, profile.app, settings),
        settings.controller, run.set_speed_kph, run.period_s,
        run.input_timeout_s(run.speed_timeout_s), settings.profile.speed_source,
    )


def max_ticks(settings: Settings) -> int | None:
    duration = settings.run.duration_s
    return None if duration is None else max(1, round(duration / settings.run.period_s))


@contextmanager
def stop_on_signals(loop: TickLoop) -> Iterator[None]:
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


def run_realtime(kind: NodeKind, args: argparse.Namespace, settings: Settings) -> int:
    """Run one node on a real bus at the configured rate until stopped or the duration is over."""
    profile = load_profile(settings)
    route = load_route(settings) if kind == "ecu" else None
    schedule = faults.FaultSchedule.from_settings(settings.faults)
    faults.check(schedule.faults, output_codec(kind, profile), settings.run.period_s)
    for fault in faults.after_the_run(schedule.faults, settings.run.duration_s):
        log.warning("fault %s starts at %g s, when the run is already over (--duration %g); it will "
                    "not act", fault, fault.start_s, settings.run.duration_s)
    options = canbus.resolve_bus_options(args, settings.bus)
    own = output_codec(kind, profile)
    # From here on the bus is closed however the run ends, also when setting up the node fails.
    port = Port(canbus.open_bus(options), own_ids=[own.frame_id],
                reopen=lambda: canbus.open_bus(options))
    try:
        log.info("%s on %s %s, profile %s (%s)", kind.upper(), options.interface,
                 getattr(options, "channel", ""), profile.name, profile.dbc_path)
        clock = MonotonicClock()
        node: Ecu | Ccm = (make_ecu(port, profile, settings, route) if kind == "ecu"
                           else make_ccm(port, profile, settings))
        attach_faults(node, kind, profile, schedule, settings.run.period_s)
        loop = TickLoop(clock, settings.run.period_s, [node])
        if isinstance(node.transmitter, KernelTransmitter):
            node.transmitter.follow(lambda: loop.deadline)
        notifier = Notifier()
        _report_status(loop, node, notifier, settings.run.status_interval_s)
        recorder = start_recording(kind, node, settings, profile, route, schedule)
        try:
            with stop_on_signals(loop):
                stats = loop.run(max_ticks(settings))
        finally:
            notifier.stopping()
            if node.faults is not None:
                node.faults.finish(node.tick_index)
            if recorder is not None:
                recorder.stop()
        bus_state = port.state_text()
    finally:
        port.close()
    log.info("stopped after %d ticks: %d late, %d skipped, %s | %s", stats.ticks, stats.late,
             stats.skipped, node.counters_text(), bus_state)
    return 0


# -- fault injection and recording (issue 6) ----------------------------------------------------


#: faults that leave a period without a frame
WITHHOLDING_FAULTS = frozenset({"drop", "silent", "delay"})


def output_codec(kind: NodeKind, profile: Profile) -> RoleCodec:
    """The role a node sends: speed for the ECU, APP for the CCM."""
    return profile.speed if kind == "ecu" else profile.app


def attach_faults(node: Ecu | Ccm, kind: NodeKind, profile: Profile, schedule: faults.FaultSchedule,
                  period_s: float) -> None:
    """Put the fault injector between the node and its transmitter; nothing when there are none.

    A fault that withholds frames (drop, silent, delay before its first value) cannot be done by
    skipping an update of the kernel's timer: the kernel would repeat the previous frame. Such a
    node sends from the loop instead, and says so.
    """
    if not schedule.faults:
        return
    withholding = sorted({f.kind for f in schedule.faults} & WITHHOLDING_FAULTS)
    if withholding and isinstance(node.transmitter, KernelTransmitter):
        role = output_codec(kind, profile)
        node.transmitter = Transmitter(node.port, role.frame_id, role.is_extended_id)
        log.info("%s: frames are sent from the loop, not timed by the kernel, because %s "
                 "must withhold frames", kind.upper(), " and ".join(withholding))
    node.faults = faults.FaultInjector(node.transmitter, output_codec(kind, profile), schedule,
                                       period_s, kind.upper())
    log.info("%s: injecting faults %s (seed %d)", kind.upper(), faults.describe(schedule.faults),
             schedule.seed)


def start_recording(kind: NodeKind, node: Ecu | Ccm, settings: Settings, profile: Profile,
                    route: GradeSchedule | None, schedule: faults.FaultSchedule) -> Recorder | None:
    """``--record``: a tap on the node's port and a hook after each tick (ecu_sim.io.recorder)."""
    path = settings.record.file
    if path is None:
        return None
    head = header(kind, settings, profile, None if route is None else route.points, schedule.faults,
                  schedule.seed, path)
    recorder = Recorder(path, settings.record.max_bytes, node, head)
    node.port.taps.append(recorder)
    node.after_tick = recorder.after_tick
    log.info("recording every frame to %s", path)
    return recorder


# -- end of fault injection and recording -------------------------------------------------------


def _report_status(loop: TickLoop, node: Ecu | Ccm, notifier: Notifier, interval_s: float) -> None:
    """A status line every ``interval_s`` in the log, every second as systemd's STATUS=.

    Every tick kicks the watchdog; READY=1 goes out after the first tick, i.e. once the bus is
    open and a frame has been sent, together with the first STATUS= so that a service is never
    active with an empty status (``systemctl status`` right after start). Under systemd the log
    is the journal on an SD card, so a service may log the line less often
    (``status_interval_s``) while ``systemctl status`` stays current every second.
    """
    ready = False

    def status_line() -> str:
        return f"{node.status_line()} | late {loop.stats.late} | {node.port.state_text()}"

    def each_tick(now: float) -> None:
        nonlocal ready
        if not ready:
            ready = True
            notifier.ready(status_line())
        notifier.kick(now)

    loop.every(loop.period_s, each_tick)
    loop.every(interval_s, lambda now: log.info("%s", status_line()))
    if notifier.enabled:
        loop.every(1.0, lambda now: notifier.status(status_line()))
