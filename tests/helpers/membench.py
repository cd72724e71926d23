"""A node's memory access server beside a real J1939 layer, on virtual ticks: frames in, frames out.

The server is wired to the layer as a node wires it (its frames through the layer's send, a DM16
the transport protocol brought whole handed back to it), with a real programmable memory, so
the transport's RTS/CTS runs both ways. The node it serves is a :class:`Truck` whose speed and
engine speed the test sets, and which counts the restarts a commit asked for.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ecu_sim.calibration.image import Image
from ecu_sim.calibration.layout import HEADER_SIZE
from ecu_sim.calibration.memory import ProgrammableMemory
from ecu_sim.j1939 import layouts
from ecu_sim.j1939.frames import TP_DT_PGN, Pdu, Received, arbitration_id
from ecu_sim.j1939.ids import make_id, pgn_of
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.network import J1939Network, NetworkConfig
from ecu_sim.j1939.transport import CTS, EOMA, RTS, cm, dt, packet_count, packets
from ecu_sim.memory_access.keys import MemoryKeys, key_of
from ecu_sim.memory_access.messages import DM14_PGN, DM16_PGN, Dm14, encode_dm14
from ecu_sim.memory_access.server import MemoryAccessServer
from ecu_sim.uds.security import KeyAlgorithm, SecurityStore, default_key

NODE, TOOL, OTHER_TOOL = 0xD4, 0xF9, 0xFA
PERIOD_S = 0.01
#: an identity whose first seed's two DM15 bytes are 0xA55A, the seed of the reference's recording
RECORDED_IDENTITY = b"recorded-99788"
#: a road speed limit whose fourth byte is 0x01: the byte the recorded read returns at spatial 3
RECORDED_LIMIT = struct.unpack("<d", bytes([0, 0, 0, 1, 0, 0x80, 0x56, 0x40]))[0]
ENGINE = {"road_speed_limit_kph": RECORDED_LIMIT, "torque_limit_nm": math.inf, "idle_rpm": 700.0,
          "governed_rpm": 2600.0}
START_IMAGE = Image.build("engine", ENGINE, "START")


def inverted(seed: bytes, level: int) -> bytes:
    """The key of the reference's recording: the seed with every bit inverted."""
    return bytes(b ^ 0xFF for b in seed)


@dataclass
class Truck:
    speed: float = 0.0
    rpm: float = math.nan
    applied: int = 0

    def speed_kph(self) -> float:
        return self.speed

    def engine_rpm(self) -> float:
        return self.rpm

    def apply(self) -> None:
        self.applied += 1


@dataclass
class MemBench:
    """``frames``: everything the node sent, as (identifier, data), in order."""

    identity: bytes = b"engine@D4"
    algorithm: KeyAlgorithm = default_key
    attempts: int = 3
    delay_s: float = 10.0
    directory: Path | None = None
    state: Path | None = None
    truck: Truck = field(default_factory=Truck)
    tick: int = 0
    frames: list[tuple[int, bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.memory = ProgrammableMemory(START_IMAGE, self.directory)
        store = SecurityStore(None if self.state is None else str(self.state))
        keys = MemoryKeys(self.identity, store, self.algorithm, self.attempts,
                          round(self.delay_s / PERIOD_S))
        network: J1939Network
        self.server = MemoryAccessServer(NODE, self.memory, self.truck, keys, PERIOD_S,
                                         lambda tool: network.sender.sending_to(tool))
        name = Name(identity_number=0xEC5D4, manufacturer_code=0, function=0, function_instance=0,
                    ecu_instance=0, vehicle_system=0, vehicle_system_instance=0, industry_group=1,
                    arbitrary_address_capable=False)
        network = J1939Network(NetworkConfig(name, NODE, claim=False), PERIOD_S,
                               on_message=self._heard)
        self.network = network

    def _heard(self, message: Received) -> None:
        self.server.take(message)

    def send(self, can_id: int, data: bytes) -> None:
        """A frame from a tool, taken as the node's part takes it."""
        if not self.network.receive(can_id, data):
            self.server.receive(can_id, data)

    def run(self, ticks: int = 1) -> list[tuple[int, bytes]]:
        """Advance ``ticks`` ticks; the frames the node sent in them."""
        sent: list[tuple[int, bytes]] = []
        for _ in range(ticks):
            for pdu in self.server.tick(self.tick):
                self.network.send(pdu)
            sent += [(can_id, data) for can_id, data in self.network.tick(self.tick, set())]
            self.tick += 1
        self.frames += sent
        return sent

    def ask(self, request: Dm14, tool: int = TOOL) -> list[tuple[int, bytes]]:
        self.send(make_id(DM14_PGN, tool, NODE, 6), encode_dm14(request))
        return self.run()

    def dm16(self, payload: bytes, tool: int = TOOL) -> list[tuple[int, bytes]]:
        self.send(make_id(DM16_PGN, tool, NODE, 6), payload)
        return self.run()

    def tool_frame(self, pdu: Pdu, tool: int = TOOL) -> None:
        self.send(arbitration_id(pdu, tool), pdu.data)

    def send_long(self, pgn: int, payload: bytes, tool: int = TOOL) -> list[tuple[int, bytes]]:
        """A message over eight bytes from the tool by RTS/CTS: the RTS, then every packet once the
        node's CTS came; what the node sent meanwhile and in the two ticks after."""
        self.tool_frame(cm({"ControlByte": RTS, "RTS_TotalSize": len(payload), "RTS_MaxPackets": 255,
                            "RTS_TotalPackets": packet_count(len(payload)), "RTS_PGN": pgn}, NODE), tool)
        sent = self.run()
        for sequence, chunk in enumerate(packets(payload), start=1):
            self.tool_frame(dt(sequence, chunk, NODE), tool)
        return sent + self.run(2)

    def take_long(self, rts: bytes, tool: int = TOOL) -> bytes:
        """The message the node's RTS announced, fetched with one CTS and acknowledged."""
        values = layouts.decode(layouts.TP_CM, rts)
        size, total, pgn = values["RTS_TotalSize"], values["RTS_TotalPackets"], values["RTS_PGN"]
        self.tool_frame(cm({"ControlByte": CTS, "CTS_Packets": total, "CTS_NextSequence": 1,
                            "CTS_PGN": pgn}, NODE), tool)
        chunks = [data[1:8] for can_id, data in self.run() if pgn_of(can_id) == TP_DT_PGN]
        self.tool_frame(cm({"ControlByte": EOMA, "EOMA_TotalSize": size, "EOMA_TotalPackets": total,
                            "EOMA_PGN": pgn}, NODE), tool)
        return b"".join(chunks)[:size]

    def key(self, seed: int, level: int = 7) -> int:
        return key_of(self.algorithm, seed, level)


def spatial(command: int, pointer: int, length: int, key: int, extension: int = 0x92) -> Dm14:
    return Dm14(length, True, command, pointer, extension, key)


def direct(command: int, address: int, length: int, key: int) -> Dm14:
    return Dm14(length, False, command, address & 0xFFFFFF, address >> 24, key)


def parameter_offset() -> int:
    """The road speed limit's offset from the first parameter (a spatial pointer)."""
    return START_IMAGE.layout.parameter("road_speed_limit_kph").offset - HEADER_SIZE

