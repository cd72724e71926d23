"""Rules for the message profiles: wire bytes, J1939 ranges, matching and DBC errors.

The byte vectors are what existing testbed controllers and off-the-shelf J1939 equipment put on the
bus, so a mismatch here is a compatibility bug.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import cantools
import pytest
from cantools.database.can import Message, Signal
from cantools.database.conversion import BaseConversion
from cantools.database.utils import sawtooth_to_network_bitnum
from hypothesis import given, settings
from hypothesis import strategies as st

from ecu_sim.codec.profile import DEFAULT_PERIOD_S, Profile, available_profiles
from ecu_sim.codec.role import _MATCH_CACHE_MAX, Invalid, RoleCodec
from ecu_sim.codec.spn import SignalLayout
from ecu_sim.errors import ConfigError

PROFILES = ("amp", "j1939")
RESOLUTION_KMH = 1 / 256


def hexbytes(text: str) -> bytes:
    return bytes.fromhex(text)


_PROFILE_CACHE: dict[str, Profile] = {}


def profile_named(name: str) -> Profile:
    if name not in _PROFILE_CACHE:
        _PROFILE_CACHE[name] = Profile.load(name)
    return _PROFILE_CACHE[name]


@pytest.fixture(scope="module")
def amp() -> Profile:
    return Profile.load("amp")


@pytest.fixture(scope="module")
def j1939() -> Profile:
    return Profile.load("j1939")


@pytest.fixture(scope="module", params=PROFILES)
def profile(request: pytest.FixtureRequest) -> Profile:
    return Profile.load(request.param)


def with_raw(codec: RoleCodec, raw: int) -> bytes:
    """A payload with the role signal set to ``raw`` and everything else all ones, built by cantools."""
    values = {s.name: (1 << s.length) - 1 for s in codec.message.signals}
    values[codec.signal_name] = raw
    return codec.message.encode(values, scaling=False, padding=True, strict=False)


def cantools_values(message: Message, payload: bytes, *, scaling: bool = True) -> dict[str, float]:
    """cantools' own decode of a plain (non-container) message, numbers only."""
    decoded = message.decode(payload, scaling=scaling, decode_choices=False)
    assert isinstance(decoded, dict)
    return {name: value for name, value in decoded.items() if isinstance(value, (int, float))}


def cantools_raw(message: Message, payload: bytes, signal_name: str) -> int:
    raw = cantools_values(message, payload, scaling=False)[signal_name]
    assert isinstance(raw, int)
    return raw


def write_dbc(tmp_path: Path, text: str, name: str = "user.dbc") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="ascii")
    return str(path)


DBC_HEADER = """VERSION ""
NS_ :
BS_:
BU_: A B
"""

J1939_ATTRIBUTES = """
BA_DEF_ BO_ "VFrameFormat" ENUM "StandardCAN","ExtendedCAN","reserved","J1939PG";
BA_DEF_ SG_ "SPN" INT 0 524287;
BA_DEF_ BO_ "GenMsgCycleTime" INT 0 65535;
BA_DEF_DEF_ "VFrameFormat" "J1939PG";
BA_DEF_DEF_ "SPN" 0;
BA_DEF_DEF_ "GenMsgCycleTime" 0;
"""


# --- profile amp: testbed byte vectors -------------------------------------------------------------


#: (profile, km/h sent, the exact payload, the km/h that payload decodes to), checked in both
#: directions. amp: the testbed's vectors, bytes 5..6 little-endian at 1/256 km/h.
#: j1939: SPN 84 in bytes 1..2 little-endian at 1/256 km/h; every other parameter of CCVS1 is sent
#: as not available (all ones) and so are the unused bits. 250.996 km/h is the DBC's rounding of
#: the top valid raw value 0xFAFF = 250.99609375 km/h.
SPEED_VECTORS = [
    ("amp", 0.0, "FF FF FF FF FF 00 00 FF", 0.0),
    ("amp", 15.5, "FF FF FF FF FF 80 0F FF", 15.5),
    ("amp", 16.0, "FF FF FF FF FF 00 10 FF", 16.0),
    ("amp", 80.0, "FF FF FF FF FF 00 50 FF", 80.0),
    ("amp", 250.996, "FF FF FF FF FF FF FA FF", 0xFAFF / 256),
    ("j1939", 0.0, "FF 00 00 FF FF FF FF FF", 0.0),
    ("j1939", 15.5, "FF 80 0F FF FF FF FF FF", 15.5),
    ("j1939", 16.0, "FF 00 10 FF FF FF FF FF", 16.0),
    ("j1939", 80.0, "FF 00 50 FF FF FF FF FF", 80.0),
    ("j1939", 250.996, "FF FF FA FF FF FF FF FF", 0xFAFF / 256),
]
#: amp: byte 6, 1 %/bit, offset -125 % (raw 125 = 0 %). j1939: SPN 91 in byte 1, 0.4 %/bit, offset 0.
APP_VECTORS = [
    ("amp", 0.0, "FF FF FF FF FF FF 7D FF"),
    ("amp", 40.0, "FF FF FF FF FF FF A5 FF"),
    ("amp", 100.0, "FF FF FF FF FF FF E1 FF"),
    ("j1939", 0.0, "FF 00 FF FF FF FF FF FF"),
    ("j1939", 40.0, "FF 64 FF FF FF FF FF FF"),
    ("j1939", 100.0, "FF FA FF FF FF FF FF FF"),
]


