"""A bus of J1939 layers in virtual time for the layer's tests: every frame reaches every other layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ecu_sim.j1939.dm import Dtc
from ecu_sim.j1939.frames import Pdu, Received, arbitration_id, received
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.network import J1939Network, NetworkConfig

PERIOD = 0.1
#: the address a test plays a service tool from
TOOL = 0xF9


def network(address: int = 0x25, identity: int = 1, claim: bool = True, capable: bool = False,
            periodic: dict[int, bytes] | None = None,
            on_message: Callable[[Received], None] | None = None) -> J1939Network:
    name = Name(identity_number=identity, arbitrary_address_capable=capable)
    latest = {pgn: (lambda data=data: data) for pgn, data in (periodic or {}).items()}
    return J1939Network(NetworkConfig(name, address, claim), PERIOD, latest, on_message)


@dataclass
class Sent:
    tick: int
    sender: int
    frame: Received


@dataclass
class Wire:
    """Ticks the layers in order; what one sends reaches the others before their next tick."""

    nodes: list[J1939Network]
    tick: int = 0
    sent: list[Sent] = field(default_factory=list)
    conditions: dict[int, set[Dtc]] = field(default_factory=dict)

    def inject(self, pdu: Pdu, source: int = TOOL) -> None:
        """A frame from a tool on the bus, there before the next tick."""
        can_id = arbitration_id(pdu, source)
        for node in self.nodes:
            node.receive(can_id, pdu.data)
        self.sent.append(Sent(self.tick, -1, received(can_id, pdu.data)))

    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            for index, node in enumerate(self.nodes):
                for can_id, data in node.tick(self.tick, self.conditions.get(index, set())):
                    self.sent.append(Sent(self.tick, index, received(can_id, data)))
                    for other in self.nodes:
                        if other is not node:
                            other.receive(can_id, data)
            self.tick += 1

    def from_node(self, index: int, pgn: int | None = None) -> list[Sent]:
        return [s for s in self.sent if s.sender == index and (pgn is None or s.frame.pgn == pgn)]
