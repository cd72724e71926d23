"""What the powertrain obeys: the received commands and the control functions they drive.

A checked TSC1 or XBR frame (:mod:`ecu_sim.powertrain.intake`) goes straight to its control
function; at each tick the functions decide, before the truck steps, the engine's and the
retarder's torque and the foundation brakes' demand, and their lost senders' DTCs go into the
hosted nodes' DM1. What CCVS1 says of cruise is decided here too, from what the engine obeys.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import can

from ecu_sim.j1939.dm import Dtc
from ecu_sim.powertrain.brake_control import BrakeController, BrakeOutput, XbrAdmission
from ecu_sim.powertrain.engine_control import EngineRequest, TorqueMode, Tsc1Admission, Tsc1Arbiter
from ecu_sim.powertrain.intake import CommandIntake, tc1_request, tsc1_command, xbr_command
from ecu_sim.powertrain.retarder import Retarder, RetarderOutput
from ecu_sim.powertrain.transmission_control import GearOutput, GearRequests
from ecu_sim.vehicle.class6 import Class6Model, Class6State
from ecu_sim.vehicle.engine import EngineCommand

log = logging.getLogger(__name__)
#: a control function's tick: each carries the DTCs it holds active
_Output = TypeVar("_Output", EngineRequest, BrakeOutput, RetarderOutput, GearOutput)
#: a hosted node's DM1 taking the DTCs its control functions hold active
Hold = Callable[[frozenset[Dtc]], None]
#: what the control functions say of a frame they act on
_TSC1_TAKEN: Final = frozenset({Tsc1Admission.ACCEPTED, Tsc1Admission.SKIPPED})
_XBR_TAKEN: Final = frozenset({XbrAdmission.ACCEPTED})
_TC1_TAKEN: Final = frozenset({True})
_NO_SENDERS: Final[frozenset[int]] = frozenset()
Command = TypeVar("Command")
Verdict = TypeVar("Verdict")


@dataclass(frozen=True)
class Route(Generic[Command, Verdict]):
    """A command's way from its frames to its control function: the intake that checks them, the
    decoder (None: a demand that is not available), the function's admit and its verdicts that
    mean the frame acts."""

    intake: CommandIntake
    decode: Callable[[CommandIntake, int, bytes], Command | None]
    admit: Callable[[int, Command], Verdict]
    taken: frozenset[Verdict]


class CruiseState(enum.IntEnum):
    """SPN 527 cruise control states (CCVS1): those the engine can tell from what it obeys."""

    OFF = 0
    HOLD = 1
    ACCELERATOR_OVERRIDE = 6


class Commanded:
    """The received commands and the control functions they drive: TSC1 to the engine (its
    arbiter), TSC1 to the retarder (the retarder), XBR to the brakes (the brake controller), TC1
    to the transmission (its gear requests).

    The control functions count their timeouts in ticks at which a frame could have been heard:
    the transmitted ticks, not the overdue ones a late loop runs to catch up (they send nothing,
    and whatever arrived during the pause is taken in the first of them). So a pause of the ECU's
    process does not turn a healthy stream into silence; in virtual time every tick is
    transmitted and this count is the tick number itself.
    """

    def __init__(self, period_s: float, engine: tuple[CommandIntake, Tsc1Arbiter] | None,
                 retarder: tuple[CommandIntake, Retarder] | None,
                 brakes: tuple[CommandIntake, BrakeController] | None, own_address: int,
                 model: Class6Model, cruise_address: int | None, holds: Mapping[str, Hold],
                 transmission: tuple[CommandIntake, GearRequests] | None = None) -> None:
        """``cruise_address``: where the cruise control's APP comes from (its demand while it
        drives, unless it commands by TSC1); ``holds``: each hosted node's DM1, by role, which
        takes the DTCs its control function holds active."""
        self.period_s = period_s
        self.engine = engine
        self.retarder = retarder
        self.brakes = brakes
        self.model = model
        self._cruise_address = cruise_address
        #: the tick up to which the cruise control's APP was heard (CCVS1's enable switch)
        self.cruise_heard_until = -1
        self._holds = holds
        #: each command's way to its control function, in the order frames are matched
        routes: list[Route[Any, Any]] = []
        for pair in (engine, retarder):
            if pair is not None:
                routes.append(Route(pair[0], tsc1_command, pair[1].admit, _TSC1_TAKEN))
        if brakes is not None:
            routes.append(Route(brakes[0], xbr_command, brakes[1].admit, _XBR_TAKEN))
        self.transmission = transmission
        if transmission is not None:
            routes.append(Route(transmission[0], tc1_request, transmission[1].admit, _TC1_TAKEN))
        self._routes = tuple(routes)
        #: the transmission is held in neutral by a TC1 this tick
        self.neutral = False
        self.engine_request = EngineRequest(None, None, TorqueMode.NO_REQUEST, own_address, frozenset())
        self.retarder_output: RetarderOutput | None = None
        self.brake_output: BrakeOutput | None = None
        #: the newest command: what a step prepared ahead of the deadline assumes
        self.command = EngineCommand()
        #: the driver's brake demand the newest decision was made with
        self.driver_brake_pct = 0.0
        #: what CCVS1 says of cruise, from what the engine obeys
        self.cruise = CruiseState.OFF
        #: cruise took the engine and was not cancelled since (the driver's pedal may override it)
        self._engaged = False
        self._logged: set[str] = set()
        #: the transmitted ticks decided so far: the tick the control functions stamp and age by
        self.heard_ticks = 0

    def receive(self, msg: can.Message) -> str | None:
        """None: not a command; "": taken; else the kind of ``invalid`` the frame counts as."""
        if not msg.is_extended_id:
            return None
        arbitration_id = msg.arbitration_id
        for route in self._routes:
            intake = route.intake
            if intake.matches(arbitration_id):
                payload = bytes(msg.data)
                failure = intake.check(arbitration_id, payload)
                if failure is not None:
                    return failure
                command = route.decode(intake, arbitration_id, payload)
                if command is None:
                    return f"{intake.name}_not_available"
                taken = route.admit(self.heard_ticks, command) in route.taken
                return "" if taken else f"{intake.name}_refused"
        return None

    def heard_app(self, source: int | None, until: int) -> None:
        """An APP frame from ``source``, held up to tick ``until``: from the cruise control's
        address, a cruise control is heard (CCVS1's enable switch)."""
        if source is not None and source == self._cruise_address:
            self.cruise_heard_until = until

    @property
    def tsc1_senders(self) -> AbstractSet[int]:
        """The addresses a TSC1 to the engine came from: such a controller's own EEC2 carries the
        driver's pedal (its sensor's), not its demand."""
        return _NO_SENDERS if self.engine is None else self.engine[1].senders

    def decide(self, state: Class6State, app_pct: float, app_source: int | None,
               driver_brake_pct: float, transmit: bool = True) -> EngineCommand:
        """This tick's commands, decided before the truck steps: the engine's and the retarder's
        torque (returned), the foundation brakes' demand (:meth:`brake_pct`); the DTCs of lost
        senders held in their node's DM1. An overdue tick (``transmit`` False) ages no timeout."""
        # the cruise control's APP is its demand, unless it commands by TSC1 (then it is the pedal's)
        cruise = (app_source is not None and app_source == self._cruise_address
                  and app_source not in self.tsc1_senders)
        driver = TorqueMode.NO_REQUEST
        if app_pct > 0.0:
            driver = TorqueMode.CRUISE if cruise else TorqueMode.PEDAL
        tick = self.heard_ticks
        if transmit:
            self.heard_ticks += 1
        if self.engine is not None:
            request = self.engine[1].arbitrate(tick, state.engine_rpm, self.period_s, driver)
            self.engine_request = self._log(request, "tsc1", "TSC1 to the engine", "SPN 898 FMI 9")
        request = self.engine_request
        command = EngineCommand(request.torque_pct, request.limit_pct,
                                self._brake_and_retard(tick, state, driver_brake_pct))
        self.cruise = self._cruise_after(self.engine_request.mode, driver_brake_pct)
        self.driver_brake_pct = driver_brake_pct
        self.command = command
        self._hold("engine", self.engine_request.dtcs)
        for role, output in (("brakes", self.brake_output), ("retarder", self.retarder_output)):
            if output is not None:
                self._hold(role, output.dtcs)
        if self.transmission is not None:
            gears = self._log(self.transmission[1].step(tick), "tc1", "TC1 to the transmission",
                              "SPN 525 FMI 9")
            self.neutral = gears.neutral
            self._hold("transmission", gears.dtcs)
        return command

    def _hold(self, role: str, dtcs: frozenset[Dtc]) -> None:
        hold = self._holds.get(role)
        if hold is not None:
            hold(dtcs)

    def _cruise_after(self, mode: TorqueMode, driver_brake_pct: float) -> CruiseState:
        """What CCVS1 says of cruise, from what the engine obeys: hold while cruise drives it (a
        TSC1 of the cruise purpose, or the cruise control's APP); accelerator override while the
        driver's pedal drives it after cruise did, until cruise drives again or is cancelled
        (nothing drives, or the driver brakes)."""
        if mode is TorqueMode.CRUISE:
            self._engaged = True
            return CruiseState.HOLD
        if mode is not TorqueMode.PEDAL or driver_brake_pct > 0.0:
            self._engaged = False
        return CruiseState.ACCELERATOR_OVERRIDE if self._engaged else CruiseState.OFF

    def _brake_and_retard(self, tick: int, state: Class6State, driver_brake_pct: float) -> float:
        """The brakes' and the retarder's tick (the brakes' share in :attr:`brake_output`); the
        retarder's braking torque, which the engine's command carries."""
        rpm, dt = state.engine_rpm, self.period_s
        retarder = None if self.retarder is None else self.retarder[1]
        selection, brakes_address = 0.0, None
        if self.brakes is not None:
            endurance = 0.0 if retarder is None else (retarder.available_nm(rpm)
                                                      * self.model.retarder_decel_per_nm(state))
            out = self.brakes[1].step(tick, state.accel_mps2, driver_brake_pct, dt, endurance)
            self.brake_output = self._log(out, "xbr", "XBR to the brakes", "SPN 2920 FMI 9")
            selection, brakes_address = out.retarder_selection_pct, out.controller
        if retarder is None:
            return 0.0
        self.retarder_output = self._log(retarder.step(tick, rpm, dt, selection, brakes_address),
                                         "retarder", "TSC1 to the retarder", "SPN 898 FMI 9")
        return self.retarder_output.torque_nm

    def brake_pct(self, driver_brake_pct: float) -> float:
        """The foundation brakes' demand: the brakes' output, the driver's without brakes to ask."""
        out = self.brake_output
        return driver_brake_pct if out is None else out.foundation_pct

    def _log(self, output: _Output, key: str, what: str, dtc: str) -> _Output:
        """``output`` as it is; the first time its DTCs go active, a warning (once a run)."""
        if output.dtcs and key not in self._logged:
            self._logged.add(key)
            log.warning("%s: a sender stopped without releasing and lost control after its timeout; "
                        "DTC %s is active in the node's DM1 until it sends again (logged once)", what, dtc)
        return output
