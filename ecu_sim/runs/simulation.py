"""Virtual-time runs: the real nodes, codec and loop on an in-process bus, as fast as the CPU allows.

Every frame really is encoded by the sender's codec and decoded by the receiver's, through the
same ports, nodes and loop as a real-time run; only the clock and the bus differ. The nodes are
ticked in a fixed order (ECU, then CCM or pedal) on one virtual clock, which makes every run
bit-for-bit repeatable. Two buses can carry the frames, and both give bit-identical runs:

- ``link="virtual"`` (the default, used by the tests): python-can's own ``virtual`` interface on a
  channel private to the run, so the closed-loop specification runs on a stock python-can bus.
  It deep-copies every frame and passes it through a locked ``queue.Queue``.
- ``link="direct"`` (``ecu-sim simulate``): :mod:`ecu_sim.bus.inprocess`, a segment that hands
  frames over by reference, and so much faster (docs/performance.md).

A scripted tester (``[diagnostics] script``, ecu_sim.runs.diagnosed) is a node after the driver,
so its requests reach the ECU as received frames, inputs of a recording like an attacker's.

``--record`` (``[record] file``) records the ECU's port as a real run does, in simulated time;
under attack each frame it received is labelled in the recording (ecu_sim.runs.recording).

Faults given in the settings act on what the ECU sends (the speed sensor as the CCM hears it), so
a campaign can vary dropouts and their seeds like any other setting. A ``watch`` adds observers
once the nodes exist (a campaign's key figures), before the loop is built: nothing is attached to
a running simulation.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Literal

import can

from ecu_sim.attack.node import AttackerNode
from ecu_sim.bus.inprocess import InProcessLink, new_frame
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Transmitter, new_message
from ecu_sim.codec.profile import Profile
from ecu_sim.controls import planned
from ecu_sim.errors import ConfigError
from ecu_sim.faults import injector
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.io.trace import CsvTrace, StateHashTrace
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node, ccm_of, ecu_of
from ecu_sim.nodes.pedal import ConstantPedal
from ecu_sim.runs import attacked, diagnosed, recording, viewers
from ecu_sim.runs.attacked import AttackSetup
from ecu_sim.runs.prepare import command_timing, cycle_s, load_ccm_road, load_vehicle_route, prepare
from ecu_sim.runs.progress import Progress
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import LoopStats, Node, TickLoop, TickObserver
from ecu_sim.runtime.slower import EveryKTicks, every_base_ticks
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import POWERTRAIN, Settings
from ecu_sim.tester.node import TesterNode

#: how long a simulation runs when the settings give no duration
DEFAULT_DURATION_S = 3600.0


def run_ticks(settings: Settings) -> int:
    """A run's length: ticks 0 .. N - 1 of N whole periods of its duration (default one hour).

    Every kind of run (simulated, lockstep, a private real-time bus) takes its length from here,
    so the same settings give the same number of ticks whichever runs them.
    """
    return max(1, ticks_in(_duration_s(settings), settings.run.resolved_period_s))


_channels = itertools.count()

#: "virtual": python-can's virtual interface (copies every frame); "direct": the in-process link
Link = Literal["virtual", "direct"]
#: extra tick observers for a simulation whose nodes are built (and may take port listeners)
Watch = Callable[["Simulation"], Sequence[TickObserver]]


@dataclass(frozen=True)
class DriverSetup:
    """Who works the pedal: the cruise control module, a constant APP, or nobody (coastdown)."""

    kind: str  # "ccm", "pedal" or "none"
    app_pct: float = 0.0


class Simulation:
    """An ECU and its driver on a private bus of one virtual clock; closing it closes the bus."""

    def __init__(self, settings: Settings, driver: DriverSetup, profile: Profile | None = None,
                 link: Link = "virtual", out: IO[str] | None = None,
                 progress: IO[str] | None = None, watch: Watch | None = None,
                 hashes: IO[str] | None = None, attack: AttackSetup | None = None) -> None:
        """``progress``: where to draw a progress bar (a terminal), None for none; ``hashes``:
        where to write the ECU's full-precision state hash per tick, None for nowhere;
        ``attack``: an attacker as the loop's last node (ecu_sim.runs.attacked)."""
        if profile is None:
            settings, profile = prepare(settings)
        schedule = fault_schedule(settings, profile)
        script = diagnosed.script(settings, _duration_s(settings))
        clock = VirtualClock()
        channel = f"ecu-sim-{os.getpid()}-{next(_channels)}"
        direct = InProcessLink(clock, channel) if link == "direct" else None
        frame: FrameFactory = new_frame if direct is not None else new_message

        def port(own_id: int) -> Port:
            bus: can.BusABC = (direct.bus() if direct is not None else
                               can.Bus(interface="virtual", channel=channel, receive_own_messages=False))
            return self._stack.enter_context(Port(bus, [own_id]))

        self._stack = ExitStack()
        with self._stack:  # closes what was opened when building fails (e.g. a bad route file)
            route = load_vehicle_route(settings)
            built = build_node(NodeKind.ECU, port(profile.speed.frame_id), profile, settings,
                               route=route, schedule=schedule, new_frame=frame)
            self.ecu: Ecu = ecu_of(built)
            #: the fault injector in front of the ECU's transmitter, when the settings give faults
            self.faults: FaultInjector | None = built.faults
            self.ccm: Ccm | None = None
            nodes: list[Node] = [self.ecu]
            watched: list[tuple[str, Ecu | Ccm]] = [("ecu", self.ecu)]
            if driver.kind == "ccm":
                ccm_settings = own_period(settings, profile)
                ccm = ccm_of(build_node(NodeKind.CCM, port(profile.app.frame_id), profile, ccm_settings,
                                        route=load_ccm_road(settings), new_frame=frame))
                self.ccm = ccm
                nodes.append(slower(ccm, ccm_settings, settings))
                watched.append(("ccm", ccm))
            elif driver.kind == "pedal":
                app = profile.app
                pedal_port = port(app.frame_id)
                nodes.append(ConstantPedal(
                    pedal_port, Transmitter(pedal_port, app.frame_id, app.is_extended_id, frame),
                    app, driver.app_pct))

            def foreign_bus() -> can.BusABC:
                """A bus of the run's link for a foreign party: the tester, the attacker."""
                return direct.bus() if direct is not None else can.Bus(
                    interface="virtual", channel=channel, receive_own_messages=False)
            #: the scripted tester (``[diagnostics] script``), after the truck's nodes
            self.tester: TesterNode | None = None
            if script is not None:
                self.tester = diagnosed.tester(self._stack, foreign_bus, settings, script)
                nodes.append(self.tester)
            self.attacker: AttackerNode | None = None
            if attack is not None:
                attacks = attacked.plan(attack, settings, profile, _duration_s(settings))
                # labels need the in-process link, which hands the ECU the attacker's messages
                labelled = settings.record.file is not None
                if labelled and direct is None:
                    raise ConfigError("a recording of an attacked run is labelled on the in-process "
                                      "link only; simulate uses it")
                self.attacker = attacked.attacker(self._stack, foreign_bus, attack, settings, attacks,
                                                  labels=labelled)
                nodes.append(self.attacker)
            stats = LoopStats()
            period = settings.run.resolved_period_s
            observers: list[TickObserver] = [] if out is None else [CsvTrace(out, self.ecu)]
            recorder = None if settings.record.file is None else recording.simulated_recorder(
                self._stack, settings, profile, self.ecu, route, schedule, stats, clock.now,
                None if self.attacker is None else self.attacker.label_of,
                () if self.attacker is None else self.attacker.plan.manifest())
            observers += [] if recorder is None else [recorder]  # the ECU's, labelled when attacked
            desk = planned.desk(settings.ahead(), built, profile.speed,
                                None if recorder is None else recorder.control)
            observers += [] if desk is None else [desk]
            # --stream: virtual time on the viewer's axis, so a simulated hour plots as an hour
            observers += viewers.stream(self._stack, settings.stream.target, lambda: viewers.tick_view(
                watched, profile, stats, period, lambda now: now))
            self._stack = self._stack.pop_all()
        self.settings = settings
        if hashes is not None:
            observers.append(StateHashTrace(hashes, self.ecu))
        if watch is not None:
            observers.extend(watch(self))
        self.progress = None if progress is None else Progress(self.ticks, self.period_s, progress)
        if self.progress is not None:
            observers.append(self.progress)
            self._stack.callback(self.progress.close)
        self.loop = TickLoop(clock, period, nodes, observers, stats)

    @property
    def period_s(self) -> float:
        return self.settings.run.resolved_period_s

    @property
    def ticks(self) -> int:
        return run_ticks(self.settings)

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def run(self) -> None:
        """Run the settings' duration (default one hour): ticks 0 .. N - 1 of N whole periods."""
        self.loop.run(self.ticks)


