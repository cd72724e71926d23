"""TSC1 in the engine: who controls the torque, by J1939-71's override rules, tick by tick.

Each sender (source address) has at most one standing command, the last it sent. Every tick the
arbiter decides from the standing commands and the driver's demand:

- A command with override mode 00 (disabled) takes no part and releases its sender's control.
- The controlling command is the control command (01 speed, 10 torque) of the highest priority
  (00 highest); at equal priority the sender that has held its command longest (first come, first
  served) keeps control. Without one, the driver's demand (pedal or cruise) drives the engine.
- A limit command (11) applies when its priority is higher than the controlling command's (at
  equal priority a control command beats a limit), and always against the driver. Of the limits
  that apply, the lowest torque limit and the lowest speed limit win. Mode 11 sends a torque
  limit alone with the speed at its largest value (FAFFh, 8031.875 rpm) and a speed limit alone
  with the torque at its largest (FAh, 125 %): a limit at the top of its range limits nothing.
- Speed control and speed limits turn into torque by governors on engine speed: a PI governor to
  the requested speed, a proportional droop below the speed limit.

The timeout rule: a sender loses control when no message of it arrived for
:data:`MISSED_PERIODS` of the periods its transmission rate field (SPN 3349) declares, counted in
ticks by the project's one seconds-to-ticks rule (at least one tick). It then takes no part, as if
it had released, and DTC SPN 898 FMI 9 (abnormal update rate) is active until it sends again or
releases; logging it once is the node's job.

Counting: the arbiter counts what it rejects itself (a sender not in ``[j1939] tsc1_sources``, a
repeated counter); frames whose checksum fails never become commands, so the node counts those.
Torques are indicated torque in percent of the engine's reference torque (EC1, SPN 544).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from ecu_sim.j1939.checksum import NOT_AVAILABLE_4BIT, TSC1_COUNTER_MODULUS, CounterWatch, Step
from ecu_sim.j1939.dm import Dtc
from ecu_sim.runtime.ticks import ticks_in

#: a sender loses control after this many of its declared periods without a message: the one
#: command timeout rule, TSC1's here and XBR's and TC1's too
MISSED_PERIODS: Final = 5
#: SPN 3349 -> the declared period in seconds; 7 is "the standard rate" of the destination
RATE_PERIODS_S: Final = {0: 1.0, 1: 0.75, 2: 0.5, 3: 0.25, 4: 0.1, 5: 0.05, 6: 0.02}
STANDARD_RATE_CODE: Final = 7
#: the standard rate of a TSC1 to an engine (J1939-71)
ENGINE_STANDARD_PERIOD_S: Final = 0.01
#: DTC of a TSC1 sender that stopped without releasing: SPN 898, FMI 9 abnormal update rate
TIMEOUT_DTC: Final = Dtc(898, 9)
#: a torque limit this high (FAh, the top of SPN 518) limits nothing
NO_LIMIT_PCT: Final = 125.0


class Override(enum.IntEnum):
    """SPN 695 engine override control mode."""

    DISABLED = 0
    SPEED = 1
    TORQUE = 2
    LIMIT = 3


class TorqueMode(enum.IntEnum):
    """SPN 899 engine torque mode: which function decides the engine's torque (EEC1 byte 1)."""

    NO_REQUEST = 0  # low idle governor / no request (the default)
    PEDAL = 1  # accelerator pedal / operator selection
    CRUISE = 2
    PTO_GOVERNOR = 3
    ROAD_SPEED_GOVERNOR = 4
    ASR = 5
    TRANSMISSION = 6
    ABS = 7
    TORQUE_LIMITING = 8
    HIGH_SPEED_GOVERNOR = 9
    BRAKING_SYSTEM = 10
    REMOTE_ACCELERATOR = 11
    OTHER = 14
    NOT_AVAILABLE = 15


#: SPN 3350 control purpose -> the torque mode it gives (P2 cruise, P3 PTO, P4 road speed governor,
#: P5 engine protection and P6 transient torque limit limit torque)
_PURPOSE_MODES: Final = {1: TorqueMode.CRUISE, 2: TorqueMode.PTO_GOVERNOR, 3: TorqueMode.ROAD_SPEED_GOVERNOR,
                         4: TorqueMode.TORQUE_LIMITING, 5: TorqueMode.TORQUE_LIMITING}
