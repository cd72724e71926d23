"""A node on a real bus at its configured rate, until stopped or until the duration is over.

Everything the run opens (the bus, the recording, the systemd notifier, the signal handlers) is
entered into one ExitStack, so it is closed in the reverse order however the run ends: SIGINT or
SIGTERM, a bus that fails for good, or a mistake found while wiring.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, Protocol

import can

from ecu_sim.bus import options as bus_options
from ecu_sim.bus.hostlocal import describe, is_host_local
from ecu_sim.bus.port import Port
from ecu_sim.codec.profile import Profile
from ecu_sim.controls import planned
from ecu_sim.cosim.plant import UdpPlant, parse_plant
from ecu_sim.errors import BusUnreachableError, ConfigError
from ecu_sim.faults import injector
from ecu_sim.faults.spec import FaultSchedule, after_the_run
from ecu_sim.io.mcap_format import McapRecorder
from ecu_sim.io.recorder import Recorder
from ecu_sim.io.signals import TickView
from ecu_sim.io.spool import Spool
from ecu_sim.nodes.factory import Built, NodeKind, build_node, hold_ticks
from ecu_sim.pedals.reading import PedalSource
from ecu_sim.runs import recording, tuned, viewers
from ecu_sim.runs.prepare import load_ccm_road, load_vehicle_route, prepare
from ecu_sim.runs.status import StatusReporter
from ecu_sim.runtime.loop import LoopStats, TickLoop, TickObserver
from ecu_sim.runtime.probe import TickProbe
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.service.notify import Notifier
from ecu_sim.settings.model import MCAP_FORMAT, Settings
from ecu_sim.settings.values import bus_value
from ecu_sim.vehicle.road import Road
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger("ecu_sim")


#: opens the driver's pedals once the settings are checked (a device, the terminal)
OpenPedals = Callable[[Settings], AbstractContextManager[PedalSource]]


class Page(Protocol):
    """``--web``: the node's page, handed in by the command (``ecu_sim.web.wiring``), so a run
    knows nothing of HTTP and the web stage builds on this one rather than the other way round."""

    def session_settings(self, settings: Settings, stack: ExitStack) -> Settings:
        """The run's settings with the session recording the page downloads."""

    def serve(self, stack: ExitStack, kind: NodeKind, built: Built, profile: Profile, settings: Settings,
              stats: LoopStats, view: TickView, line: Callable[[], str], bus_state: Callable[[], str],
              recorder: Recorder | Spool | None) -> list[TickObserver]:
        """Start the page's server; the observers that publish the ticks and apply its controls."""


