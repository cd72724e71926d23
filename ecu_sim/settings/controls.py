"""``[controls] apply`` and ``--control``: the controls of the node's page, written ahead with a time.

A control is written ``KIND:TARGET[=VALUE][@FROM[-TO|+DURATION]]``, times in seconds from the
start of the run (tick 0), as a fault's window is (ecu_sim.faults.spec). Each one is the same
control that ``POST /api/control`` takes (ecu_sim.runs.controls), so it is checked, applied between
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

Without a time a control acts from tick 0. Only what the text can tell is checked here: whether
the message, signal or node exists and whether a value is in its DBC range takes the built node,
which ecu_sim.runs.planned checks against before the first tick.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ecu_sim.runtime.ticks import WINDOW_FORMS, WindowError, parse_window

#: kind -> (takes a value, what the value is, a window undoes it)
KINDS: dict[str, tuple[bool, str, bool]] = {
    "stop": (False, "", True),
    "send": (False, "", False),
    "cycle": (True, "a cycle time in milliseconds", False),
    "signal": (True, "a number in the signal's unit", True),
    "free": (False, "", False),
    "dtc": (True, "SPN:FMI, e.g. 1624:2", True),
}
_SPEC = re.compile(r"^(?P<kind>[a-z]+)(?::(?P<target>[A-Za-z_][A-Za-z0-9_.]*))?(?:=(?P<value>[^@]+))?"
                   r"(?:@(?P<window>.+))?$")
_DTC = re.compile(r"^\d+:\d+$")
EXAMPLE = "e.g. stop:TCO1@30, signal:CCVS1.WheelBasedVehicleSpeed=50@10-20 or dtc:TACHOGRAPH=1624:2@5"


class ControlSpecError(ValueError):
    """A control whose text cannot be read; the message says what is expected."""


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
    kind, target, value = match["kind"], match["target"] or "", match["value"]
    if kind not in KINDS:
        raise ControlSpecError(f"{text!r}: unknown control {kind!r}; known: {', '.join(KINDS)}")
    if not target and kind != "dtc":
        named = "signal" if kind in ("signal", "free") else "message"
        raise ControlSpecError(f"{text!r}: {kind} names a {named} after a ':', {EXAMPLE}")
    takes_value, meaning, undone = KINDS[kind]
    if takes_value and value is None:
        raise ControlSpecError(f"{text!r}: {kind} needs a value, {meaning} ({kind}:{target}=...)")
    if not takes_value and value is not None:
        raise ControlSpecError(f"{text!r}: {kind} takes no value")
    if kind in ("signal", "free") and target.count(".") != 1:
        raise ControlSpecError(f"{text!r}: {kind} names a signal as MESSAGE.SIGNAL")
    if kind not in ("signal", "free") and "." in target:
        raise ControlSpecError(f"{text!r}: {kind} names a {'node' if kind == 'dtc' else 'message'}, "
                               "without a '.'")
    start, end = _window(text, match["window"])
    if end is not None and not undone:
        raise ControlSpecError(f"{text!r}: {kind} takes a time @FROM, not a window; only stop, signal "
                               "and dtc are undone at the window's end")
    body = _body(text, kind, target, value)
    timed = [Timed(start, body, text)]
    if end is not None:
        timed.append(Timed(end, _undone(body), text))
    return timed


def _window(text: str, window: str | None) -> tuple[float, float | None]:
    try:
        return parse_window(window)
    except WindowError as exc:
        if exc.malformed:
            raise ControlSpecError(f"{text!r}: the time must be {WINDOW_FORMS} from the start, "
                                   "e.g. @30 or @30-40") from None
        raise ControlSpecError(f"{text!r}: {exc}") from None


def _body(text: str, kind: str, target: str, value: str | None) -> dict[str, Any]:
    """The control as the page's API takes it."""
    if kind in ("stop", "send"):
        return {"message": target, "send": kind == "send"}
    if kind == "free":
        return {"signal": target, "value": None}
    assert value is not None
    if kind == "dtc":
        if _DTC.match(value.strip()) is None:
            raise ControlSpecError(f"{text!r}: the value of dtc must be SPN:FMI, e.g. 1624:2")
        return {"fault": f"dtc={value.strip()}", "on": True, **({"node": target} if target else {})}
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ControlSpecError(f"{text!r}: the value of {kind} must be {KINDS[kind][1]}")
    return {"message": target, "cycle_ms": number} if kind == "cycle" else {"signal": target, "value": number}


def _undone(body: dict[str, Any]) -> dict[str, Any]:
    """What ends a window: the message sent again, the signal freed, the DTC cleared."""
    if "send" in body:
        return {**body, "send": True}
    if "signal" in body:
        return {**body, "value": None}
    return {**body, "on": False}


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