@pytest.mark.parametrize(("name", "kmh", "payload", "decoded"), SPEED_VECTORS)
def test_speed_encodes_to_the_exact_bytes(name: str, kmh: float, payload: str, decoded: float) -> None:
    assert profile_named(name).speed.encode(kmh) == hexbytes(payload)


@pytest.mark.parametrize(("name", "kmh", "payload", "decoded"), SPEED_VECTORS)
def test_speed_decodes_the_exact_bytes(name: str, kmh: float, payload: str, decoded: float) -> None:
    assert profile_named(name).speed.decode(hexbytes(payload)) == decoded


@pytest.mark.parametrize(("name", "percent", "payload"), APP_VECTORS)
def test_app_encodes_to_the_exact_bytes(name: str, percent: float, payload: str) -> None:
    assert profile_named(name).app.encode(percent) == hexbytes(payload)


@pytest.mark.parametrize(("name", "percent", "payload"), APP_VECTORS)
def test_app_decodes_the_exact_bytes(name: str, percent: float, payload: str) -> None:
    assert profile_named(name).app.decode(hexbytes(payload)) == percent


def test_amp_uses_the_testbed_identifiers_and_their_j1939_decomposition(amp: Profile) -> None:
    assert (amp.speed.frame_id, amp.speed.is_extended_id, amp.speed.pgn) == (0x18FEF125, True, 65265)
    assert (amp.app.frame_id, amp.app.is_extended_id, amp.app.pgn) == (0x18F00326, True, 61443)
    assert amp.speed.source_address(amp.speed.frame_id) == 0x25
    assert amp.app.source_address(amp.app.frame_id) == 0x26


def test_amp_app_message_comment_explains_the_testbed_pgn_61444_confusion(amp: Profile) -> None:
    comment = amp.app.message.comment or ""
    assert "61444" in comment and "61443" in comment


def test_amp_app_raw_below_the_offset_is_out_of_range(amp: Profile) -> None:
    # raw 124 would be -1 %: the DBC minimum is 0 %.
    assert amp.app.decode(with_raw(amp.app, 124)) is Invalid.OUT_OF_RANGE


def test_amp_app_raw_above_100_percent_is_out_of_range(amp: Profile) -> None:
    assert amp.app.decode(with_raw(amp.app, 226)) is Invalid.OUT_OF_RANGE


# --- profile j1939: SAE J1939-71 test vectors -------------------------------------------------------


def test_j1939_ccvs1_test_vector_encodes_exactly_with_cantools(j1939: Profile) -> None:
    ccvs1 = j1939.database.get_message_by_name("CCVS1")
    values = {
        "WheelBasedVehicleSpeed": 88,
        "CruiseCtrlActive": 1,
        "CruiseCtrlEnableSwitch": 1,
        "BrakeSwitch": 0,
        "ClutchSwitch": 0,
        "CruiseCtrlSetSpeed": 88,
        "CruiseCtrlStates": 1,
    }
    # CCVS1's other parameters (switches, PTO governor state: scale 1, offset 0) say not available
    values |= {s.name: (1 << s.length) - 1 for s in ccvs1.signals if s.name not in values}
    assert ccvs1.encode(values, padding=True) == hexbytes("ff 00 58 05 ff 58 3f ff")


def test_j1939_eec2_test_vector_encodes_exactly_with_cantools(j1939: Profile) -> None:
    eec2 = j1939.database.get_message_by_name("EEC2")
    values = {
        "AccelPedalPos1": 40,
        "EngPercentLoadAtCurSpeed": 45,
        "AccelPedal1LowIdleSwitch": 0,
        "AccelPedalKickdownSwitch": 0,
    }
    assert eec2.encode(values, padding=True) == hexbytes("f0 64 2d ff ff ff ff ff")


def test_j1939_speed_role_decodes_the_ccvs1_test_vector(j1939: Profile) -> None:
    assert j1939.speed.decode(hexbytes("ff 00 58 05 ff 58 3f ff")) == 88.0


def test_j1939_app_role_decodes_the_eec2_test_vector(j1939: Profile) -> None:
    assert j1939.app.decode(hexbytes("f0 64 2d ff ff ff ff ff")) == pytest.approx(40.0)


