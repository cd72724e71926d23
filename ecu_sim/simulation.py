"""Virtual-time runs: the real nodes, codec and loop on an in-process bus, as fast as the CPU allows.

Each node gets its own python-can ``virtual`` bus on a channel private to the run, so frames
really are encoded, queued and decoded as on a wire, and parallel simulations never hear each
other. The nodes are ticked in a fixed order (ECU, then CCM or pedal) on one virtual clock, which
makes every run bit-for-bit repeatable.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import can

from ecu_sim.bus import Port, Transmitter
from ecu_sim.clock import VirtualClock
from ecu_sim.config import Settings
from ecu_sim.ecu import Ecu
from ecu_sim.loop import Node, TickLoop
from ecu_sim.profile import Profile
from ecu_sim.runner import load_profile, make_ccm, make_ecu, max_ticks

CSV_HEADER = "t_s,speed_kph,app_pct,grade_pct,distance_m\n"
_channels = itertools.count()


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


def build(settings: Settings, driver: Driver, profile: Profile | None = None) -> Simulation:
    """An ECU and its driver on a private virtual bus, on one virtual clock."""
    profile = profile or load_profile(settings)
    channel = f"ecu-sim-{os.getpid()}-{next(_channels)}"
    clock = VirtualClock()

    def port(own_id: int) -> Port:
        bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        ports.append(Port(bus, [own_id]))
        return ports[-1]

    ports: list[Port] = []
    ecu = make_ecu(clock, port(profile.speed.frame_id), profile, settings)
    nodes: list[Node] = [ecu]
    if driver.kind == "ccm":
        nodes.append(make_ccm(clock, port(profile.app.frame_id), profile, settings))
    elif driver.kind == "pedal":
        app = profile.app
        transmitter = Transmitter(port(app.frame_id), app.frame_id, app.is_extended_id)
        nodes.append(ConstantPedal(transmitter, profile.app.encode, driver.app_pct))
    return Simulation(TickLoop(clock, settings.run.period_s, nodes), ecu, ports)


def csv_writer(out: IO[str]) -> Callable[[float, Ecu], None]:
    """An ECU observer writing one CSV row per tick, starting at t_s = 0."""
    out.write(CSV_HEADER)
    write = out.write

    def row(now: float, ecu: Ecu) -> None:
        write(f"{now:.3f},{ecu.state.speed_kph:.6f},{ecu.app_pct:.4f},{ecu.grade_pct:.4f},"
              f"{ecu.state.distance_m:.3f}\n")

    return row


def run(settings: Settings, driver: Driver, out: IO[str] | None = None) -> Simulation:
    """Simulate ``settings.run.duration_s`` (default one hour) in virtual time."""
    simulation = build(settings, driver)
    if out is not None:
        simulation.ecu.observer = csv_writer(out)
    ticks = max_ticks(settings) or round(3600 / settings.run.period_s)
    try:
        simulation.loop.run(ticks + 1)  # tick 0 is t = 0, so N periods take N + 1 ticks
    finally:
        simulation.close()
    return simulation
