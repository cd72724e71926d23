"""J1939-71's counter and checksum of TSC1 and XBR, against frames worked out by hand.

Each expected byte 8 comes from the formulas: S = bytes 1..7 + counter + the identifier's four
bytes; TSC1 checksum = (((S >> 6) & 3) + (S >> 3) + S) & 7, XBR checksum = ((S >> 4) + S) & 15.
"""

from __future__ import annotations

import cantools
import pytest
from cantools.database.can import Database, Message

from ecu_sim.codec.integrity import integrity_of
from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.j1939.checksum import BitField, CounterWatch, Integrity, IntegrityVerdict, Step, checksum_sum

TSC1_ID = 0x0C00002A
XBR_ID = 0x0C040B2A
#: torque control 40 %, priority 11, standard rate, P32; bytes 1..7
TSC1_BODY = bytes.fromhex("F2FFFFA5FFFFFF")
#: -2.0 m/s^2, EBI 10, priority 10, mode 10; bytes 1..7
XBR_BODY = bytes.fromhex("7F6DEAFFFFFFFF")


@pytest.fixture(scope="module")
def database() -> Database:
    return Profile.load("j1939").database


def message(database: Database, name: str) -> Message:
    return database.get_message_by_name(name)


def integrity(database: Database, name: str) -> Integrity:
    found = integrity_of(message(database, name))
    assert found is not None
    return found


def test_the_sum_is_the_payload_without_its_checksum_plus_the_identifier_bytes() -> None:
    # 0xF2 + 5 * 0xFF + 0xA5 + counter 3 + 0x0C + 0x2A; the checksum nibble (9) takes no part
    payload = TSC1_BODY + bytes([0x93])
    assert checksum_sum(TSC1_ID, payload, BitField(60, 4)) == 0xF2 + 5 * 0xFF + 0xA5 + 3 + 0x0C + 0x2A


def test_tsc1_worked_frame_of_the_reference_seals_to_checksum_4(database: Database) -> None:
    # S = 1736: 3 + 217 + 1736 = 1956, & 7 = 4
    assert integrity(database, "TSC1").seal(TSC1_ID, TSC1_BODY + b"\xff", 0) == TSC1_BODY + b"\x40"


def test_tsc1_with_counter_5_has_checksum_1(database: Database) -> None:
    # S = 1741: ((1741 >> 6) & 3) = 3, 1741 >> 3 = 217; 3 + 217 + 1741 = 1961, & 7 = 1
    assert integrity(database, "TSC1").seal(TSC1_ID, TSC1_BODY + b"\xff", 5) == TSC1_BODY + b"\x15"


def test_xbr_worked_frame_of_the_reference_seals_to_checksum_8(database: Database) -> None:
    # S = 1559: 97 + 1559 = 1656, & 15 = 8
    assert integrity(database, "XBR").seal(XBR_ID, XBR_BODY + b"\xff", 0) == XBR_BODY + b"\x80"


def test_xbr_with_counter_9_has_checksum_2(database: Database) -> None:
    # S = 1568: 98 + 1568 = 1666, & 15 = 2
    assert integrity(database, "XBR").seal(XBR_ID, XBR_BODY + b"\xff", 9) == XBR_BODY + b"\x29"


def test_cantools_encodes_the_worked_tsc1_frame_from_the_dbc(database: Database) -> None:
    tsc1 = message(database, "TSC1")
    values = {s.name: (1 << s.length) - 1 for s in tsc1.signals}
    values |= {"EngOverrideCtrlMode": 2, "EngRqedSpeedCtrlConditions": 0, "OverrideCtrlModePriority": 3,
               "EngRqedTorque_TorqueLimit": 165, "MessageCounter": 0, "MessageChecksum": 4}
    assert tsc1.encode(values, scaling=False, padding=True, strict=False) == TSC1_BODY + b"\x40"
    decoded = tsc1.decode(TSC1_BODY + b"\x40")
    assert isinstance(decoded, dict) and decoded["EngRqedTorque_TorqueLimit"] == 40


def test_cantools_decodes_the_worked_xbr_frame_as_minus_2_mps2(database: Database) -> None:
    decoded = message(database, "XBR").decode(XBR_BODY + b"\x80")
    assert isinstance(decoded, dict)
    assert decoded["ExternalAccelerationDemand"] == pytest.approx(-2.0, abs=1 / 2048)
    assert (decoded["XBREBIMode"], decoded["XBRPriority"], decoded["XBRCtrlMode"]) == (2, 2, 2)
    assert (decoded["XBRMessageCounter"], decoded["XBRMessageChecksum"]) == (0, 8)


@pytest.mark.parametrize("name", ["TSC1", "TSC1_RET", "XBR"])
def test_every_sealed_counter_verifies(database: Database, name: str) -> None:
    rule = integrity(database, name)
    ident = message(database, name).frame_id & 0x1FFFFFFF
    for counter in range(rule.modulus):
        assert rule.verify(ident, rule.seal(ident, bytes(range(8)), counter)) is IntegrityVerdict.OK


def test_a_flipped_payload_bit_fails_the_tsc1_checksum(database: Database) -> None:
    rule = integrity(database, "TSC1")
    frame = bytearray(rule.seal(TSC1_ID, TSC1_BODY + b"\xff", 2))
    frame[3] ^= 0x08  # the requested torque: 40 % becomes 48 %
    assert rule.verify(TSC1_ID, bytes(frame)) is IntegrityVerdict.BAD_CHECKSUM