def run_realtime(kind: NodeKind, args: argparse.Namespace, settings: Settings,
                 open_pedals: OpenPedals | None = None, page: Page | None = None) -> int:
    """Check everything that can be checked, open the bus, run the node; 0 when it stopped in order.

    ``page`` serves ``--web``; without it the setting is refused rather than silently ignored."""
    if settings.run.web is not None and page is None:
        raise ConfigError("--web needs the node's page, which this command does not serve")
    page = page if settings.run.web is not None else None
    if kind is not NodeKind.ECU:  # [j1939] network is the ECU's: a CCM or driver is one node
        settings = dataclasses.replace(settings, j1939=dataclasses.replace(settings.j1939, network="single"))
    period_of = {NodeKind.DRIVER: "app", NodeKind.CCM: "commands"}.get(kind, "speed")
    settings, profile = prepare(settings, period_of)
    own_ids = kind.frame_ids(profile, settings)
    route = (load_vehicle_route(settings) if kind is NodeKind.ECU
             else load_ccm_road(settings) if kind is NodeKind.CCM else None)
    schedule = FaultSchedule.load(settings.faults.inject, settings.faults.scenario, settings.faults.seed)
    injector.check(schedule.faults, kind.sends(profile), settings.run.resolved_period_s)
    for fault in after_the_run(schedule.faults, settings.run.duration_s):
        log.warning("fault %s starts at %g s, when the run is already over (--duration %g); it will "
                    "not act", fault, fault.start_s, settings.run.duration_s)
    if settings.diagnostics.script is not None:
        log.warning("[diagnostics] script %s is held by a tester in simulate and cosim only; a real-time "
                    "run does not run it (ecu-sim diag is the tester for a running node)",
                    settings.diagnostics.script)
    options = bus_options.resolve_bus_options(args, settings.bus, bus_value)
    plant_at = None
    if settings.run.plant is not None and kind is NodeKind.ECU:
        plant_at = parse_plant(settings.run.plant, settings.origins.get("run.plant", "given"))
        if settings.vehicle.preset == "class6":
            raise ConfigError("--plant replaces the testbed truck, and --vehicle class6 has its own "
                              "driveline; drop one of the two")
    probe_path = getattr(args, "tick_probe", None)
    probe = None if probe_path is None else TickProbe()
    with ExitStack() as stack:
        if settings.record.file is not None:  # --record: sent frames with the time the bus carried them
            options = hear_own_frames(options)
        asked = settings.record.file
        if page is not None:  # the session recorded from tick 0, to download it
            settings = page.session_settings(settings, stack)
        pedals = None if open_pedals is None else stack.enter_context(open_pedals(settings))
        first = tuned.bus_opener(lambda: _first_bus(options), probe)
        reopen = tuned.bus_opener(lambda: bus_options.open_bus(options), probe)
        port = stack.enter_context(Port(first(), own_ids=own_ids, reopen=reopen))
        log.info("%s on %s, profile %s (%s)", kind.name,
                 describe(options.interface, getattr(options, "channel", None),
                          getattr(options, "bus_kwargs", {})),
                 profile.name, profile.dbc_path)
        mcap = (settings.record.file or "").lower().endswith(MCAP_FORMAT)
        recorder: Recorder | Spool | McapRecorder | None = (
            None if mcap else _recorder(stack, kind, settings, profile, route, schedule,
                                       channel=getattr(options, "channel", None),
                                       temporary=asked is None))
        plant = None if plant_at is None else _plant(stack, plant_at, settings)
        built = build_node(kind, port, profile, settings, route=route if plant is None else plant,
                           schedule=schedule, tx_mode=settings.run.tx_mode, plant=plant,
                           pedals=pedals, switchable_faults=page is not None)
        stats = LoopStats()
        every_tick = mcap or settings.stream.target is not None  # else the page alone samples it
        view = (_view(kind, built, profile, stats, settings, sampled=not every_tick)
                if every_tick or page is not None else None)
        if mcap and view is not None and settings.record.file is not None:
            recorder = viewers.mcap_recorder(stack, settings.record.file,
                                             _head(kind, settings, profile, route, schedule), profile, view)
            log.info("recording every frame and the decoded signals to %s", settings.record.file)
        if recorder is not None:
            port.add_listener(recorder)
        notifier = stack.enter_context(Notifier())
        observers: list[TickObserver] = [] if recorder is None else [recorder]
        if page is None:  # --control, [controls] apply; with a page, its desk applies them too
            desk = planned.desk(settings.ahead(), built, profile.speed,
                                None if recorder is None else recorder.control)
            observers += [] if desk is None else [desk]
        if view is not None:
            observers += viewers.stream(stack, settings.stream.target, lambda: view)
        if page is not None and view is not None:
            observers += page.serve(stack, kind, built, profile, settings, stats, view,
                                    _status_line(built, port, stats, plant), port.state_text,
                                    recorder if isinstance(recorder, Recorder | Spool) else None)
        between = tuned.collector(settings)
        loop = _loop(built, port, notifier, settings, stats,
                     [*observers, *([] if between is None else [between])], plant, probe)
        if built.faults is not None:
            faults = built.faults
            stack.callback(lambda: faults.finish(built.node.tick_index))
        signals = stack.enter_context(_stop_on_signals(loop))
        if probe is not None and probe_path is not None:
            probe.start()
            stack.callback(probe.write, probe_path)
        stack.enter_context(tuned.levers(settings, between))
        loop.run(_max_ticks(settings))
        if signals:
            log.info("%s received, stopping", signals[0])
        _release(built, loop, recorder)
        if isinstance(recorder, Recorder):
            _await_echoes(port, recorder, settings.run.resolved_period_s)
        bus_state = port.state_text() + ("" if plant is None else f" | {plant.status_text()}")
    log.info("stopped after %d ticks: %d late, %d skipped, %s | %s", stats.ticks, stats.late,
             stats.skipped, built.counters_text(), bus_state)
    return 0


def hear_own_frames(options: argparse.Namespace) -> argparse.Namespace:
    """A node recording to ``--record`` hears its frames back from the host-local bus, so the log
    holds them with the time they were on the bus; other nodes leave them in the kernel. The
    page's own recording (``--web`` without ``--record``) does not: every frame heard back is a
    datagram more to receive and a wake-up more a tick, the largest part of what ``--web`` cost
    with no page open, and its download replays from the frames, not from their times, so its
    sent frames carry the time they were handed over (docs/web.md)."""
    kwargs = getattr(options, "bus_kwargs", {}) or {}
    if not is_host_local(getattr(options, "interface", None), kwargs):
        return options
    return argparse.Namespace(**{**vars(options), "bus_kwargs": {"receive_own_messages": True, **kwargs}})


def _await_echoes(port: Port, recorder: Recorder, period_s: float) -> None:
    """Up to a period for the bus to hand back the last tick's frame (a kernel timer sends it a
    quarter period after the tick), so the recording holds it with the time it was on the bus."""
    until = time.monotonic() + period_s
    while recorder.awaits_echo() and (left := until - time.monotonic()) > 0:
        port.recv(left)


