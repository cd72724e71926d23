"""The attack family: the one table of attack kinds, the values their parameters take, what a
builder is given.

Each kind registers its builder here with the frozen dataclass of its parameters and its help
line (``@ATTACKS.register(...)``, beside the builder), so the grammar (:mod:`ecu_sim.attack.spec`),
``ecu-sim attack --list`` and the page of attacks read one entry per kind. The readers say what a
parameter's text may be in J1939's terms (an address, a PGN, a transport size), so every value,
choices included, is checked when the spec is read.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from cantools.database.can import Database

from ecu_sim.attack.tick import Frames
from ecu_sim.errors import ConfigError
from ecu_sim.j1939.transport import MAX_SIZE, MIN_SIZE
from ecu_sim.registry.family import Family, Reader

#: the off-board diagnostic tool, the address the published attackers use
SOURCE_DIAG = "0xf9"


@dataclass(frozen=True)
class Context:
    """What a builder is given beside its parameters: the attack's text (to name it in an error),
    the DBC whose messages it imitates, the tick's length and the run's random generator."""

    text: str
    database: Database
    period_s: float
    rng: random.Random

    def refuse(self, problem: str) -> ConfigError:
        """The error of an attack this DBC cannot carry out, naming it."""
        return ConfigError(f"--attack {self.text!r}: {problem}")


#: every attack kind, in the order --list shows them
ATTACKS: Family[Context, Frames] = Family("attack")


def _within(read: Callable[[str], float], low: float, high: float) -> Callable[[str], float]:
    def checked(text: str) -> float:
        value = read(text)
        if not low <= value <= high:
            raise ValueError(text)
        return value
    return checked


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _whole(low: int, high: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        value = _within(_finite, low, high)(text)
        if value != int(value):
            raise ValueError(text)
        return int(value)
    return read


def _addresses(text: str) -> tuple[int, ...]:
    found = tuple(int(part, 0) for part in text.split("/"))
    if any(not 0 <= a <= 0xFD for a in found):
        raise ValueError(text)
    return found


_NUMBER_MEANS = "a finite number (not negative for a rate, every, from or to)"
ADDRESS = Reader(_within(lambda text: int(text, 0), 0, 0xFF), "an address 0..0xff (e.g. 0x00)")
PGN = Reader(_within(lambda text: int(text, 0), 0, 0x3FFFF), "a PGN 0..0x3ffff (e.g. 0xfeeb)")
NUMBER = Reader(_finite, _NUMBER_MEANS)
#: a rate in frames a second, a repetition in seconds, a time in a log: not negative
NOT_NEGATIVE = Reader(_within(_finite, 0, math.inf), _NUMBER_MEANS)
ADDRESSES = Reader(_addresses, "addresses 0..0xfd separated by '/' (e.g. 0x0b/0x11)")
WORD = Reader(str, "a word")
PATH = Reader(str, "a path", keep_case=True)
BYTE = Reader(_whole(0, 255), "a whole number 0..255")
TRANSPORT_SIZE = Reader(_whole(MIN_SIZE, MAX_SIZE), f"a transport size {MIN_SIZE}..{MAX_SIZE}")


def whole(low: int, high: int) -> Reader:
    """A whole number ``low..high``."""
    return Reader(_whole(low, high), f"a whole number {low}..{high}")