def test_j1939_speed_role_puts_spn_84_in_bytes_1_and_2(j1939: Profile) -> None:
    assert j1939.speed.encode(88.0) == hexbytes("ff 00 58 ff ff ff ff ff")


def test_j1939_app_role_puts_spn_91_in_byte_1_at_0_4_percent_per_bit(j1939: Profile) -> None:
    assert j1939.app.encode(40.0) == hexbytes("ff 64 ff ff ff ff ff ff")


def test_j1939_role_encode_sends_every_other_parameter_as_not_available(j1939: Profile) -> None:
    for codec, value in ((j1939.speed, 88.0), (j1939.app, 40.0)):
        decoded = cantools_values(codec.message, codec.encode(value), scaling=False)
        others = {s.name: decoded[s.name] for s in codec.message.signals if s.name != codec.signal_name}
        assert others == {s.name: (1 << s.length) - 1 for s in codec.message.signals if s.name in others}


def test_j1939_profile_identifiers_priorities_and_source_addresses(j1939: Profile) -> None:
    # CCVS1 from the engine (SA 0x00) at priority 6, EEC2 from cruise control (SA 0x11) at priority 3.
    assert (j1939.speed.frame_id, j1939.speed.pgn) == (0x18FEF100, 65265)
    assert (j1939.app.frame_id, j1939.app.pgn) == (0x0CF00311, 61443)
    eec1 = j1939.database.get_message_by_name("EEC1")
    assert eec1.frame_id == 0x0CF00400


def test_j1939_eec1_carries_engine_speed_and_actual_torque_per_j1939_71(j1939: Profile) -> None:
    eec1 = j1939.database.get_message_by_name("EEC1")
    rpm = eec1.get_signal_by_name("EngSpeed")
    torque = eec1.get_signal_by_name("ActualEngPercentTorque")
    assert (rpm.spn, rpm.start, rpm.length, rpm.scale, rpm.offset) == (190, 24, 16, 0.125, 0)
    assert (torque.spn, torque.start, torque.length, torque.scale, torque.offset) == (513, 16, 8, 1, -125)


# --- both profiles: round trip, clamping, J1939 ranges ---------------------------------------------


@pytest.mark.parametrize("kmh", [0.0, 15.5, 16.0, 80.0, 250.996])
def test_speed_round_trips_within_1_256_kmh(profile: Profile, kmh: float) -> None:
    decoded = profile.speed.decode(profile.speed.encode(kmh))
    assert isinstance(decoded, float)
    assert abs(decoded - kmh) <= RESOLUTION_KMH / 2


def test_negative_speed_is_clamped_to_zero(profile: Profile) -> None:
    assert profile.speed.encode(-5.0) == profile.speed.encode(0.0)


def test_speed_above_range_is_clamped_to_250_996_kmh(profile: Profile) -> None:
    assert profile.speed.encode(300.0) == profile.speed.encode(250.996)
    assert profile.speed.decode(profile.speed.encode(300.0)) == pytest.approx(250.996, abs=RESOLUTION_KMH)


def test_app_above_100_percent_is_clamped_to_100(profile: Profile) -> None:
    assert profile.app.encode(150.0) == profile.app.encode(100.0)


def test_app_below_0_percent_is_clamped_to_0(profile: Profile) -> None:
    assert profile.app.encode(-20.0) == profile.app.encode(0.0)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_sent_as_not_available(profile: Profile, value: float) -> None:
    for codec in (profile.speed, profile.app):
        assert codec.decode(codec.encode(value)) is Invalid.NOT_AVAILABLE


@given(value=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30))
@settings(max_examples=300, deadline=None)
def test_encode_never_raises_and_yields_a_full_frame(value: float) -> None:
    for name in PROFILES:
        p = profile_named(name)
        for codec in (p.speed, p.app):
            payload = codec.encode(value)
            assert len(payload) == codec.length
            decoded = codec.decode(payload)
            if not isinstance(decoded, Invalid):
                assert codec.minimum <= decoded <= codec.maximum
            else:
                assert decoded is Invalid.NOT_AVAILABLE


@pytest.mark.parametrize("raw", [0xFE00, 0xFE80, 0xFEFF])
def test_speed_error_indicator_range_decodes_as_error(profile: Profile, raw: int) -> None:
    assert profile.speed.decode(with_raw(profile.speed, raw)) is Invalid.ERROR_INDICATOR


@pytest.mark.parametrize("raw", [0xFF00, 0xFF7F, 0xFFFF])
def test_speed_not_available_range_decodes_as_not_available(profile: Profile, raw: int) -> None:
    assert profile.speed.decode(with_raw(profile.speed, raw)) is Invalid.NOT_AVAILABLE


