"""The project's J1939 DBC against J1939-71's facts: where a parameter lies and which SPN it is."""

from __future__ import annotations

import pytest
from cantools.database.can import Database

from ecu_sim.codec.profile import Profile


@pytest.fixture(scope="module")
def database() -> Database:
    return Profile.load("j1939").database


@pytest.mark.parametrize(("spn", "start", "name"), [
    (968, 56, "engine idle increment switch"),  # byte 8 bits 1-2
    (967, 58, "engine idle decrement switch"),  # byte 8 bits 3-4
])
def test_ccvs1_carries_the_engine_idle_switches_under_their_spns(
        database: Database, spn: int, start: int, name: str) -> None:
    signal = next(s for s in database.get_message_by_name("CCVS1").signals if s.spn == spn)
    assert signal.start == start and signal.length == 2
    assert signal.comment is not None and f"SPN {spn} {name}" in signal.comment


@pytest.mark.parametrize(("name", "priority"), [("ETC1", 3), ("ETC2", 6), ("EEC1", 3), ("CCVS1", 6)])
def test_the_transmission_and_engine_messages_go_at_j1939_71s_default_priority(
        database: Database, name: str, priority: int) -> None:
    assert database.get_message_by_name(name).frame_id >> 26 == priority
