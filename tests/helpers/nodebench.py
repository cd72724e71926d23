"""A test bench: one real node (ECU or CCM) on a private python-can virtual bus, in virtual time.

The node is built by the same factory as ``ecu-sim run``/``ecu-sim ccm``
(:func:`ecu_sim.nodes.factory.build_node`), so frames are encoded, queued, received through the
port and decoded exactly as in a real run. The bench sends frames onto that bus, ticks the loop
and hears what the node sends.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import can

from ecu_sim.bus.listener import Direction
from ecu_sim.bus.port import Port
from ecu_sim.faults.spec import FaultSchedule, parse_fault
from ecu_sim.io.journal_head import header
from ecu_sim.io.recorder import Recorder
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.driver import Driver
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.factory import NodeKind, build_node, ccm_of, ecu_of
from ecu_sim.runs.prepare import load_ccm_road, load_vehicle_route, prepare
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import TickLoop, TickObserver
from ecu_sim.settings.model import J1939Settings, ProfileSettings, RunSettings, Settings
from ecu_sim.vehicle.route import GradeSchedule

_channels = itertools.count()
#: the testbed's CCM (APP sender) and vehicle model (speed sender) addresses in the amp profile
CCM_SA = 0x26
ECU_SA = 0x25


def settings(profile: str = "amp", app_source: int | None = None, speed_source: int | None = None,
             address_claim: bool | None = False, **run: Any) -> Settings:
    """A bench node's settings; it claims no address unless asked, so its first tick sends its frame."""
    run.setdefault("grade_pct", 0.0)
    return Settings(profile=ProfileSettings(name=profile, app_source=app_source, speed_source=speed_source),
                    run=dataclasses.replace(RunSettings(), **run),
                    j1939=J1939Settings(address_claim=address_claim))


class _SentOnly:
    """Keeps the frames the node put on the bus."""

    def __init__(self, into: list[can.Message]) -> None:
        self._into = into

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        if direction is Direction.SENT:
            self._into.append(msg)


class Bench:
    """``record_to`` records as ``--record PATH`` does; the recording is complete after :meth:`close`.

    With ``echo`` the node hears each of its own frames back, as on udp_multicast or SocketCAN.
    """

    def __init__(self, kind: str = "ecu", s: Settings | None = None,
                 faults: tuple[str, ...] = (), seed: int = 0, clock: VirtualClock | None = None,
                 record_to: str | None = None, record_max_bytes: int = 0, echo: bool = False) -> None:
        self.settings, self.profile = prepare(s or settings())
        self.kind = NodeKind(kind)
        channel = f"ecu-sim-test-{next(_channels)}"
        # An FD-capable virtual bus, so FD frames reach the node as an FD adapter would pass them.
        self.node_bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=echo,
                                protocol=can.CanProtocol.CAN_FD)
        self.sender = can.Bus(interface="virtual", channel=channel, receive_own_messages=False,
                              protocol=can.CanProtocol.CAN_FD)
        self.clock = clock or VirtualClock()
        self.out = self.kind.sends(self.profile)
        self.port = Port(self.node_bus, [self.out.frame_id])
        self.schedule = FaultSchedule(tuple(parse_fault(f) for f in faults), seed)
        route = (load_vehicle_route(self.settings) if self.kind is NodeKind.ECU
                 else load_ccm_road(self.settings))
        self.built = build_node(self.kind, self.port, self.profile, self.settings, route=route,
                                schedule=self.schedule)
        node = self.built.node
        assert not isinstance(node, Driver), "the bench runs the ECU or the CCM"
        self.node: Ecu | Ccm = node
        self._sent: list[can.Message] = []
        self.port.add_listener(_SentOnly(self._sent))
        observers: list[TickObserver] = []
        self.recorder: Recorder | None = None
        if record_to is not None:
            head = header(kind, self.settings, self.profile,
                          route.points if isinstance(route, GradeSchedule) else None,
                          self.schedule, record_to)
            self.recorder = Recorder(record_to, record_max_bytes, head)
            self.port.add_listener(self.recorder)
            observers.append(self.recorder)
        self.loop = TickLoop(self.clock, self.settings.run.resolved_period_s, [self.node], observers)

    @property
    def ecu(self) -> Ecu:
        return ecu_of(self.built)

    @property
    def ccm(self) -> Ccm:
        return ccm_of(self.built)

    @property
    def codec_in(self) -> Any:
        return self.node.codec_in

    def role_id(self, source: int | None = None, priority: int | None = None) -> int:
        """The input role's identifier, optionally from another source address or priority."""
        ident = self.codec_in.frame_id
        if source is not None:
            ident = (ident & ~0xFF) | source
        if priority is not None:
            ident = (ident & ~(0x7 << 26)) | (priority << 26)
        return int(ident)

    def send(self, data: bytes, source: int | None = None, **kwargs: Any) -> None:
        """A frame of the input role (any payload), from ``source`` if given."""
        kwargs.setdefault("is_extended_id", self.codec_in.is_extended_id)
        self.sender.send(can.Message(arbitration_id=self.role_id(source), data=data, check=False, **kwargs))

    def send_value(self, value: float, source: int | None = None) -> None:
        self.send(self.codec_in.encode(value), source)

    def send_raw(self, msg: can.Message) -> None:
        self.sender.send(msg)

    def tick(self, n: int = 1) -> None:
        self.loop.run(max_ticks=n)

    def sent(self) -> list[can.Message]:
        """What the node sent (the port put on the bus) since the last call."""
        frames, self._sent[:] = list(self._sent), []
        return frames

    def sent_values(self) -> list[float | str]:
        """The node's sent frames decoded: a number, or the name of the invalid kind."""
        decoded = (self.out.decode(m.data) for m in self.sent())
        return [v if isinstance(v, float) else v.name.lower() for v in decoded]

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()
        for bus in (self.node_bus, self.sender):
            bus.shutdown()