@pytest.mark.parametrize("raw", [0xFB00, 0xFBFF, 0xFC00, 0xFDFF])
def test_speed_parameter_specific_and_reserved_ranges_are_out_of_range(profile: Profile, raw: int) -> None:
    assert profile.speed.decode(with_raw(profile.speed, raw)) is Invalid.OUT_OF_RANGE


def test_speed_top_of_the_valid_range_decodes(profile: Profile) -> None:
    assert profile.speed.decode(with_raw(profile.speed, 0xFAFF)) == 0xFAFF / 256


def test_app_0xfe_decodes_as_error_indicator(profile: Profile) -> None:
    assert profile.app.decode(with_raw(profile.app, 0xFE)) is Invalid.ERROR_INDICATOR


def test_app_0xff_decodes_as_not_available(profile: Profile) -> None:
    assert profile.app.decode(with_raw(profile.app, 0xFF)) is Invalid.NOT_AVAILABLE


@pytest.mark.parametrize("raw", [0xFB, 0xFC, 0xFD])
def test_app_reserved_raws_are_out_of_range(profile: Profile, raw: int) -> None:
    assert profile.app.decode(with_raw(profile.app, raw)) is Invalid.OUT_OF_RANGE


def test_two_bit_field_uses_10_for_error_and_11_for_not_available(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ Speed : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
BO_ 2364539648 EEC2: 8 B
 SG_ Switch : 24|2@1+ (1,0) [0|3] "" A
"""
        + J1939_ATTRIBUTES
        + 'BA_ "SPN" SG_ 2566844672 Speed 84;\n',
    )
    p = Profile.load(dbc_path=dbc, app_signal="EEC2.Switch")
    assert [p.app.decode(with_raw(p.app, raw)) for raw in range(4)] == [
        0.0,
        1.0,
        Invalid.ERROR_INDICATOR,
        Invalid.NOT_AVAILABLE,
    ]


def test_j1939_signal_without_dbc_limits_keeps_to_the_j1939_valid_range(tmp_path: Path) -> None:
    # [0|0] means "no range" in a DBC; the J1939 reserved, error and NA raws must still be respected.
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ Speed : 8|16@1+ (0.00390625,0) [0|0] "km/h" B
BO_ 2364539648 EEC2: 8 B
 SG_ Pedal : 24|8@1+ (1,0) [0|0] "%" A
"""
        + J1939_ATTRIBUTES,
    )
    p = Profile.load(dbc_path=dbc, speed_signal="CCVS1.Speed", app_signal="EEC2.Pedal")
    assert p.app.decode(with_raw(p.app, 0xFA)) == 250.0
    assert p.app.decode(with_raw(p.app, 0xFB)) is Invalid.OUT_OF_RANGE
    assert p.app.encode(1000.0) == with_raw(p.app, 0xFA)
    assert p.speed.encode(1e9) == with_raw(p.speed, 0xFAFF)


# --- short frames ----------------------------------------------------------------------------------


def test_minimal_length_is_derived_from_the_signal_layout(amp: Profile, j1939: Profile) -> None:
    assert (amp.speed.min_length, amp.app.min_length) == (7, 7)
    assert (j1939.speed.min_length, j1939.app.min_length) == (3, 2)


def test_frame_shorter_than_the_signal_decodes_as_short_frame(profile: Profile) -> None:
    for codec in (profile.speed, profile.app):
        payload = codec.encode(40.0)
        assert codec.decode(payload[: codec.min_length - 1]) is Invalid.SHORT_FRAME
        assert codec.decode(b"") is Invalid.SHORT_FRAME


def test_frame_just_long_enough_for_the_signal_decodes(profile: Profile) -> None:
    for codec in (profile.speed, profile.app):
        assert codec.decode(codec.encode(40.0)[: codec.min_length]) == pytest.approx(40.0)


def test_decode_accepts_python_can_bytearray_payloads(profile: Profile) -> None:
    assert profile.speed.decode(bytearray(profile.speed.encode(80.0))) == 80.0


# --- matching --------------------------------------------------------------------------------------


@pytest.mark.parametrize("arbitration_id", [0x0CFEF125, 0x1CFEF125, 0x18FEF125, 0x00FEF125])
def test_speed_matches_whatever_the_priority_and_reports_the_source_address(
    profile: Profile, arbitration_id: int
) -> None:
    assert profile.speed.matches(arbitration_id, True)
    assert profile.speed.source_address(arbitration_id) == 0x25


@pytest.mark.parametrize(
    ("arbitration_id", "sa"), [(0x18FEF100, 0x00), (0x18FEF117, 0x17), (0x18FEF1FE, 0xFE)]
)
def test_speed_from_another_source_address_matches_and_reports_it(
    profile: Profile, arbitration_id: int, sa: int
) -> None:
    assert profile.speed.matches(arbitration_id, True)
    assert profile.speed.source_address(arbitration_id) == sa


