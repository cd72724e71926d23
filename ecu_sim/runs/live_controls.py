"""The controls of the messages the process sends (the powertrain's and the restbus's), by the
DBC's names: a message stopped, restarted or re-timed, a signal fixed or given back.

What they act on is :class:`~ecu_sim.powertrain.live.LiveMessages`; this module checks a control
against it and applies it, for ecu_sim.runs.controls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecu_sim.nodes.factory import Built
from ecu_sim.powertrain.live import LiveMessages
from ecu_sim.powertrain.network import Powertrain
from ecu_sim.runs.refusals import ControlError, Refusal, number, switch


def powertrain_of(built: Built) -> Powertrain | None:
    """The ECU's ``--network powertrain`` (else None), by name: only the factory knows node classes."""
    return getattr(built.node, "powertrain", None)


def _messages(built: Built) -> LiveMessages:
    powertrain = powertrain_of(built)
    if powertrain is None:
        raise ControlError(Refusal.NOT_HERE, "messages and signals are controlled on the powertrain "
                                             "network (--network powertrain)")
    return powertrain.live


def check_live(name: str, body: Mapping[str, Any], built: Built) -> dict[str, Any]:
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
            return {"message": text, "send": switch("send", body["send"])}
        cycle = number("cycle_ms", body["cycle_ms"])
        if not 1.0 <= cycle <= 3_600_000.0:
            raise ControlError(Refusal.OUT_OF_RANGE, f"cycle_ms must be 1..3600000 ms (got {cycle:g})")
        return {"message": text, "cycle_ms": cycle}
    signals = {s.name: s for s in found.message.signals}
    if signal_name not in signals:
        raise ControlError(Refusal.OUT_OF_RANGE, f"{message_name} has no signal {signal_name!r}; known: "
                                                 f"{', '.join(signals)}")
    if "value" not in body:
        raise ControlError(Refusal.MALFORMED, 'a signal control takes "value": a number, or null to release')
    if body["value"] is None:
        return {"signal": text, "value": None}
    value, signal = number("value", body["value"]), signals[signal_name]
    low, high = signal.minimum, signal.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        raise ControlError(Refusal.OUT_OF_RANGE, f"{text} must be within its DBC range {low:g}..{high:g} "
                                                 f"(got {value:g})")
    return {"signal": text, "value": value}


def apply_live(name: str, value: Mapping[str, Any], built: Built, tick: int) -> str | None:
    messages = _messages(built)
    if name == "signal":
        message_name, _, signal_name = str(value["signal"]).partition(".")
        messages.fix(message_name, signal_name, value["value"])
        return None
    if "cycle_ms" in value:
        messages.cycle(value["message"], value["cycle_ms"], tick)
        return None
    if messages.send(value["message"], value["send"]):
        return None
    return f"message {value['message']} is already {'sent' if value['send'] else 'stopped'}"
