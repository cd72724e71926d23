"""Real ``ecu-sim`` processes: two of them close the loop on udp_multicast, and SIGTERM ends a run cleanly.

Each test waits for what the processes log, not for a time: however loaded the machine, the
rules below hold. How fast the loop settles in real time is a figure of scripts/bench.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Node, Udp, summary_of

pytestmark = pytest.mark.slow

#: an ECU status line, e.g. "speed  81.23 km/h | APP  40.0 % | grade +0.0 % | ..."
ECU_STATUS = r"speed +(\d+\.\d+) km/h \| APP "


def test_an_ecu_and_a_ccm_process_close_the_loop_over_udp_multicast(
        start: Callable[..., Node], udp: Udp) -> None:
    """On a flat road the truck coasts from 80 km/h unless APP arrives, so a speed above 80 km/h can
    only come from the CCM's pedal, and "cruise on" only from the ECU's speed."""
    ecu = start(*udp.args(), "--grade", "0", "--initial-speed", "80")
    ccm = start("ccm", *udp.args(), "--set-speed", "90")
    ccm.wait_for(r"\| cruise on \|")
    ecu.wait_for(r"speed +(8[1-9]|9\d)\.\d+ km/h \| APP +\d")
    assert (ccm.stop(), ecu.stop()) == (0, 0), ecu.log + ccm.log


def test_sigterm_stops_a_running_node_with_status_0_and_a_summary(start: Callable[..., Node],
                                                                   udp: Udp) -> None:
    ecu = start(*udp.args())
    ecu.wait_for(ECU_STATUS)  # logged at tick 10, from inside the loop
    assert ecu.stop() == 0, ecu.log
    assert "SIGTERM received, stopping" in ecu.log
    assert ecu.log.splitlines()[-1] == summary_of(ecu.log).line
    assert summary_of(ecu.log).ticks >= 10



def test_two_ecus_sending_one_identifier_each_report_the_other(start: Callable[..., Node], udp: Udp) -> None:
    """Both send the same speed identifier: each hears the other's frames as foreign, not as its echo."""
    first = start(*udp.args())
    first.wait_for(ECU_STATUS)
    second = start(*udp.args(), "--duration", "2")
    assert second.wait() == 0, second.log
    first.wait_for(r"another node sends our identifier [0-9A-F]{8} \(payload ([0-9A-F]{2} ?)+\)")
    assert first.stop() == 0, first.log
    assert "another node sends our identifier" in second.log
    assert summary_of(first.log).foreign > 0 and summary_of(second.log).foreign > 0