@pytest.mark.parametrize("arbitration_id", [0x0CF00300, 0x18F00326, 0x0CF00311, 0x1CF003FE])
def test_app_matches_eec2_from_any_sender(profile: Profile, arbitration_id: int) -> None:
    assert profile.app.matches(arbitration_id, True)


@pytest.mark.parametrize("arbitration_id", [0x18FEF225, 0x18FEF025, 0x18F00425, 0x18FEF000, 0x19FEF125])
def test_a_different_pgn_does_not_match_speed(profile: Profile, arbitration_id: int) -> None:
    # 0x19FEF125 sets the data page bit: PGN 130801, not 65265.
    assert not profile.speed.matches(arbitration_id, True)


def test_eec1_does_not_match_the_app_role(profile: Profile) -> None:
    assert not profile.app.matches(0x0CF00400, True)


def test_standard_frames_never_match_a_j1939_role(profile: Profile) -> None:
    assert not profile.speed.matches(0x125, False)
    assert not profile.speed.matches(profile.speed.frame_id, False)


def test_identifiers_beyond_29_bits_neither_match_nor_have_a_source_address(profile: Profile) -> None:
    assert not profile.speed.matches(1 << 29 | profile.speed.frame_id, True)
    assert not profile.speed.matches(-1, True)
    assert profile.speed.source_address(-1) is None


def test_match_results_stay_correct_after_the_cache_bound_is_exceeded(amp: Profile) -> None:
    codec = RoleCodec(amp.speed.message, amp.speed.signal)
    for sa in range(256):
        for prio in range(8):
            assert codec.matches(prio << 26 | 0xFEF1 << 8 | sa, True)
            assert not codec.matches(prio << 26 | 0xFEF2 << 8 | sa, True)
    for sa in range(256):
        assert codec.matches(0x18FEF100 | sa, True)


def test_match_cache_stays_bounded_under_a_flood_of_identifiers(amp: Profile) -> None:
    codec = RoleCodec(amp.speed.message, amp.speed.signal)
    for arbitration_id in range(3 * _MATCH_CACHE_MAX):
        codec.matches(arbitration_id, False)
    assert len(codec._std_cache) <= _MATCH_CACHE_MAX


# --- period ----------------------------------------------------------------------------------------


def test_period_comes_from_gen_msg_cycle_time_of_the_speed_message(profile: Profile) -> None:
    assert profile.period_s == pytest.approx(0.1)


def test_period_defaults_to_100_ms_without_gen_msg_cycle_time(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 291 VEH: 8 A
 SG_ Speed : 0|16@1+ (0.01,0) [0|300] "km/h" B
BO_ 292 PEDAL: 8 B
 SG_ Pedal : 16|8@1+ (0.5,0) [0|100] "%" A
""",
    )
    p = Profile.load(dbc_path=dbc, speed_signal="VEH.Speed", app_signal="PEDAL.Pedal")
    assert p.period_s == DEFAULT_PERIOD_S


# --- user DBCs -------------------------------------------------------------------------------------


def test_user_dbc_roles_can_be_chosen_with_message_signal_overrides(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 291 VEH: 8 A
 SG_ Speed : 7|16@0+ (0.01,0) [0|300] "km/h" B
BO_ 292 PEDAL: 4 B
 SG_ Pedal : 16|8@1+ (0.5,0) [0|100] "%" A
BA_DEF_ BO_ "GenMsgCycleTime" INT 0 65535;
BA_DEF_DEF_ "GenMsgCycleTime" 0;
BA_ "GenMsgCycleTime" BO_ 291 20;
""",
    )
    p = Profile.load(dbc_path=dbc, speed_signal="VEH.Speed", app_signal="PEDAL.Pedal")
    assert (p.name, p.dbc_path) == ("user", dbc)
    assert p.period_s == pytest.approx(0.02)
    assert (p.speed.message_name, p.speed.signal_name) == ("VEH", "Speed")
    # Motorola 16-bit at the start of the frame: 80 km/h = raw 8000 = 0x1F40, big end first.
    assert p.speed.encode(80.0) == hexbytes("1F 40 FF FF FF FF FF FF")
    assert p.speed.decode(hexbytes("1F 40 FF FF FF FF FF FF")) == pytest.approx(80.0)
    assert p.app.encode(40.0) == hexbytes("FF FF 50 FF")


