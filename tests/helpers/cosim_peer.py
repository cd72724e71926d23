"""A peer of ``ecu-sim cosim`` for the tests: requests over a real UDP socket, answers read back."""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram, Frame
from ecu_sim.cosim.server import CosimServer
from ecu_sim.cosim.stepper import Stepper
from ecu_sim.runs.prepare import load_vehicle_route, prepare
from ecu_sim.settings.model import Settings

NAN = math.nan


class Peer:
    """One socket that sends requests and waits for their answers (a hang guard, not a rule)."""

    def __init__(self, address: tuple[str, int], inputs: int, outputs: int) -> None:
        """``inputs`` and ``outputs``: how many values the server's contract has each way."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(30.0)
        self.address = address
        self.inputs = inputs
        self.outputs = outputs
        self.seq = 0

    def raw(self, data: bytes) -> bytes:
        self.sock.sendto(data, self.address)
        return self.sock.recv(protocol.MAX_DATAGRAM)

    def step(self, n: int, app: float = NAN, grade: float = NAN,
             frames: tuple[Frame, ...] | None = None, brake: float = NAN) -> Datagram:
        self.seq += 1
        answer = self.request(self.seq, n, app, grade, frames, brake)
        assert not answer.is_error, answer.message
        return answer

    def request(self, seq: int, n: int, app: float = NAN, grade: float = NAN,
                frames: tuple[Frame, ...] | None = None, brake: float = NAN) -> Datagram:
        values = (app, grade, brake)[:self.inputs]
        data = protocol.encode(Datagram(seq, n, 0, values, frames))
        return protocol.decode(self.raw(data), self.outputs)


@contextmanager
def served(settings: Settings | None = None, peer_timeout_s: float = 60.0,
           max_ticks: int | None = None, busy_poll_s: float = 0.0) -> Iterator[tuple[Peer, CosimServer]]:
    """A cosim server on a loopback port in a thread, and a peer talking to it over UDP."""
    settings, profile = prepare(settings or Settings())
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    with sock, Stepper(settings, profile, load_vehicle_route(settings)) as stepper:
        server = CosimServer(sock, stepper, peer_timeout_s, max_ticks, busy_poll_s)
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        peer = Peer(sock.getsockname(), len(stepper.contract.inputs), len(stepper.contract.outputs))
        try:
            yield peer, server
        finally:
            server.stop()
            thread.join(30.0)
            peer.sock.close()
