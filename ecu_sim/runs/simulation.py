"""Virtual-time runs: the real nodes, codec and loop on an in-process bus, as fast as the CPU allows.

Every frame really is encoded by the sender's codec and decoded by the receiver's, through the
same ports, nodes and loop as a real-time run; only the clock and the bus differ. The nodes are
ticked in a fixed order (ECU, then CCM or pedal) on one virtual clock, which makes every run
bit-for-bit repeatable. Two buses can carry the frames, and both give bit-identical runs:

- ``link="virtual"`` (the default, used by the tests): python-can's own ``virtual`` interface on a
  channel private to the run, so the closed-loop specification runs on a stock python-can bus.
  It deep-copies every frame and passes it through a locked ``queue.Queue``, which costs more
  than the nodes' own work: about 5,000 loop ticks per second.
- ``link="direct"`` (``ecu-sim simulate``): :mod:`ecu_sim.bus.inprocess`, a segment that hands
  frames over by reference; it is what lets a simulation run ten times faster
  (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Literal

import can

from ecu_sim.bus.inprocess import DirectTransmitter, InProcessLink
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import Transmitter
from ecu_sim.codec.profile import Profile, RoleCodec
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.runs.realtime import load_profile, make_ccm, make_ecu, max_ticks
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import Node, TickLoop
from ecu_sim.settings.load import Settings

CSV_HEADER = "t_s,speed_kph,app_pct,grade_pct,distance_m\n"
_channels = itertools.count()

#: "virtual": python-can's virtual interface (copies every frame); "direct": InProcessBus
Link = Literal["virtual", "direct"]


class ConstantPedal:
    """A driver holding the pedal still: sends one APP value every tick through the codec."""

    def __init__(self, transmitter: Transmitter, encode: Callable[[float], bytes], app_pct: float) -> None:
        self._transmitter = transmitter
        self._payload = encode(app_pct)

    def poll(self, timeout_s: float) -> None:
        """The pedal listens to nothing."""

    def drain(self) -> None:
        """The pedal listens to nothing."""

    def tick(self, now: float, transmit: bool) -> None:
        if transmit:
            self._transmitter.send(self._payload)


@dataclass(frozen=True)
class Driver:
    """Who works the pedal: the cruise control module, a constant APP, or nobody (coastdown)."""

    kind: str  # "ccm", "pedal" or "none"
    app_pct: float = 0.0


@dataclass
class Simulation:
    loop: TickLoop
    ecu: Ecu
    ports: list[Port]

    def close(self) -> None:
        for port in self.ports:
            port.close()


def build(settings: Settings, driver: Driver, profile: Profile | None = None,
          link: Link = "virtual") -> Simulation:
    """An ECU and its driver on a private bus of the given ``link`` kind, on one virtual clock."""
    profile = profile or load_profile(settings)
    # Frames are always sent from the loop: the kernel's broadcast manager has no virtual time.
    settings = dataclasses.replace(settings, run=dataclasses.replace(settings.run, tx_mode="user"))
    channel = f"ecu-sim-{os.getpid()}-{next(_channels)}"
    clock = VirtualClock()
    direct = InProcessLink(clock, channel) if link == "direct" else None

    def port(own_id: int) -> Port:
        bus: can.BusABC
        if direct is not None:
            bus = direct.bus()
        else:
            bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        ports.append(Port(bus, [own_id]))
        return ports[-1]

    def transmitter(port: Port, role: RoleCodec) -> Transmitter:
        kind = DirectTransmitter if direct is not None else Transmitter
        return kind(port, role.frame_id, role.is_extended_id)

    ports: list[Port] = []
    try:
        ecu = make_ecu(port(profile.speed.frame_id), profile, settings)
        nodes: list[Node] = [ecu]
        if driver.kind == "ccm":
            nodes.append(make_ccm(port(profile.app.frame_id), profile, settings))
        elif driver.kind == "pedal":
            nodes.append(ConstantPedal(transmitter(port(profile.app.frame_id), profile.app),
                                       profile.app.encode, driver.app_pct))
    except BaseException:
        for opened in ports:  # e.g. a bad route file: no bus may outlive the failed build
            opened.close()
        raise
    if direct is not None:
        # The runner's wiring picks the transmitter for a real bus; on the in-process link the
        # nodes get the cheaper frames of DirectTransmitter, sent through the very same port.
        ecu.transmitter = transmitter(ecu.port, profile.speed)
        for node in nodes[1:]:
            if isinstance(node, Ccm):
                node.transmitter = transmitter(node.port, profile.app)
    return Simulation(TickLoop(clock, settings.run.period_s, nodes), ecu, ports)


def csv_writer(out: IO[str]) -> Callable[[float, Ecu], None]:
    """An ECU observer writing one CSV row per tick, starting at t_s = 0."""
    out.write(CSV_HEADER)
    write = out.write

    def row(now: float, ecu: Ecu) -> None:
        write(f"{now:.3f},{ecu.state.speed_kph:.6f},{ecu.app_pct:.4f},{ecu.grade_pct:.4f},"
              f"{ecu.state.distance_m:.3f}\n")

    return row


def run(settings: Settings, driver: Driver, out: IO[str] | None = None,
        link: Link = "virtual") -> Simulation:
    """Simulate ``settings.run.duration_s`` (default one hour) in virtual time."""
    simulation = build(settings, driver, link=link)
    if out is not None:
        simulation.ecu.observer = csv_writer(out)
    ticks = max_ticks(settings) or round(3600 / settings.run.period_s)
    try:
        simulation.loop.run(ticks + 1)  # tick 0 is t = 0, so N periods take N + 1 ticks
    finally:
        simulation.close()
    return simulation
