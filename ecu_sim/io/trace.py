"""``simulate --out FILE.csv``: the ECU's state after every tick, one CSV row each.

A plain table with fixed decimals, so two runs can be compared with ``diff`` and any plotting
tool reads it; the first row is tick 0 at t = 0. ``simulate --state-hash FILE`` writes a hash of
the same state at full precision instead, every bit of every float: a difference too small for
the table's decimals (a processor or a libm that rounds one operation differently) shows there
first, at the tick where it starts.
"""

from __future__ import annotations

import hashlib
import struct
from typing import IO

from ecu_sim.nodes.ecu import Ecu

HEADER = "t_s,speed_kph,app_pct,grade_pct,distance_m\n"


class CsvTrace:
    """A tick observer that writes the ECU's row after each tick."""

    def __init__(self, out: IO[str], ecu: Ecu) -> None:
        self._write = out.write
        self._ecu = ecu
        out.write(HEADER)

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        self._write(f"{now:.3f},{ecu.state.speed_kph:.6f},{ecu.app_pct:.4f},{ecu.grade_pct:.4f},"
                    f"{ecu.state.distance_m:.3f}\n")


class StateHashTrace:
    """A tick observer that writes ``tick hash`` of the ECU's speed, distance, APP and grade bits."""

    def __init__(self, out: IO[str], ecu: Ecu) -> None:
        self._write = out.write
        self._ecu = ecu

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        ecu = self._ecu
        state = struct.pack("<dddd", ecu.state.speed_mps, ecu.state.distance_m, ecu.app_pct, ecu.grade_pct)
        self._write(f"{tick} {hashlib.blake2b(state, digest_size=8).hexdigest()}\n")
