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
from dataclasses import dataclass

from ecu_sim.bus.kernel import KernelTransmitter
from ecu_sim.bus.port import Port
from ecu_sim.bus.transmit import FrameFactory, Output, Transmitter, new_message, uses_kernel_timer
from ecu_sim.codec.profile import SPN_ACCELERATOR_PEDAL_POSITION_1, SPN_WHEEL_BASED_VEHICLE_SPEED, Profile
from ecu_sim.codec.role import RoleCodec
from ecu_sim.faults.injector import FaultInjector
from ecu_sim.faults.spec import DTC_KIND, FaultSchedule, describe
from ecu_sim.nodes.ccm import Ccm
from ecu_sim.nodes.ecu import Ecu
from ecu_sim.nodes.j1939part import build_network
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.model import Settings
from ecu_sim.vehicle.model import TruckModel
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger(__name__)

#: faults that leave a period without a frame
WITHHOLDING_FAULTS = frozenset({"drop", "silent", "delay"})


class NodeKind(enum.Enum):
    """Which node: the ECU sends speed and reads APP, the CCM the other way round."""

    ECU = "ecu"
    CCM = "ccm"

    def sends(self, profile: Profile) -> RoleCodec:
        return profile.speed if self is NodeKind.ECU else profile.app

    @property
    def input_spn(self) -> int:
        """The SPN of what the node receives, which its input DTCs name."""
        return SPN_ACCELERATOR_PEDAL_POSITION_1 if self is NodeKind.ECU else SPN_WHEEL_BASED_VEHICLE_SPEED


@dataclass(frozen=True)
class Built:
    """A node and its output chain: the transmitter, and the fault injector in front (or None)."""

    node: Ecu | Ccm
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
               tx_mode: str = "user", new_frame: FrameFactory = new_message) -> Built:
    """The node ``kind`` on ``port``; ``route`` is the road the ECU drives (the CCM has none)."""
    run = settings.run
    period = run.resolved_period_s
    sends = kind.sends(profile)
    all_faults = schedule.faults if schedule is not None else ()
    faults = tuple(f for f in all_faults if f.kind != DTC_KIND)
    network = build_network(kind.name, port, profile, sends, kind.input_spn, settings.j1939, all_faults,
                            period, new_frame)
    transmitter = _transmitter(kind, port, sends, period, tx_mode, new_frame, {f.kind for f in faults})
    output: Output = transmitter
    injector = None
    if schedule is not None and faults:
        injector = FaultInjector(output, sends, dataclasses.replace(schedule, faults=faults), period,
                                 kind.name)
        output = injector
        log.info("%s: injecting faults %s (seed %d)", kind.name, describe(faults), schedule.seed)
    if kind is NodeKind.ECU:
        if route is None:
            raise ValueError("an ECU needs a route")
        node: Ecu | Ccm = Ecu(port, profile, output, TruckModel(settings.truck), route,
                              run.initial_speed_kph, period,
                              hold_ticks(run.input_timeout_s(run.app_timeout_s), period),
                              settings.profile.app_source, network)
    else:
        node = Ccm(port, profile, output, settings.controller, run.set_speed_kph, period,
                   hold_ticks(run.input_timeout_s(run.speed_timeout_s), period),
                   settings.profile.speed_source, network)
    return Built(node, transmitter, injector)


def _transmitter(kind: NodeKind, port: Port, sends: RoleCodec, period_s: float, tx_mode: str,
                 new_frame: FrameFactory, fault_kinds: set[str]) -> Transmitter:
    if uses_kernel_timer(port, tx_mode):
        withholding = sorted(fault_kinds & WITHHOLDING_FAULTS)
        if not withholding:
            return KernelTransmitter(port, sends.frame_id, sends.is_extended_id, period_s)
        log.info("%s: frames are sent from the loop, not timed by the kernel, because %s must "
                 "withhold frames", kind.name, " and ".join(withholding))
    return Transmitter(port, sends.frame_id, sends.is_extended_id, new_frame)
