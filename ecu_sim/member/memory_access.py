"""A node's J1939-73 memory access beside its J1939 layer and its UDS server: how it is built.

It serves the node's one programmable memory (the one UDS programs) with the ``[diagnostics]``
settings the UDS server has: the same key algorithm (applied to DM15's two-byte seed,
:mod:`ecu_sim.memory_access.keys`), the same attempts and delay, and its own kept security state
beside the UDS one, ``j1939-mem-<kind>-<address>.json`` in the state directory, so a lock-out on
one door is not a lock-out on the other and neither's seeds say anything about the other's.
The node lends it the vehicle speed its diagnostics know and its restart from the active image;
no node tells its part the engine speed yet, so the engine condition is judged by the truck's
speed alone until one does.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.j1939.frames import Received
from ecu_sim.j1939.network import J1939Network
from ecu_sim.member.diagnostics import NodeSide
from ecu_sim.memory_access.keys import MemoryKeys
from ecu_sim.memory_access.server import MemoryAccessServer
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.uds.security import SecurityStore, load_algorithm


class MemorySide:
    """The :class:`~ecu_sim.memory_access.server.MemoryNode` of a node."""

    def __init__(self, speed: Callable[[], float], apply: Callable[[], None]) -> None:
        self._speed = speed
        self._apply = apply

    def speed_kph(self) -> float:
        return self._speed()

    def engine_rpm(self) -> float:
        return math.nan

    def apply(self) -> None:
        self._apply()


class MemoryAccessSlot:
    """A node's memory access as its part sees it: empty (no memory, ``[diagnostics] enabled =
    no``) or holding the server. The layer is built first (the server sends through it) and hands
    each message its transport brought whole to the slot, which passes it on."""

    def __init__(self) -> None:
        self.server: MemoryAccessServer | None = None
        self._network: J1939Network | None = None

    def fill(self, kind: str, address: int, settings: DiagnosticsSettings, period_s: float,
             side: NodeSide, network: J1939Network) -> None:
        """The server of a node with a programmable memory (none without one); ValueError as
        :func:`build_memory_access`."""
        memory = side.memory
        if memory is not None:
            self.server = build_memory_access(kind, address, settings, period_s, memory,
                                              MemorySide(side.speed_kph, side.apply), network)
            self._network = network

    def heard(self, message: Received) -> None:
        if self.server is not None:
            self.server.take(message)

    def receive(self, can_id: int, data: bytes | bytearray) -> bool:
        return self.server is not None and self.server.receive(can_id, data)

    def tick(self, tick: int) -> None:
        """The server's tick; what it sends goes to the layer, out at the layer's tick."""
        if self.server is not None and self._network is not None:
            for pdu in self.server.tick(tick):
                self._network.send(pdu)

    def next_due(self, tick: int) -> int:
        return self.server.next_due(tick) if self.server is not None else 1 << 62


def build_memory_access(kind: str, address: int, settings: DiagnosticsSettings, period_s: float,
                        memory: ProgrammableMemory, side: MemorySide,
                        network: J1939Network) -> MemoryAccessServer:
    """The node's server; ValueError (a person's to fix) for a key algorithm that cannot be loaded."""
    path = (None if settings.state_dir is None else
            os.path.join(settings.state_dir, f"j1939-mem-{kind.lower()}-{address:02x}.json"))
    keys = MemoryKeys(f"{kind}@{address:02X}/DM14".encode("ascii"), SecurityStore(path),
                      load_algorithm(settings.key_algorithm), settings.attempts,
                      ticks_in(settings.delay_s, period_s))
    return MemoryAccessServer(address, memory, side, keys, period_s, network.sender.sending_to)
