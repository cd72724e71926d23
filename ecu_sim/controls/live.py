"""The controls of the messages the process sends (the powertrain's and the restbus's), by the
DBC's names: a message stopped, restarted or re-timed, a signal fixed or given back.

What they act on is the powertrain's ``LiveMessages`` (ecu_sim.powertrain.live); this module checks a control
against it into one of the records below and applies it, for ecu_sim.controls.desk. A record
turns back into its JSON object only where it is journaled (:meth:`record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ecu_sim.controls.node import Controlled, Messages, network_of
from ecu_sim.controls.refusals import ControlError, Refusal, number, switch

#: a control as the recording's journal holds it (a JSON object), which the check reads back unchanged
ControlRecord = dict[str, str | float | bool | None]


@dataclass(frozen=True)
class MessageSend:
    """A message stopped (``send`` False) or restarted on its grid."""

    message: str
    send: bool

    def record(self) -> ControlRecord:
        return {"message": self.message, "send": self.send}


@dataclass(frozen=True)
class MessageCycle:
    """A message re-timed: sent every ``cycle_ms`` from then on."""

    message: str
    cycle_ms: float

    def record(self) -> ControlRecord:
        return {"message": self.message, "cycle_ms": self.cycle_ms}


@dataclass(frozen=True)
class SignalFix:
    """A signal (``MESSAGE.SIGNAL``) fixed at ``value``, or given back to the truck (None)."""

    signal: str
    value: float | None

    def record(self) -> ControlRecord:
        return {"signal": self.signal, "value": self.value}


#: a checked control of a message or a signal
LiveControl = MessageSend | MessageCycle | SignalFix


def _messages(built: Controlled) -> Messages:
    powertrain = network_of(built)
    if powertrain is None:
        raise ControlError(Refusal.NOT_HERE, "messages and signals are controlled on the powertrain "
                                             "network (--network powertrain)")
    return powertrain.live


def check_live(name: str, body: Mapping[str, Any], built: Controlled) -> LiveControl:
    """A message or signal control checked against the messages the node sends."""
    messages = _messages(built)
    text = body[name]
    if not isinstance(text, str):
        raise ControlError(Refusal.MALFORMED, f"{name} must be a name, e.g. \"TCO1\" (got {text!r})")
    message_name, _, signal_name = text.partition(".") if name == "signal" else (text, "", "")
    found = messages.find(message_name)
    if found is None:
        raise ControlError(Refusal.OUT_OF_RANGE, f"no message {message_name!r} is sent here; known: "
                                                 f"{', '.join(messages.names())}")
    if name == "message":
        if ("send" in body) == ("cycle_ms" in body):
            raise ControlError(Refusal.MALFORMED, 'a message control takes "send" or "cycle_ms"')
        if "send" in body:
            return MessageSend(text, switch("send", body["send"]))
        cycle = number("cycle_ms", body["cycle_ms"])
        if not 1.0 <= cycle <= 3_600_000.0:
            raise ControlError(Refusal.OUT_OF_RANGE, f"cycle_ms must be 1..3600000 ms (got {cycle:g})")
        return MessageCycle(text, cycle)
    signals = {s.name: s for s in found.message.signals}
    if signal_name not in signals:
        raise ControlError(Refusal.OUT_OF_RANGE, f"{message_name} has no signal {signal_name!r}; known: "
                                                 f"{', '.join(signals)}")
    if "value" not in body:
        raise ControlError(Refusal.MALFORMED, 'a signal control takes "value": a number, or null to release')
    if body["value"] is None:
        return SignalFix(text, None)
    value, signal = number("value", body["value"]), signals[signal_name]
    low, high = signal.minimum, signal.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        raise ControlError(Refusal.OUT_OF_RANGE, f"{text} must be within its DBC range {low:g}..{high:g} "
                                                 f"(got {value:g})")
    return SignalFix(text, value)


def apply_live(control: LiveControl, built: Controlled, tick: int) -> str | None:
    """Apply a checked message or signal control before ``tick``; None when applied, else why it
    changed nothing."""
    messages = _messages(built)
    if isinstance(control, SignalFix):
        message_name, _, signal_name = control.signal.partition(".")
        messages.fix(message_name, signal_name, control.value)
        return None
    if isinstance(control, MessageCycle):
        messages.cycle(control.message, control.cycle_ms, tick)
        return None
    if messages.send(control.message, control.send):
        return None
    return f"message {control.message} is already {'sent' if control.send else 'stopped'}"
