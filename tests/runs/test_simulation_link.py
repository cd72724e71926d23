"""The in-process link of ``ecu-sim simulate`` against python-can's virtual bus, which the tests use."""

from __future__ import annotations

import dataclasses
import io

import can
import pytest

from ecu_sim.bus.inprocess import InProcessLink
from ecu_sim.runs import simulation
from ecu_sim.runs.simulation import DriverSetup
from ecu_sim.runtime.clock import VirtualClock
from ecu_sim.settings.model import RunSettings, Settings


def csv_of(driver: DriverSetup, link: simulation.Link, **run: object) -> str:
    settings = Settings(run=dataclasses.replace(RunSettings(), **run))  # type: ignore[arg-type]
    out = io.StringIO()
    simulation.run(settings, driver, out, link=link)
    return out.getvalue()


@pytest.mark.parametrize("driver", [DriverSetup("ccm"), DriverSetup("pedal", 40.0), DriverSetup("none")])
def test_the_in_process_link_gives_the_same_run_as_python_cans_virtual_bus(driver: DriverSetup) -> None:
    direct = csv_of(driver, "direct", duration_s=120.0, set_speed_kph=85.0)
    assert direct == csv_of(driver, "virtual", duration_s=120.0, set_speed_kph=85.0)
    assert direct.count("\n") == 1 + 1200


def test_a_frame_reaches_every_other_member_once_and_never_its_sender() -> None:
    clock = VirtualClock(12.5)
    link = InProcessLink(clock, "t")
    a, b, c = link.bus(), link.bus(), link.bus()
    try:
        a.send(can.Message(arbitration_id=0x123, data=b"\x01", is_extended_id=False))
        assert a.recv(0.0) is None
        for member in (b, c):
            msg = member.recv(0.0)
            assert msg is not None and msg.arbitration_id == 0x123 and msg.timestamp == 12.5
            assert member.recv(0.0) is None
    finally:
        for bus in (a, b, c):
            bus.shutdown()


def test_receive_filters_are_honoured_and_a_member_that_left_hears_nothing() -> None:
    link = InProcessLink(VirtualClock(), "t")
    a, b, c = link.bus(), link.bus(), link.bus()
    b.set_filters([{"can_id": 0x200, "can_mask": 0x7FF, "extended": False}])
    c.shutdown()
    try:
        for ident in (0x100, 0x200):
            a.send(can.Message(arbitration_id=ident, data=b"", is_extended_id=False))
        msg = b.recv(0.0)
        assert msg is not None and msg.arbitration_id == 0x200
        assert b.recv(0.0) is None
        assert c.recv(0.0) is None and link.members == [a, b]
    finally:
        a.shutdown()
        b.shutdown()


def test_a_constant_pedal_keeps_nothing_queued_from_what_it_hears() -> None:
    from ecu_sim.bus.port import Port
    from ecu_sim.bus.transmit import Transmitter, new_message
    from ecu_sim.codec.profile import Profile
    from ecu_sim.nodes.pedal import ConstantPedal

    app = Profile.load("amp").app
    link = InProcessLink(VirtualClock(), "pedal")
    speaker = link.bus()
    with Port(link.bus(), [app.frame_id]) as port:
        pedal = ConstantPedal(port, Transmitter(port, app.frame_id, app.is_extended_id, new_message),
                              app, 30.0)
        for tick in range(50):
            speaker.send(can.Message(arbitration_id=0x18FEF125, data=bytes(8), is_extended_id=True))
            pedal.drain()
            pedal.tick(float(tick), transmit=True)
        assert port.recv(0.0) is None
    speaker.shutdown()
