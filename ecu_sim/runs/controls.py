"""Controls a person applies while a node runs (its page, ``--web``), and their replay.

The same controls written ahead with a time (``--control``, ``[controls] apply``, a campaign
case's) or sent by name by a co-simulation peer are checked and applied here too, through
ecu_sim.runs.planned: one check, one application between ticks, one journal line.

A control is checked where it arrives (types, ranges, whether it applies to this node: a
:class:`ControlError` says why not), then queued; the loop applies it at the next tick boundary,
in :class:`ControlDesk`, a tick observer that comes after the recorder. So the node never sees a
control in the middle of a tick, and the recording's tick journal holds each applied control
right after the line of the tick before it (:mod:`ecu_sim.io.journal`). A replay feeds the
journal's controls to a desk of its own, which applies them before the same tick: a session
driven from a browser replays bit for bit like any other.

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

import functools
import logging
import queue
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ecu_sim.bus.kernel import KernelTransmitter
from ecu_sim.codec.role import RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.faults import injector
from ecu_sim.faults.spec import DTC_KIND, parse_fault
from ecu_sim.j1939.dm import Dtc
from ecu_sim.nodes.factory import WITHHOLDING_FAULTS, Built, NodeKind, kinds_taking
from ecu_sim.runs.live_controls import apply_live, check_live, powertrain_of
from ecu_sim.runs.refusals import ControlError as ControlError
from ecu_sim.runs.refusals import Refusal as Refusal
from ecu_sim.runs.refusals import number as as_number
from ecu_sim.runs.refusals import switch

log = logging.getLogger("ecu_sim")

#: every control's name, in the order the page shows them
NAMES = ("set_speed_kph", "cruise", "pedal_override", "fault", "record", "message", "signal")
#: the keys that go with a control beside its own
_COMPANIONS = {"on": "fault", "node": "fault", "send": "message", "cycle_ms": "message", "value": "signal"}
RECORD_ACTIONS = ("start", "stop")


@dataclass(frozen=True)
class Control:
    """One checked control: its name and its value (a number, a switch, a fault and a switch)."""

    name: str
    value: Any
    #: for ``fault``: on or off
    on: bool = True
    #: for a ``dtc`` fault: the powertrain's or the restbus's node that raises it (None: the node's own)
    node: str | None = None

    def record(self) -> dict[str, Any]:
        """The control as the journal holds it, which :func:`check` reads back unchanged."""
        if self.name == "fault":
            return {"fault": str(self.value), "on": self.on, **({"node": self.node} if self.node else {})}
        if self.name in ("message", "signal"):
            return dict(self.value)
        return {self.name: self.value}


def check(body: object, built: Built, speed: RoleCodec, period_s: float) -> Control:
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
    owners = kinds_taking(name)
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


def _described(kinds: list[NodeKind]) -> str:
    """``the CCM (ecu-sim ccm)`` for one kind of node, ``the ECU and the CCM`` for several."""
    if len(kinds) == 1:
        return f"the {kinds[0].name} (ecu-sim {kinds[0].value})"
    return " and ".join(f"the {kind.name}" for kind in kinds)


def _fault(body: Mapping[str, Any], value: object, built: Built, period_s: float) -> Control:
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
        powertrain = powertrain_of(built)
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


def apply(control: Control, built: Built, tick: int) -> str | None:
    """Apply ``control`` before ``tick``; None when applied, else why it changed nothing."""
    if control.name in ("message", "signal"):
        return apply_live(control.name, control.value, built, tick)
    if control.name == "fault":
        return _switch_fault(control, built, tick)
    if control.name in built.node.CONTROLS:
        built.node.take_control(control.name, control.value)
    return None


def _switch_fault(control: Control, built: Built, tick: int) -> str | None:
    fault, on = control.value, control.on
    powertrain = powertrain_of(built) if control.node is not None else None
    network = built.node.network if powertrain is None else powertrain.others[str(control.node)]
    if fault.kind == DTC_KIND and fault.dtc is not None and network is not None:
        changed = network.switch_dtc(Dtc(*fault.dtc), on, tick)
    else:
        changed = built.faults is not None and built.faults.switch(fault, on, tick)
    if changed:
        return None
    return f"fault {fault} is already {'on' if on else 'off'}"


#: called with the tick a control acted before, or None and the reason it changed nothing
Done = Callable[[int | None, str | None], None]


def _told(control: Control, tick: int | None, problem: str | None) -> None:
    """A planned control, in the log: applied, or why it changed nothing."""
    if problem is None:
        log.info("control %s applied before tick %s", control.record(), tick)
    else:
        log.warning("control %s changed nothing: %s", control.record(), problem)


class ControlDesk:
    """A tick observer that applies the queued controls between ticks and journals each one.

    ``journal`` takes an applied control's record (the recorder's); ``marks`` takes the record
    controls with their tick (the session recording, ecu_sim.web.session) and says why one
    changed nothing. ``replayed`` holds a journal's controls by the tick they acted before, for a
    replay: then nothing is queued. ``planned`` holds checked controls by the tick they act
    before (the settings', ecu_sim.runs.planned). What is due before tick 0 is applied as the desk
    is made: the runs make it once the node is built, before its loop runs.
    """

    def __init__(self, built: Built, journal: Callable[[dict[str, Any]], None] | None = None,
                 marks: Callable[[str, int], str | None] | None = None,
                 replayed: Mapping[int, list[dict[str, Any]]] | None = None,
                 speed: RoleCodec | None = None, period_s: float = 0.1,
                 planned: Mapping[int, list[Control]] | None = None) -> None:
        self._built = built
        self._journal = journal
        self._marks = marks
        self._replayed = dict(replayed or {})
        self._planned = dict(planned or {})
        self._speed = speed
        self._period_s = period_s
        self._queue: queue.SimpleQueue[tuple[Control, Done]] = queue.SimpleQueue()
        self._due(0)

    def submit(self, control: Control, done: Done) -> None:
        """Queue a checked control from any thread; ``done`` is called from the loop's thread."""
        self._queue.put((control, done))

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        before = tick + 1
        self._due(before)
        pending = self._queue
        while not pending.empty():
            control, done = pending.get_nowait()
            self.apply_now(control, before, done)

    def apply_now(self, control: Control, before: int, done: Done) -> None:
        """Apply a checked control before tick ``before`` and journal it. Only the loop's own thread
        calls this, between two ticks: the desk's ``on_tick``, or a lockstep peer's request
        (ecu_sim.cosim), whose loop stands still between its steps."""
        problem = (apply(control, self._built, before) if control.name != "record"
                   else "this node makes no recording" if self._marks is None
                   else self._marks(control.value, before))
        if problem is None and self._journal is not None:
            self._journal(control.record())
        done(None if problem is not None else before, problem)

    def _due(self, before: int) -> None:
        """The replayed and the planned controls that act before tick ``before``."""
        if self._replayed:
            for record in self._replayed.pop(before, ()):
                self._replay(record, before)
        if self._planned:
            for control in self._planned.pop(before, ()):
                self.apply_now(control, before, functools.partial(_told, control))

    def _replay(self, record: dict[str, Any], tick: int) -> None:
        if "record" in record:
            return  # a mark of the session's download, nothing the node sees
        if self._speed is None:
            raise ValueError("a replaying desk needs the speed codec to check controls")
        try:
            control = check(record, self._built, self._speed, self._period_s)
        except ControlError as exc:
            raise ConfigError(f"the recording's control {record} before tick {tick} cannot be "
                              f"applied: {exc.reason}") from None
        problem = apply(control, self._built, tick)
        if problem is not None:
            raise ConfigError(f"the recording's control {record} before tick {tick}: {problem}")