#: otherwise the sender's J1939 function by its preferred address: transmission #1/#2, brakes
_SOURCE_MODES: Final = {0x03: TorqueMode.TRANSMISSION, 0x04: TorqueMode.TRANSMISSION, 0x0B: TorqueMode.ASR}


@dataclass(frozen=True, slots=True)
class Tsc1Command:
    """One received TSC1, decoded: None where the frame says "not available"."""

    source: int
    mode: Override
    priority: int
    speed_rpm: float | None = None
    torque_pct: float | None = None
    rate_code: int = STANDARD_RATE_CODE
    purpose: int = 31
    counter: int | None = None



class EngineRequest(NamedTuple):
    """What the engine must do this tick, and what EEC1 reports of it.

    ``torque_pct`` replaces the driver's demand when a TSC1 controls the engine (None: the driver's
    demand stands); ``limit_pct`` caps whichever demand drives the engine (None: no limit).
    """

    torque_pct: float | None
    limit_pct: float | None
    mode: TorqueMode
    controller: int
    dtcs: frozenset[Dtc]


class Tsc1Admission(enum.Enum):
    ACCEPTED = "accepted"
    SKIPPED = "accepted; counters were skipped"
    UNACCEPTED_SOURCE = "sender not among [j1939] tsc1_sources"
    REPEATED = "repeated counter: ignored"


@dataclass(slots=True)
class _Standing:
    command: Tsc1Command
    since: int
    last: int
    watch: CounterWatch = field(
        default_factory=lambda: CounterWatch(TSC1_COUNTER_MODULUS, NOT_AVAILABLE_4BIT))
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Governor:
    """The speed governors: PI to a requested speed, proportional droop below a speed limit."""

    kp_pct_per_rpm: float = 0.5
    ki_pct_per_rpm_s: float = 1.0
    limit_droop_pct_per_rpm: float = 1.0


