"""J1939's times as tick counts: the layer runs on the node's tick, never on a wall clock.

The standard states two kinds of time. A *minimum* (wait 250 ms after a claim, leave at least
50 ms between broadcast packets) must not be undercut, so it is rounded up to whole ticks. A
*timeout* (T1..T4) has expired once more than its span has passed, which the whole periods in it
plus one guarantee. Both go through :func:`ecu_sim.runtime.ticks.ticks_in`, the project's one
seconds-to-ticks rule. A response that the standard wants within a time is given at the next tick,
so it is one period late at most.
"""

from __future__ import annotations

from typing import Final

from ecu_sim.runtime.ticks import is_whole, ticks_in

#: J1939-81: after Address Claimed, a node waits this long before its other traffic.
CLAIM_DELAY_S: Final = 0.25
#: J1939-21: broadcast (BAM) packets are this far apart at least ...
BAM_MIN_GAP_S: Final = 0.05
#: ... and at most.
BAM_MAX_GAP_S: Final = 0.2
#: J1939-21 response time: a request is answered within this.
RESPONSE_S: Final = 0.2
#: J1939-21 connection timeouts: T1 between packets of a receive, T2 after a CTS, T3 after a
#: packet sent or RTS for the CTS or end of message acknowledgement, T4 while a CTS holds.
T1_S: Final = 0.75
T2_S: Final = 1.25
T3_S: Final = 1.25
T4_S: Final = 1.05
#: J1939-73: DM1 goes out once a second.
DM1_INTERVAL_S: Final = 1.0


def at_least(seconds: float, period_s: float) -> int:
    """The fewest ticks (at least one) that span ``seconds``: for minimum gaps and delays."""
    whole = ticks_in(seconds, period_s)
    return max(1, whole if is_whole(seconds, period_s) else whole + 1)


def expired_after(seconds: float, period_s: float) -> int:
    """Ticks after which more than ``seconds`` has passed: for timeouts."""
    return ticks_in(seconds, period_s) + 1


def bam_gap_ticks(period_s: float) -> int:
    """Ticks between broadcast packets: the fewest that keep them ``BAM_MIN_GAP_S`` apart."""
    return at_least(BAM_MIN_GAP_S, period_s)


def bam_gap_in_limits(period_s: float) -> bool:
    """Whether the broadcast gap at this period also stays within ``BAM_MAX_GAP_S``."""
    return bam_gap_ticks(period_s) * period_s <= BAM_MAX_GAP_S + 1e-9
