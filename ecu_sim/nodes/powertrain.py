"""The powertrain network on the ECU's port: the nodes beside the engine, their messages, their ticks.

With ``--network powertrain`` the ECU hosts four J1939 nodes (:mod:`ecu_sim.nodes.powertrain_nodes`).
The engine's network part is the ECU's own; the transmission's, the brakes' and the retarder's
are kept here. Each sees every frame the port receives (a part keeps what is addressed to it or
to everyone), answers requests for its own PGNs, claims its address and sends its DM1. Each
message goes out from its sender's address, on the ticks of its ``GenMsgCycleTime``, and only
while that node's claim stands.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping

import can
from cantools.database.can import Message

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Output, Transmitter
from ecu_sim.codec.nm import node_attributes
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.j1939.frames import SINGLE_FRAME
from ecu_sim.j1939.ids import destination_of, from_source, pgn_of
from ecu_sim.nodes.commands_in import TSC1_MODE, CommandIntake, tsc1_command
from ecu_sim.nodes.engine_frames import EngineFrames, EngineMessage, every_ticks, find_messages
from ecu_sim.nodes.j1939part import NetworkPart, build_member
from ecu_sim.nodes.powertrain_nodes import SPN_FIELDS, Member, Readings, members
from ecu_sim.powertrain.engine_control import Admission, EngineRequest, TorqueMode, Tsc1Arbiter
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6Model, Class6State
from ecu_sim.vehicle.drive import Driveline
from ecu_sim.vehicle.engine import EngineCommand

_RPM_PER_RAD_S = 60.0 / (2.0 * math.pi)
_NA = math.nan
log = logging.getLogger(__name__)


class Powertrain:
    """The transmission's, brakes' and retarder's parts, and every powertrain message."""

    def __init__(self, port: Port, engine: NetworkPart, others: Mapping[str, NetworkPart],
                 frames: EngineFrames, ccvs: EngineMessage | None, role_every: int,
                 model: Class6Model, cruise_address: int | None, latest: Latest, controls: Controls) -> None:
        """``ccvs``: the rest of the speed message (its fields but the speed), which the ECU's
        own frame carries every ``role_every`` ticks; ``cruise_address``: where the cruise
        control's APP comes from (cruise active while it drives)."""
        self.port = port
        self.engine = engine
        self.others = dict(others)
        self.parts = {"engine": engine, **self.others}
        self.frames = frames
        self.ccvs = ccvs
        self.role_every = role_every
        self.model = model
        self._cruise_address = cruise_address
        self._receivers = tuple(part.receive for part in self.others.values())
        p = model.params
        engine_model = model.engine
        self._reference = engine_model.reference_nm
        self._idle_torque_pct = engine_model.full.at(p.idle_rpm) * 100.0 / self._reference
        self._output_rpm_per_mps = p.axle_ratio / p.tire_radius_m * _RPM_PER_RAD_S
        self._brake_limit = -p.max_brake_decel_g * p.gravity_mps2
        self._map = _map_points(model)
        #: the engine retarder's reference torque (ERC1's 100 %): a compression brake of this
        #: engine's size brakes at about its peak torque
        self.retarder_reference_nm = self._reference
        #: the newest readings, which a request for a message not sent yet is answered from
        self.latest = latest
        #: the received commands and what they ask of the engine, retarder and brakes
        self.controls = controls

    def receive(self, msg: can.Message, tick: int) -> str | None:
        """A frame for the hosted nodes: a command is checked and taken ("" when it acts, else the
        kind of ``invalid`` it counts as); the other nodes' network layers keep what is theirs and
        the frame goes on to the engine's (None)."""
        if not msg.is_extended_id:
            return None
        kind = self.controls.receive(msg, tick)
        if kind is not None:
            return kind
        for receive in self._receivers:
            receive(msg)
        return None

    def arbitrate(self, tick: int, state: Class6State, app_pct: float, app_source: int | None) -> None:
        """Decide this tick's engine and retarder requests before the truck steps, and hold the
        DTCs of timed-out senders in their node's DM1."""
        cruise = app_source is not None and app_source == self._cruise_address
        driver = TorqueMode.NO_REQUEST
        if app_pct > 0.0:
            driver = TorqueMode.CRUISE if cruise else TorqueMode.PEDAL
        controls = self.controls
        controls.arbitrate(tick, state.engine_rpm, driver)
        self.engine.hold(controls.engine_request.dtcs)
        retarder = self.others.get("retarder")
        if retarder is not None and controls.retarder_request is not None:
            retarder.hold(controls.retarder_request.dtcs)

    def command(self) -> EngineCommand:
        """What the controls ask of the engine and the retarder this tick."""
        request = self.controls.engine_request
        retarder = self.controls.retarder_request
        retarder_nm = 0.0
        if retarder is not None and retarder.torque_pct is not None and retarder.torque_pct < 0.0:
            retarder_nm = max(retarder.torque_pct, -100.0) * 0.01 * self.retarder_reference_nm
        return EngineCommand(request.torque_pct, request.limit_pct, retarder_nm)

    def measure(self, driveline: Driveline, state: Class6State, app_pct: float, app_source: int | None,
                brake_pct: float) -> Readings:
        """The tick's readings from the truck's state and the demands it drove with."""
        p = self.model.params
        engine = self.model.engine
        scale = 100.0 / self._reference
        rpm = state.engine_rpm
        indicated = engine.indicated_pct
        shifting = state.gear != state.selected
        cruise = app_source is not None and app_source == self._cruise_address
        request = self.controls.engine_request
        mode = float(request.mode)
        driven = request.controller == self.engine.network.address and app_pct > 0.0
        controller = float(app_source if driven and app_source is not None else request.controller)
        retarder = self.controls.retarder_request
        full = engine.full.at(rpm)
        load = max(state.engine_nm, 0.0) * 100.0 / full if full > 0.0 else 0.0
        output_rpm = state.speed_mps * self._output_rpm_per_mps
        ratio = p.gear_ratios[state.gear - 1]
        lockup = state.gear > 1 or output_rpm * ratio >= p.converter.lockup_rpm
        braking = 1.0 if brake_pct > 0.0 else 0.0
        retarder_scale = 100.0 / self.retarder_reference_nm
        readings = Readings(
            **{**driveline._asdict(), "engine_pct": indicated(state.engine_nm, rpm),
               "demand_pct": indicated(state.demand_nm, rpm)},
            torque_mode=mode, controlling_address=controller,
            engine_demand_pct=indicated(state.engine_demand_nm, rpm), app_pct=app_pct, load_pct=load,
            friction_pct=-engine.motoring.at(rpm) * scale, reference_nm=self._reference,
            idle_rpm=p.idle_rpm, idle_torque_pct=self._idle_torque_pct, high_idle_rpm=p.governed_rpm,
            **self._map,
            cruise_active=1.0 if cruise else 0.0, cruise_enable=1.0 if cruise else 0.0,
            brake_switch=braking, clutch_switch=0.0, set_speed_kph=_NA,
            cruise_state=1.0 if cruise else 0.0, parking_brake=0.0,
            output_shaft_rpm=output_rpm, input_shaft_rpm=output_rpm * ratio,
            shift_in_process=1.0 if shifting else 0.0, lockup_engaged=1.0 if lockup else 0.0,
            driveline_engaged=0.0 if shifting else 1.0, gear_ratio=ratio,
            brake_pedal_pct=brake_pct, ebs_brake_switch=braking, front_axle_kph=state.speed_kph,
            relative_speed_kph=0.0, xbr_state=0.0, xbr_mode=0.0, xbr_limit_mps2=self._brake_limit,
            retarder_pct=state.retarder_nm * retarder_scale,
            retarder_mode=_NA if retarder is None else float(retarder.mode),
            retarder_intended_pct=self._intended_retarder_pct(),
            retarder_controller=_NA if retarder is None else float(retarder.controller),
            retarder_max_pct=-100.0 if state.gear == state.selected and lockup else 0.0,
            brake_controller=_NA, foundation_brake_use=braking, accel_mps2=state.accel_mps2)
        self.latest.readings = readings
        return readings

    def _intended_retarder_pct(self) -> float:
        request = self.controls.retarder_request
        if request is None or request.torque_pct is None:
            return 0.0
        return max(min(request.torque_pct, 0.0), -100.0)

    def numbers(self) -> dict[str, float]:
        """The tick's powertrain figures by name, for the trace, the stream and the plot."""
        r = self.latest.readings
        if r is None:
            return {}
        return {"torque_mode": r.torque_mode, "controlling_address": r.controlling_address,
                "engine_demand_pct": r.engine_demand_pct, "retarder_pct": r.retarder_pct,
                "xbr_state": r.xbr_state, "accel_mps2": r.accel_mps2}

    def role_payload(self, data: bytes, readings: Readings) -> bytes:
        """The ECU's own frame (the speed) with the rest of its message's fields filled in."""
        ccvs = self.ccvs
        if ccvs is None:
            return data
        rest = ccvs.payload(readings)
        return (int.from_bytes(data, "little") & int.from_bytes(rest, "little")).to_bytes(len(data), "little")

    def send(self, tick: int, deadline: float, readings: Readings) -> None:
        """Every message due at ``tick``, each from its node while that node's claim stands."""
        self.frames.send(tick, deadline, readings)

    def finish(self, tick: int, transmit: bool) -> None:
        """The other nodes' network layers tick (the engine's ticks with the ECU): skipped as the
        ECU skips its own, while nothing is due and the port has no new alert."""
        if not transmit:
            return
        alerts = self.port.alerts
        for part in self.others.values():
            if tick >= part.due_from or alerts != part.alerts_seen:
                part.tick(tick, False, False)

    def status_text(self) -> str:
        return " | ".join(f"{role} {part.status_text()}" for role, part in self.others.items())


