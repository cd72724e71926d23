"""The ECU in real time on a host-local bus of its own: the far end of a controller under test.

A campaign that tests another program (``ecu_sim.campaign.program``) runs one of these per case.
It is the ECU a real run builds (same ``prepare``, road, faults, ``build_node`` and real clock),
on a ``udp_multicast`` group and port no other case shares (or a SocketCAN interface made for
it alone), so cases run side by side without hearing each other. Like
:class:`~ecu_sim.runs.simulation.Simulation` it exposes ``ecu``, ``faults``, ``ccm`` and
``settings``, so the campaign's key figures are computed from either the same way; ``ccm`` is
always None: the controller is the other program, not a node of ours.
"""

from __future__ import annotations

import ipaddress
import random
import socket
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from types import TracebackType

import can

from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus
from ecu_sim.bus.port import Port
from ecu_sim.controls import planned
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node, ecu_of
from ecu_sim.runs import tuned
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from ecu_sim.runs.simulation import fault_schedule, run_ticks
from ecu_sim.runtime.loop import LoopStats, TickLoop, TickObserver
from ecu_sim.settings.model import Settings

#: the administratively scoped block the private groups are drawn from (RFC 2365's organisation
#: local scope), beside ecu-sim's default group 239.74.163.2
PRIVATE_BLOCK = ipaddress.IPv4Network("239.74.0.0/16")

#: extra tick observers for a run whose ECU is built
Watch = Callable[["PrivateRun"], Sequence[TickObserver]]


def private_address() -> tuple[str, int]:
    """A multicast group drawn at random and a UDP port the kernel has free just now: two cases
    that run at once share neither, so neither hears the other's frames."""
    group = PRIVATE_BLOCK[random.SystemRandom().randrange(256, PRIVATE_BLOCK.num_addresses - 1)]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("", 0))
        port = int(probe.getsockname()[1])
    return str(group), port


class PrivateRun:
    """An ECU on its own host-local bus, ticking in real time; closing it closes the bus."""

    def __init__(self, settings: Settings, watch: Watch | None = None,
                 address: tuple[str, int] | None = None, iface: str | None = None) -> None:
        """``address``: the bus's group and port (default: :func:`private_address`); ``iface``: a
        SocketCAN interface instead, which the caller made for this run alone."""
        settings, profile = prepare(settings)
        self.group, self.port_number = private_address() if address is None else address
        schedule = fault_schedule(settings, profile)
        self._stack = ExitStack()
        with self._stack:
            bus: can.BusABC = (HostLocalUdpMulticastBus(channel=self.group, port=self.port_number)
                               if iface is None else can.Bus(interface="socketcan", channel=iface))
            self.port = self._stack.enter_context(
                Port(bus, own_ids=NodeKind.ECU.frame_ids(profile, settings)))
            built = build_node(NodeKind.ECU, self.port, profile, settings,
                               route=load_vehicle_route(settings), schedule=schedule)
            self.ecu: Ecu = ecu_of(built)
            self.faults: FaultInjector | None = built.faults
            self.ccm: Ccm | None = None
            self.settings = settings
            self.stats = LoopStats()
            clock = tuned.clock(settings, None)
            desk = planned.desk(settings.ahead(), built, profile.speed)  # a campaign case's controls
            observers = [*([] if desk is None else [desk]), *([] if watch is None else watch(self))]
            self._between = tuned.collector(settings)
            if self._between is not None:
                observers.append(self._between)
            self.loop = TickLoop(clock, settings.run.resolved_period_s,
                                 [tuned.node(self.ecu, clock, settings, None)], observers, self.stats)
            self._stack = self._stack.pop_all()

    @property
    def ticks(self) -> int:
        return run_ticks(self.settings)

    def run(self) -> None:
        """Tick to the end, with the case's levers (``[run] realtime_priority``, ``gc``, ...)
        applied for the run alone: the worker goes back to normal scheduling for the next case."""
        with tuned.levers(self.settings, self._between):
            self.loop.run(self.ticks)

    def __enter__(self) -> PrivateRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()
