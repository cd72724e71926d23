"""The ECU advanced by a peer: exactly n ticks of virtual time per request, the peer's inputs on its bus.

This is the node a board runs, built by :func:`ecu_sim.nodes.factory.build_node` on an in-process
bus of one virtual clock, as ``simulate`` builds it; the peer takes the place of the driver. Its
node runs first in every tick: the frames it puts on the bus at a tick (APP from the fixed-format
input, CAN frames of the request) are what the ECU drains right before its own tick. A constant
APP therefore gives the very speed trace of ``simulate --app``, and a controller answering each
tick's speed with the next request's APP closes the loop with the CCM's one-tick delay.

An attacker (``--attack``), when given, is the loop's last node, as in ``simulate``: it hears
the tick's frames and the ECU takes its frames at the next tick, and the peer hears them among
the frames of the step (they are on the bus).

Nothing here reads a clock or a socket: the same requests give the same answers, bit for bit,
however the peer splits the run into steps.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from types import TracebackType

import can
from cantools.database.can import Message, Signal

from ecu_sim.bus.inprocess import InProcessLink, new_frame
from ecu_sim.bus.port import Port
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.cosim.contract import Contract, contract
from ecu_sim.cosim.protocol import Frame
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.factory import NodeKind, build_node, ecu_of
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.runtime.loop import Node, TickLoop, TickObserver
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.drive import GradeProfile, Terrain, drives_class6, testbed_route
from ecu_sim.vehicle.road import grade_pct_of


class PeerRoad:
    """The testbed truck's route (its grade schedule, or the grade under its wheelbase on a road),
    unless the peer gives a grade: then that grade, wherever the truck is."""

    def __init__(self, route: GradeProfile) -> None:
        self._route = route
        self.override: float | None = None

    def grade_at(self, distance_m: float) -> float:
        override = self.override
        return self._route.grade_at(distance_m) if override is None else override


class PeerTerrain:
    """The ``class6`` truck's road, unless the peer gives a grade: then the truck stands on that
    slope under both axles, wherever it is, and the route's heights do not apply (NaN)."""

    def __init__(self, road: Terrain) -> None:
        self._road = road
        self._sin: float | None = None

    @property
    def override(self) -> float | None:
        return None if self._sin is None else grade_pct_of(self._sin)

    @override.setter
    def override(self, grade_pct: float | None) -> None:
        # sine of the slope from rise over run, with a square root only (bit-identical everywhere)
        g = None if grade_pct is None else grade_pct * 0.01
        self._sin = None if g is None else g / math.sqrt(1.0 + g * g)

    def elevation_at(self, distance_m: float) -> float:
        return self._road.elevation_at(distance_m) if self._sin is None else math.nan

    def sin_under_axles(self, distance_m: float, wheelbase_m: float) -> float:
        sin = self._sin
        return self._road.sin_under_axles(distance_m, wheelbase_m) if sin is None else sin


class _PeerNode:
    """The peer on the ECU's bus: each tick it hears what was sent in the tick before, then sends
    the step's APP and the frames due at the tick."""

    def __init__(self, port: Port, app: RoleCodec, brake: RoleCodec | None) -> None:
        self._send = port.send
        self._recv = port.recv
        self._app = app
        self._brake = brake
        self.app_payload: bytes | None = None
        self.brake_payload: bytes | None = None
        self.frames: deque[tuple[int, can.Message]] = deque()
        #: (offset in the step, frame) of every frame the ECU sent in the step
        self.received: list[tuple[int, can.Message]] = []
        self.offset = 0

    def poll(self, timeout_s: float) -> None:
        """The peer's frames come with its requests, not from a wait on the bus."""

    def prepare(self) -> None:
        """Stepped in virtual time only, where nothing is done ahead."""

    def drain(self) -> None:
        """The ECU ticks after the peer, so what arrives now was sent in the previous tick."""
        recv, received, offset = self._recv, self.received, self.offset - 1
        while (msg := recv(0.0)) is not None:
            received.append((offset, msg))

    def tick(self, deadline: float, transmit: bool) -> None:
        frames, offset = self.frames, self.offset
        while frames and frames[0][0] == offset:
            self._send(frames.popleft()[1])
        if self.app_payload is not None:
            app = self._app
            self._send(new_frame(app.frame_id, self.app_payload, app.is_extended_id))
        if self.brake_payload is not None and self._brake is not None:
            brake = self._brake
            self._send(new_frame(brake.frame_id, self.brake_payload, brake.is_extended_id))
        self.offset = offset + 1


