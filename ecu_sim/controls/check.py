"""A person's control checked where it arrives: the JSON object the node's page sends, read into a
:class:`Control` against the node it is for, or refused with a :class:`ControlError`.

The same controls written ahead with a time (``--control``, ``[controls] apply``, a campaign
case's) or sent by name by a co-simulation peer are checked and applied here too, through
ecu_sim.controls.planned: one check, one application between ticks, one journal line.

A control is checked where it arrives (types, ranges, whether it applies to this node: a
:class:`ControlError` says why not), then queued; ecu_sim.controls.desk applies it at the next
tick boundary and journals it, so a session driven from a browser replays bit for bit like any
other.

The controls, one per request, as JSON:

- ``{"set_speed_kph": 85}``: the CCM's set speed, within the DBC's range of the speed signal;
- ``{"cruise": true}`` / ``false`` (or ``"on"`` / ``"off"``): the CCM's cruise control;
- ``{"pedal_override": 40}`` / ``null``: a pedal of 0..100 %: the ECU drives on it instead of the
  bus's APP, the CCM takes it as a driver's pedal (the higher demand wins); null releases it;
- ``{"fault": "drop=0.5", "on": true}``: a fault of the ``--fault`` grammar, without a window,
  switched on or off from the next tick;
- ``{"record": "start"}`` / ``"stop"``: marks in the session recording (ecu_sim.web);
- ``{"message": "TCO1", "send": false}`` / ``true``, ``{"message": "TCO1", "cycle_ms": 100}``:
  stop, restart or re-time a message of the powertrain or the restbus (``--network powertrain``);
- ``{"signal": "TCO1.Driver1WorkingState", "value": 2}`` / ``null``: fix a signal's value, or
  give it back to the truck (or its start value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecu_sim.bus.kernel import KernelTransmitter
from ecu_sim.codec.role import RoleCodec
from ecu_sim.controls.live import ControlRecord, LiveControl, check_live
from ecu_sim.controls.node import Controlled, OwnerKind, network_of
from ecu_sim.controls.refusals import ControlError, Refusal, switch
from ecu_sim.controls.refusals import number as as_number
from ecu_sim.errors import ConfigError
from ecu_sim.faults import injector
from ecu_sim.faults.spec import DTC_KIND, WITHHOLDING_FAULTS, Fault, parse_fault

#: every control's name, in the order the page shows them
NAMES = ("set_speed_kph", "cruise", "pedal_override", "fault", "record", "message", "signal")
#: the keys that go with a control beside its own
_COMPANIONS = {"on": "fault", "node": "fault", "send": "message", "cycle_ms": "message", "value": "signal"}
RECORD_ACTIONS = ("start", "stop")

#: what a checked control carries: a number (the set speed, the pedal), a switch (cruise), None (a
#: pedal released), a fault, a recording's mark, or a message's or a signal's record
ControlValue = float | bool | str | Fault | LiveControl | None


@dataclass(frozen=True)
class Control:
    """One checked control: its name and its value (a number, a switch, a fault and a switch)."""

    name: str
    value: ControlValue
    #: for ``fault``: on or off
    on: bool = True
    #: for a ``dtc`` fault: the powertrain's or the restbus's node that raises it (None: the node's own)
    node: str | None = None

    def record(self) -> ControlRecord:
        """The control as the journal holds it, which :func:`check` reads back unchanged."""
        value = self.value
        if isinstance(value, Fault):
            return {"fault": str(value), "on": self.on, **({"node": self.node} if self.node else {})}
        if isinstance(value, LiveControl):
            return value.record()
        return {self.name: value}


def check(body: object, built: Controlled, speed: RoleCodec, period_s: float) -> Control:
    """The control ``body`` (a parsed JSON value) asks for, checked against the node ``built``."""
    if not isinstance(body, Mapping):
        raise ControlError(Refusal.MALFORMED,
            'the body must be a JSON object with one control, e.g. {"set_speed_kph": 85}')
    names = [key for key in body if key not in _COMPANIONS]
    unknown = [key for key in names if key not in NAMES]
    if unknown:
        raise ControlError(Refusal.MALFORMED, f"unknown control {unknown[0]!r}; known: {', '.join(NAMES)}")
    if len(names) != 1:
        raise ControlError(Refusal.MALFORMED,
            f"one control per request (got {len(names)}); known: {', '.join(NAMES)}")
    name = names[0]
    for companion in body:
        owner = _COMPANIONS.get(companion)
        if owner is not None and owner != name:
            raise ControlError(Refusal.MALFORMED, f"{companion!r} belongs to a {owner}, not to {name}")
    value = body[name]
    owners = built.owners(name)
    if owners and built.kind not in owners:
        raise ControlError(Refusal.NOT_HERE,
            f"{name} is a control of {_described(owners)}; this node is the {built.kind.name}")
    if name == "set_speed_kph":
        number = as_number(name, value)
        if not speed.minimum <= number <= speed.maximum:
            raise ControlError(Refusal.OUT_OF_RANGE,
                f"set_speed_kph must be within the DBC range of the speed signal, "
                f"{speed.minimum:g}..{speed.maximum:g} (got {number:g})")
        return Control(name, number)
    if name == "cruise":
        return Control(name, switch(name, value))
    if name == "pedal_override":
        if value is None:
            return Control(name, None)
        number = as_number(name, value)
        if not 0.0 <= number <= 100.0:
            raise ControlError(Refusal.OUT_OF_RANGE,
                f"pedal_override must be 0..100 % or null to release it (got {number:g})")
        return Control(name, number)
    if name == "fault":
        return _fault(body, value, built, period_s)
    if name in ("message", "signal"):
        return Control(name, check_live(name, body, built))
    if value not in RECORD_ACTIONS:
        raise ControlError(Refusal.MALFORMED, f"record must be \"start\" or \"stop\" (got {value!r})")
    return Control(name, value)


def _described(kinds: Sequence[OwnerKind]) -> str:
    """``the CCM (ecu-sim ccm)`` for one kind of node, ``the ECU and the CCM`` for several."""
    if len(kinds) == 1:
        return f"the {kinds[0].name} (ecu-sim {kinds[0].value})"
    return " and ".join(f"the {kind.name}" for kind in kinds)


def _fault(body: Mapping[str, Any], value: object, built: Controlled, period_s: float) -> Control:
    if not isinstance(value, str):
        raise ControlError(Refusal.MALFORMED,
            f"fault must be a fault of the --fault grammar, e.g. \"drop=0.5\" "
            f"(got {value!r})")
    if "on" not in body:
        raise ControlError(Refusal.MALFORMED,
            'a fault needs "on": true to switch it on or false to switch it off')
    on = switch("on", body["on"])
    try:
        fault = parse_fault(value, "fault")
    except ConfigError as exc:
        raise ControlError(Refusal.MALFORMED, str(exc)) from None
    if fault.start_s or fault.end_s is not None:
        raise ControlError(Refusal.MALFORMED,
            f"fault {value!r}: a switched fault has no window; it acts from the "
            "tick it is switched on to the tick it is switched off")
    if fault.kind == DTC_KIND and "node" in body:
        node = body["node"]
        powertrain = network_of(built)
        parts = {} if powertrain is None else powertrain.others
        if node not in parts:
            raise ControlError(Refusal.NOT_HERE, f"no node {node!r} here; the powertrain's and the "
                                                 f"restbus's: {', '.join(parts) or 'none'}")
        return Control("fault", fault, on, node)
    if fault.kind == DTC_KIND:
        if built.node.network is None:
            raise ControlError(Refusal.NOT_HERE,
                "a dtc fault needs the node's J1939 network part, which this profile "
                "does not run (--profile j1939)")
        return Control("fault", fault, on)
    if built.faults is None:
        raise ControlError(Refusal.NOT_HERE, "this node cannot switch faults")
    if fault.kind in WITHHOLDING_FAULTS and isinstance(built.transmitter, KernelTransmitter):
        raise ControlError(Refusal.NOT_HERE,
            f"fault {fault}: the kernel times this node's frames, so it cannot "
            "withhold one; run with --tx-mode user to switch it")
    try:
        injector.check([fault], built.faults.codec, period_s)
    except ConfigError as exc:
        raise ControlError(Refusal.MALFORMED, str(exc)) from None
    return Control("fault", fault, on)


