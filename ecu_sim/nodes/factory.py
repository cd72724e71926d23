"""The one place a node is put together: its output chain, its input hold, its model or controller.

Real-time runs, simulations, replays and tests all build nodes here, so they run the same node;
only the port (and so the bus and clock behind it) differs. Everything a node needs is given at
construction: nothing is swapped in afterwards.

The output chain is ``node -> fault injector (when faults are scheduled) -> transmitter -> port``.
A fault that withholds frames (drop, silent, a delay before its first value) cannot be done by
skipping an update of the kernel's timer, which would repeat the previous frame: such a node
sends from the loop instead, and says so.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ecu_sim.bus.kernel import KernelTransmitter
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Output, Transmitter, new_message, uses_kernel_timer
from ecu_sim.calibration.image import Image
from ecu_sim.codec.driver import DriverRoles
from ecu_sim.codec.profile import SPN_ACCELERATOR_PEDAL_POSITION_1, SPN_WHEEL_BASED_VEHICLE_SPEED, Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.faults.spec import DTC_KIND, WITHHOLDING_FAULTS, Fault, FaultSchedule, describe
from ecu_sim.j1939.ids import source_address_of
from ecu_sim.member.application import Calibrated
from ecu_sim.member.environment import NodeEnvironment
from ecu_sim.member.part import NetworkPart, build_network
from ecu_sim.nodes import calibrated
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.commands import Commands, command_codecs
from ecu_sim.nodes.driver import Driver, Message
from ecu_sim.nodes.driver_demand import DriverDemand
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.identifiers import own_id, own_message_id, sent_from, spn_codec
from ecu_sim.nodes.preview import build_preview
from ecu_sim.pedals.reading import PedalSource
from ecu_sim.powertrain.build import build_powertrain, hosted_messages
from ecu_sim.powertrain.engine_frames import EngineFrames, find_messages
from ecu_sim.powertrain.network import Powertrain
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import POWERTRAIN, Settings
from ecu_sim.vehicle.drive import (
    Class6Vehicle,
    GradeProfile,
    Plant,
    Terrain,
    TestbedVehicle,
    Vehicle,
    drives_class6,
    testbed_route,
)
from ecu_sim.vehicle.model import TruckModel

log = logging.getLogger(__name__)

#: J1939 SPN 521, brake pedal position: the brake demand a class6 ECU receives and the CCM sends
SPN_BRAKE_PEDAL_POSITION = 521
#: J1939 SPNs 523 and 524, current and selected gear: the CCM holds its integral while they differ
SPN_CURRENT_GEAR = 523
SPN_SELECTED_GEAR = 524
#: J1939 SPN 525, transmission requested gear (TC1): the predictive CCM's eco-roll asks for neutral
SPN_REQUESTED_GEAR = 525


class NodeKind(enum.Enum):
    """Which node: the ECU sends speed and reads APP, the CCM the other way round; the driver
    sends APP (and the brake and cruise commands) from a person's pedals and buttons."""

    ECU = "ecu"
    CCM = "ccm"
    DRIVER = "driver"

    def sends(self, profile: Profile) -> RoleCodec:
        return profile.speed if self is NodeKind.ECU else profile.app

    def frame_ids(self, profile: Profile, settings: Settings) -> list[int]:
        """The identifiers this node sends, which its port drops when they come back: its role's
        first, then a class6 ECU's engine messages or a class6 CCM's brake demand."""
        class6 = settings.vehicle.preset == "class6"
        if self is NodeKind.ECU and class6 and settings.j1939.network == POWERTRAIN:
            hosted = [frame_id for _, _, frame_id in hosted_messages(profile, settings)]
            return list(dict.fromkeys([own_id(profile.speed, settings), *hosted]))
        if self is NodeKind.ECU and settings.vehicle.preset == "class6":
            engine = [own_message_id(m, settings) for m, _ in find_messages(profile.database,
                                                                          profile.speed.is_j1939)]
            return list(dict.fromkeys([own_id(profile.speed, settings), *engine]))
        if self is NodeKind.CCM and settings.ccm.command == "tsc1":
            tsc1, xbr = command_codecs(profile.database, source_address_of(own_id(profile.app, settings)))
            return [own_id(profile.app, settings), tsc1.frame_id, xbr.frame_id]
        if self is NodeKind.CCM and settings.vehicle.preset == "class6":
            extra = [spn_codec(profile, SPN_BRAKE_PEDAL_POSITION), eco_roll_codec(profile, settings)]
            return list(dict.fromkeys([own_id(profile.app, settings),
                                       *[own_id(codec, settings) for codec in extra if codec is not None]]))
        if self is not NodeKind.DRIVER:
            return [own_id(self.sends(profile), settings)]
        sa = settings.driver.driver_source
        ids = [sent_from(profile.app, sa), *(sent_from(c, sa) for c in DriverRoles.of(profile).present())]
        return list(dict.fromkeys(ids))  # one message may carry several of the driver's signals

    @property
    def input_spn(self) -> int:
        """The SPN of what the node receives, which its input DTCs name."""
        return SPN_ACCELERATOR_PEDAL_POSITION_1 if self is NodeKind.ECU else SPN_WHEEL_BASED_VEHICLE_SPEED


