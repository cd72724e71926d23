"""``simulate --out FILE.csv``: the ECU's state after every tick, one CSV row each.

A plain table with fixed decimals, so two runs can be compared with ``diff`` and any plotting
tool reads it; the first row is tick 0 at t = 0. A vehicle with a driveline (``class6``) adds
the columns only it has: elevation, gear, engine speed, brake demand, and the fuel rate (L/h)
and fuel used (L) of its engine map; the testbed's table is unchanged. ``--network powertrain``
adds the engine's torque mode and controlling address, its demand and the acceleration.
Which columns a run has follows from the figures its ECU says it has (ecu_sim.nodes.figures).
``simulate --state-hash FILE`` writes a hash of the same state at full precision instead, every
bit of every float: a difference too small for the table's decimals (a processor or a libm that
rounds one operation differently) shows there first, at the tick where it starts.
"""

from __future__ import annotations

import hashlib
import struct
from typing import IO, Protocol

from ecu_sim.nodes.figures import Figured, values

#: the table's column groups, each (figure, format) in order: a group is written when the node has
#: every figure of it, so the testbed's table stays what it always was
COLUMNS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("speed_kph", ".6f"), ("app_pct", ".4f"), ("grade_pct", ".4f"), ("distance_m", ".3f")),
    (("elevation_m", ".3f"), ("gear", ""), ("engine_rpm", ".1f"), ("brake_pct", ".1f"),
     ("fuel_rate_lph", ".4f"), ("fuel_used_l", ".6f")),
    # --network powertrain: who controls the engine (SPN 899, SPN 1483), what it is asked for
    # (SPN 2432) and the acceleration an XBR closes on
    (("torque_mode", ".0f"), ("controlling_address", ".0f"), ("engine_demand_pct", ".2f"),
     ("accel_mps2", ".4f")),
)


def columns(node: Figured) -> tuple[tuple[str, str], ...]:
    """The table's columns for what ``node`` has, after ``t_s``."""
    has = values(node.figures())
    return tuple(column for group in COLUMNS if all(name in has for name, _ in group) for column in group)


class CsvTrace:
    """A tick observer that writes the ECU's row after each tick.

    The row is one ``str.format`` of the node's figures by position, the positions found once:
    a node says the same figures in the same order at every tick (see ``Figured``)."""

    def __init__(self, out: IO[str], node: Figured) -> None:
        self._write = out.write
        self._figures = node.figures
        chosen = columns(node)
        at = {figure.name: index for index, figure in enumerate(node.figures())}
        self._row = "{0:.3f}," + ",".join(f"{{1[{at[name]}].value:{spec}}}" for name, spec in chosen) + "\n"
        out.write(",".join(("t_s", *(name for name, _ in chosen))) + "\n")

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        self._write(self._row.format(now, self._figures()))


class Hashed(Protocol):
    """A node whose state the hash covers: its unrounded floats."""

    def state_bits(self) -> tuple[float, float, float, float]: ...


class StateHashTrace:
    """A tick observer that writes ``tick hash`` of the ECU's speed, distance, APP and grade bits."""

    def __init__(self, out: IO[str], node: Hashed) -> None:
        self._write = out.write
        self._state_bits = node.state_bits

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        state = struct.pack("<dddd", *self._state_bits())
        self._write(f"{tick} {hashlib.blake2b(state, digest_size=8).hexdigest()}\n")