def test_non_j1939_user_messages_match_by_exact_identifier_only(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 291 VEH: 8 A
 SG_ Speed : 0|16@1+ (0.01,0) [0|300] "km/h" B
BO_ 292 PEDAL: 8 B
 SG_ Pedal : 16|8@1+ (0.5,0) [0|100] "%" A
""",
    )
    p = Profile.load(dbc_path=dbc, speed_signal="VEH.Speed", app_signal="PEDAL.Pedal")
    assert (p.speed.frame_id, p.speed.is_extended_id) == (0x123, False)
    assert (p.speed.is_j1939, p.speed.pgn) == (False, None)
    assert p.speed.matches(0x123, False)
    assert not p.speed.matches(0x123, True)
    assert not p.speed.matches(0x124, False)
    assert p.speed.source_address(0x123) is None


def test_user_j1939_dbc_roles_are_found_by_spn_without_overrides(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ WBSpeed : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
BO_ 2364539648 EEC2: 8 B
 SG_ APP1 : 8|8@1+ (0.4,0) [0|100] "%" A
"""
        + J1939_ATTRIBUTES
        + 'BA_ "SPN" SG_ 2566844672 WBSpeed 84;\nBA_ "SPN" SG_ 2364539648 APP1 91;\n',
    )
    p = Profile.load(dbc_path=dbc)
    assert (p.speed.signal_name, p.app.signal_name) == ("WBSpeed", "APP1")
    assert p.speed.matches(0x18FEF125, True)


def test_database_level_protocol_type_j1939_enables_pgn_matching(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ WBSpeed : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
BO_ 2364539648 EEC2: 8 B
 SG_ Pedal : 8|8@1+ (0.4,0) [0|100] "%" A
BA_DEF_ "ProtocolType" STRING;
BA_DEF_DEF_ "ProtocolType" "";
BA_ "ProtocolType" "J1939";
""",
    )
    p = Profile.load(dbc_path=dbc, speed_signal="CCVS1.WBSpeed", app_signal="EEC2.Pedal")
    assert p.speed.is_j1939
    assert p.speed.matches(0x0CFEF117, True)
    assert p.speed.decode(with_raw(p.speed, 0xFFFF)) is Invalid.NOT_AVAILABLE


# --- configuration errors --------------------------------------------------------------------------


def test_speed_and_app_in_the_same_frame_raise_config_error_naming_both_and_the_options() -> None:
    # The ECU would send CCVS1 with APP "not available" and ignore the CCM's CCVS1 as its own frame.
    with pytest.raises(ConfigError) as info:
        Profile.load("j1939", app_signal="CCVS1.CruiseCtrlSetSpeed")
    text = str(info.value)
    assert "CCVS1.WheelBasedVehicleSpeed" in text and "CCVS1.CruiseCtrlSetSpeed" in text
    assert "0x18FEF100" in text and "--speed-signal" in text and "--app-signal" in text
    assert info.value.exit_status == 2


def test_speed_and_app_in_the_same_user_frame_raise_config_error(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 291 VEH: 8 A
 SG_ Speed : 0|16@1+ (0.01,0) [0|300] "km/h" B
 SG_ Pedal : 16|8@1+ (0.5,0) [0|100] "%" B
""",
    )
    with pytest.raises(ConfigError, match=r"VEH\.Speed.*VEH\.Pedal.*0x123"):
        Profile.load(dbc_path=dbc, speed_signal="VEH.Speed", app_signal="VEH.Pedal")


def test_unknown_profile_raises_config_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        Profile.load("nonesuch")
    message = str(info.value)
    assert "nonesuch" in message and "amp" in message and "j1939" in message and "--dbc" in message


def test_built_in_profiles_are_found_as_package_data() -> None:
    assert {"amp", "j1939"} <= set(available_profiles())


def test_default_profile_is_amp() -> None:
    assert Profile.load().name == "amp"


def test_unparsable_dbc_raises_config_error_naming_the_file(tmp_path: Path) -> None:
    dbc = write_dbc(tmp_path, "BO_ this is not a dbc\n SG_ [[[\n", name="broken.dbc")
    with pytest.raises(ConfigError) as info:
        Profile.load(dbc_path=dbc)
    assert dbc in str(info.value) and "not a valid DBC" in str(info.value)


def test_missing_dbc_file_raises_config_error_naming_the_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.dbc")
    with pytest.raises(ConfigError, match="does not exist") as info:
        Profile.load(dbc_path=missing)
    assert missing in str(info.value)


def test_dbc_path_that_is_a_directory_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="directory"):
        Profile.load(dbc_path=str(tmp_path))


