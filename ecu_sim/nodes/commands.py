"""What the cruise control module sends with ``--command tsc1``: TSC1 to the engine, XBR to the brakes.

A production longitudinal controller does not press a pedal: it commands the engine's torque with
TSC1 and the truck's deceleration with XBR, from its own source address. With ``tsc1`` the CCM
does the same with the demands it computes anyway (ecu_sim.nodes.ccm):

- TSC1 to the engine (the sender of the DBC's actual-torque SPN 513): torque control (override
  mode 10) at priority 11, the lowest, which J1939-71 gives cruise and comfort functions, control
  purpose P2 (cruise control). The requested torque is the controller's output in percent taken as
  percent of the engine's reference torque (EC1, SPN 544): the PI controller's integral finds the
  torque that holds the set speed whatever the scale, so the CCM need not learn the reference.
  While cruise is off (no speed, the driver braked or cancelled) or the driver's pedal overrides
  it, the CCM sends override disabled (mode 00): it releases the engine, whose own pedal input
  then rules, rather than going silent and leaving the engine to time it out.
- XBR to the brakes, where the CCM would press the brake pedal on a descent: an acceleration
  demand proportional to the speed above the band, control mode 10 (the larger of the driver's and
  the XBR demand, so the driver's pedal is never weakened and never stacked on), endurance brake
  integration allowed (EBI 10: the retarder may take its share), XBR priority 10 (ACC) and urgency
  0 % (comfort, the brakes shape the response). Otherwise XBR override disabled (mode 00).
- EBC1 is not sent; EEC2 carries the driver's pedal alone (ecu_sim.nodes.ccm).

Both go out every tick of the CCM's loop, each with its message counter (TSC1 0..7, XBR 0..15, +1
per frame) and checksum. The loop runs at COMMAND_PERIOD_S unless ``--period`` says otherwise
(ecu_sim.runs.prepare.command_timing): J1939-71's XBR rate while active, which the brakes time
the stream out by, and within TSC1's 10 to 20 ms. TSC1's transmission-rate field declares the
fastest standard rate that is not faster than the loop, and the engine times the source out
from that declaration.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from cantools.database.can import Database

from ecu_sim.bus.transmit import Output
from ecu_sim.codec.command import CommandCodec
from ecu_sim.codec.spn import first_carrier, messages_with
from ecu_sim.errors import ConfigError
from ecu_sim.j1939.ids import destination_of, source_address_of
from ecu_sim.powertrain.engine_control import ENGINE_STANDARD_PERIOD_S, RATE_PERIODS_S, STANDARD_RATE_CODE

log = logging.getLogger(__name__)

# TSC1 (PGN 0) SPNs
SPN_OVERRIDE_MODE = 695
SPN_SPEED_CONDITIONS = 696
SPN_OVERRIDE_PRIORITY = 897
SPN_REQUESTED_TORQUE = 518
SPN_TORQUE_FRACTION = 4191
SPN_TRANSMISSION_RATE = 3349
SPN_CONTROL_PURPOSE = 3350
# XBR (PGN 1024) SPNs
SPN_ACCELERATION_DEMAND = 2920
SPN_EBI_MODE = 2914
SPN_XBR_PRIORITY = 2915
SPN_XBR_CONTROL_MODE = 2916
SPN_XBR_URGENCY = 4818
#: the engine's actual torque: the message that carries it names the engine's address
SPN_ACTUAL_TORQUE = 513

OVERRIDE_DISABLED = 0
TORQUE_CONTROL = 2
PRIORITY_LOWEST = 3  # 11: cruise control and comfort functions
PURPOSE_CRUISE = 1  # P2
SPEED_CONDITIONS_TRANSIENT = 0
XBR_MAXIMUM = 2  # control mode 10: the larger of the driver's and the XBR demand
XBR_EBI_ALLOWED = 2  # 10: endurance brake integration allowed
XBR_PRIORITY_ACC = 2  # 10
#: J1939-71's TSC1 transmission rates to an engine: field value -> period in seconds (7: the standard 10 ms)
TSC1_RATES = {**RATE_PERIODS_S, STANDARD_RATE_CODE: ENGINE_STANDARD_PERIOD_S}
#: the CCM's default period with TSC1 and XBR: J1939-71's XBR rate while active, within TSC1's 10..20 ms
COMMAND_PERIOD_S = 0.02
#: deceleration asked per km/h above the brake band, m/s^2, and the most the CCM asks
XBR_GAIN_MPS2_PER_KPH = 0.2
XBR_MAX_DECEL_MPS2 = 2.0


def command_codecs(database: Database, source: int) -> tuple[CommandCodec, CommandCodec]:
    """TSC1 to the engine and XBR as sent from ``source``; ConfigError when the DBC lacks them.

    The DBC may carry TSC1 to several destinations (the engine, a retarder): the engine's is the
    one addressed to the sender of the engine's actual torque (EEC1)."""
    engine = first_carrier(database, SPN_ACTUAL_TORQUE)
    address = None if engine is None else source_address_of(engine.message.frame_id)
    tsc1 = [m for m in messages_with(database, SPN_REQUESTED_TORQUE)
            if address is not None and m.is_extended_frame and destination_of(m.frame_id) == address]
    xbr = first_carrier(database, SPN_ACCELERATION_DEMAND)
    if not tsc1 or xbr is None:
        raise ConfigError("--command tsc1 needs TSC1 to the engine and XBR in the DBC (messages with "
                          f"SPN {SPN_REQUESTED_TORQUE}, addressed to the sender of SPN {SPN_ACTUAL_TORQUE}, "
                          f"and SPN {SPN_ACCELERATION_DEMAND}): use --profile j1939, or --command app")
    try:
        return CommandCodec(tsc1[0], source), CommandCodec(xbr.message, source)
    except ValueError as exc:
        raise ConfigError(f"--command tsc1: {exc}; TSC1 and XBR need both to be accepted") from None


