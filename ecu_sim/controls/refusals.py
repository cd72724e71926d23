"""Why a control is refused, and the plain values a control carries, read as its sender wrote them.

Apart from ecu_sim.controls.check so that the checks of the messages' controls
(ecu_sim.controls.live) share them without importing the whole of it.
"""

from __future__ import annotations

import enum
import math

_SWITCH_WORDS = {"on": True, "off": False}


class Refusal(enum.Enum):
    """Why a control is refused, as its sender can act on it; the page's server says it in HTTP."""

    #: not a control: the wrong shape, an unknown name, a value of the wrong type
    MALFORMED = "malformed"
    #: a control of another kind of node, or one this node cannot apply (its frames are the kernel's)
    NOT_HERE = "not here"
    #: a well-formed value outside the range the DBC or the control allows
    OUT_OF_RANGE = "out of range"


class ControlError(Exception):
    """A control that cannot be applied: ``refusal`` says which kind of mistake, ``reason`` the rest."""

    def __init__(self, refusal: Refusal, reason: str) -> None:
        super().__init__(reason)
        self.refusal = refusal
        self.reason = reason


def number(name: str, value: object) -> float:
    """A finite number (a JSON true is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ControlError(Refusal.MALFORMED, f"{name} must be a finite number (got {value!r})")
    return float(value)


def switch(name: str, value: object) -> bool:
    """true or false, or the words a person types for them, "on" and "off"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _SWITCH_WORDS:
        return _SWITCH_WORDS[value.lower()]
    raise ControlError(Refusal.MALFORMED,
        f"{name} must be true or false (or \"on\" / \"off\"; got {value!r})")
