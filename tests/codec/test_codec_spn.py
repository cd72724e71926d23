"""Rules for finding a J1939 parameter in a DBC by its SPN, and for the description of a signal.

Every node finds its signals by SPN through :mod:`ecu_sim.codec.spn`, so these rules are the ones
the whole simulator follows: which signal is taken, when a missing or doubled parameter is an
error, and what that error tells the user.
"""

from __future__ import annotations

from typing import Literal

import cantools
import pytest
from cantools.database.can import Database, Signal

from ecu_sim.codec.spn import (
    Carrier,
    SignalLayout,
    carriers,
    first_carrier,
    messages_carrying,
    messages_with,
    optional_carrier,
    required_carrier,
    spn_signals,
)
from ecu_sim.errors import ConfigError

HEADER = """VERSION ""
NS_ :
BS_:
BU_: ENG TCU
"""
ATTRIBUTES = """
BA_DEF_ SG_ "SPN" INT 0 524287;
"""
#: EEC1 carries engine speed (190) and actual torque (513); ETC2 carries the gears (523, 524)
#: and, in the doubled DBC, a second engine speed
TWO_MESSAGES = """
BO_ 2364540158 EEC1: 8 ENG
 SG_ ActualTorque : 16|8@1+ (1,-125) [-125|125] "%" TCU
 SG_ EngineSpeed : 24|16@1+ (0.125,0) [0|8031.875] "rpm" TCU
 SG_ Unnamed : 40|8@1+ (1,0) [0|250] "" TCU
BO_ 2565845763 ETC2: 8 TCU
 SG_ SelectedGear : 0|8@1+ (1,-125) [-125|125] "" ENG
 SG_ CurrentGear : 24|8@1+ (1,-125) [-125|125] "" ENG
 SG_ Spare : 40|16@1+ (0.125,0) [0|8031.875] "rpm" ENG
"""
SPNS = """BA_ "SPN" SG_ 2364540158 ActualTorque 513;
BA_ "SPN" SG_ 2364540158 EngineSpeed 190;
BA_ "SPN" SG_ 2565845763 SelectedGear 524;
BA_ "SPN" SG_ 2565845763 CurrentGear 523;
"""
WHERE = "/dbc/truck.dbc"


def database(extra_spns: str = "") -> Database:
    loaded = cantools.database.load_string(HEADER + TWO_MESSAGES + ATTRIBUTES + SPNS + extra_spns,
                                           database_format="dbc", strict=False)
    assert isinstance(loaded, Database)
    return loaded


def doubled() -> Database:
    """A DBC with engine speed (190) on two signals: EEC1's, and then a copy in ETC2."""
    return database('BA_ "SPN" SG_ 2565845763 Spare 190;\n')


def names(found: list[Carrier]) -> list[str]:
    return [f"{m.name}.{s.name}" for m, s in found]


def test_the_one_signal_of_an_spn_is_found_with_its_message() -> None:
    message, signal = required_carrier(database(), 190, WHERE, "", add="", choose="")
    assert (message.name, signal.name) == ("EEC1", "EngineSpeed")


def test_a_required_spn_the_dbc_lacks_is_an_error_naming_the_spn_the_file_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"^/dbc/truck\.dbc has no signal with J1939 SPN 84 \(speed\)\. "
                                          r"Add it\.$"):
        required_carrier(database(), 84, WHERE, " (speed)", add="Add it.", choose="Choose one.")


def test_a_required_spn_on_two_signals_is_an_error_listing_both_in_the_dbc_order() -> None:
    with pytest.raises(ConfigError, match=r"^/dbc/truck\.dbc has 2 signals with J1939 SPN 190 \(rpm\): "
                                          r"EEC1\.EngineSpeed, ETC2\.Spare\. Choose one\.$"):
        required_carrier(doubled(), 190, WHERE, " (rpm)", add="Add it.", choose="Choose one.")


