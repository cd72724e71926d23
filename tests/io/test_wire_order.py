"""The recording's order (ecu_sim.io.wire_order): time never runs backwards, whatever the kernel stamps."""

from __future__ import annotations

import can

from ecu_sim.io.wire_order import WireOrder


def frame(timestamp: float, arbitration_id: int = 0x100) -> can.Message:
    return can.Message(timestamp=timestamp, arbitration_id=arbitration_id, data=b"\x01", is_extended_id=False)


def test_a_frame_stamped_before_the_one_written_ahead_of_it_takes_that_frames_time() -> None:
    written: list[can.Message] = []
    order = WireOrder(written.append, "vcan0")
    order.received(frame(10.00001))
    order.sent(frame(0.0, 0x200), tick=1, handed_at=10.00002)
    order.echo(frame(10.0, 0x200))  # the kernel stamped our frame's echo before the frame we took first
    assert [m.timestamp for m in written] == [10.00001, 10.00001]


def test_a_frame_the_bus_handed_over_is_not_changed_for_the_other_listeners() -> None:
    written: list[can.Message] = []
    order = WireOrder(written.append, "vcan0")
    late = frame(9.0)
    order.received(frame(10.0))
    order.received(late)
    assert (written[1].timestamp, late.timestamp) == (10.0, 9.0)
