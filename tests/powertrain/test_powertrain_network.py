"""``--network powertrain``: four J1939 nodes in the ECU process, each with its claim, requests, DM1
and messages, in virtual time through the factory's real node, and as a process on a real bus."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.j1939.dm import DM1_PGN
from ecu_sim.j1939.frames import ACKNOWLEDGEMENT_PGN, ADDRESS_CLAIMED_PGN, TP_CM_PGN
from ecu_sim.j1939.ids import pgn_of
from ecu_sim.j1939.name import Name
from ecu_sim.powertrain.members import Readings
from ecu_sim.vehicle.drive import Driveline
from tests.conftest import Cli, Node, Udp
from tests.helpers.powertrainrig import global_request, quiet, rig, settings

HOSTED = {0x00: 0, 0x03: 3, 0x0B: 9, 0x0F: 12}  # address -> J1939 function


def pgn(name: str) -> int:
    return pgn_of(Profile.load("j1939").database.get_message_by_name(name).frame_id)


def test_each_hosted_node_claims_its_address_with_a_name_of_its_own_function() -> None:
    r = rig(quiet)
    r.run(5)
    claims = {h.source: Name.from_bytes(bytes(h.msg.data)) for h in r.controller.heard
              if h.pgn == ADDRESS_CLAIMED_PGN}
    assert {address: name.function for address, name in claims.items()} == HOSTED
    assert len({name.value for name in claims.values()}) == 4


@pytest.mark.parametrize(("address", "message"), [(0x03, "ETC2"), (0x0B, "EBC5"), (0x0F, "ERC1")])
def test_a_node_answers_an_addressed_request_for_its_own_pgn_at_the_next_tick(address: int,
                                                                              message: str) -> None:
    wanted = pgn(message)
    asked_at = 54  # ETC2, EBC5 and ERC1 are due every tenth tick: 55 is not one of them
    r = rig(lambda k: [global_request(wanted, address)] if k == asked_at else [])
    r.run(asked_at + 3)
    assert [h.tick for h in r.controller.from_address(address, wanted) if h.tick > asked_at] == [asked_at + 1]


def test_a_node_nacks_an_addressed_request_for_another_nodes_pgn() -> None:
    r = rig(lambda k: [global_request(pgn("EEC1"), 0x03)] if k == 40 else [])
    r.run(43)
    assert [h.tick for h in r.controller.from_address(0x03, ACKNOWLEDGEMENT_PGN)] == [41]


def test_ec1_goes_by_bam_from_the_engine_at_once_on_a_global_request() -> None:
    r = rig(lambda k: [global_request(pgn("EC1"))] if k == 60 else [])
    r.run(62)
    announcements = [h for h in r.controller.from_address(0x00, TP_CM_PGN) if h.msg.data[0] == 32]
    assert [h.tick for h in announcements][-1] == 61
    assert int.from_bytes(announcements[-1].msg.data[5:8], "little") == pgn("EC1")


def test_each_message_goes_out_from_its_node_at_its_dbc_cycle_after_the_claim() -> None:
    r = rig(quiet)
    r.run(200)  # two seconds of 10 ms ticks
    database = r.database
    for name, address in (("EEC1", 0x00), ("ETC1", 0x03), ("ETC2", 0x03), ("EBC5", 0x0B), ("ERC1", 0x0F),
                          ("EBC1", 0x0B)):
        message = database.get_message_by_name(name)
        ticks = [h.tick for h in r.controller.from_address(address, pgn_of(message.frame_id))]
        gaps = {b - a for a, b in itertools.pairwise(ticks)}
        assert gaps == {(message.cycle_time or 0) // 10}, name
        assert ticks[0] >= 25, name  # nothing before the 250 ms after the claim


def test_each_node_sends_its_dm1_once_a_second_from_the_end_of_its_claim_wait() -> None:
    r = rig(quiet)
    r.run(300)
    for address in (0x03, 0x0B, 0x0F):
        assert [h.tick for h in r.controller.from_address(address, DM1_PGN)] == [25, 125, 225]


def test_the_default_single_node_sends_every_class6_frame_from_0x00_as_before() -> None:
    r = rig(quiet, settings(network="single"))
    r.run(30)
    assert {h.source for h in r.controller.heard} == {0x00}


# -- the process on a real bus ----------------------------------------------------------------------


def test_j1939_list_shows_the_four_hosted_nodes(start: Callable[..., Node], udp: Udp, cli_main: Cli) -> None:
    ecu = start(*udp.args(), "--profile", "j1939", "--vehicle", "class6", "--network", "powertrain",
                "--grade", "0")
    ecu.wait_for(r"J1939 SA 0x00 claimed")
    result = cli_main("j1939", "list", *udp.args(), "--wait", "2")
    assert result.status == 0, result.err
    assert [line.split()[0] for line in result.out.splitlines()] == ["0x00", "0x03", "0x0B", "0x0F"]


@pytest.mark.parametrize("args", [("--vehicle", "testbed", "--profile", "j1939"),
                                  ("--vehicle", "class6", "--profile", "amp")])
def test_powertrain_without_class6_and_the_j1939_profile_is_a_usage_error(cli_main: Cli,
                                                                          args: tuple[str, ...]) -> None:
    result = cli_main("simulate", *args, "--network", "powertrain", "--duration", "1")
    assert result.status == 2
    assert "--network powertrain" in result.err and "Traceback" not in result.err



def test_the_readings_begin_with_every_driveline_field_in_its_order() -> None:
    """The powertrain fills the single node's engine messages (fuel too) from the same fields."""
    assert Readings._fields[:len(Driveline._fields)] == Driveline._fields
