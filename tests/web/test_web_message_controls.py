"""A person's hand on the messages of the powertrain and the restbus, through the node's HTTP API
(``POST /api/control``), as a reader on the bus sees it: a message stopped and restarted, its cycle
changed, a signal fixed and given back, and a session of such controls replayed bit for bit.

The bus's clock is the transmission's ETC1, sent every 10 ms tick: a reader counts those, never
the time.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

import can
import pytest

from tests.conftest import Node, Udp
from tests.helpers.webnode import Page, replay_download

TCO1, ETC1 = 0x0CFE6CEE, 0x0CF00203
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0", "--fms",
       "--web", "127.0.0.1:0")


@pytest.fixture
def truck(start: Callable[..., Node], udp: Udp) -> Iterator[Page]:
    node = start(*udp.args(), *RUN)
    node.wait_for(r"TACHOGRAPH J1939 SA 0xEE claimed")
    yield Page(node)


def frames(bus: can.BusABC, ticks: int) -> list[can.Message]:
    """What the reader hears over the next ``ticks`` of the truck's 10 ms ticks (its ETC1 frames)."""
    heard: list[can.Message] = []
    while sum(1 for m in heard if m.arbitration_id == ETC1) < ticks:
        msg = bus.recv(timeout=10.0)
        assert msg is not None, "the truck fell silent"
        heard.append(msg)
    return heard


def test_a_stopped_message_leaves_the_bus_and_a_restart_brings_it_back(truck: Page,
                                                                      udp_bus: can.BusABC) -> None:
    assert truck.control({"message": "TCO1", "send": False})[0] == 200
    frames(udp_bus, 2)  # what was on the way when it stopped
    assert not [m for m in frames(udp_bus, 50) if m.arbitration_id == TCO1]
    assert truck.control({"message": "TCO1", "send": True})[0] == 200
    assert [m for m in frames(udp_bus, 50) if m.arbitration_id == TCO1]


def test_a_new_cycle_time_spaces_the_message_by_it(truck: Page, udp_bus: can.BusABC) -> None:
    assert truck.control({"message": "TCO1", "cycle_ms": 200})[0] == 200
    frames(udp_bus, 2)
    # TCO1 every 200 ms is 20 ETC1 frames (10 ms ticks) apart: 5 at its own 50 ms, 10 at 100 ms.
    # The typical gap is the rule; a datagram lost or a tick skipped on a busy machine moves one
    # gap, not the median
    ids = [m.arbitration_id for m in frames(udp_bus, 300) if m.arbitration_id in (ETC1, TCO1)]
    at = [i for i, can_id in enumerate(ids) if can_id == TCO1]
    gaps = [later - earlier - 1 for earlier, later in itertools.pairwise(at)]
    assert len(gaps) >= 5 and 15 <= statistics.median(gaps) <= 20, gaps


def test_a_fixed_signal_goes_out_with_its_value_until_released(truck: Page, udp_bus: can.BusABC) -> None:
    status, answer = truck.control({"signal": "TCO1.Driver1WorkingState", "value": 2})
    assert status == 200, answer
    frames(udp_bus, 2)
    states = {m.data[0] & 0x07 for m in frames(udp_bus, 20) if m.arbitration_id == TCO1}
    assert states == {2}  # work, instead of the settings' drive
    assert truck.control({"signal": "TCO1.Driver1WorkingState", "value": None})[0] == 200
    frames(udp_bus, 2)
    assert {m.data[0] & 0x07 for m in frames(udp_bus, 20) if m.arbitration_id == TCO1} == {3}


def test_a_message_the_node_does_not_send_is_refused_with_the_known_ones(truck: Page) -> None:
    status, answer = truck.control({"message": "NOPE", "send": False})
    assert status == 422 and "TCO1" in answer["error"]


def test_a_session_of_message_and_signal_controls_replays_bit_for_bit(truck: Page, tmp_path: Path) -> None:
    assert truck.control({"record": "start"})[0] == 200
    assert truck.control({"signal": "AMB.AmbientAirTemperature", "value": -5})[0] == 200
    assert truck.control({"message": "TCO1", "cycle_ms": 100})[0] == 200
    assert truck.control({"message": "DD1", "send": False})[0] == 200
    started = truck.state()["tick"]
    truck.state_when(lambda s: s["tick"] > started + 150)
    status, answer = truck.control({"record": "stop"})
    assert status == 200, answer
    status, data = truck.request("GET", "api/recording")
    assert status == 200, data
    replayed = replay_download(data, tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "bit for bit" in replayed.stdout
    journal = next(tmp_path.glob("*.ticks")).read_text()
    assert 'control {"cycle_ms":100.0,"message":"TCO1"}' in journal


def test_a_dtc_raised_on_a_restbus_node_goes_in_its_dm1_with_the_lamp(truck: Page,
                                                                      udp_bus: can.BusABC) -> None:
    status, answer = truck.control({"fault": "dtc=1624:2", "on": True, "node": "TACHOGRAPH"})
    assert status == 200, answer
    dm1 = next(m for m in frames(udp_bus, 300) if m.arbitration_id & 0x00FFFFFF == 0x00FECAEE)
    spn = dm1.data[2] | dm1.data[3] << 8 | (dm1.data[4] & 0xE0) << 11
    assert spn == 1624 and dm1.data[4] & 0x1F == 2
    assert dm1.data[0] & 0x0C == 0x04  # the amber warning lamp on (J1939-73 byte 1, bits 3-4)
