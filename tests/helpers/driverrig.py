"""A rig: the real ECU, CCM and driver nodes on one private python-can virtual bus, in virtual time.

Each node is built by :func:`ecu_sim.nodes.factory.build_node`, as ``ecu-sim run``, ``ecu-sim ccm``
and ``ecu-sim driver`` build them, with its own port; the driver's pedals are a script the test
sets between runs of the loop. The DBC is the ``j1939`` profile's, which carries the brake pedal
position (EBC1, SPN 521) the brake rule needs.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import itertools
from pathlib import Path
from typing import Any

import can

from ecu_sim.bus.port import Port
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node
from ecu_sim.pedals.reading import PedalReading
from ecu_sim.runs.prepare import load_route, prepare
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.settings.model import ProfileSettings, RunSettings, Settings

_channels = itertools.count()
#: the CCM's source address in the j1939 profile: the ECU listens to it alone when a driver is on the bus
CCM_SA = 0x11


def dbc_with_brake(folder: Path) -> str:
    """The j1939 profile's DBC, which has EBC1's brake pedal position (SPN 521) and CCVS2's cruise
    commands, as a file of the test's own (a test may not write into the installed package)."""
    text = (importlib.resources.files("ecu_sim.dbc") / "j1939.dbc").read_text(encoding="utf-8")
    path = folder / "j1939-brake.dbc"
    path.write_text(text, encoding="utf-8")
    return str(path)


class Script:
    """The driver's pedals and buttons, set by the test; a tap holds a button for one read."""

    def __init__(self) -> None:
        self.now = PedalReading()
        self._taps: set[str] = set()

    def tap(self, button: str) -> None:
        self._taps.add(button)

    def read(self) -> PedalReading:
        reading = dataclasses.replace(self.now, **{name: True for name in self._taps})
        self._taps.clear()
        return reading


class Rig:
    def __init__(self, folder: Path, with_ccm: bool = True, **run: Any) -> None:
        run.setdefault("grade_pct", 0.0)
        settings = Settings(profile=ProfileSettings(dbc=dbc_with_brake(folder),
                                                    app_source=CCM_SA if with_ccm else None),
                            run=dataclasses.replace(RunSettings(), **run))
        self.settings, self.profile = prepare(settings)
        self.channel = f"ecu-sim-driver-{next(_channels)}"
        self.buses: list[can.BusABC] = []
        self.script = Script()
        nodes: list[Ecu | Ccm | Driver] = [self._build(NodeKind.ECU)]
        if with_ccm:
            nodes.append(self._build(NodeKind.CCM))
        nodes.append(self._build(NodeKind.DRIVER))
        self.nodes = nodes
        self.loop = TickLoop(VirtualClock(), self.settings.run.resolved_period_s, nodes)

    def _build(self, kind: NodeKind) -> Ecu | Ccm | Driver:
        bus = can.Bus(interface="virtual", channel=self.channel, receive_own_messages=False)
        self.buses.append(bus)
        port = Port(bus, kind.frame_ids(self.profile, self.settings))
        route = load_route(self.settings) if kind is NodeKind.ECU else None
        return build_node(kind, port, self.profile, self.settings, route=route,
                          pedals=self.script).node

    @property
    def ecu(self) -> Ecu:
        node = self.nodes[0]
        assert isinstance(node, Ecu)
        return node

    @property
    def ccm(self) -> Ccm:
        node = self.nodes[1]
        assert isinstance(node, Ccm)
        return node

    @property
    def speed(self) -> float:
        return self.ecu.state.speed_kph

    def run(self, seconds: float) -> None:
        self.loop.run(round(seconds / self.settings.run.resolved_period_s))

    def close(self) -> None:
        for bus in self.buses:
            bus.shutdown()