class Tsc1Arbiter:
    """The engine's TSC1 arbitration; :meth:`admit` for each command, :meth:`arbitrate` each tick."""

    def __init__(self, period_s: float, *, own_address: int = 0x00, accepted: frozenset[int] | None = None,
                 governor: Governor | None = None, missed_periods: int = MISSED_PERIODS,
                 standard_period_s: float = ENGINE_STANDARD_PERIOD_S) -> None:
        """``standard_period_s``: what the rate field's "standard rate" (7) means at this
        destination (10 ms at an engine, 50 ms at a retarder)."""
        self.period_s = period_s
        self.standard_period_s = standard_period_s
        self.own_address = own_address
        self.accepted = accepted
        self.governor = governor or Governor()
        self.missed_periods = missed_periods
        self._standing: dict[int, _Standing] = {}
        self._integral_pct = 0.0
        self._governed: int | None = None
        self.unaccepted = 0
        self.repeated = 0
        self.skipped = 0
        #: every address a checked TSC1 came from, accepted or not: such a controller's own EEC2
        #: carries the driver's pedal (its sensor's), not its demand
        self.senders: set[int] = set()

    def declared_period_s(self, command: Tsc1Command) -> float:
        """The period the sender declared (SPN 3349): the destination's standard for code 7."""
        return RATE_PERIODS_S.get(command.rate_code, self.standard_period_s)

    def timeout_ticks(self, command: Tsc1Command) -> int:
        return max(1, ticks_in(self.missed_periods * self.declared_period_s(command), self.period_s))

    def admit(self, tick: int, command: Tsc1Command) -> Tsc1Admission:
        """Take one decoded frame (its checksum already verified) heard in ``tick``."""
        self.senders.add(command.source)
        if self.accepted is not None and command.source not in self.accepted:
            self.unaccepted += 1
            return Tsc1Admission.UNACCEPTED_SOURCE
        standing = self._standing.get(command.source)
        if command.mode is Override.DISABLED:
            self._standing.pop(command.source, None)
            return Tsc1Admission.ACCEPTED
        if standing is None or standing.timed_out:
            standing = _Standing(command, tick, tick)
            self._standing[command.source] = standing
        counter = command.counter if command.counter is not None else NOT_AVAILABLE_4BIT
        step = standing.watch.observe(counter)
        if step is Step.REPEATED:
            self.repeated += 1
            return Tsc1Admission.REPEATED
        if (command.mode, command.priority) != (standing.command.mode, standing.command.priority):
            standing.since = tick  # a new kind of request queues anew
        standing.command, standing.last = command, tick
        if step is Step.SKIPPED:
            self.skipped += 1
            return Tsc1Admission.SKIPPED
        return Tsc1Admission.ACCEPTED

    def arbitrate(self, tick: int, engine_rpm: float, dt_s: float,
                  driver_mode: TorqueMode = TorqueMode.PEDAL) -> EngineRequest:
        """The request for this tick at ``engine_rpm``; ``driver_mode`` is what drives without TSC1
        (pedal, cruise or no request)."""
        live: list[_Standing] = []
        lost = False
        for standing in self._standing.values():
            if tick - standing.last > self.timeout_ticks(standing.command):
                standing.timed_out = True
            if standing.timed_out:
                lost = True
            else:
                live.append(standing)
        dtcs = frozenset({TIMEOUT_DTC}) if lost else frozenset()
        controls = [s for s in live if s.command.mode in (Override.SPEED, Override.TORQUE)]
        winner = min(controls, key=lambda s: (s.command.priority, s.since, s.command.source), default=None)
        ceiling = 4 if winner is None else winner.command.priority  # the driver is below every priority
        limits = [s.command for s in live
                  if s.command.mode is Override.LIMIT and s.command.priority < ceiling]
        limit_pct = self._limit(limits, engine_rpm)
        if winner is None:
            self._release_governor()
            limiting = limit_pct is not None
            return EngineRequest(None, limit_pct, TorqueMode.TORQUE_LIMITING if limiting else driver_mode,
                                 self._limiter(limits) if limiting else self.own_address, dtcs)
        command = winner.command
        torque: float | None
        if command.mode is Override.SPEED and command.speed_rpm is not None:
            torque = self._govern(command.source, command.speed_rpm, engine_rpm, dt_s)
        else:
            self._release_governor()
            torque = command.torque_pct
        mode = _PURPOSE_MODES.get(command.purpose) or _SOURCE_MODES.get(command.source, TorqueMode.OTHER)
        if limit_pct is not None and torque is not None and limit_pct < torque:
            mode = TorqueMode.TORQUE_LIMITING
        return EngineRequest(torque, limit_pct, mode, command.source, dtcs)

    def _limit(self, limits: list[Tsc1Command], engine_rpm: float) -> float | None:
        """The lowest of the torque limits and of the speed limits' droop torques; a limit at
        125 % or more (FAh, or a speed limit far above the engine's speed) is none."""
        found: float | None = None
        for c in limits:
            for value in (c.torque_pct, None if c.speed_rpm is None else
                          self.governor.limit_droop_pct_per_rpm * (c.speed_rpm - engine_rpm)):
                if value is not None and value < NO_LIMIT_PCT:
                    value = max(value, 0.0)
                    found = value if found is None or value < found else found
        return found

    @staticmethod
    def _limiter(limits: list[Tsc1Command]) -> int:
        return min(limits, key=lambda c: (c.torque_pct if c.torque_pct is not None else 125.0)).source

    def _govern(self, source: int, target_rpm: float, engine_rpm: float, dt_s: float) -> float:
        if self._governed != source:
            self._governed, self._integral_pct = source, 0.0
        g = self.governor
        error = target_rpm - engine_rpm
        integral = min(max(self._integral_pct + g.ki_pct_per_rpm_s * error * dt_s, 0.0), 100.0)
        self._integral_pct = integral
        return min(max(g.kp_pct_per_rpm * error + integral, 0.0), 100.0)

    def _release_governor(self) -> None:
        self._governed, self._integral_pct = None, 0.0

    def counters_text(self) -> str:
        return f"tsc1 unaccepted {self.unaccepted} repeated {self.repeated} skipped {self.skipped}"