@dataclass(frozen=True)
class Built:
    """A node and its output chain: the transmitter, and the fault injector in front (or None)."""

    node: Ecu | Ccm | Driver
    transmitter: Transmitter
    faults: FaultInjector | None
    kind: NodeKind

    def counters_text(self) -> str:
        return self.node.counters_text() + self._faults_text()

    def status_line(self) -> str:
        """The node's status line, with what the faults did so far when there are any."""
        return self.node.status_line() + self._faults_text()

    def _faults_text(self) -> str:
        return "" if self.faults is None else f" | faults {self.faults.summary()}"

    def owners(self, control: str) -> list[NodeKind]:  # a person's controls ask it (ecu_sim.controls.node)
        return kinds_taking(control)


def kinds_taking(control: str) -> list[NodeKind]:
    """The kinds of node that take a person's ``control`` (their ``CONTROLS``), in NodeKind's order."""
    classes: dict[NodeKind, type[Ecu | Ccm | Driver]] = {NodeKind.ECU: Ecu, NodeKind.CCM: Ccm,
                                                         NodeKind.DRIVER: Driver}
    return [kind for kind, cls in classes.items() if control in cls.CONTROLS]


def ecu_of(built: Built) -> Ecu:
    """The ECU that :func:`build_node` built for ``NodeKind.ECU``: the factory alone knows the classes."""
    if not isinstance(built.node, Ecu):
        raise TypeError(f"built a {type(built.node).__name__}, not the ECU")
    return built.node


def ccm_of(built: Built) -> Ccm:
    """The CCM that :func:`build_node` built for ``NodeKind.CCM``."""
    if not isinstance(built.node, Ccm):
        raise TypeError(f"built a {type(built.node).__name__}, not the CCM")
    return built.node


def hold_ticks(timeout_s: float, period_s: float) -> int:
    """Ticks that use an input value, counting the first: never a value older than the timeout."""
    return max(1, ticks_in(timeout_s, period_s))


def build_node(kind: NodeKind, port: Port, profile: Profile, settings: Settings, *,
               route: GradeProfile | Terrain | None = None, schedule: FaultSchedule | None = None,
               tx_mode: str = "user", new_frame: FrameFactory = new_message,
               plant: Plant | None = None, pedals: PedalSource | None = None,
               switchable_faults: bool = False) -> Built:
    """The node ``kind`` on ``port``; ``route`` is the road the ECU drives: a
    grade profile or an elevation road for the testbed truck, an elevation road for ``class6``
    (``settings.vehicle.preset`` says which truck); for a predictive CCM the road it previews (the
    PI controller's CCM has none). ``plant`` is the testbed
    truck it integrates (default: the built-in model of ``settings.truck``; ``--plant``: another
    program's). ``pedals`` is the device the driver reads. ``switchable_faults``: faults may be
    switched while the node runs (``--web`` and its replay), so the injector is there even with
    none scheduled."""
    run = settings.run
    period = run.resolved_period_s
    sends = kind.sends(profile)
    all_faults = schedule.faults if schedule is not None else ()
    faults = tuple(f for f in all_faults if f.kind != DTC_KIND)
    if kind is NodeKind.CCM and faults and settings.ccm.command == "tsc1":
        raise ConfigError(f"faults ({describe(faults)}) act on the CCM's APP frames, and with --command "
                          "tsc1 its demand goes in TSC1 and XBR, which they do not reach: leave out "
                          "--fault/--scenario, or use --command app")
    class6 = kind is NodeKind.ECU and route is not None and drives_class6(route, settings.vehicle.preset)
    hosts_powertrain = class6 and settings.j1939.network == POWERTRAIN
    images = calibrated.node_images(calibrated.calibrated_kinds(kind.name, hosts_powertrain), settings)
    powertrain = build_powertrain(
        port, profile, settings, lambda running: calibrated.class6_model(settings, running),
        lambda periodic, given: _engine_part(port, profile, settings, all_faults, new_frame, periodic, given),
        new_frame, images, lambda m, r: calibrated.restart_vehicle(node, m, r)) if hosts_powertrain else None
    engine = _engine_frames(port, profile, settings, new_frame) if class6 and powertrain is None else None
    network = (powertrain.engine if powertrain is not None else _network(
        kind, port, profile, settings, all_faults, new_frame, None if engine is None else engine.latest(),
        calibrated.start(images, kind.name.lower(), settings,
                         lambda: calibrated.restart_node(node, network, images, settings))))
    images = images if powertrain is not None else calibrated.own_images(network, images)  # kept, boot
    sent_id = kind.frame_ids(profile, settings)[0]
    every = 1 if powertrain is None else powertrain.role_every
    transmitter = _transmitter(kind, port, sent_id, sends.is_extended_id, every * period, tx_mode, new_frame,
                               {f.kind for f in faults})
    output: Output = transmitter
    injector = None
    if (schedule is not None and faults) or (switchable_faults and kind is not NodeKind.DRIVER):
        schedule = schedule or FaultSchedule((), 0)
        injector = FaultInjector(output, sends, dataclasses.replace(schedule, faults=faults), period,
                                 kind.name)
        output = injector
        if faults:
            log.info("%s: injecting faults %s (seed %d)", kind.name, describe(faults), schedule.seed)
    if kind is NodeKind.ECU:
        if route is None:
            raise ValueError("an ECU needs a route")
        node: Ecu | Ccm | Driver = _ecu(port, profile, output, settings, route, plant, network, engine,
                                        powertrain, images)
    elif kind is NodeKind.CCM:
        hold = hold_ticks(run.input_timeout_s(run.speed_timeout_s), period)
        gears, brake, tc1 = (_ccm_extras(port, profile, settings, new_frame)
                             if settings.vehicle.preset == "class6" else (None, None, None))
        commands = _ccm_commands(port, profile, settings, new_frame)
        node = Ccm(port, profile, output, calibrated.pi_params(images["ccm"]), run.set_speed_kph, period,
                   hold, settings.profile.speed_source, gears=gears, brake=None if commands else brake,
                   driver=DriverDemand(profile.app, DriverRoles.of(profile), hold), network=network,
                   preview=build_preview(settings, route, eco_roll=tc1 is not None), commands=commands,
                   gear_request=tc1)
    else:
        if pedals is None:
            raise ValueError("a driver needs its pedals")
        messages = _driver_messages(port, profile, settings, tx_mode, new_frame)
        node = Driver(port, profile.speed, profile.app, output, messages, pedals,
                      hold_ticks(run.input_timeout_s(run.speed_timeout_s), period),
                      settings.profile.speed_source)
    return Built(node, transmitter, injector, kind)


