"""Building the powertrain network: its nodes' parts, every message with its output, its commands.

The factory (:mod:`ecu_sim.nodes.factory`) calls :func:`build_powertrain` for an ECU of
``--network powertrain``; everything is built here up front, before the first tick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from cantools.database.can import Message, Signal

from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Output, Transmitter
from ecu_sim.calibration.image import Image
from ecu_sim.codec.nm import node_attributes
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import messages_with, spn_signals
from ecu_sim.j1939.frames import SINGLE_FRAME
from ecu_sim.j1939.ids import destination_of, from_source, pgn_of
from ecu_sim.member.application import Restart
from ecu_sim.member.environment import NodeEnvironment
from ecu_sim.member.part import NetworkPart, booting, build_member
from ecu_sim.powertrain.brake_control import BrakeController
from ecu_sim.powertrain.calibrated import retarder_points, running_images, start_calibration
from ecu_sim.powertrain.commanded import Commanded, Hold
from ecu_sim.powertrain.engine_control import Tsc1Arbiter
from ecu_sim.powertrain.engine_frames import (
    EngineFrames,
    EngineMessage,
    TransportOutput,
    every_ticks,
    find_messages,
)
from ecu_sim.powertrain.fms import FmsState, fms_texts
from ecu_sim.powertrain.intake import TC1_GEAR, TSC1_MODE, XBR_DEMAND, CommandIntake
from ecu_sim.powertrain.members import SPN_FIELDS, Member, members
from ecu_sim.powertrain.network import Latest, Powertrain
from ecu_sim.powertrain.restbus import build_restbus, restbus_files
from ecu_sim.powertrain.retarder import Retarder
from ecu_sim.powertrain.transmission_control import GearRequests
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.class6 import Class6Model


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


def build_powertrain(port: Port, profile: Profile, settings: Settings,
                     model_of: Callable[[Mapping[str, Image]], Class6Model],
                     engine: Callable[[Mapping[int, Callable[[], bytes | None]], Restart], NetworkPart],
                     new_frame: FrameFactory, images: Mapping[str, Image],
                     restarted: Callable[[Class6Model, bool], None]) -> Powertrain:
    """The powertrain on ``port``: ``engine`` builds the engine's part (the ECU's own) from its
    requestable PGNs and its restart; the other nodes' parts, every message with its output and
    gate, here. ``images``: the calibration each node starts from; ``model_of`` makes the truck's
    model from the images the nodes run (their kept ones, boot mode), here and at each restart of
    a node's application, after which ``restarted`` hands the new model to the truck and says
    whether the engine's application runs. A node in boot mode has no control function: nothing
    it would obey (TSC1, XBR, TC1) is taken until its application runs again."""
    period = settings.run.resolved_period_s
    is_j1939 = profile.speed.is_j1939
    hosted = members(profile.database)
    found = [(member.role, message, frame_id,
              [(_codec(message, s, is_j1939), spn) for spn, s in spn_signals(message, SPN_FIELDS)])
             for member, message, frame_id in hosted_messages(profile, settings)]
    latest = Latest()
    # each message is built once its node's part is (it waits for the part's claim, a long one sends
    # through its transport); a request the part answers reads the message once that is built
    made: dict[tuple[str, int], EngineMessage] = {}

    def answer(role: str, pgn: int) -> Callable[[], bytes | None]:
        def payload() -> bytes | None:
            return None if latest.readings is None else made[role, pgn].payload(latest.readings)
        return payload

    def requestable(role: str) -> dict[int, Callable[[], bytes | None]]:
        return {pgn_of(message.frame_id): answer(role, pgn_of(message.frame_id))
                for r, message, _, _ in found if r == role}

    env = NodeEnvironment(port, profile, settings.j1939, period, new_frame)
    powertrain: Powertrain

    def restart() -> None:  # one node's application restarted: the truck's control built again
        model, commanded = rebuild()
        powertrain.restart(model, commanded)
        restarted(model, not booting(parts["engine"]))

    parts = {"engine": engine(requestable("engine"), restart)}
    for role, member in hosted.items():
        if role != "engine":
            image = images.get(role)
            given = None if image is None else start_calibration(image, settings, restart)
            parts[role] = build_member(role.upper(), member.part.function, member.address, env, [member.node],
                                       requestable(role), diagnostics=settings.diagnostics,
                                       vin=settings.fms.vin, calibration=given)
    messages: dict[str, list[EngineMessage]] = {role: [] for role in hosted}
    for role, message, frame_id, codecs in found:
        pgn = pgn_of(message.frame_id)
        output: Output = (TransportOutput(parts[role], pgn) if message.length > SINGLE_FRAME else
                          Transmitter(port, frame_id, message.is_extended_frame, new_frame))
        made[role, pgn] = built = EngineMessage(message, codecs, every_ticks(message, period), output,
                                                SPN_FIELDS, gate=parts[role], period_s=period)
        messages[role].append(built)
    speed = profile.speed
    ccvs_codecs = [(_codec(speed.message, s, is_j1939), spn)
                   for spn, s in spn_signals(speed.message, SPN_FIELDS)]
    ccvs = (EngineMessage(speed.message, ccvs_codecs, 1, Transmitter(port, speed.frame_id, True, new_frame),
                          SPN_FIELDS) if ccvs_codecs else None)
    app_senders = list(profile.app.message.senders or [])
    cruise = node_attributes(profile.database, app_senders).get("address")
    all_messages = [m for ms in messages.values() for m in ms]
    others = {role: part for role, part in parts.items() if role != "engine"}
    holds = {role: part.hold for role, part in parts.items()}

    def rebuild() -> tuple[Class6Model, Commanded]:
        running = running_images({role: part.application for role, part in parts.items()}, images)
        model = model_of(running)
        return model, _commanded(profile, hosted, settings, model, period, parts["engine"].network.address,
                                 cruise, holds, retarder_points(running.get("retarder")),
                                 {role for role, part in parts.items() if booting(part)})

    model, commanded = rebuild()
    files = restbus_files(settings)
    fms = FmsState(settings.fms, period, model.params.mass_kg) if files else None
    if fms is not None:
        def newest() -> Sequence[float] | None:
            return None if latest.readings is None else latest.readings + fms.carried
        restbus = build_restbus(files, {part.network.address for part in parts.values()}, env, newest,
                                fms_texts(settings.fms))
        others.update(restbus.parts)
        all_messages += restbus.messages
    powertrain = Powertrain(port, parts["engine"], others, EngineFrames(all_messages), ccvs,
                            every_ticks(speed.message, period), model, latest, commanded, fms,
                            settings.fms.enabled)
    return powertrain


def _codec(message: Message, signal: Signal, is_j1939: bool) -> RoleCodec:
    """A signal's codec. A state field shorter than a byte (a torque mode, EBC5's XBR state) uses
    every value its SPN defines (14 "other", 2 "no demand accepted"), so only the DBC's range
    bounds it, not J1939's discrete "error" and "not available" of the top values."""
    return RoleCodec(message, signal, is_j1939=is_j1939 and signal.length >= 8)