def test_missing_role_raises_config_error_naming_file_spn_and_option(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ WBSpeed : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
"""
        + J1939_ATTRIBUTES
        + 'BA_ "SPN" SG_ 2566844672 WBSpeed 84;\n',
    )
    with pytest.raises(ConfigError) as info:
        Profile.load(dbc_path=dbc)
    message = str(info.value)
    assert dbc in message and "SPN 91" in message and "--app-signal" in message


def test_ambiguous_role_raises_config_error_listing_the_candidates(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 2566844672 CCVS1: 8 A
 SG_ WBSpeed : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
 SG_ APP : 24|8@1+ (0.4,0) [0|100] "%" B
BO_ 2566844928 CCVS2: 8 A
 SG_ WBSpeed2 : 8|16@1+ (0.00390625,0) [0|250.996] "km/h" B
"""
        + J1939_ATTRIBUTES
        + 'BA_ "SPN" SG_ 2566844672 WBSpeed 84;\nBA_ "SPN" SG_ 2566844928 WBSpeed2 84;\n'
        + 'BA_ "SPN" SG_ 2566844672 APP 91;\n',
    )
    with pytest.raises(ConfigError) as info:
        Profile.load(dbc_path=dbc)
    message = str(info.value)
    assert "CCVS1.WBSpeed" in message and "CCVS2.WBSpeed2" in message and "--speed-signal" in message


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("CCVS1", "MESSAGE.SIGNAL"),
        (".WheelBasedVehicleSpeed", "MESSAGE.SIGNAL"),
        ("NOPE.WheelBasedVehicleSpeed", "no message 'NOPE'"),
        ("CCVS1.Nope", "no signal 'Nope'"),
    ],
)
def test_bad_signal_override_raises_config_error_saying_what_is_wrong(override: str, expected: str) -> None:
    with pytest.raises(ConfigError, match="--speed-signal") as info:
        Profile.load("amp", speed_signal=override)
    assert expected in str(info.value)


def test_signal_that_cannot_carry_a_role_raises_config_error(tmp_path: Path) -> None:
    dbc = write_dbc(
        tmp_path,
        DBC_HEADER
        + """
BO_ 291 VEH: 8 A
 SG_ Speed : 0|32@1- (1,0) [0|0] "km/h" B
 SG_ Pedal : 32|8@1+ (0.5,0) [0|100] "%" B
SIG_VALTYPE_ 291 Speed : 1;
""",
    )
    with pytest.raises(ConfigError, match=r"VEH\.Speed cannot carry the wheel-based vehicle speed"):
        Profile.load(dbc_path=dbc, speed_signal="VEH.Speed", app_signal="VEH.Pedal")


def test_config_errors_carry_the_usage_exit_status() -> None:
    with pytest.raises(ConfigError) as info:
        Profile.load("nonesuch")
    assert info.value.exit_status == 2


# --- the DBC files themselves ----------------------------------------------------------------------


#: each built-in DBC's nodes: j1939 adds the powertrain network's transmission, brakes and retarder
#: and the external controller that commands them
BUILT_IN_NODES = {"amp": {"ECU", "CCM"}, "j1939": {"ECU", "CCM", "TCM", "EBS", "RETARDER", "ACC"}}


@pytest.mark.parametrize("name", PROFILES)
def test_built_in_dbc_loads_under_cantools_strict_checks(name: str) -> None:
    db = cantools.database.load_file(Profile.load(name).dbc_path, strict=True)
    assert isinstance(db, cantools.database.can.Database)
    assert db.dbc is not None and db.dbc.attributes["ProtocolType"].value == "J1939"
    assert {n.name for n in db.nodes} == BUILT_IN_NODES[name]
    for message in db.messages:
        assert message.protocol == "j1939" and message.is_extended_frame
        assert message.cycle_time and message.comment
        for signal in message.signals:
            assert signal.spn and signal.comment


def test_role_spns_and_senders_match_the_simulator_nodes(profile: Profile) -> None:
    assert (profile.speed.signal.spn, profile.speed.message.senders) == (84, ["ECU"])
    assert (profile.app.signal.spn, profile.app.message.senders) == (91, ["CCM"])


def test_speed_message_and_app_limits_follow_the_dbc(profile: Profile) -> None:
    assert (profile.speed.signal.minimum, profile.speed.signal.maximum) == (0, 250.996)
    assert (profile.app.signal.minimum, profile.app.signal.maximum) == (0, 100)


# --- the fast path agrees with cantools ------------------------------------------------------------


def expected_decode(codec: RoleCodec, payload: bytes) -> float | Invalid:
    """Reference: cantools for the bits, the J1939-71 top-byte table for the classes."""
    raw = cantools_raw(codec.message, payload, codec.signal_name)
    top = raw >> (codec.signal.length - 8)
    if top == 0xFF:
        return Invalid.NOT_AVAILABLE
    if top == 0xFE:
        return Invalid.ERROR_INDICATOR
    if top >= 0xFB:
        return Invalid.OUT_OF_RANGE
    physical = cantools_values(codec.message, payload)[codec.signal_name]
    half_step = codec.signal.scale / 2
    assert codec.signal.minimum is not None and codec.signal.maximum is not None
    if not codec.signal.minimum - half_step <= physical <= codec.signal.maximum + half_step:
        return Invalid.OUT_OF_RANGE
    return physical