def _network(kind: NodeKind, port: Port, profile: Profile, settings: Settings, faults: tuple[Fault, ...],
             new_frame: FrameFactory, periodic: Mapping[int, Callable[[], bytes | None]] | None,
             calibration: Calibrated | None) -> NetworkPart | None:
    """The node's J1939 part; the driver has none (it is a person's pedals, not an ECU)."""
    if kind is NodeKind.DRIVER:
        return None
    env = NodeEnvironment(port, profile, settings.j1939, settings.run.resolved_period_s, new_frame)
    return build_network(kind.name, env, kind.sends(profile), kind.input_spn, faults, periodic,
                         settings.diagnostics, settings.fms.vin, calibration)


def _engine_part(port: Port, profile: Profile, settings: Settings, faults: tuple[Fault, ...],
                 new_frame: FrameFactory, periodic: Mapping[int, Callable[[], bytes | None]],
                 calibration: Calibrated | None) -> NetworkPart:
    """The engine's part in the powertrain network, whose speed message is a J1939 one (checked)."""
    part = _network(NodeKind.ECU, port, profile, settings, faults, new_frame, periodic, calibration)
    if part is None:
        raise ConfigError("--network powertrain needs the speed message to be a J1939 parameter group")
    return part


def _ecu(port: Port, profile: Profile, output: Output, settings: Settings, route: GradeProfile | Terrain,
         plant: Plant | None, network: NetworkPart | None, engine: EngineFrames | None,
         powertrain: Powertrain | None, images: Mapping[str, Image]) -> Ecu:
    """The ECU with its vehicle; a truck with a driveline also gets the brake input and engine frames
    (or, with ``--network powertrain``, the other hosted nodes, whose model is the truck's)."""
    run = settings.run
    v = settings.vehicle
    period = run.resolved_period_s
    hold = hold_ticks(run.input_timeout_s(run.app_timeout_s), period)
    vehicle: Vehicle
    if drives_class6(route, v.preset):
        model = calibrated.class6_model(settings, images) if powertrain is None else powertrain.model
        vehicle = Class6Vehicle(model, route, v.wheelbase_m, run.initial_speed_kph, period)
        return Ecu(port, profile, output, vehicle, hold, settings.profile.app_source,
                   brake=spn_codec(profile, SPN_BRAKE_PEDAL_POSITION), engine_frames=engine, network=network,
                   powertrain=powertrain,
                   gear_request=None if powertrain is not None else spn_codec(profile, SPN_REQUESTED_GEAR))
    truck = TruckModel(settings.truck) if plant is None else plant
    vehicle = TestbedVehicle(truck, testbed_route(route, v.wheelbase_m), run.initial_speed_kph, period,
                             pure=plant is None)
    return Ecu(port, profile, output, vehicle, hold, settings.profile.app_source, network=network)


