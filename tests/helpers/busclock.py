"""Real-time commands run in this process on virtual time, with a peer's frames arriving on the bus.

Like the ``virtual_time`` fixture, but before each tick the peer puts a frame of the node's input
role on the python-can ``virtual`` bus (APP for the ECU, speed for the CCM), its value changing
from tick to tick, and every third tick a frame the DBC does not describe. The same command line
gives the same run, frame for frame, so two runs can be compared.
"""

from __future__ import annotations

from collections.abc import Iterator

import can
import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.runtime.clock import Inputs, VirtualClock

UNRELATED_ID = 0x18FEEE00


class PeerClock(VirtualClock):
    """Virtual time in which a peer sends the input role's value before each deadline."""

    def __init__(self, bus: can.BusABC, role: str) -> None:
        super().__init__()
        profile = Profile.load("amp")
        self._codec = profile.app if role == "app" else profile.speed
        self._bus = bus
        self._role = role
        self._waits = 0

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        k = self._waits
        value = (k * 7) % 100 if self._role == "app" else 80.0 + (k % 20) / 2
        self._bus.send(can.Message(arbitration_id=self._codec.frame_id, data=self._codec.encode(value),
                                   is_extended_id=True))
        if k % 3 == 0:
            self._bus.send(can.Message(arbitration_id=UNRELATED_ID, data=bytes([k % 256]) * 8))
        self._waits += 1
        super().wait_until(deadline, inputs)


class Peer:
    """The bus options of the run, and which input the peer sends: ``app`` (to ``run``) or ``speed``."""

    def __init__(self, channel: str) -> None:
        self.args = ["-i", "virtual", "-c", channel]
        self.role = "app"
        self.bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)

    def clock(self, period_s: float, *args: object, **kwargs: object) -> PeerClock:
        return PeerClock(self.bus, self.role)


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch, virtual_channel: str) -> Iterator[Peer]:
    """A peer on the run's virtual bus; the run ticks on virtual time (see the module's docstring)."""
    found = Peer(virtual_channel)
    monkeypatch.setattr("ecu_sim.runs.tuned.MonotonicClock", found.clock)
    try:
        yield found
    finally:
        found.bus.shutdown()