def _commanded(profile: Profile, hosted: Mapping[str, Member], settings: Settings, model: Class6Model,
               period_s: float, own_address: int, cruise_address: int | None,
               holds: Mapping[str, Hold], retarder_map: tuple[tuple[float, float], ...],
               booting: AbstractSet[str]) -> Commanded:
    """The commands the DBC addresses to the hosted nodes (by their identifiers' destinations):
    TSC1 to the engine and to the retarder, XBR to the brakes, TC1 to the transmission, each with
    its control function; none for a node in ``booting`` (its application does not run)."""
    accepted = settings.j1939.accepted_tsc1_sources()

    def intake(role: str, spn: int, name: str, checked: bool = True) -> CommandIntake | None:
        member = hosted.get(role)
        if member is None or role in booting:
            return None
        for message in messages_with(profile.database, spn):
            if destination_of(message.frame_id) == member.address:
                return CommandIntake(message, member.address, name, checked)
        return None

    engine = intake("engine", TSC1_MODE, "tsc1")
    retarder = intake("retarder", TSC1_MODE, "tsc1_retarder")
    brakes = intake("brakes", XBR_DEMAND, "xbr")
    gears = intake("transmission", TC1_GEAR, "tc1", checked=False)
    p = model.params
    return Commanded(
        period_s,
        None if engine is None else (engine, Tsc1Arbiter(period_s, own_address=engine.destination,
                                                          accepted=accepted)),
        None if retarder is None else (retarder, Retarder(period_s, own_address=retarder.destination,
                                                          accepted=accepted, points=retarder_map)),
        None if brakes is None else (brakes, BrakeController(period_s, p.max_brake_decel_g * p.gravity_mps2,
                                                             own_address=brakes.destination)),
        own_address, model, cruise_address, holds,
        None if gears is None else (gears, GearRequests(period_s)))