@pytest.mark.parametrize("name", PROFILES)
@pytest.mark.parametrize("role", ["speed", "app"])
@given(payload=st.binary(min_size=8, max_size=8))
@settings(max_examples=400, deadline=None)
def test_fast_decode_agrees_with_cantools_on_random_payloads(name: str, role: str, payload: bytes) -> None:
    codec: RoleCodec = getattr(profile_named(name), role)
    assert codec.decode(payload) == expected_decode(codec, payload)


@pytest.mark.parametrize("name", PROFILES)
@pytest.mark.parametrize("role", ["speed", "app"])
@given(fraction=st.floats(min_value=0.0, max_value=1.0))
@settings(max_examples=400, deadline=None)
def test_fast_encode_agrees_with_cantools_full_message_encode(name: str, role: str, fraction: float) -> None:
    codec: RoleCodec = getattr(profile_named(name), role)
    signal = codec.signal
    assert signal.minimum is not None and signal.maximum is not None
    value = signal.minimum + fraction * (signal.maximum - signal.minimum)
    raw = signal.conversion.numeric_scaled_to_raw(value)
    assert isinstance(raw, int)
    assert codec.encode(value) == with_raw(codec, raw)


@st.composite
def layouts(draw: st.DrawFn) -> Message:
    """A one-signal message with arbitrary position, length, byte order, sign, scale and offset."""
    length_bytes = draw(st.integers(1, 8))
    nbits = draw(st.integers(1, min(32, 8 * length_bytes)))
    first_bit = draw(st.integers(0, 8 * length_bytes - nbits))
    byte_order: Literal["little_endian", "big_endian"] = draw(
        st.sampled_from(["little_endian", "big_endian"])
    )
    # Intel signals are numbered by their LSB, Motorola signals by the sawtooth index of their MSB.
    start = first_bit if byte_order == "little_endian" else sawtooth_to_network_bitnum(first_bit)
    scale = draw(st.sampled_from([1, 2, 0.5, 0.4, 0.125, 0.05, 1 / 256, -0.25]))
    offset = draw(st.sampled_from([0, -125, 40, -40.5, 3.25]))
    signal = Signal(
        name="S",
        start=start,
        length=nbits,
        byte_order=byte_order,
        is_signed=draw(st.booleans()) and nbits > 1,
        conversion=BaseConversion.factory(scale=scale, offset=offset),
    )
    return Message(
        frame_id=0x123, name="M", length=length_bytes, signals=[signal], unused_bit_pattern=0xFF, strict=True
    )


def test_dbc_limits_bound_the_right_raw_end_when_the_scale_is_negative() -> None:
    signal = Signal(
        name="S",
        start=0,
        length=8,
        conversion=BaseConversion.factory(scale=-0.5, offset=0),
        minimum=-10,
        maximum=0,
    )
    codec = RoleCodec(Message(frame_id=0x123, name="M", length=1, signals=[signal]), signal)
    assert (codec.minimum, codec.maximum) == (-10.0, 0.0)
    assert codec.encode(-50.0) == bytes([20])
    assert codec.encode(7.0) == bytes([0])
    assert codec.decode(bytes([21])) is Invalid.OUT_OF_RANGE


@given(message=layouts(), data=st.data())
@settings(max_examples=500, deadline=None)
def test_fast_decode_agrees_with_cantools_for_any_layout(message: Message, data: st.DataObject) -> None:
    codec = RoleCodec(message, message.signals[0])
    payload = data.draw(st.binary(min_size=message.length, max_size=message.length))
    assert codec.decode(payload) == cantools_values(message, payload)["S"]


@given(message=layouts(), data=st.data())
@settings(max_examples=500, deadline=None)
def test_fast_encode_agrees_with_cantools_for_any_layout(message: Message, data: st.DataObject) -> None:
    signal = message.signals[0]
    codec = RoleCodec(message, signal)
    if signal.is_signed:
        raw = data.draw(st.integers(-(1 << (signal.length - 1)), (1 << (signal.length - 1)) - 1))
    else:
        raw = data.draw(st.integers(0, (1 << signal.length) - 1))
    value = raw * signal.scale + signal.offset
    expected = message.encode({"S": raw}, scaling=False, padding=True, strict=False)
    assert codec.layout == SignalLayout.of(signal)
    assert codec.encode(value) == expected


@given(message=layouts(), data=st.data())
@settings(max_examples=500, deadline=None)
def test_the_signal_description_reads_and_scales_as_cantools_for_any_layout(message: Message,
                                                                            data: st.DataObject) -> None:
    """The description the fast codec, the command codecs and the received commands are built
    from: its bits are cantools' raw value, its scaling cantools' physical value."""
    layout = SignalLayout.of(message.signals[0])
    payload = data.draw(st.binary(min_size=message.length, max_size=message.length))
    raw = cantools_raw(message, payload, "S")
    assert layout.raw(payload) == raw & ((1 << layout.length) - 1)
    assert layout.value(raw) == cantools_values(message, payload)["S"]