class Controls:
    """TSC1 to the engine and to the retarder (checked, then arbitrated), as the DBC has them."""

    def __init__(self, engine: tuple[CommandIntake, Tsc1Arbiter] | None,
                 retarder: tuple[CommandIntake, Tsc1Arbiter] | None, period_s: float,
                 own_address: int) -> None:
        self._tsc1 = tuple(pair for pair in (engine, retarder) if pair is not None)
        self._engine = None if engine is None else engine[1]
        self._retarder = None if retarder is None else retarder[1]
        self.period_s = period_s
        self.engine_request = EngineRequest(None, None, TorqueMode.NO_REQUEST, own_address, frozenset())
        self.retarder_request: EngineRequest | None = None
        self._logged: set[int] = set()

    def receive(self, msg: can.Message, tick: int) -> str | None:
        """None: not a command; "": taken; else the kind of ``invalid`` the frame counts as."""
        arbitration_id = msg.arbitration_id
        for intake, arbiter in self._tsc1:
            if intake.matches(arbitration_id):
                payload = bytes(msg.data)
                failure = intake.check(arbitration_id, payload)
                if failure is None:
                    admission = arbiter.receive(tick, tsc1_command(intake, arbitration_id, payload))
                    taken = admission in (Admission.ACCEPTED, Admission.SKIPPED)
                    return "" if taken else f"{intake.name}_refused"
                return failure
        return None

    def arbitrate(self, tick: int, engine_rpm: float, driver: TorqueMode) -> None:
        if self._engine is not None:
            self.engine_request = self._arbitrate(self._engine, tick, engine_rpm, driver)
        if self._retarder is not None:
            self.retarder_request = self._arbitrate(self._retarder, tick, engine_rpm, TorqueMode.NO_REQUEST)

    def _arbitrate(self, arbiter: Tsc1Arbiter, tick: int, engine_rpm: float,
                   driver: TorqueMode) -> EngineRequest:
        request = arbiter.arbitrate(tick, engine_rpm, self.period_s, driver)
        if request.dtcs and arbiter.own_address not in self._logged:
            self._logged.add(arbiter.own_address)
            log.warning("TSC1 to 0x%02X: a sender stopped without releasing its control and lost it "
                        "after %d of its periods; DTC SPN 898 FMI 9 is active while it stays silent "
                        "(logged once)", arbiter.own_address, arbiter.missed_periods)
        return request


