"""A recording run hears its own frames back, and every node it hosts must know them for its own.

``--record`` makes the host-local bus hand the process its frames back, so the log holds them
with the time they were on the bus. The nodes the process hosts beside the powertrain's four (a
restbus DBC's, the FMS gateway) send through the same port; a frame of theirs heard back is their
echo, not another sender under their address, which J1939-81 calls an address violation and a
node answers by claiming its address again. So a run recorded on a bus that echoes has each
node's claim once, marked sent, as a run without ``--record`` has on the bus.

The nodes: the powertrain (engine 0x00, transmission 0x03, brakes 0x0B, retarder 0x0F), the
cluster DBC's tachograph (0xEE) and body controller (0x21), and the FMS gateway (0x4A).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import can
import pytest

from tests.conftest import REPO, Cli, Node, Udp

CLUSTER = REPO / "examples" / "restbus" / "cluster.dbc"
HOSTED = (0x00, 0x03, 0x0B, 0x0F, 0xEE, 0x21, 0x4A)
ADDRESS_CLAIMED_PGN = 0xEE00
WHOLE_TRUCK = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0",
               "--fms", "--restbus", str(CLUSTER))
#: the nodes re-claimed about once a second when their echoes were taken for another sender's: a
#: run of a few seconds shows it every time
SECONDS = "4"


def claims_by_source(frames: list[can.Message]) -> Counter[int]:
    """Address Claimed frames (PGN 0xEE00, any destination) by source address."""
    return Counter(m.arbitration_id & 0xFF for m in frames
                   if m.is_extended_id and (m.arbitration_id >> 8) & 0x3FF00 == ADDRESS_CLAIMED_PGN)


@pytest.fixture
def echoed(tmp_path: Path, cli_main: Cli, virtual_time: None, virtual_channel: str) -> list[can.Message]:
    """Fifteen seconds of the whole truck recorded in virtual time, on a virtual bus that hands
    the node its own frames back as the recording's host-local bus does."""
    log = tmp_path / "echoed.log"
    result = cli_main("-i", "virtual", "-c", virtual_channel, "--bus-kwargs", "receive_own_messages=True",
                      *WHOLE_TRUCK, "--duration", "15", "--record", str(log))
    assert result.status == 0, result.err
    return list(can.LogReader(str(log)))


def test_each_hosted_node_claims_its_address_once_in_a_recorded_run(echoed: list[can.Message]) -> None:
    assert claims_by_source(echoed) == dict.fromkeys(HOSTED, 1)


def test_every_frame_from_a_hosted_address_is_recorded_as_sent(echoed: list[can.Message]) -> None:
    received = [m for m in echoed if m.is_extended_id and m.arbitration_id & 0xFF in HOSTED and m.is_rx]
    assert received == [], f"{len(received)} of the node's own frames recorded as received"


def test_each_hosted_frame_is_recorded_once(echoed: list[can.Message]) -> None:
    """A frame written as sent and again as received would be sent twice by a player."""
    claims = [(m.arbitration_id, bytes(m.data)) for m in echoed
              if (m.arbitration_id >> 8) & 0x3FF00 == ADDRESS_CLAIMED_PGN]
    assert len(claims) == len(set(claims))


class ClaimListener:
    """Another process's view of the bus: the Address Claimed frames it hears, by source."""

    def __init__(self, bus: can.BusABC) -> None:
        self.frames: list[can.Message] = []
        self._bus = bus
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)

    def __enter__(self) -> ClaimListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _listen(self) -> None:
        while not self._stop.is_set():
            msg = self._bus.recv(0.1)
            if msg is not None:
                self.frames.append(msg)


@pytest.mark.slow
def test_a_recording_process_claims_each_address_once_on_the_bus(
        tmp_path: Path, start: Callable[..., Node], udp: Udp, udp_bus: can.BusABC) -> None:
    """The issue's run as a process on a bus of its own, with a python-can listener beside it."""
    with ClaimListener(udp_bus) as heard:  # its socket is open already: it hears the first claims
        node = start(*udp.args(), *WHOLE_TRUCK, "--duration", SECONDS, "--record", str(tmp_path / "rb.log"))
        assert node.wait() == 0, node.log
    assert claims_by_source(heard.frames) == dict.fromkeys(HOSTED, 1), node.log
    assert "address violations" not in node.log
