"""The single-node ECU and the CCM serve memory access too, each on its own address, and not at all
with ``[diagnostics] enabled = no``."""

from __future__ import annotations

import dataclasses

import can
import pytest

from ecu_sim.j1939.ids import pgn_of, source_address_of
from ecu_sim.memory_access.messages import DM15_PGN, Command, Dm14, Status, decode_dm15, encode_dm14
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from tests.helpers.nodebench import Bench, settings

TOOL = 0xF9


def seed_answers(kind: str, address: int, enabled: bool = True) -> list[Status | int]:
    given = dataclasses.replace(settings("j1939"), diagnostics=DiagnosticsSettings(enabled=enabled))
    bench = Bench(kind, given)
    try:
        bench.tick(5)
        data = encode_dm14(Dm14(4, True, Command.READ, 0, 0, 1))
        bench.send_raw(can.Message(arbitration_id=0x18D90000 | address << 8 | TOOL, data=data,
                                   is_extended_id=True))
        bench.tick(3)
        return [decode_dm15(bytes(m.data))[0] for m in bench.sent()
                if pgn_of(m.arbitration_id) == DM15_PGN and source_address_of(m.arbitration_id) == address]
    finally:
        bench.close()


@pytest.mark.parametrize(("kind", "address"), [("ecu", 0x00), ("ccm", 0x11)])
def test_the_node_answers_a_dm14_with_a_seed(kind: str, address: int) -> None:
    assert seed_answers(kind, address) == [Status.PROCEED]


def test_without_diagnostics_a_dm14_goes_unanswered() -> None:
    assert seed_answers("ecu", 0x00, enabled=False) == []