class Latest:
    """The newest readings, and each message's payload from them when a Request asks for it."""

    def __init__(self) -> None:
        self.readings: Readings | None = None

    def payload_of(self, message: EngineMessage) -> Callable[[], bytes | None]:
        def payload() -> bytes | None:
            return None if self.readings is None else message.payload(self.readings)
        return payload


def _map_points(model: Class6Model) -> dict[str, float]:
    """EC1's engine map: points 2 to 5 are the full-load curve's corners between idle and the
    governor (speed, torque in percent of the reference), with the inertia and torque limit."""
    p = model.params
    reference = model.engine.reference_nm
    corners = [point for point in p.full_load if p.idle_rpm < point[0] < p.governed_rpm][:4]
    corners += [(_NA, _NA)] * (4 - len(corners))
    points = {}
    for number, (rpm, torque) in enumerate(corners, start=2):
        points[f"point{number}_rpm"] = rpm
        points[f"point{number}_pct"] = torque * 100.0 / reference
    return {**points, "inertia_kg_m2": p.engine_inertia_kg_m2, "default_limit_nm": reference}


class TransportOutput:
    """A message over eight bytes (EC1) goes by BAM through its node's network layer."""

    def __init__(self, part: NetworkPart, pgn: int) -> None:
        self._part = part
        self._pgn = pgn

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        self._part.broadcast(self._pgn, data)


