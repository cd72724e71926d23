"""A node behind a UDS server in a test: the real DTC table, identification, a speed, and a memory
that keeps the calibration contract's rules (the calibration package's own comes with the glue)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ecu_sim.isotp.transport import IsoTpServer
from ecu_sim.j1939.dm import DtcTable
from ecu_sim.uds.codes import DID_SOFTWARE_VERSION, DID_VIN
from ecu_sim.uds.endpoint import DiagnosticEndpoint
from ecu_sim.uds.node import Parameters, ServedMemory
from ecu_sim.uds.security import KeyAlgorithm, Security, SecurityStore, default_key
from ecu_sim.uds.server import UdsServer

PERIOD = 0.01
VIN = b"1ECUSIM0000000001"


class ContractMemory:
    """Two banks: the staged bytes and the active image; valid when its last byte is 0x5A."""

    def __init__(self, start: int = 0x1000, size: int = 64) -> None:
        self.start, self.size = start, size
        self.application_valid = True
        self.active = bytes(size - 1) + b"\x5a"
        self.staged = bytearray(size)
        self.erased = 0

    def erase(self) -> None:
        self.application_valid = False
        self.staged = bytearray(self.size)
        self.erased += 1

    def write(self, address: int, data: bytes) -> None:
        if not (self.start <= address and address + len(data) <= self.start + self.size):
            raise ValueError(f"0x{address:X}+{len(data)} lies outside the calibration area")
        at = address - self.start
        self.staged[at:at + len(data)] = data

    def check(self) -> str | None:
        return None if self.staged[-1] == 0x5A else "the image's integrity byte is wrong"

    def commit(self) -> None:
        reason = self.check()
        if reason is not None:
            raise ValueError(reason)
        self.active = bytes(self.staged)
        self.application_valid = True

    @property
    def calibration_id(self) -> str:
        return "TEST-CAL-1"

    @property
    def cvn(self) -> int:
        return zlib.crc32(self.active)


class DictParameters:
    """Parameters by DID, two bytes each, 0..1000 accepted."""

    def __init__(self) -> None:
        self.values = {0x0100: (500).to_bytes(2, "big")}

    def read(self, did: int) -> bytes | None:
        return self.values.get(did)

    def write(self, did: int, data: bytes) -> str | None:
        if int.from_bytes(data, "big") > 1000:
            return "above 1000"
        self.values[did] = data
        return None


@dataclass
class BenchNode:
    """The node's side, recording what the server asked of it."""

    dtcs: DtcTable = field(default_factory=DtcTable)
    memory: ServedMemory | None = None
    parameters: Parameters | None = None
    speed: float = 0.0
    #: the application is not valid: the server is the boot loader's
    boot: bool = False
    sending: bool = True
    recording: bool = True
    resets: list[int] = field(default_factory=list)

    @property
    def identification(self) -> Mapping[int, bytes]:
        return {DID_VIN: VIN, DID_SOFTWARE_VERSION: b"ecu-sim test"}

    def speed_kph(self) -> float:
        return self.speed

    def communicate(self, enabled: bool) -> None:
        self.sending = enabled

    def set_dtc_recording(self, enabled: bool) -> None:
        self.recording = enabled

    def reset(self, kind: int) -> None:
        self.resets.append(kind)


def security(store: SecurityStore | None = None, attempts: int = 3, delay_s: float = 10.0,
             algorithm: KeyAlgorithm = default_key, flaws: frozenset[str] = frozenset()) -> Security:
    return Security(b"test-node", store or SecurityStore(None), algorithm, attempts, round(delay_s / PERIOD),
                    flaws)


class Bench:
    """Requests to a server at ticks of its own; the server's answers as bytes."""

    def __init__(self, node: BenchNode | None = None, guard: Security | None = None) -> None:
        self.node = node or BenchNode()
        self.server = UdsServer(self.node, guard or security(), PERIOD)
        self.tick = 0

    def ask(self, *request: int, functional: bool = False, tester: int = 0xF9) -> bytes | None:
        self.tick += 1
        return self.server.handle(tester, functional, bytes(request), self.tick)

    def wait(self, seconds: float) -> list[tuple[int, bytes]]:
        answers = []
        for _ in range(round(seconds / PERIOD)):
            self.tick += 1
            answers += self.server.tick(self.tick)
        return answers

    def unlock(self) -> None:
        assert self.ask(0x10, 0x03) is not None
        seed = self.ask(0x27, 0x01)
        assert seed is not None and seed[:2] == b"\x67\x01"
        assert self.ask(0x27, 0x02, *default_key(seed[2:], 1)) == b"\x67\x02"

    def program(self) -> None:
        self.unlock()
        assert self.ask(0x10, 0x02) is not None
        seed = self.ask(0x27, 0x01)
        assert seed is not None
        assert self.ask(0x27, 0x02, *default_key(seed[2:], 1)) == b"\x67\x02"


def endpoint(node: BenchNode, address: int = 0x00) -> DiagnosticEndpoint:
    return DiagnosticEndpoint(IsoTpServer(address, PERIOD), UdsServer(node, security(), PERIOD))


NAN = math.nan
