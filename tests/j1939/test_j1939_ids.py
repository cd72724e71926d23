"""Rules for J1939 identifier arithmetic and parameter raw ranges, with cantools.j1939 as the reference."""

from __future__ import annotations

from collections.abc import Callable

import cantools.j1939
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecu_sim.j1939.ids import (
    MAX_EXTENDED_ID,
    RawClasses,
    format_id,
    is_pdu1,
    pgn_of,
    priority_of,
    raw_classes,
    source_address_of,
)

identifiers = st.integers(min_value=0, max_value=MAX_EXTENDED_ID)

#: (identifier, PGN, source address, priority): CCVS1 from the engine, EEC2 from the CCM, a request
#: to the CCM (PDU1) and a global request (PDU1, destination 0xFF).
EXAMPLES = [
    pytest.param(0x18FEF100, 65265, 0x00, 6, id="CCVS1"),
    pytest.param(0x0CF00326, 61443, 0x26, 3, id="EEC2"),
    pytest.param(0x18EA0026, 59904, 0x26, 6, id="request"),
    pytest.param(0x18EAFF00, 59904, 0x00, 6, id="global-request"),
]


# --- agreement with cantools ------------------------------------------------------------------------


@given(arbitration_id=identifiers)
@settings(max_examples=1000)
def test_pgn_agrees_with_cantools_for_any_29_bit_identifier(arbitration_id: int) -> None:
    expected = cantools.j1939.pgn_from_frame_id(arbitration_id)  # type: ignore[no-untyped-call]
    assert pgn_of(arbitration_id) == expected


@given(arbitration_id=identifiers)
@settings(max_examples=1000)
def test_source_address_agrees_with_cantools_for_any_29_bit_identifier(arbitration_id: int) -> None:
    unpacked = cantools.j1939.frame_id_unpack(arbitration_id)  # type: ignore[no-untyped-call]
    assert source_address_of(arbitration_id) == unpacked.source_address


@given(arbitration_id=identifiers)
@settings(max_examples=1000)
def test_priority_agrees_with_cantools_for_any_29_bit_identifier(arbitration_id: int) -> None:
    unpacked = cantools.j1939.frame_id_unpack(arbitration_id)  # type: ignore[no-untyped-call]
    assert priority_of(arbitration_id) == unpacked.priority


# --- examples ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("arbitration_id", "pgn", "sa", "priority"), EXAMPLES)
def test_pgn_is_the_parameter_group_of_the_j1939_71_tables(
    arbitration_id: int, pgn: int, sa: int, priority: int
) -> None:
    assert pgn_of(arbitration_id) == pgn


@pytest.mark.parametrize(("arbitration_id", "pgn", "sa", "priority"), EXAMPLES)
def test_source_address_is_the_low_byte(arbitration_id: int, pgn: int, sa: int, priority: int) -> None:
    assert source_address_of(arbitration_id) == sa


@pytest.mark.parametrize(("arbitration_id", "pgn", "sa", "priority"), EXAMPLES)
def test_priority_is_the_top_three_bits(arbitration_id: int, pgn: int, sa: int, priority: int) -> None:
    assert priority_of(arbitration_id) == priority


@pytest.mark.parametrize("destination", [0x00, 0x11, 0x26, 0xFF])
def test_pdu1_pgn_leaves_out_the_destination_address(destination: int) -> None:
    assert pgn_of(0x18EA0000 | destination << 8 | 0x26) == 59904


@pytest.mark.parametrize(("arbitration_id", "pgn"), [(0x18FEF125, 65265), (0x18FEF225, 65266)])
def test_pdu2_pgn_keeps_the_group_extension(arbitration_id: int, pgn: int) -> None:
    assert pgn_of(arbitration_id) == pgn


def test_data_page_bit_is_part_of_the_pgn() -> None:
    assert pgn_of(0x19FEF125) == 0x1FEF1


def test_pgn_ignores_priority() -> None:
    assert {pgn_of(priority << 26 | 0xFEF125) for priority in range(8)} == {65265}


@pytest.mark.parametrize("pgn", [0x0000, 0xEA00, 0xEF00, 0x1EF00])
def test_pdu_formats_below_240_are_pdu1(pgn: int) -> None:
    assert is_pdu1(pgn)


@pytest.mark.parametrize("pgn", [0xF000, 0xF003, 0xFEF1, 0xFFFF, 0x1F000])
def test_pdu_formats_from_240_up_are_pdu2(pgn: int) -> None:
    assert not is_pdu1(pgn)


@pytest.mark.parametrize("function", [pgn_of, source_address_of, priority_of])
@pytest.mark.parametrize("arbitration_id", [-1, MAX_EXTENDED_ID + 1, 1 << 31 | 0x18FEF100])
def test_identifiers_outside_29_bits_raise_value_error(
    function: Callable[[int], int], arbitration_id: int
) -> None:
    with pytest.raises(ValueError, match="29-bit"):
        function(arbitration_id)


# --- parameter raw ranges ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (8, RawClasses(0xFA, 0xFE, 0xFF)),
        (16, RawClasses(0xFAFF, 0xFE00, 0xFF00)),
        (32, RawClasses(0xFAFFFFFF, 0xFE000000, 0xFF000000)),
    ],
)
def test_byte_sized_parameters_are_classified_by_their_top_byte(length: int, expected: RawClasses) -> None:
    assert raw_classes(length) == expected


@given(length=st.integers(8, 64), data=st.data())
def test_top_byte_decides_the_class_of_any_raw_value(length: int, data: st.DataObject) -> None:
    raw = data.draw(st.integers(0, (1 << length) - 1))
    top = raw >> (length - 8)
    classes = raw_classes(length)
    assert (raw <= classes.valid_max) == (top < 0xFB)
    assert (classes.first_error <= raw < classes.first_not_available) == (top == 0xFE)
    assert (raw >= classes.first_not_available) == (top == 0xFF)


@pytest.mark.parametrize(("length", "expected"), [(2, RawClasses(1, 2, 3)), (4, RawClasses(13, 14, 15))])
def test_discrete_fields_use_all_ones_for_not_available_and_one_less_for_error(
    length: int, expected: RawClasses
) -> None:
    assert raw_classes(length) == expected


def test_a_single_bit_field_is_all_valid() -> None:
    classes = raw_classes(1)
    assert classes.valid_max == 1 and classes.first_error > 1 and classes.first_not_available > 1


def test_a_field_without_bits_raises_value_error() -> None:
    with pytest.raises(ValueError):
        raw_classes(0)


# --- formatting -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arbitration_id", "text"),
    [(0x18FEF125, "0x18FEF125"), (0x0CF00400, "0x0CF00400"), (0xABC, "0x00000ABC")],
)
def test_extended_identifiers_are_written_as_eight_upper_case_hex_digits(
    arbitration_id: int, text: str
) -> None:
    assert format_id(arbitration_id, True) == text


@pytest.mark.parametrize(("arbitration_id", "text"), [(0x123, "0x123"), (0x7FF, "0x7FF"), (0x7, "0x007")])
def test_standard_identifiers_are_written_as_three_upper_case_hex_digits(
    arbitration_id: int, text: str
) -> None:
    assert format_id(arbitration_id, False) == text
