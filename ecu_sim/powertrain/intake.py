"""Received TSC1, XBR and TC1 frames, checked and decoded into the commands the control functions take.

A command moves the truck, so a frame counts only when its counter and checksum hold
(:mod:`ecu_sim.j1939.checksum`); one that fails is dropped and counted by kind in the ECU's
``invalid`` counters. The fields are read where the DBC puts them, found by their J1939 SPNs,
from the raw bits: a command's two-bit modes use all four values, so J1939's "error" and "not
available" readings of a parameter do not apply to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cantools.database.can import Message

from ecu_sim.codec.integrity import integrity_of
from ecu_sim.codec.spn import SignalLayout, spn_signals
from ecu_sim.j1939.checksum import Integrity, IntegrityVerdict
from ecu_sim.j1939.ids import destination_of, pgn_of, source_address_of
from ecu_sim.powertrain.brake_control import Ebi, XbrCommand, XbrMode
from ecu_sim.powertrain.engine_control import Override, Tsc1Command
from ecu_sim.powertrain.transmission_control import Tc1Request

#: TSC1 SPNs: override mode, priority, requested speed, torque, fractional torque, rate, purpose, counter
TSC1_MODE, TSC1_PRIORITY, TSC1_SPEED, TSC1_TORQUE = 695, 897, 898, 518
TSC1_FRACTION, TSC1_RATE, TSC1_PURPOSE, TSC1_COUNTER = 4191, 3349, 3350, 4206
#: XBR SPNs: acceleration demand, EBI mode, priority, control mode, urgency, counter
XBR_DEMAND, XBR_EBI, XBR_PRIORITY, XBR_MODE, XBR_URGENCY, XBR_COUNTER = 2920, 2914, 2915, 2916, 4818, 3189
#: TC1 SPN: transmission requested gear
TC1_GEAR = 525
#: the highest raw values of a 16-bit and an 8-bit parameter (FAFFh, FAh): above them J1939 says
#: error or not available, and TSC1 uses these very values to say "no speed" or "no torque"
_MAX_16, _MAX_8 = 0xFAFF, 0xFA
_CHECK_FAILURES: Final = {IntegrityVerdict.BAD_CHECKSUM: "checksum", IntegrityVerdict.BAD_COUNTER: "counter"}


def fields_of(message: Message) -> dict[int, SignalLayout]:
    """The message's little-endian signals by SPN (J1939 puts every command field in Intel order)."""
    layouts = [(spn, SignalLayout.of(signal)) for spn, signal in spn_signals(message)]
    return {spn: layout for spn, layout in layouts if layout.is_little_endian}


class CommandIntake:
    """One command message (TSC1, TSC1 to the retarder, XBR) to one destination: the frames that
    pass their integrity check, decoded; the rest counted under ``name``."""

    def __init__(self, message: Message, destination: int, name: str, checked: bool = True) -> None:
        """``checked``: the message must carry a counter and checksum (TSC1, XBR); TC1, which
        J1939-71 gives neither, passes on its length alone."""
        integrity = integrity_of(message)
        if integrity is None and checked:
            raise ValueError(f"{message.name} has no counter and checksum signals")
        self.integrity: Integrity | None = integrity
        self.pgn = pgn_of(message.frame_id)
        self.destination = destination
        self.name = name
        self.fields: Mapping[int, SignalLayout] = fields_of(message)
        self.length = message.length

    def matches(self, arbitration_id: int) -> bool:
        """A frame of this command to this destination (J1939 receivers match by PGN)."""
        return pgn_of(arbitration_id) == self.pgn and destination_of(arbitration_id) == self.destination

    def check(self, arbitration_id: int, payload: bytes) -> str | None:
        """None when the frame may act, else the kind it is counted as (``tsc1_checksum``)."""
        if len(payload) < self.length:
            return f"{self.name}_short_frame"
        if self.integrity is None:
            return None
        failure = _CHECK_FAILURES.get(self.integrity.verify(arbitration_id, payload))
        return None if failure is None else f"{self.name}_{failure}"

    def raw(self, spn: int, payload: bytes) -> int | None:
        found = self.fields.get(spn)
        return None if found is None else found.raw(payload)

    def value(self, spn: int, raw: int) -> float:
        return self.fields[spn].value(raw)


def tsc1_command(intake: CommandIntake, arbitration_id: int, payload: bytes) -> Tsc1Command:
    """A checked TSC1 frame as the arbiter takes it: speed None when FAFFh or above, torque None
    when FAh or above (the standard's "speed limit only" and "torque limit only")."""
    raw = intake.raw
    speed = raw(TSC1_SPEED, payload)
    torque = raw(TSC1_TORQUE, payload)
    fraction = raw(TSC1_FRACTION, payload)
    torque_pct = None
    if torque is not None and torque < _MAX_8:
        torque_pct = intake.value(TSC1_TORQUE, torque)
        if fraction is not None and fraction <= 7:
            torque_pct += intake.value(TSC1_FRACTION, fraction)
    counter = raw(TSC1_COUNTER, payload)
    rate = raw(TSC1_RATE, payload)
    purpose = raw(TSC1_PURPOSE, payload)
    return Tsc1Command(
        source=source_address_of(arbitration_id), mode=Override(raw(TSC1_MODE, payload) or 0),
        priority=raw(TSC1_PRIORITY, payload) or 0,
        speed_rpm=None if speed is None or speed >= _MAX_16 else intake.value(TSC1_SPEED, speed),
        torque_pct=torque_pct, rate_code=7 if rate is None else rate,
        purpose=31 if purpose is None else purpose,
        counter=None if counter is None or counter == 0xF else counter)


def xbr_command(intake: CommandIntake, arbitration_id: int, payload: bytes) -> XbrCommand | None:
    """A checked XBR frame as the brakes take it; None when it asks for braking with a demand
    that is not available. A release (control mode 00) asks for nothing, so it acts whatever its
    demand says (its acceleration is then 0)."""
    raw = intake.raw
    mode_raw = raw(XBR_MODE, payload) or 0
    mode = XbrMode(mode_raw) if mode_raw <= XbrMode.MAXIMUM else XbrMode.DISABLED
    demand = raw(XBR_DEMAND, payload)
    accel = None if demand is None or demand > _MAX_16 else intake.value(XBR_DEMAND, demand)
    if accel is None and mode is not XbrMode.DISABLED:
        return None
    ebi = raw(XBR_EBI, payload)
    return XbrCommand(source=source_address_of(arbitration_id), accel_mps2=0.0 if accel is None else accel,
                      ebi=Ebi(ebi) if ebi is not None and ebi <= Ebi.INTEGRATED else Ebi.INTEGRATED,
                      priority=raw(XBR_PRIORITY, payload) or 0, mode=mode,
                      counter=raw(XBR_COUNTER, payload))


def tc1_request(intake: CommandIntake, arbitration_id: int, payload: bytes) -> Tc1Request:
    """A TC1 frame as the transmission takes it: the requested gear, None from FBh up (park,
    reserved, error, not available), none of which asks this transmission for anything."""
    gear = intake.raw(TC1_GEAR, payload)
    return Tc1Request(source_address_of(arbitration_id),
                      None if gear is None or gear >= _MAX_8 + 1 else intake.value(TC1_GEAR, gear))
