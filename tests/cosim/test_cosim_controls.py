"""A co-simulation peer's control by name (a request with n = 0 and the control's text): it acts
from the next tick, as the frames of the following steps show, and one the ECU cannot apply is
refused with its reason; ``--control`` on ``ecu-sim cosim`` acts at its tick as it does in ``run``."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator

import pytest

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram, ErrorCode
from tests.conftest import HANG_S, Node

ETC2 = 0x18F00503
POWERTRAIN = ("cosim", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
              "--listen", "127.0.0.1:0", "--peer-timeout", "1")
#: APP, grade and brake not given: the ECU's own inputs hold
NAN3 = (float("nan"),) * 3


class Peer:
    """A peer of the CAN encoding, so each answer carries the frames the ECU's network sent."""

    def __init__(self, node: Node) -> None:
        found = node.wait_for(r"listening on udp 127\.0\.0\.1:(\d+).* (\d+) outputs")
        self.address, self.outputs = ("127.0.0.1", int(found[1])), int(found[2])
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(HANG_S)
        self.seq = 0

    def send(self, datagram: Datagram) -> Datagram:
        self.sock.sendto(protocol.encode(datagram), self.address)
        return protocol.decode(self.sock.recv(protocol.MAX_DATAGRAM), self.outputs)

    def step(self, n: int) -> set[int]:
        """The identifiers the ECU's network sent in the next ``n`` ticks."""
        self.seq += 1
        answer = self.send(Datagram(self.seq, n, 0, NAN3, ()))
        assert not answer.is_error, answer.message
        return {frame.arbitration_id for frame in answer.frames or ()}

    def control(self, text: str) -> Datagram:
        self.seq += 1
        return self.send(Datagram(self.seq, 0, 0, (), message=text))


@pytest.fixture
def peer(start: Callable[..., Node]) -> Iterator[Peer]:
    node = start(*POWERTRAIN)
    peer = Peer(node)
    yield peer
    peer.sock.close()
    assert node.wait() == 0


@pytest.mark.slow
def test_a_peers_control_by_name_acts_from_the_next_tick(peer: Peer) -> None:
    assert ETC2 in peer.step(100)
    answer = peer.control("stop:ETC2")
    assert (answer.n, answer.tick, answer.message) == (0, 100, "stop:ETC2 before tick 100")
    assert ETC2 not in peer.step(100)


@pytest.mark.slow
def test_a_control_the_ecu_cannot_apply_is_refused_with_its_reason(peer: Peer) -> None:
    answer = peer.control("stop:NOPE")
    assert answer.n == -ErrorCode.REFUSED and "no message 'NOPE' is sent here" in answer.message


@pytest.mark.slow
def test_a_control_on_the_cosim_command_line_acts_at_its_tick(start: Callable[..., Node]) -> None:
    node = start(*POWERTRAIN, "--control", "stop:ETC2@1")
    peer = Peer(node)
    assert ETC2 in peer.step(100) and ETC2 not in peer.step(100)
    peer.sock.close()
    assert node.wait() == 0
    assert re.search(r"control \{'message': 'ETC2', 'send': False\} applied before tick 100", node.log)
