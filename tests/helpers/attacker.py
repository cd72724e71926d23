"""The published J1939 attacks as frames, sent into the powertrain network in virtual time.

:func:`attack_rig` is the powertrain rig (:mod:`tests.helpers.powertrainrig`) whose controller
sends a script of attack frames from any source address, and which samples after every tick
what each hosted node holds (answers waiting, sessions open each way): the figures the attack
tests bound.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import can

from ecu_sim.attack.tick import frame as frame  # the tests build attack frames as the attacker does
from ecu_sim.j1939 import layouts
from ecu_sim.j1939.network import J1939Network
from ecu_sim.j1939.request import request
from ecu_sim.j1939.transport import BAM, CTS, RTS, cm, dt
from ecu_sim.powertrain.network import Powertrain
from ecu_sim.settings.model import Settings
from tests.helpers.powertrainrig import Heard, Rig, rig

ENGINE = 0x00
#: the attacker's own address, as in the measurements of the issue
ATTACKER = 0x80
EC1 = 0xFEE3
EEC1 = 0xF004
COMPONENT_ID = 0xFEEB
#: EEC1 goes every 20 ms, two ticks of the powertrain's 10 ms
EEC1_EVERY = 2
#: ticks a second on the powertrain's 10 ms base tick
SECOND = 100


def ask(pgn: int, source: int = ATTACKER, destination: int = 0xFF) -> can.Message:
    return frame(request(pgn, destination), source)


def rts(pgn: int, size: int, source: int, destination: int = ENGINE,
        packets: int | None = None) -> can.Message:
    total = -(-size // 7) if packets is None else packets
    return frame(cm({"ControlByte": RTS, "RTS_TotalSize": size, "RTS_TotalPackets": total,
                     "RTS_PGN": pgn}, destination), source)


def bam(pgn: int, size: int, source: int) -> can.Message:
    return frame(cm({"ControlByte": BAM, "BAM_TotalSize": size, "BAM_TotalPackets": -(-size // 7),
                     "BAM_PGN": pgn}, 0xFF), source)


def cts(pgn: int, count: int, first: int, source: int = ATTACKER, destination: int = ENGINE) -> can.Message:
    return frame(cm({"ControlByte": CTS, "CTS_Packets": count, "CTS_NextSequence": first, "CTS_PGN": pgn},
                    destination), source)


def data(sequence: int, chunk: bytes, source: int, destination: int = ENGINE) -> can.Message:
    return frame(dt(sequence, chunk, destination), source)


def control(heard: Heard) -> dict[str, int]:
    return layouts.decode(layouts.TP_CM, bytes(heard.msg.data))


@dataclass
class Held:
    """What one node held after a tick."""

    waiting: int
    sessions_out: int
    sessions_in: int
    own_and_global: int


@dataclass
class AttackRig:
    rig: Rig
    held: dict[int, list[Held]] = field(default_factory=dict)

    @property
    def heard(self) -> list[Heard]:
        return self.rig.controller.heard

    def run(self, ticks: int) -> None:
        self.rig.run(ticks)

    def networks(self) -> dict[int, J1939Network]:
        powertrain = self.rig.ecu.powertrain
        assert isinstance(powertrain, Powertrain)
        return {part.network.address: part.network for part in powertrain.parts.values()}

    def sample(self) -> None:
        for address, network in self.networks().items():
            pending = network.sender.pending
            self.held.setdefault(address, []).append(Held(
                sum(len(queue) for queue in pending.addressed.values()), network.sender.sessions,
                network.reassembler.sessions, len(pending.own) + len(pending.answers)))

    def ticks(self, source: int, pgn: int, control_byte: int | None = None) -> list[int]:
        """The ticks at which ``source`` sent ``pgn`` (a TP.CM of ``control_byte`` when given)."""
        return [h.tick for h in self.heard if h.source == source and h.pgn == pgn
                and (control_byte is None or h.msg.data[0] == control_byte)]

    def most(self, address: int, what: Callable[[Held], int]) -> int:
        return max(what(h) for h in self.held[address])


def attack_rig(script: Callable[[int], list[can.Message]], given: Settings | None = None) -> AttackRig:
    """The powertrain network under ``script`` (tick -> frames), sampled after every tick."""
    holder: list[AttackRig] = []

    def sampled(k: int) -> list[can.Message]:
        if holder:
            holder[0].sample()
        return script(k)

    attack = AttackRig(rig(sampled, given))
    holder.append(attack)
    return attack


def cadence(ticks: list[int], start: int, end: int) -> set[int]:
    """The gaps between successive ticks in ``start..end``."""
    inside = [t for t in ticks if start <= t < end]
    return {b - a for a, b in itertools.pairwise(inside)}
