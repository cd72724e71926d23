"""Each of the powertrain's four nodes answers UDS over ISO-TP on its own address, in virtual time."""

from __future__ import annotations

import dataclasses

import can

from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.settings.model import Settings
from tests.helpers.powertrainrig import Rig, rig, settings

TESTER = 0xF9
NODES = (0x00, 0x03, 0x0B, 0x0F)
EEC1_PGN = 61444


def request(node: int, *payload: int) -> can.Message:
    data = bytes((len(payload), *payload)).ljust(8, b"\xcc")
    return can.Message(arbitration_id=0x18DA0000 | (node << 8) | TESTER, data=data, is_extended_id=True)


def answers(done: Rig, node: int) -> list[bytes]:
    """The single-frame answers of ``node`` to the tester, their payloads."""
    return [bytes(h.msg.data[1:1 + h.msg.data[0]]) for h in done.controller.heard
            if h.msg.arbitration_id == 0x18DA0000 | (TESTER << 8) | node]


def run(at: dict[int, list[can.Message]], ticks: int = 120, given: Settings | None = None) -> Rig:
    done = rig(lambda tick: at.get(tick, []), given)
    done.run(ticks)
    return done


def frames(done: Rig) -> list[tuple[int, int, bytes]]:
    return [(h.tick, h.msg.arbitration_id, bytes(h.msg.data)) for h in done.controller.heard]


def test_every_node_of_the_powertrain_answers_tester_present_on_its_own_address() -> None:
    done = run({50: [request(node, 0x3E, 0x00) for node in NODES]})
    assert [answers(done, node) for node in NODES] == [[b"\x7e\x00"]] * 4


def test_programming_while_the_truck_moves_is_refused_as_conditions_not_correct() -> None:
    at = {50: [request(0x03, 0x10, 0x03)], 60: [request(0x03, 0x10, 0x02)]}
    done = run(at, given=settings(initial_speed=80.0))
    assert answers(done, 0x03)[1] == b"\x7f\x10\x22"


def test_communication_control_holds_back_the_engines_application_messages() -> None:
    done = run({50: [request(0x00, 0x10, 0x03)], 51: [request(0x00, 0x28, 0x03, 0x01)]}, ticks=150)
    eec1 = [h.tick for h in done.controller.from_address(0x00, EEC1_PGN)]
    assert eec1 and max(eec1) <= 53 and answers(done, 0x00)[1] == b"\x68\x03"


def test_the_same_scripted_session_gives_the_same_bytes_twice() -> None:
    script = {50: [request(0x00, 0x10, 0x03)], 52: [request(0x00, 0x27, 0x01)],
              54: [request(0x0B, 0x22, 0xF1, 0x95)], 56: [request(0x0F, 0x19, 0x02, 0xFF)],
              58: [request(0x00, 0x3E, 0x80)]}
    assert frames(run(script)) == frames(run(script))


def test_without_a_tester_the_bus_carries_the_same_bytes_with_diagnostics_on_or_off() -> None:
    off = dataclasses.replace(settings(), diagnostics=DiagnosticsSettings(enabled=False))
    assert frames(run({}, ticks=300)) == frames(run({}, ticks=300, given=off))


def test_with_diagnostics_off_nothing_answers() -> None:
    off = dataclasses.replace(settings(), diagnostics=DiagnosticsSettings(enabled=False))
    assert answers(run({50: [request(0x00, 0x3E, 0x00)]}, given=off), 0x00) == []



def test_the_echoes_of_the_answers_are_not_taken_for_another_node_at_the_address() -> None:
    done = run({50: [request(0x00, 0x10, 0x03)], 52: [request(0x00, 0x22, 0xF1, 0x95)]})
    assert answers(done, 0x00) and done.ecu.network is not None and done.ecu.network.network.violations == 0