def test_an_optional_spn_the_dbc_lacks_is_none() -> None:
    assert optional_carrier(database(), 521, WHERE, "the driver needs exactly one") is None


def test_an_optional_spn_on_two_signals_is_an_error_naming_the_file_and_who_needs_one() -> None:
    with pytest.raises(ConfigError, match=r"^/dbc/truck\.dbc has 2 signals with J1939 SPN 190: "
                                          r"EEC1\.EngineSpeed, ETC2\.Spare; the driver needs one$"):
        optional_carrier(doubled(), 190, WHERE, "the driver needs one")


def test_every_signal_of_an_spn_is_listed_in_the_dbc_order() -> None:
    assert names(carriers(doubled(), 190)) == ["EEC1.EngineSpeed", "ETC2.Spare"]


def test_where_one_is_taken_without_asking_it_is_the_first_in_the_dbc_order() -> None:
    found = first_carrier(doubled(), 190)
    assert found is not None
    assert (found.message.name, found.signal.name) == ("EEC1", "EngineSpeed")


def test_a_signal_without_an_spn_is_never_found() -> None:
    assert [spn for spn, _ in spn_signals(database().get_message_by_name("EEC1"))] == [513, 190]


def test_a_message_with_two_signals_of_one_spn_is_listed_once() -> None:
    twice = database('BA_ "SPN" SG_ 2364540158 Unnamed 190;\n')
    assert [m.name for m in messages_with(twice, 190)] == ["EEC1"]


def test_messages_carrying_a_set_of_spns_come_with_only_those_signals_in_their_order() -> None:
    found = [(m.name, [(spn, s.name) for spn, s in signals])
             for m, signals in messages_carrying(database(), {190, 513, 523})]
    assert found == [("EEC1", [(513, "ActualTorque"), (190, "EngineSpeed")]),
                     ("ETC2", [(523, "CurrentGear")])]


def test_messages_carrying_spns_are_only_those_the_given_senders_send() -> None:
    assert [m.name for m, _ in messages_carrying(database(), {190, 523}, senders=["TCU"])] == ["ETC2"]


def test_a_signals_description_keeps_the_dbc_limits_and_unit_as_the_dbc_writes_them() -> None:
    layout = SignalLayout.of(database().get_message_by_name("EEC1").get_signal_by_name("ActualTorque"))
    assert (layout.name, layout.spn, layout.start, layout.length, layout.byte_order) == (
        "ActualTorque", 513, 16, 8, "little_endian")
    assert (layout.scale, layout.offset, layout.unit) == (1.0, -125.0, "%")
    # the web page's JSON shows the limits as cantools read them: 125, not 125.0
    assert (repr(layout.minimum), repr(layout.maximum)) == ("-125", "125")


def test_a_signal_without_a_unit_is_described_with_an_empty_one() -> None:
    assert SignalLayout.of(database().get_message_by_name("EEC1").get_signal_by_name("Unnamed")).unit == ""


def test_a_signals_description_reads_its_raw_bits_and_scales_them() -> None:
    layout = SignalLayout.of(database().get_message_by_name("EEC1").get_signal_by_name("EngineSpeed"))
    payload = bytes.fromhex("FF FF FF 40 1F FF FF FF")
    assert layout.raw(payload) == 0x1F40
    assert layout.value(layout.raw(payload)) == 1000.0


@pytest.mark.parametrize("byte_order", ["little_endian", "big_endian"])
def test_bits_beyond_a_short_payload_read_as_0(byte_order: Literal["little_endian", "big_endian"]) -> None:
    """A received command shorter than its DBC message is counted before its fields are read,
    but the description itself never fails on one."""
    start = 0 if byte_order == "little_endian" else 7  # both: the first two bytes
    layout = SignalLayout.of(Signal("S", start, 16, byte_order))
    expected = 0x1F if byte_order == "little_endian" else 0x1F00
    assert layout.raw(b"\x1f") == expected
