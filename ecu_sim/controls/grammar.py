"""``[controls] apply`` and ``--control``: the controls of the node's page, written ahead with a time.

A control is written ``KIND:TARGET[=VALUE][@FROM[-TO|+DURATION]]``, times in seconds from the
start of the run (tick 0), as a fault's window is (ecu_sim.faults.spec). Each one is the same
control that ``POST /api/control`` takes (ecu_sim.controls.check), so it is checked, applied between
ticks, journaled and replayed as one from the page is; only when it acts differs:

=================================  ============================================================
``stop:MESSAGE``                   stop sending a message; with ``@FROM-TO`` it restarts at TO
``send:MESSAGE``                   restart a stopped message on its grid
``cycle:MESSAGE=MS``               send it every MS milliseconds from then on
``signal:MESSAGE.SIGNAL=VALUE``    fix a signal's value; with ``@FROM-TO`` it is freed at TO
``free:MESSAGE.SIGNAL``            give a fixed signal back to the truck (or its start value)
``dtc:NODE=SPN:FMI``               raise a DTC in that node's DM1, lamp on; cleared at TO
``dtc=SPN:FMI``                    the same in the ECU's own DM1 (the engine's, 0x00)
=================================  ============================================================

Each kind is one entry of :data:`CONTROLS`: its target and value as a record, checked when the
text is read, its help line and what it asks of the node (and, for those a window undoes, what
ends it). Without a time a control acts from tick 0. Only what the text can tell is checked here: whether
the message, signal or node exists and whether a value is in its DBC range takes the built node,
which ecu_sim.controls.planned checks against before the first tick.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ecu_sim.registry.family import Family, ParamError, Reader, UnknownKind, param
from ecu_sim.runtime.ticks import WINDOW_FORMS, WindowError, parse_window

_SPEC = re.compile(r"^(?P<kind>[a-z]+)(?::(?P<target>[A-Za-z_][A-Za-z0-9_.]*))?(?:=(?P<value>[^@]+))?"
                   r"(?:@(?P<window>.+))?$")
_DTC = re.compile(r"^\d+:\d+$")
EXAMPLE = "e.g. stop:TCO1@30, signal:CCVS1.WheelBasedVehicleSpeed=50@10-20 or dtc:TACHOGRAPH=1624:2@5"


class ControlSpecError(ValueError):
    """A control whose text cannot be read; the message says what is expected."""


@dataclass(frozen=True)
class Acts:
    """What a control asks of the node, as ``POST /api/control`` takes it (``body``), and what
    ends its window (``undone``: given by the kinds whose record says ``UNDONE``; None: a window is
    refused, the control takes a time only)."""

    body: dict[str, Any]
    undone: dict[str, Any] | None = None


#: every control kind, in the order the messages name them
CONTROLS: Family[None, Acts] = Family("control")


def _named(dots: int, what: str) -> Reader:
    def read(text: str) -> str:
        if text.count(".") != dots:
            raise ValueError(text)
        return text
    refusal = ("{kind} names a signal as MESSAGE.SIGNAL" if dots else
               "{kind} names a " + what + ", without a '.'")
    return Reader(read, what, keep_case=True, refusal=refusal)


def _number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _dtc(text: str) -> str:
    if _DTC.match(text.strip()) is None:
        raise ValueError(text)
    return text.strip()


_MESSAGE, _SIGNAL, _NODE = _named(0, "message"), _named(1, "signal"), _named(0, "node")
_VALUE = "the value of {kind} must be {meaning}"
_CYCLE = Reader(_number, "a cycle time in milliseconds", keep_case=True, refusal=_VALUE)
_SIGNAL_VALUE = Reader(_number, "a number in the signal's unit", keep_case=True, refusal=_VALUE)
_DTC_VALUE = Reader(_dtc, "SPN:FMI, e.g. 1624:2", keep_case=True, refusal=_VALUE)


_NAMES_MESSAGE = "{kind} names a message after a ':', " + EXAMPLE
_NAMES_SIGNAL = "{kind} names a signal after a ':', " + EXAMPLE
_NEEDS_VALUE = "{kind} needs a value, {meaning} ({kind}:{target}=...)"


@dataclass(frozen=True)
class MessageControl:
    """A control of a whole message, named after the ':'."""

    target: str | None = param(_MESSAGE, missing=_NAMES_MESSAGE)


@dataclass(frozen=True)
class Stop(MessageControl):
    #: a window undoes it at its end
    UNDONE: ClassVar[bool] = True


@CONTROLS.register("stop", Stop, "stop sending a message; with @FROM-TO it restarts at TO")
def _stop(p: Stop, _: None) -> Acts:
    return Acts({"message": p.target, "send": False}, {"message": p.target, "send": True})


@CONTROLS.register("send", MessageControl, "restart a stopped message on its grid")
def _send(p: MessageControl, _: None) -> Acts:
    return Acts({"message": p.target, "send": True})


@dataclass(frozen=True)
class Cycle:
    target: str | None = param(_MESSAGE, missing=_NAMES_MESSAGE)
    value: float | None = param(_CYCLE, missing=_NEEDS_VALUE)


@CONTROLS.register("cycle", Cycle, "send it every MS milliseconds from then on")
def _cycle(p: Cycle, _: None) -> Acts:
    return Acts({"message": p.target, "cycle_ms": p.value})


@dataclass(frozen=True)
class Signal:
    #: a window undoes it at its end
    UNDONE: ClassVar[bool] = True
    target: str | None = param(_SIGNAL, missing=_NAMES_SIGNAL)
    value: float | None = param(_SIGNAL_VALUE, missing=_NEEDS_VALUE)


@CONTROLS.register("signal", Signal, "fix a signal's value; with @FROM-TO it is freed at TO")
def _signal(p: Signal, _: None) -> Acts:
    return Acts({"signal": p.target, "value": p.value}, {"signal": p.target, "value": None})


@dataclass(frozen=True)
class SignalControl:
    """A control of one signal, named MESSAGE.SIGNAL after the ':'."""

    target: str | None = param(_SIGNAL, missing=_NAMES_SIGNAL)


@CONTROLS.register("free", SignalControl, "give a fixed signal back to the truck (or its start value)")
def _free(p: SignalControl, _: None) -> Acts:
    return Acts({"signal": p.target, "value": None})


@dataclass(frozen=True)
class RaiseDtc:
    #: a window undoes it at its end
    UNDONE: ClassVar[bool] = True
    #: None: the ECU's own DM1 (the engine's, 0x00)
    target: str | None = param(_NODE)
    value: str | None = param(_DTC_VALUE, missing=_NEEDS_VALUE)


@CONTROLS.register("dtc", RaiseDtc, "raise a DTC in that node's DM1 (or the ECU's own), lamp on; cleared "
                   "at TO")
def _dtc_on(p: RaiseDtc, _: None) -> Acts:
    node = {"node": p.target} if p.target else {}
    fault = f"dtc={p.value}"
    return Acts({"fault": fault, "on": True, **node}, {"fault": fault, "on": False, **node})


@dataclass(frozen=True)
class Timed:
    """One control as ``POST /api/control`` takes it (``body``), due ``at_s`` seconds into the run."""

    at_s: float
    body: dict[str, Any]
    #: the text it was written as, to name it in a refusal
    text: str


def parse_control(text: str) -> list[Timed]:
    """The controls ``text`` asks for: one, or two when a window undoes it at its end."""
    match = _SPEC.match(text.strip())
    if match is None:
        raise ControlSpecError(f"{text!r}: expected KIND:TARGET[=VALUE][@FROM[-TO|+DURATION]], {EXAMPLE}")
    try:
        kind = CONTROLS[match["kind"]]
        takes = {p.key for p in kind.parameters()}
        given = {key: match[key] for key in ("target", "value") if match[key] is not None}
        record = kind.read({key: text for key, text in given.items() if key in takes})
        if "value" in given and "value" not in takes:
            raise ParamError(f"{kind.name} takes no value")
        acts = kind.build(record, None)
    except (UnknownKind, ParamError) as exc:
        raise ControlSpecError(f"{text!r}: {exc}") from None
    start, end = _window(text, match["window"])
    if end is not None and acts.undone is None:
        *most, last = (k.name for k in CONTROLS if getattr(k.params, "UNDONE", False))
        undone = f"{', '.join(most)} and {last}"
        raise ControlSpecError(f"{text!r}: {kind.name} takes a time @FROM, not a window; only {undone} "
                               "are undone at the window's end")
    timed = [Timed(start, acts.body, text)]
    if acts.undone is not None and end is not None:
        timed.append(Timed(end, acts.undone, text))
    return timed


def _window(text: str, window: str | None) -> tuple[float, float | None]:
    try:
        return parse_window(window)
    except WindowError as exc:
        if exc.malformed:
            raise ControlSpecError(f"{text!r}: the time must be {WINDOW_FORMS} from the start, "
                                   "e.g. @30 or @30-40") from None
        raise ControlSpecError(f"{text!r}: {exc}") from None


@dataclass(frozen=True)
class ControlSettings:
    """The controls a run applies at their times, each checked like one from the node's page."""

    #: control specifications, e.g. ``stop:TCO1@30``; ``--control`` may be repeated
    apply: tuple[str, ...] = ()

    def problems(self) -> list[str]:
        found = []
        for text in self.apply:
            try:
                parse_control(text)
            except ControlSpecError as exc:
                found.append(f"apply {exc}")
        return found
