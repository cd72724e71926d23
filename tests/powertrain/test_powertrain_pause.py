"""A pause of the ECU's process: it does not turn a healthy command stream into silence, nor
silence the ECU's slow messages.

The sender goes on at its rate while the ECU is stopped; the frames of the pause arrive together
and are taken in the first of the overdue ticks the loop runs to catch up, which send nothing.
A virtual clock that loses time at one deadline makes the loop run those overdue ticks, as a
real one does after a SIGSTOP.
"""

from __future__ import annotations

from collections.abc import Callable

import can

from ecu_sim.j1939.dm import DM1_PGN, Dtc, unpack_dtcs
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.runtime.clock import Inputs, VirtualClock
from tests.helpers.powertrainrig import CONTROLLER, Rig, command, rig

START, PAUSE_AT, PAUSED_TICKS = 100, 150, 20  # the pause: 200 ms of the 10 ms tick, ten XBR periods
#: XBR SPNs: demand, EBI mode, priority, control mode; TSC1 SPNs: mode, priority, torque, rate, purpose
DEMAND, EBI, PRIORITY, MODE = 2920, 2914, 2915, 2916
TSC1_MODE, TSC1_PRIORITY, TORQUE, RATE, PURPOSE = 695, 897, 518, 3349, 3350


class PausingClock(VirtualClock):
    """Loses ``paused`` ticks and a half at the deadline of tick PAUSE_AT; ``during`` is what the
    sender sent meanwhile, put on the bus at the pause's end as the kernel would have queued it."""

    def __init__(self, paused: int = PAUSED_TICKS) -> None:
        super().__init__()
        self.paused = paused
        self.waits = 0
        self.during: Callable[[], None] = lambda: None

    def wait_until(self, deadline: float, inputs: Inputs) -> None:
        super().wait_until(deadline, inputs)
        self.waits += 1
        if self.waits == PAUSE_AT + 1:
            self._now += (self.paused + 0.5) * 0.01
            self.during()


def paused_run(frame: Callable[[Rig, int], can.Message], ticks: int) -> Rig:
    """``frame`` every 20 ms from START on, by a sender that keeps its rate through the ECU's pause."""
    holder: list[Rig] = []
    paused = range(PAUSE_AT, PAUSE_AT + PAUSED_TICKS)

    def due(k: int) -> bool:
        return k >= START and (k - START) % 2 == 0

    def at(k: int) -> list[can.Message]:
        return [frame(holder[0], k)] if due(k) and k not in paused else []

    clock = PausingClock()
    r = rig(at, clock=clock)
    holder.append(r)

    def during() -> None:
        for k in paused:
            if due(k):
                r.controller.bus.send(frame(r, k))

    clock.during = during
    r.run(ticks)
    assert r.loop.stats.skipped == PAUSED_TICKS
    return r


def dm1_of(r: Rig, source: int) -> set[Dtc]:
    return {d for h in r.controller.from_address(source, DM1_PGN) for d, _ in unpack_dtcs(bytes(h.msg.data))}


def xbr(r: Rig, k: int) -> can.Message:
    return command(r.database, "XBR", (k - START) // 2, {EBI: 2, PRIORITY: 2, MODE: 2}, {DEMAND: -1.0})


def tsc1(r: Rig, k: int) -> can.Message:
    return command(r.database, "TSC1", (k - START) // 2 % 8,
                   {TSC1_MODE: 2, TSC1_PRIORITY: 3, RATE: 6, PURPOSE: 1}, {TORQUE: 20.0})


def test_a_pause_of_the_ecu_does_not_lose_a_steady_xbr_stream() -> None:
    r = paused_run(xbr, PAUSE_AT + PAUSED_TICKS + 100)
    assert Dtc(2920, 9) not in dm1_of(r, 0x0B)
    assert r.ecu.invalid["xbr_refused"] == 0


def test_a_pause_of_the_ecu_does_not_time_out_a_steady_tsc1_sender() -> None:
    r = paused_run(tsc1, PAUSE_AT + PAUSED_TICKS + 100)
    eec1 = r.database.get_message_by_name("EEC1")
    controllers = set()
    for h in r.controller.from_address(0x00, pgn_of(eec1.frame_id)):
        if h.tick > START + 5:
            decoded = eec1.decode(bytes(h.msg.data), decode_choices=False)
            assert isinstance(decoded, dict)
            controllers.add(decoded["SrcAddrssOfCtrllngDvcForEngCtrl"])
    assert controllers == {CONTROLLER}


def test_a_slow_message_due_during_overdue_ticks_goes_out_once_at_the_next_transmitted_tick() -> None:
    paused = 15  # ticks 150 to 164 overdue: the 100 ms messages' ticks 150 and 160 send nothing
    r = rig(lambda k: [], clock=PausingClock(paused))
    r.run(PAUSE_AT + 50)
    resumed = PAUSE_AT + paused
    for name, source in (("CCVS1", 0x00), ("ETC2", 0x03)):
        frame_id = r.database.get_message_by_name(name).frame_id
        heard = r.controller.from_address(source, pgn_of(frame_id))
        ticks = [h.tick for h in heard if h.tick >= PAUSE_AT - 10]
        assert ticks == [PAUSE_AT - 10, resumed, PAUSE_AT + 20, PAUSE_AT + 30, PAUSE_AT + 40], name