def hosted_messages(profile: Profile, settings: Settings) -> list[tuple[Member, Message, int]]:
    """Each message a hosted node sends (but the ECU's own speed message), with its node and
    the identifier it goes out with: from the node's address (the engine's: ``--address`` when
    given)."""
    found = []
    by_node = {member.node: member for member in members(profile.database).values()}
    speed_id = profile.speed.frame_id
    engine_address = settings.j1939.address
    for message, _ in find_messages(profile.database, profile.speed.is_j1939, SPN_FIELDS, list(by_node)):
        if message.frame_id == speed_id:
            continue
        # a message of two senders (ETC2: engine and transmission) is its last hosted one's: the
        # first keeps the single node's address, the owner sends it in the powertrain
        member = [by_node[name] for name in message.senders if name in by_node][-1]
        address = engine_address if member.role == "engine" and engine_address is not None else member.address
        frame_id = from_source(message.frame_id, address) if message.is_extended_frame else message.frame_id
        found.append((member, message, frame_id))
    return found


def build_powertrain(port: Port, profile: Profile, settings: Settings, model: Class6Model,
                     engine: Callable[[Mapping[int, Callable[[], bytes | None]]], NetworkPart],
                     new_frame: FrameFactory) -> Powertrain:
    """The powertrain on ``port``: ``engine`` builds the engine's part (the ECU's own) from its
    requestable PGNs; the other nodes' parts, every message with its output and gate, here."""
    period = settings.run.resolved_period_s
    is_j1939 = profile.speed.is_j1939
    hosted = members(profile.database)
    messages: dict[str, list[EngineMessage]] = {role: [] for role in hosted}
    long_ones: list[tuple[EngineMessage, str]] = []
    for member, message, frame_id in hosted_messages(profile, settings):
        codecs = [(RoleCodec(message, s, is_j1939=is_j1939), s.spn) for s in message.signals
                  if s.spn in SPN_FIELDS]
        output: Output = Transmitter(port, frame_id, message.is_extended_frame, new_frame)
        built = EngineMessage(message, codecs, every_ticks(message, period), output, SPN_FIELDS)
        messages[member.role].append(built)
        if message.length > SINGLE_FRAME:
            long_ones.append((built, member.role))

    latest = Latest()

    def requestable(role: str) -> dict[int, Callable[[], bytes | None]]:
        return {pgn_of(m.message.frame_id): latest.payload_of(m) for m in messages[role]}

    parts = {"engine": engine(requestable("engine"))}
    for role, member in hosted.items():
        if role != "engine":
            parts[role] = build_member(role.upper(), member.part.function, member.address, port, profile,
                                       [member.node], settings.j1939, period, new_frame, requestable(role))
    for role, built_messages in messages.items():
        for m in built_messages:
            m.gate = parts[role]
    for m, role in long_ones:
        m.output = TransportOutput(parts[role], pgn_of(m.message.frame_id))
    speed = profile.speed
    ccvs_codecs = [(RoleCodec(speed.message, s, is_j1939=is_j1939), s.spn) for s in speed.message.signals
                   if s.spn in SPN_FIELDS]
    ccvs = (EngineMessage(speed.message, ccvs_codecs, 1, Transmitter(port, speed.frame_id, True, new_frame),
                          SPN_FIELDS) if ccvs_codecs else None)
    app_senders = list(profile.app.message.senders or [])
    cruise = node_attributes(profile.database, app_senders).get("address")
    all_messages = [m for ms in messages.values() for m in ms]
    others = {role: part for role, part in parts.items() if role != "engine"}
    controls = Controls(_tsc1(profile, hosted.get("engine"), settings, period, "tsc1"),
                        _tsc1(profile, hosted.get("retarder"), settings, period, "tsc1_retarder"),
                        period, parts["engine"].network.address)
    return Powertrain(port, parts["engine"], others, EngineFrames(all_messages), ccvs,
                      every_ticks(speed.message, period), model, cruise, latest, controls)


def _tsc1(profile: Profile, member: Member | None, settings: Settings, period_s: float,
          name: str) -> tuple[CommandIntake, Tsc1Arbiter] | None:
    """The TSC1 of the DBC addressed to ``member`` (by its identifier's destination), checked and
    arbitrated there; None when the DBC has none for it."""
    if member is None:
        return None
    for message in profile.database.messages:
        spns = {signal.spn for signal in message.signals}
        if TSC1_MODE in spns and destination_of(message.frame_id) == member.address:
            arbiter = Tsc1Arbiter(period_s, own_address=member.address,
                                  accepted=settings.j1939.accepted_tsc1_sources())
            return CommandIntake(message, member.address, name), arbiter
    return None