def _engine_frames(port: Port, profile: Profile, settings: Settings,
                   new_frame: FrameFactory) -> EngineFrames | None:
    """A class6 ECU's engine and transmission messages, each with its own transmitter."""
    return EngineFrames.build(
        profile.database, profile.speed.is_j1939, settings.run.resolved_period_s,
        lambda m: Transmitter(port, own_message_id(m, settings), m.is_extended_frame, new_frame))


def _ccm_extras(port: Port, profile: Profile, settings: Settings, new_frame: FrameFactory) -> tuple[
        tuple[RoleCodec, RoleCodec] | None, tuple[RoleCodec, Output] | None, tuple[RoleCodec, Output] | None]:
    """What a CCM driving a class6 truck adds on a DBC with ETC2, EBC1 and TC1: the gear input, the
    brake output and the eco-roll's request for neutral. With the testbed vehicle the CCM stays as
    it was: APP out, speed in."""
    current, selected = spn_codec(profile, SPN_CURRENT_GEAR), spn_codec(profile, SPN_SELECTED_GEAR)
    gears = (current, selected) if current is not None and selected is not None else None
    brake, tc1 = spn_codec(profile, SPN_BRAKE_PEDAL_POSITION), eco_roll_codec(profile, settings)
    outputs = [None if codec is None else
               (codec, Transmitter(port, own_id(codec, settings), codec.is_extended_id, new_frame))
               for codec in (brake, tc1)]
    return gears, outputs[0], outputs[1]


def eco_roll_codec(profile: Profile, settings: Settings) -> RoleCodec | None:
    """TC1's requested gear, for a predictive CCM with eco-roll on a DBC that has it (not with
    ``--command tsc1``, whose controller speaks to the powertrain network); else None."""
    predictive = settings.controller.predictive
    if predictive is None or not predictive.eco_roll or settings.ccm.command == "tsc1":
        return None
    return spn_codec(profile, SPN_REQUESTED_GEAR)


def _ccm_commands(port: Port, profile: Profile, settings: Settings,
                  new_frame: FrameFactory) -> Commands | None:
    """With ``[ccm] command = tsc1``: TSC1 and XBR from the CCM's address, each from the loop
    (a counter changes every frame, which the kernel's timer cannot do); else None."""
    if settings.ccm.command != "tsc1":
        return None
    tsc1, xbr = command_codecs(profile.database, source_address_of(own_id(profile.app, settings)))
    return Commands.build(tsc1, Transmitter(port, tsc1.frame_id, tsc1.is_extended_id, new_frame),
                          xbr, Transmitter(port, xbr.frame_id, xbr.is_extended_id, new_frame),
                          settings.run.resolved_period_s)


def _driver_messages(port: Port, profile: Profile, settings: Settings, tx_mode: str,
                     new_frame: FrameFactory) -> tuple[Message, ...]:
    """The driver's messages besides APP, one per DBC message, each at its cycle time."""
    period = settings.run.resolved_period_s
    roles = DriverRoles.of(profile)
    by_frame: dict[int, list[tuple[str, RoleCodec]]] = {}
    for name in ("brake", "resume", "cancel"):
        codec = getattr(roles, name)
        if codec is not None:
            by_frame.setdefault(sent_from(codec, settings.driver.driver_source), []).append((name, codec))
    messages = []
    for frame_id, signals in by_frame.items():
        cycle_ms = signals[0][1].message.cycle_time
        every = max(1, ticks_in(cycle_ms / 1000.0, period)) if cycle_ms else 1
        transmitter = _transmitter(NodeKind.DRIVER, port, frame_id, signals[0][1].is_extended_id,
                                   every * period, tx_mode, new_frame, set())
        messages.append(Message(tuple(signals), transmitter, every))
    return tuple(messages)


def _transmitter(kind: NodeKind, port: Port, frame_id: int, is_extended_id: bool, period_s: float,
                 tx_mode: str, new_frame: FrameFactory, fault_kinds: set[str]) -> Transmitter:
    if uses_kernel_timer(port, tx_mode):
        withholding = sorted(fault_kinds & WITHHOLDING_FAULTS)
        if not withholding:
            return KernelTransmitter(port, frame_id, is_extended_id, period_s)
        log.info("%s: frames are sent from the loop, not timed by the kernel, because %s must "
                 "withhold frames", kind.name, " and ".join(withholding))
    return Transmitter(port, frame_id, is_extended_id, new_frame)
