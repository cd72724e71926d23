"""What every attack kind is made of: the frames of the n-th tick of its window, and what it heard.

An attack that takes part in another node's session (the transport-protocol attacks) or imitates
a genuine sender's bytes (SPN fuzzing) answers what the bus carried, so each tick it is handed
the frames its port received since the tick before, in bus order: in a simulation that is what
the truck's nodes sent in this tick, so its reaction, too, repeats bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import can

from ecu_sim.j1939.frames import Pdu, arbitration_id
from ecu_sim.runtime.ticks import ticks_in

#: n (ticks since the window opened) and the frames heard since the tick before -> the frames of tick n
Frames = Callable[[int, Sequence[can.Message]], list[can.Message]]


def frame(pdu: Pdu, source: int) -> can.Message:
    return can.Message(arbitration_id=arbitration_id(pdu, source), data=pdu.data, is_extended_id=True)


def per_tick(rate_hz: float, period_s: float) -> Callable[[int], int]:
    """How many frames tick n sends so that a window sends ``rate_hz`` a second on average, bursts
    spread evenly: the whole frames due by the end of tick n less those due by its start."""
    share = rate_hz * period_s

    def count(n: int) -> int:
        return math.floor(round((n + 1) * share, 9)) - math.floor(round(n * share, 9))
    return count


def every(seconds: float, period_s: float) -> Callable[[int], bool]:
    """Whether tick n sends: once at the start for 0 s, else every ``seconds``."""
    step = max(1, ticks_in(seconds, period_s)) if seconds > 0 else 0
    return (lambda n: n % step == 0) if step else (lambda n: n == 0)


def repeat(make: Callable[[], can.Message], count: Callable[[int], int]) -> Frames:
    """``count(n)`` frames of ``make`` at tick n, whatever was heard."""
    return lambda n, heard: [make() for _ in range(count(n))]
