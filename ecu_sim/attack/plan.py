"""The attacks of a run on the loop's ticks: which frames each tick sends, and whose they are.

Windows become ticks by the one seconds-to-ticks rule (:func:`ecu_sim.runtime.ticks.ticks_in`),
as fault windows do, so ``@30+10`` is the same ticks in ``simulate`` and on a real bus. Each
attack draws from a generator of its own, seeded from the run's seed and its place in the list,
so adding an attack does not change the frames of the others.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import can
from cantools.database.can import Database

from ecu_sim.attack.spec import Attack
from ecu_sim.bus.listener import Direction
from ecu_sim.runtime.ticks import ticks_in

#: the label of a frame no attack sent
BENIGN = 0


@dataclass(frozen=True)
class Window:
    """An attack placed on the ticks: ``start`` included, ``end`` excluded (None: never ends)."""

    label: int
    attack: Attack
    start: int
    end: int | None


class AttackPlan:
    """Every attack of a run, ready to give each tick's frames with their labels (1, 2, ... in the
    order given; :data:`BENIGN` is no attack's)."""

    def __init__(self, attacks: Sequence[Attack], database: Database, period_s: float, seed: int = 0) -> None:
        self.period_s = period_s
        self.seed = seed
        self.windows = tuple(
            Window(number, attack, ticks_in(attack.start_s, period_s),
                   None if attack.end_s is None else ticks_in(attack.end_s, period_s))
            for number, attack in enumerate(attacks, start=1))
        #: the frames the attacker's port received since the last tick, for the attacks that answer them
        self.heard: list[can.Message] = []
        self._frames = [w.attack.frames(database, period_s, random.Random(seed * 1_000_003 + w.label))
                        for w in self.windows]

    @property
    def last_tick(self) -> int | None:
        """The tick after the last window closes; None when one never closes."""
        ends = [w.end for w in self.windows]
        if any(end is None for end in ends):
            return None
        return max((end for end in ends if end is not None), default=0)

    def on_frame(self, msg: can.Message, direction: Direction) -> None:
        """A port listener: keeps what the port received for the next tick's attacks."""
        if direction is Direction.RECEIVED and not msg.is_error_frame:
            self.heard.append(msg)

    def frames_at(self, tick: int) -> list[tuple[can.Message, int]]:
        """The frames of ``tick``, each with its label, in the order the attacks were given; what
        was heard before it is handed to each attack whose window is open, then forgotten."""
        out: list[tuple[can.Message, int]] = []
        heard = self.heard
        for window, frames in zip(self.windows, self._frames, strict=True):
            if tick >= window.start and (window.end is None or tick < window.end):
                out.extend((msg, window.label) for msg in frames(tick - window.start, heard))
        heard.clear()
        return out

    def manifest(self) -> list[dict[str, Any]]:
        """The attacks as a dataset's manifest lists them: label, kind, text, window in s and ticks."""
        return [{"label": w.label, "kind": w.attack.kind, "attack": w.attack.text,
                 "start_s": w.attack.start_s, "end_s": w.attack.end_s, "start_tick": w.start,
                 "end_tick": w.end, "params": {k: _listed(v) for k, v in w.attack.values()}}
                for w in self.windows]


def _listed(value: Any) -> Any:
    """A parameter as the manifest has always written it: lists for several addresses, every
    number (addresses and PGNs too) a float."""
    if isinstance(value, tuple):
        return list(value)
    return float(value) if isinstance(value, int) else value
