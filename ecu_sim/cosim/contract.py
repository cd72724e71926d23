"""What each double of a co-simulation datagram means: index, name, unit, range, for both directions.

The list is generated, never written by hand: the inputs and the model's outputs come from the
ECU and its vehicle, and after them one output per signal of every message the ECU puts on the
bus, read from the DBC in use (its unit and range), so ``--profile j1939``, ``--vehicle class6``
or a user's DBC change the contract and ``ecu-sim cosim --contract`` says how. A Simulink or
LabVIEW user wires the vector from this list.

The ``class6`` truck adds what it has: a brake demand input when the DBC carries the brake pedal
position the ECU receives (SPN 521, EBC1), its driveline, road and fuel among the model's outputs,
and the engine messages it sends (EEC1, ETC2, LFE1, LFC1) among the bus signals.
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
from ecu_sim.nodes.factory import SPN_BRAKE_PEDAL_POSITION
from ecu_sim.nodes.identifiers import spn_codec
from ecu_sim.powertrain.engine_frames import find_messages


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
#: the input a truck with a service brake adds, when the DBC carries the brake demand it receives
BRAKE_INPUT = ("brake_pct", "%", 0.0, 100.0, "service brake demand, sent as the DBC's brake pedal position; "
                                            "NaN: none from the peer (then only its frames of the CAN "
                                            "encoding brake the truck)")
#: the model's outputs, before the bus signals
MODEL_OUTPUTS = (
    ("t_s", "s", 0.0, math.inf, "time of the answer's tick: tick * period"),
    ("speed_kph", "km/h", 0.0, math.inf, "the model's speed, unrounded"),
    ("distance_m", "m", 0.0, math.inf, "distance along the route"),
    ("grade_pct", "%", -100.0, 100.0, "grade the model used in the last tick"),
    ("app_pct", "%", 0.0, 100.0, "APP the model used in the last tick (0 when missing)"),
    ("app_missing", "", 0.0, 1.0, "1 when the ECU had no valid APP in the last tick (it coasts)"),
)
#: what the ``class6`` truck adds to the model's outputs
DRIVELINE_OUTPUTS = (
    ("gear", "", 1.0, math.inf, "engaged gear"),
    ("selected_gear", "", 1.0, math.inf, "gear selected; differs from the engaged one during a shift"),
    ("engine_rpm", "rpm", 0.0, math.inf, "engine speed"),
    ("brake_applied_pct", "%", 0.0, 100.0, "brake demand the model used in the last tick"),
    ("elevation_m", "m", -math.inf, math.inf, "height of the route under the front axle; NaN while the "
                                               "peer gives the grade"),
    ("fuel_rate_lph", "L/h", 0.0, math.inf, "the engine's fuel rate, from its map at the tick's "
                                             "operating point"),
    ("fuel_used_l", "L", 0.0, math.inf, "fuel used since the start"),
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


def contract(profile: Profile, vehicle: str = "testbed") -> Contract:
    """The contract of an ECU on ``profile`` driving ``vehicle`` (a preset name): its inputs, its
    model, every signal it sends."""
    class6 = vehicle == "class6"
    brake = class6 and spn_codec(profile, SPN_BRAKE_PEDAL_POSITION) is not None
    engine = [m for m, _ in find_messages(profile.database, profile.speed.is_j1939)] if class6 else []
    messages = (profile.speed.message, *engine)
    signals = [(f"{m.name}.{s.name}", s.unit or "", _bound(s.minimum, -math.inf), _bound(s.maximum, math.inf),
                "signal on the bus, decoded from the last frame of the step; NaN when none was sent or "
                "it says not available")
               for m in messages for s in m.signals]
    inputs = [*INPUTS, BRAKE_INPUT] if brake else list(INPUTS)
    model = [*MODEL_OUTPUTS, *DRIVELINE_OUTPUTS] if class6 else list(MODEL_OUTPUTS)
    return Contract(_entries(inputs), _entries([*model, *signals]), messages)


def _bound(value: float | None, default: float) -> float:
    return default if value is None else float(value)