class _Decoder:
    """One signal of a sent message as a double: NaN when it says not available or was never sent.

    The role codec reads J1939's not-available and error ranges; a signal it cannot serve
    (a float or multiplexed one) is decoded by cantools as the DBC describes it.
    """

    def __init__(self, message: Message, signal: Signal) -> None:
        self._message = message
        self._name = signal.name
        try:
            self._codec: RoleCodec | None = RoleCodec(message, signal,
                                                      is_j1939=message.protocol == "j1939")
        except ValueError:
            self._codec = None

    def value(self, data: bytes | bytearray | None) -> float:
        if data is None:
            return math.nan
        if self._codec is not None:
            value = self._codec.decode(data)
            return math.nan if isinstance(value, Invalid) else value
        try:
            decoded = self._message.decode(bytes(data), decode_choices=False, allow_truncated=True)
        except Exception:  # cantools raises several types for a payload it cannot read
            return math.nan
        number = decoded.get(self._name) if isinstance(decoded, dict) else None
        return float(number) if isinstance(number, int | float) else math.nan


#: builds a node on a bus of the stepper's segment, closed with the stack (the attacker)
NodeOnBus = Callable[[ExitStack, Callable[[], can.BusABC]], Node]


class Stepper:
    """An ECU on a private bus that runs exactly the ticks it is asked for; closing it closes the bus."""

    def __init__(self, settings: Settings, profile: Profile, route: GradeProfile | Terrain,
                 schedule: FaultSchedule | None = None,
                 watch: Callable[[Stepper], Sequence[TickObserver]] | None = None,
                 attacker: NodeOnBus | None = None, tester: NodeOnBus | None = None) -> None:
        """``route``: the testbed truck's grade profile or road, or the ``class6`` truck's road.
        ``watch(stepper)``: observers of its ticks, given once the ECU is built (a campaign's
        key figures). ``attacker``: the attacker as the loop's last node; ``tester``: a scripted
        tester (ecu_sim.runs.diagnosed) before it."""
        self.settings = settings
        self.profile = profile
        self.contract: Contract = contract(profile, settings.vehicle.preset)
        self.period_s = settings.run.resolved_period_s
        clock = VirtualClock()
        link = InProcessLink(clock, "cosim")
        # The peer's grade must reach the testbed model as given, not through a slope and back.
        self.road: PeerRoad | PeerTerrain = (
            PeerTerrain(route) if drives_class6(route, settings.vehicle.preset)
            else PeerRoad(testbed_route(route, settings.vehicle.wheelbase_m)))
        self._stack = ExitStack()
        with self._stack:
            peer_port = self._stack.enter_context(Port(link.bus(), []))
            ecu_port = self._stack.enter_context(Port(link.bus(), [profile.speed.frame_id]))
            built = build_node(NodeKind.ECU, ecu_port, profile, settings, route=self.road,
                               schedule=schedule, new_frame=new_frame)
            node = ecu_of(built)
            last = [party(self._stack, link.bus) for party in (tester, attacker) if party is not None]
            self._stack = self._stack.pop_all()
        self.ecu = node
        #: the fault injector in front of the ECU's transmitter, when there are faults
        self.faults = built.faults
        #: the node as the factory built it, for the controls a peer sends by name (ecu_sim.controls.planned)
        self.built = built
        #: no CCM of ours: the peer is the controller (the campaign's figures ask)
        self.ccm: Ccm | None = None
        self._peer = _PeerNode(peer_port, profile.app, node.brake)
        self._loop = TickLoop(clock, self.period_s, [self._peer, node, *last],
                              () if watch is None else watch(self))
        self._signals = _signal_decoders(self.contract)
        self._last: dict[tuple[int, bool], bytes | bytearray] = {}
        self._last_by_pgn: dict[int, bytes | bytearray] = {}

    def __enter__(self) -> Stepper:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stack.close()

    @property
    def next_tick(self) -> int:
        return self.ecu.tick_index

    def step(self, n: int, inputs: tuple[float, ...], frames: tuple[Frame, ...] | None = None
             ) -> tuple[tuple[float, ...], tuple[Frame, ...] | None]:
        """Run ticks ``next_tick .. next_tick + n - 1``: the outputs at the last, and with ``frames``
        (the CAN encoding; None in the fixed format) the ECU's frames of the step."""
        app_pct, grade_pct = inputs[0], inputs[1]
        peer = self._peer
        peer.app_payload = None if math.isnan(app_pct) else self.profile.app.encode(app_pct)
        if self.ecu.brake is not None:
            brake_pct = inputs[2]
            peer.brake_payload = None if math.isnan(brake_pct) else self.ecu.brake.encode(brake_pct)
        self.road.override = None if math.isnan(grade_pct) else grade_pct
        peer.offset = 0
        peer.frames.clear()
        if frames:
            peer.frames.extend((f.offset, _message(f)) for f in sorted(frames, key=lambda f: f.offset))
        received = peer.received
        received.clear()
        self._loop.run(n)
        peer.drain()  # the last tick's frames
        last = self._last
        for _, msg in received:
            last[(msg.arbitration_id, msg.is_extended_id)] = msg.data
            if msg.is_extended_id:  # by PGN too: --network powertrain sends ETC2 from the transmission
                self._last_by_pgn[pgn_of(msg.arbitration_id)] = msg.data
        sent = None if frames is None else tuple(_frame(offset, msg) for offset, msg in received)
        return self._outputs(), sent

    def _outputs(self) -> tuple[float, ...]:
        ecu = self.ecu
        tick = ecu.tick_index - 1
        state = ecu.state
        values = [tick * self.period_s, state.speed_kph, state.distance_m, ecu.grade_pct, ecu.app_pct,
                  1.0 if ecu.app_missing else 0.0]
        driveline = ecu.vehicle.driveline()
        if driveline is not None:
            elevation = ecu.vehicle.elevation_m
            values += [float(driveline.gear), float(driveline.selected), driveline.engine_rpm,
                       ecu.vehicle.brake_pct or 0.0, math.nan if elevation is None else elevation,
                       driveline.fuel_rate_lph, driveline.fuel_used_l]
        last = self._last
        for key, decoders in self._signals:
            data = last.get(key)
            if data is None and key[1]:  # a J1939 message from another of the hosted nodes
                data = self._last_by_pgn.get(pgn_of(key[0]))
            values.extend(decoder.value(data) for decoder in decoders)
        return tuple(values)


def _signal_decoders(spec: Contract) -> list[tuple[tuple[int, bool], list[_Decoder]]]:
    return [((m.frame_id, m.is_extended_frame), [_Decoder(m, s) for s in m.signals])
            for m in spec.messages]


def _message(frame: Frame) -> can.Message:
    return can.Message(arbitration_id=frame.arbitration_id, data=frame.data,
                       is_extended_id=frame.is_extended_id, is_remote_frame=frame.is_remote_frame,
                       is_fd=frame.is_fd, bitrate_switch=frame.bitrate_switch,
                       error_state_indicator=frame.error_state_indicator, check=False)


def _frame(offset: int, msg: can.Message) -> Frame:
    return Frame(msg.arbitration_id, bytes(msg.data), offset, msg.is_extended_id, msg.is_remote_frame,
                 msg.is_fd, msg.bitrate_switch, msg.error_state_indicator)
