"""The powertrain network in virtual time: the ECU the factory builds, and a test controller at 0x2A.

Both are members of one in-process CAN segment and tick in one loop of the 10 ms base tick, the
ECU first: a frame the controller sends at tick k is what the ECU takes before tick k + 1. The
controller's ``script`` says what it sends at each tick; it keeps every frame it hears.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import can
from cantools.database.can import Database

from ecu_sim.bus.inprocess import InProcessBus, InProcessLink, new_frame
from ecu_sim.bus.port import Port
from ecu_sim.codec.command import CommandCodec
from ecu_sim.codec.profile import Profile
from ecu_sim.j1939.frames import arbitration_id
from ecu_sim.j1939.ids import pgn_of, source_address_of
from ecu_sim.j1939.request import request
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node, ecu_of
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import TickLoop
from ecu_sim.settings.model import J1939Settings, ProfileSettings, RunSettings, Settings, VehicleSettings

CONTROLLER = 0x2A
#: Script: tick -> the frames the controller sends at that tick
Script = Callable[[int], list[can.Message]]


@dataclass
class Heard:
    tick: int
    msg: can.Message

    @property
    def pgn(self) -> int:
        return pgn_of(self.msg.arbitration_id)

    @property
    def source(self) -> int:
        return source_address_of(self.msg.arbitration_id)


@dataclass
class Controller:
    """A node of the loop: hears everything, sends what its script says at each tick."""

    bus: InProcessBus
    script: Script
    heard: list[Heard] = field(default_factory=list)
    k: int = 0

    def poll(self, timeout_s: float) -> None:
        self.drain()

    def drain(self) -> None:
        while (msg := self.bus.recv(0.0)) is not None:
            self.heard.append(Heard(self.k, msg))

    def prepare(self) -> None:
        pass

    def tick(self, deadline: float, transmit: bool) -> None:
        for msg in self.script(self.k):
            self.bus.send(msg)
        self.k += 1

    def from_address(self, source: int, pgn: int | None = None) -> list[Heard]:
        return [h for h in self.heard if h.source == source and (pgn is None or h.pgn == pgn)]


def settings(*, grade: float = 0.0, initial_speed: float = 80.0, **j1939: Any) -> Settings:
    base = Settings(profile=ProfileSettings(name="j1939"), vehicle=VehicleSettings(preset="class6"),
                    run=RunSettings(grade_pct=grade, initial_speed_kph=initial_speed),
                    j1939=J1939Settings(network="powertrain"))
    return dataclasses.replace(base, j1939=dataclasses.replace(base.j1939, **j1939))


@dataclass
class Rig:
    ecu: Ecu
    controller: Controller
    loop: TickLoop
    profile: Profile

    @property
    def database(self) -> Database:
        return self.profile.database

    def run(self, ticks: int) -> None:
        """Run ``ticks`` ticks, then close the segment: what was heard and the ECU's state stay."""
        try:
            self.loop.run(ticks)
        finally:
            self.ecu.port.close()
            self.controller.bus.shutdown()


def rig(script: Script, given: Settings | None = None, clock: VirtualClock | None = None) -> Rig:
    """The ECU of ``given`` (default: :func:`settings`) and a controller running ``script``, on
    ``clock`` (a new virtual clock by default)."""
    ready, profile = prepare(settings() if given is None else given)
    clock = VirtualClock() if clock is None else clock
    link = InProcessLink(clock, "powertrain-test")
    kind = NodeKind.ECU
    port = Port(link.bus(), kind.frame_ids(profile, ready))
    ecu = ecu_of(build_node(kind, port, profile, ready, route=load_vehicle_route(ready), new_frame=new_frame))
    controller = Controller(link.bus(), script)
    loop = TickLoop(clock, ready.run.resolved_period_s, [ecu, controller])
    return Rig(ecu, controller, loop, profile)


def quiet(tick: int) -> list[can.Message]:
    return []


def global_request(pgn: int, destination: int = 0xFF) -> can.Message:
    """A Request from the controller for ``pgn`` (to ``destination``, everyone by default)."""
    pdu = request(pgn, destination=destination)
    return can.Message(arbitration_id=arbitration_id(pdu, CONTROLLER), data=pdu.data, is_extended_id=True)


def command(database: Database, name: str, counter: int, fixed: dict[int, float],
            demands: dict[int, float] | None = None) -> can.Message:
    """Message ``name`` of the DBC (TSC1, TSC1_RET, XBR) from the controller, its fields by SPN
    (the rest "not available"), counter and checksum sealed by the J1939-71 rule."""
    codec = CommandCodec(database.get_message_by_name(name), CONTROLLER)
    data = codec.encode(fixed, demands or {}, counter)
    return can.Message(arbitration_id=codec.frame_id, data=data, is_extended_id=True)