def _duration_s(settings: Settings) -> float:
    run = settings.run
    return DEFAULT_DURATION_S if run.duration_s is None else run.duration_s


def own_period(settings: Settings, profile: Profile) -> Settings:
    """A node's settings beside an ECU at the powertrain's base tick: the period a node of the
    single network would have, the DBC's cycle time of the speed message (the CCM's period), or
    with ``--command tsc1`` XBR's 20 ms (ecu_sim.runs.prepare.command_timing), which only the
    powertrain takes."""
    if settings.j1939.network != POWERTRAIN:
        if settings.ccm.command == "tsc1":
            raise ConfigError(f"--command tsc1 ({settings.origins.get('ccm.command', 'given')}) commands "
                              "the engine and the brakes by TSC1 and XBR, which only the class6 truck's "
                              "powertrain nodes take; add --network powertrain, or use --command app")
        return settings
    if settings.ccm.command == "tsc1":
        return command_timing(dataclasses.replace(settings, run=dataclasses.replace(
            settings.run, period_s=None)), profile)
    run = dataclasses.replace(settings.run, period_s=cycle_s(profile.speed))
    return dataclasses.replace(settings, run=run)


def slower(node: Node, own: Settings, settings: Settings) -> Node:
    """``node`` as it runs in the loop of ``settings``' period: every k-th tick when its own
    settings have a longer period (the CCM beside the powertrain)."""
    period, base = own.run.resolved_period_s, settings.run.resolved_period_s
    if period == base:
        return node
    try:
        return EveryKTicks(node, every_base_ticks(period, base))
    except ValueError as exc:
        raise ConfigError(f"{exc}: give --period a whole fraction of {period:g} s") from None


def fault_schedule(settings: Settings, profile: Profile) -> FaultSchedule | None:
    """The faults of the ECU's output, checked before anything is built; None without any.

    Every run that builds an ECU (simulated, lockstep, a private real-time bus) loads them here,
    so the same settings are refused, or accepted, alike whichever runs them."""
    f = settings.faults
    if not f.inject and f.scenario is None:
        return None
    schedule = FaultSchedule.load(f.inject, f.scenario, f.seed)
    injector.check(schedule.faults, profile.speed, settings.run.resolved_period_s)
    return schedule


def run(settings: Settings, driver: DriverSetup, out: IO[str] | None = None,
        link: Link = "virtual", progress: IO[str] | None = None, watch: Watch | None = None,
        hashes: IO[str] | None = None, attack: AttackSetup | None = None) -> Simulation:
    """Simulate ``settings.run.duration_s`` (default one hour) in virtual time, CSV rows to ``out``."""
    with Simulation(settings, driver, link=link, out=out, progress=progress, watch=watch,
                    hashes=hashes, attack=attack) as simulation:
        simulation.run()
    return simulation
