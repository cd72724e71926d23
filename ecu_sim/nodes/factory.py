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

import enum
import logging
from dataclasses import dataclass

from ecu_sim.bus.kernel import KernelTransmitter
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Output, Transmitter, new_message, uses_kernel_timer
from ecu_sim.codec.driver import DriverRoles
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.faults.spec import FaultSchedule, describe
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.cruise import DriverDemand
from ecu_sim.nodes.driver import Driver, Message
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.pedals.controls import ControlsSource
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.model import TruckModel
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger(__name__)

#: faults that leave a period without a frame
WITHHOLDING_FAULTS = frozenset({"drop", "silent", "delay"})


class NodeKind(enum.Enum):
    """Which node: the ECU sends speed and reads APP, the CCM the other way round; the driver
    sends APP (and the brake and cruise commands) from a person's controls."""

    ECU = "ecu"
    CCM = "ccm"
    DRIVER = "driver"

    def sends(self, profile: Profile) -> RoleCodec:
        return profile.speed if self is NodeKind.ECU else profile.app

    def frame_ids(self, profile: Profile, settings: Settings) -> list[int]:
        """The identifiers this node sends, which its port drops when they come back."""
        if self is not NodeKind.DRIVER:
            return [self.sends(profile).frame_id]
        sa = settings.driver.driver_source
        ids = [_from(profile.app, sa), *(_from(c, sa) for c in DriverRoles.of(profile).present())]
        return list(dict.fromkeys(ids))  # one message may carry several of the driver's signals


@dataclass(frozen=True)
class Built:
    """A node and its output chain: the transmitter, and the fault injector in front (or None)."""

    node: Ecu | Ccm | Driver
    transmitter: Transmitter
    faults: FaultInjector | None

    def counters_text(self) -> str:
        return self.node.counters_text() + self._faults_text()

    def status_line(self) -> str:
        """The node's status line, with what the faults did so far when there are any."""
        return self.node.status_line() + self._faults_text()

    def _faults_text(self) -> str:
        return "" if self.faults is None else f" | faults {self.faults.summary()}"


def hold_ticks(timeout_s: float, period_s: float) -> int:
    """Ticks that use an input value, counting the first: never a value older than the timeout."""
    return max(1, ticks_in(timeout_s, period_s))


def build_node(kind: NodeKind, port: Port, profile: Profile, settings: Settings, *,
               route: GradeSchedule | None = None, schedule: FaultSchedule | None = None,
               tx_mode: str = "user", new_frame: FrameFactory = new_message,
               controls: ControlsSource | None = None) -> Built:
    """The node ``kind`` on ``port``; ``route`` is the road the ECU drives (the CCM has none),
    ``controls`` the device the driver reads."""
    run = settings.run
    period = run.resolved_period_s
    sends = kind.sends(profile)
    faults = schedule.faults if schedule is not None else ()
    sent_id = kind.frame_ids(profile, settings)[0]
    transmitter = _transmitter(kind, port, sent_id, sends.is_extended_id, period, tx_mode, new_frame,
                               {f.kind for f in faults})
    output: Output = transmitter
    injector = None
    if schedule is not None and faults:
        injector = FaultInjector(output, sends, schedule, period, kind.name)
        output = injector
        log.info("%s: injecting faults %s (seed %d)", kind.name, describe(faults), schedule.seed)
    if kind is NodeKind.ECU:
        if route is None:
            raise ValueError("an ECU needs a route")
        node: Ecu | Ccm | Driver = Ecu(port, profile, output, TruckModel(settings.truck), route,
                              run.initial_speed_kph, period,
                              hold_ticks(run.input_timeout_s(run.app_timeout_s), period),
                              settings.profile.app_source)
    elif kind is NodeKind.CCM:
        hold = hold_ticks(run.input_timeout_s(run.speed_timeout_s), period)
        node = Ccm(port, profile, output, settings.controller, run.set_speed_kph, period, hold,
                   settings.profile.speed_source, DriverDemand(profile.app, DriverRoles.of(profile), hold))
    else:
        if controls is None:
            raise ValueError("a driver needs its controls")
        messages = _driver_messages(port, profile, settings, tx_mode, new_frame)
        node = Driver(port, profile.speed, profile.app, output, messages, controls,
                      hold_ticks(run.input_timeout_s(run.speed_timeout_s), period),
                      settings.profile.speed_source)
    return Built(node, transmitter, injector)


def _from(codec: RoleCodec, source: int) -> int:
    """``codec``'s identifier sent from ``source``; the driver needs its own address to be told apart."""
    if not codec.is_j1939:
        raise ConfigError(f"the driver sends {codec.message_name} under its own J1939 source address, "
                          "but that message is not a J1939 parameter group in the DBC "
                          '(BA_ "VFrameFormat" ... 3 or BA_ "ProtocolType" "J1939")')
    return (codec.frame_id & ~0xFF) | source


def _driver_messages(port: Port, profile: Profile, settings: Settings, tx_mode: str,
                     new_frame: FrameFactory) -> tuple[Message, ...]:
    """The driver's messages besides APP, one per DBC message, each at its cycle time."""
    period = settings.run.resolved_period_s
    roles = DriverRoles.of(profile)
    by_frame: dict[int, list[tuple[str, RoleCodec]]] = {}
    for name in ("brake", "resume", "cancel"):
        codec = getattr(roles, name)
        if codec is not None:
            by_frame.setdefault(_from(codec, settings.driver.driver_source), []).append((name, codec))
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
