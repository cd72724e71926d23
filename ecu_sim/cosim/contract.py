"""What each double of a co-simulation datagram means: index, name, unit, range, for both directions.

The list is generated, never written by hand: the inputs and the model's outputs come from the
ECU, and after them one output per signal of every message the ECU puts on the bus, read from the
DBC in use (its unit and range), so ``--profile j1939`` or a user's DBC change the contract and
``ecu-sim cosim --contract`` says how. A Simulink or LabVIEW user wires the vector from this list.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from cantools.database.can import Message

from ecu_sim.codec.profile import Profile


@dataclass(frozen=True)
class Entry:
    """One double: its position after the header, its name, unit, range and meaning."""

    index: int
    name: str
    unit: str
    minimum: float
    maximum: float
    description: str


#: the peer's inputs: (name, unit, minimum, maximum, meaning); NaN means "not given"
INPUTS = (
    ("app_pct", "%", 0.0, 100.0, "accelerator pedal position; NaN: none from the peer (then only APP "
                                 "frames of the CAN encoding drive the ECU, else it coasts)"),
    ("grade_pct", "%", -100.0, 100.0, "road grade, positive uphill; NaN: the ECU's route"),
)
#: the model's outputs, before the bus signals
MODEL_OUTPUTS = (
    ("t_s", "s", 0.0, math.inf, "time of the answer's tick: tick * period"),
    ("speed_kph", "km/h", 0.0, math.inf, "the model's speed, unrounded"),
    ("distance_m", "m", 0.0, math.inf, "distance along the route"),
    ("grade_pct", "%", -100.0, 100.0, "grade the model used in the last tick"),
    ("app_pct", "%", 0.0, 100.0, "APP the model used in the last tick (0 when missing)"),
    ("app_missing", "", 0.0, 1.0, "1 when the ECU had no valid APP in the last tick (it coasts)"),
)


@dataclass(frozen=True)
class Contract:
    inputs: tuple[Entry, ...]
    outputs: tuple[Entry, ...]
    #: the messages whose signals end the outputs, in order
    messages: tuple[Message, ...]

    def as_json(self) -> str:
        def rows(entries: Sequence[Entry]) -> list[dict[str, object]]:
            return [{k: (None if isinstance(v, float) and math.isinf(v) else v)
                     for k, v in asdict(e).items()} for e in entries]
        return json.dumps({"version": 1, "header": list(HEADER_NAMES), "inputs": rows(self.inputs),
                           "outputs": rows(self.outputs)}, indent=2) + "\n"

    def as_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["direction", "index", "name", "unit", "minimum", "maximum", "description"])
        for direction, entries in (("input", self.inputs), ("output", self.outputs)):
            for e in entries:
                writer.writerow([direction, e.index, e.name, e.unit, _number(e.minimum),
                                 _number(e.maximum), e.description])
        return out.getvalue()


#: the four header doubles, before index 0 of the values
HEADER_NAMES = ("version", "seq", "n", "tick")


def _number(value: float) -> str:
    return "" if math.isinf(value) else f"{value:g}"


def _entries(rows: Sequence[tuple[str, str, float, float, str]]) -> tuple[Entry, ...]:
    return tuple(Entry(i, *row) for i, row in enumerate(rows))


def contract(profile: Profile) -> Contract:
    """The contract of an ECU on ``profile``: its inputs, its model, every signal it sends."""
    messages = (profile.speed.message,)
    signals = [(f"{m.name}.{s.name}", s.unit or "", _bound(s.minimum, -math.inf), _bound(s.maximum, math.inf),
                "signal on the bus, decoded from the last frame of the step; NaN when none was sent or "
                "it says not available")
               for m in messages for s in m.signals]
    return Contract(_entries(INPUTS), _entries([*MODEL_OUTPUTS, *signals]), messages)


def _bound(value: float | None, default: float) -> float:
    return default if value is None else float(value)