def _first_bus(options: argparse.Namespace) -> can.BusABC | None:
    """The bus, or None for a network bus not reachable yet, which the port retries with backoff."""
    try:
        return bus_options.open_bus(options)
    except BusUnreachableError as exc:
        log.warning("bus unreachable (%s); retrying with backoff", exc)
        return None


def _loop(built: Built, port: Port, notifier: Notifier, settings: Settings, stats: LoopStats,
          observers: list[TickObserver], plant: UdpPlant | None, probe: TickProbe | None) -> TickLoop:
    """The loop; the probe, when given, labels the clock and the node and hears of ticks first."""
    period = settings.run.resolved_period_s
    clock = tuned.clock(settings, probe)
    return TickLoop(clock, period, [tuned.node(built.node, clock, settings, probe)], stats=stats,
                    observers=[
        *([] if probe is None else [probe]),
        StatusReporter(_status_line(built, port, stats, plant), notifier, period,
                       settings.run.status_interval_s),
        *observers,
    ])


def _status_line(built: Built, port: Port, stats: LoopStats, plant: UdpPlant | None) -> Callable[[], str]:
    """The status line the log shows once a second, and the page with every tick."""
    def line() -> str:
        text = f"{built.status_line()} | late {stats.late} | {port.state_text()}"
        return text if plant is None else f"{text} | {plant.status_text()}"

    return line


def _plant(stack: ExitStack, address: tuple[str, int], settings: Settings) -> UdpPlant:
    """``--plant udp:HOST:PORT``: the ECU's truck and road are another program's (ecu_sim.cosim)."""
    run = settings.run
    period = run.resolved_period_s
    plant = UdpPlant(address, period, hold_ticks(run.input_timeout_s(run.app_timeout_s), period),
                     run.initial_speed_kph)
    stack.callback(plant.close)
    log.info("plant: the truck at udp %s:%d, stepped once a tick", *address)
    return plant


def _view(kind: NodeKind, built: Built, profile: Profile, stats: LoopStats, settings: Settings,
          sampled: bool) -> TickView:
    return viewers.tick_view([(kind.value, built.node)], profile, stats, settings.run.resolved_period_s,
                             viewers.wall_time, sampled)


def _head(kind: NodeKind, settings: Settings, profile: Profile, route: GradeSchedule | Road | None,
          schedule: FaultSchedule) -> dict[str, Any]:
    return recording.head(kind.value, settings, profile, route, schedule)


def _recorder(stack: ExitStack, kind: NodeKind, settings: Settings, profile: Profile,
              route: GradeSchedule | Road | None, schedule: FaultSchedule,
              channel: object, temporary: bool) -> Recorder | Spool | None:
    """``--record``: a listener on the node's port and an observer of its loop (ecu_sim.io);
    ``temporary``: the page's own, in a folder removed at the end, a spool made a recording only
    for a download."""
    path = settings.record.file
    if path is None:
        return None
    head = _head(kind, settings, profile, route, schedule)
    if temporary:
        return stack.enter_context(Spool(path, head, period_s=settings.run.resolved_period_s,
                                         channel=None if channel is None else str(channel)))
    recorder = stack.enter_context(Recorder(
        path, settings.record.max_bytes, head, period_s=settings.run.resolved_period_s,
        channel=None if channel is None else str(channel)))
    log.info("recording every frame to %s", path)
    return recorder


def _release(built: Built, loop: TickLoop, recorder: Recorder | Spool | McapRecorder | None) -> None:
    """A CCM that commands by TSC1 and XBR hands the engine and the brakes back before it goes:
    one more tick with its cruise off sends both with override disabled (mode 00), so neither
    is left to time it out (SPN 898 or 2920 FMI 9). The cruise-off is journaled as a control
    before that tick, so a replay repeats it."""
    from ecu_sim.controls.check import Control
    from ecu_sim.controls.desk import apply

    node = built.node
    if not node.releases_on_stop:
        return
    control = Control("cruise", False)
    apply(control, built, node.tick_index)
    if recorder is not None:
        recorder.control(control.record())
    log.info("releasing the engine and the brakes (TSC1 and XBR with override disabled)")
    loop.resume()
    loop.run(1)


def _max_ticks(settings: Settings) -> int | None:
    duration = settings.run.duration_s
    return None if duration is None else max(1, ticks_in(duration, settings.run.resolved_period_s))


@contextmanager
def _stop_on_signals(loop: TickLoop) -> Iterator[list[str]]:
    """SIGINT and SIGTERM end the run after the current tick, so output is flushed and exit is 0.

    The handler only stops the loop and notes the signal; the caller logs it once the loop has
    returned. A handler runs between two steps of whatever the main thread is doing, and that may
    be writing a log line: writing another from inside it re-enters stderr's buffer, which refuses
    (a reentrant call), and the line is lost."""
    received: list[str] = []

    def handler(signum: int, frame: object) -> None:
        loop.stop()
        received.append(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