def test_the_same_tsc1_payload_from_another_sender_fails_its_checksum(database: Database) -> None:
    rule = integrity(database, "TSC1")
    frame = rule.seal(TSC1_ID, TSC1_BODY + b"\xff", 0)
    assert rule.verify(0x0C000003, frame) is IntegrityVerdict.BAD_CHECKSUM


def test_a_flipped_counter_bit_fails_the_xbr_checksum(database: Database) -> None:
    rule = integrity(database, "XBR")
    frame = bytearray(rule.seal(XBR_ID, XBR_BODY + b"\xff", 4))
    frame[7] ^= 0x01
    assert rule.verify(XBR_ID, bytes(frame)) is IntegrityVerdict.BAD_CHECKSUM


@pytest.mark.parametrize("last_byte", [0xF0 | 0x3, 0x3F, 0xFF], ids=["checksum F", "counter F", "both F"])
def test_tsc1_counter_or_checksum_not_available_is_accepted_unchecked(database: Database,
                                                                       last_byte: int) -> None:
    verdict = integrity(database, "TSC1").verify(TSC1_ID, TSC1_BODY + bytes([last_byte]))
    assert verdict is IntegrityVerdict.UNCHECKED


def test_tsc1_counter_beyond_7_is_out_of_range(database: Database) -> None:
    rule = integrity(database, "TSC1")
    frame = rule.checksum.write(rule.counter.write(TSC1_BODY + b"\xff", 9), 0)
    assert rule.verify(TSC1_ID, frame) is IntegrityVerdict.BAD_COUNTER


def test_xbr_counter_15_is_a_counter_not_a_not_available(database: Database) -> None:
    rule = integrity(database, "XBR")
    sealed = rule.seal(XBR_ID, XBR_BODY + b"\xff", 15)
    assert rule.verify(XBR_ID, sealed) is IntegrityVerdict.OK
    wrong = rule.checksum.write(sealed, rule.checksum.read(sealed) ^ 1)
    assert rule.verify(XBR_ID, wrong) is IntegrityVerdict.BAD_CHECKSUM


def test_a_message_without_counter_and_checksum_has_no_integrity_rule(database: Database) -> None:
    assert integrity_of(message(database, "EEC1")) is None


def test_the_fields_come_from_the_dbc_not_from_byte_8() -> None:
    moved = cantools.database.load_string(
        'VERSION ""\nNS_ :\nBS_:\nBU_: A\n'
        'BO_ 2348810282 T: 8 A\n'
        ' SG_ Counter : 0|4@1+ (1,0) [0|15] "" A\n SG_ Sum : 4|4@1+ (1,0) [0|15] "" A\n'
        'BA_DEF_ SG_ "SPN" INT 0 524287;\nBA_DEF_DEF_ "SPN" 0;\n'
        'BA_ "SPN" SG_ 2348810282 Counter 4206;\nBA_ "SPN" SG_ 2348810282 Sum 4207;\n', database_format="dbc")
    assert isinstance(moved, Database)
    rule = integrity_of(moved.get_message_by_name("T"))
    assert rule == Integrity.tsc1(BitField(0, 4), BitField(4, 4))
    assert rule.seal(TSC1_ID, bytes(8), 1)[0] & 0x0F == 1


def test_counters_in_sequence_wrap_after_7() -> None:
    watch = CounterWatch(8, 0xF)
    assert [watch.observe(c) for c in (6, 7, 0, 1)] == [Step.FIRST, Step.NEXT, Step.NEXT, Step.NEXT]


def test_a_repeated_counter_is_told_apart_from_a_skipped_one() -> None:
    watch = CounterWatch(16)
    assert [watch.observe(c) for c in (3, 3, 5, 6)] == [Step.FIRST, Step.REPEATED, Step.SKIPPED, Step.NEXT]


def test_a_counter_not_available_restarts_the_sequence() -> None:
    watch = CounterWatch(8, 0xF)
    assert [watch.observe(c) for c in (2, 0xF, 2)] == [Step.FIRST, Step.NOT_AVAILABLE, Step.FIRST]


def test_the_projects_codec_reads_the_worked_tsc1_frame(database: Database) -> None:
    tsc1 = message(database, "TSC1")
    frame = TSC1_BODY + b"\x40"

    def read(name: str, is_j1939: bool = True) -> float | Invalid:
        return RoleCodec(tsc1, tsc1.get_signal_by_name(name), is_j1939=is_j1939).decode(frame)

    assert (read("EngRqedTorque_TorqueLimit"), read("EngRqedSpeed_SpeedLimit")) == (40, Invalid.NOT_AVAILABLE)
    assert (read("MessageCounter"), read("MessageChecksum")) == (0, 4)
    # two-bit enumerations use all four values: no J1939 "error"/"not available" reading applies
    assert (read("EngOverrideCtrlMode", False), read("OverrideCtrlModePriority", False)) == (2, 3)


def test_the_projects_codec_writes_the_xbr_demand_of_the_worked_frame(database: Database) -> None:
    xbr = message(database, "XBR")
    codec = RoleCodec(xbr, xbr.get_signal_by_name("ExternalAccelerationDemand"), is_j1939=True)
    assert codec.encode(-2.0)[:2] == XBR_BODY[:2]
    assert codec.decode(XBR_BODY + b"\x80") == pytest.approx(-2.0, abs=1 / 2048)
