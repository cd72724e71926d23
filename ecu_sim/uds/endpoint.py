"""A node's diagnostic end point: its ISO-TP layer and its UDS server, advanced together at a tick.

Requests are frames, so they are inputs like any other: a recording holds them, and a replay or
a second simulation gives the same answers at the same ticks. A request that arrived before
tick ``k`` is answered at tick ``k``.
"""

from __future__ import annotations

from ecu_sim.isotp.transport import IsoTpServer
from ecu_sim.uds.server import UdsServer


class DiagnosticEndpoint:
    """The transport and the server of one node."""

    def __init__(self, transport: IsoTpServer, server: UdsServer) -> None:
        self.transport = transport
        self.server = server

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        """Take a diagnostic frame addressed to the node; False for any other frame."""
        return self.transport.receive(can_id, data)

    def tick(self, tick: int) -> list[tuple[int, bytes]]:
        """Answer the requests that came whole, and what fell due; the frames to send now."""
        transport, server = self.transport, self.server
        for message in transport.take():
            answer = server.handle(message.tester, message.functional, message.payload, tick)
            if answer is not None:
                transport.send(message.tester, answer)
        for tester, answer in server.tick(tick):
            transport.send(tester, answer)
        return transport.tick(tick)

    def next_due(self, tick: int) -> int:
        """The next tick with work while no frame comes."""
        return tick + 1 if self.transport.busy else self.server.next_due(tick)