def rate_field(period_s: float) -> int | None:
    """The TSC1 transmission-rate value of a loop of ``period_s``: the fastest standard rate that
    is not faster than the loop, so the engine never expects frames more often than they come;
    None when the loop is slower than the slowest rate (1 s)."""
    fitting = [(rate, code) for code, rate in TSC1_RATES.items() if rate >= period_s - 1e-9]
    return min(fitting)[1] if fitting else None


def xbr_demand(over_kph: float) -> float:
    """The acceleration demand for a speed ``over_kph`` above the brake band: a deceleration in
    proportion, at most XBR_MAX_DECEL_MPS2; at the band it asks to hold the speed."""
    return -min(XBR_MAX_DECEL_MPS2, XBR_GAIN_MPS2_PER_KPH * max(0.0, over_kph))


@dataclass(frozen=True, slots=True)
class Demand:
    """One tick's commands: engine torque in % (None: release the engine) and the truck's
    acceleration in m/s^2 (None: no brake request)."""

    torque_pct: float | None
    accel_mps2: float | None


class Commands:
    """TSC1 and XBR with their counters, sent once per tick through their outputs."""

    def __init__(self, tsc1: CommandCodec, tsc1_out: Output, xbr: CommandCodec, xbr_out: Output,
                 period_s: float) -> None:
        rate = rate_field(period_s)
        if rate is None:
            raise ValueError(f"TSC1 declares its rate as 1 s at the slowest; a loop of {period_s:g} s "
                             "is slower")
        self.tsc1, self.xbr = tsc1, xbr
        self._tsc1_out, self._xbr_out = tsc1_out, xbr_out
        self._fraction = tsc1.has(SPN_TORQUE_FRACTION)
        self._engaged = {SPN_OVERRIDE_MODE: TORQUE_CONTROL, SPN_SPEED_CONDITIONS: SPEED_CONDITIONS_TRANSIENT,
                         SPN_OVERRIDE_PRIORITY: PRIORITY_LOWEST, SPN_TRANSMISSION_RATE: rate,
                         SPN_CONTROL_PURPOSE: PURPOSE_CRUISE}
        self._released = {**self._engaged, SPN_OVERRIDE_MODE: OVERRIDE_DISABLED}
        self._braking = {SPN_EBI_MODE: XBR_EBI_ALLOWED, SPN_XBR_PRIORITY: XBR_PRIORITY_ACC,
                         SPN_XBR_CONTROL_MODE: XBR_MAXIMUM, SPN_XBR_URGENCY: 0.0}
        self._not_braking = {**self._braking, SPN_XBR_CONTROL_MODE: OVERRIDE_DISABLED}
        self.tsc1_counter = 0
        self.xbr_counter = 0
        #: the latest demand sent
        self.sent = Demand(None, None)

    @classmethod
    def build(cls, tsc1: CommandCodec, tsc1_out: Output, xbr: CommandCodec, xbr_out: Output,
              period_s: float) -> Commands:
        """The CCM's commands at a loop of ``period_s``; ConfigError when TSC1 cannot declare it,
        a warning when XBR comes slower than J1939-71 asks while active."""
        if period_s > COMMAND_PERIOD_S + 1e-9:
            log.warning("CCM: XBR every %g s, slower than J1939-71's %g s while active: brakes may time "
                        "the stream out and refuse it for a while; leave --period out (or give %g) "
                        "with --command tsc1", period_s, COMMAND_PERIOD_S, COMMAND_PERIOD_S)
        try:
            return cls(tsc1, tsc1_out, xbr, xbr_out, period_s)
        except ValueError as exc:
            raise ConfigError(f"--command tsc1: {exc}; give a --period of 1 s or less") from None

    def send(self, tick: int, deadline: float, demand: Demand) -> None:
        torque, accel = demand.torque_pct, demand.accel_mps2
        if torque is None:
            tsc1 = self.tsc1.encode(self._released, {}, self.tsc1_counter)
        else:
            tsc1 = self.tsc1.encode(self._engaged, self._torque(torque), self.tsc1_counter)
        xbr = (self.xbr.encode(self._not_braking, {SPN_ACCELERATION_DEMAND: 0.0}, self.xbr_counter)
               if accel is None else
               self.xbr.encode(self._braking, {SPN_ACCELERATION_DEMAND: accel}, self.xbr_counter))
        self._tsc1_out.send(tick, deadline, tsc1)
        self._xbr_out.send(tick, deadline, xbr)
        self.tsc1_counter = (self.tsc1_counter + 1) % self.tsc1.modulus
        self.xbr_counter = (self.xbr_counter + 1) % self.xbr.modulus
        self.sent = demand

    def _torque(self, pct: float) -> dict[int, float]:
        """The requested torque in whole percent and, where the DBC has it, eighths of a percent."""
        if not self._fraction or not math.isfinite(pct):
            return {SPN_REQUESTED_TORQUE: pct}
        eighths = round(pct * 8.0)
        return {SPN_REQUESTED_TORQUE: float(eighths // 8), SPN_TORQUE_FRACTION: (eighths % 8) / 8.0}
