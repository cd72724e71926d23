"""The UDS server's services and refusals, each rule by the request a tester sends."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ecu_sim.j1939.dm import Dtc
from ecu_sim.uds.codes import Nrc
from ecu_sim.uds.server import P2_FLOOR_MS, S3_S, UdsServer
from tests.helpers.udsbench import NAN, PERIOD, VIN, Bench, BenchNode, DictParameters, security


def refusal(service: int, code: Nrc) -> bytes:
    return bytes((0x7F, service, code))


def test_session_control_answers_with_p2_and_p2_star() -> None:
    assert Bench().ask(0x10, 0x03) == b"\x50\x03\x00\x32\x01\xf4"  # P2 50 ms, P2* 500 x 10 ms


def test_p2_is_two_periods_of_a_slow_node_so_a_tick_always_meets_it() -> None:
    server = UdsServer(BenchNode(), security(), 0.1)
    assert server.p2_ms == 200 and UdsServer(BenchNode(), security(), PERIOD).p2_ms == P2_FLOOR_MS


def test_a_session_falls_back_to_default_after_s3_without_a_request() -> None:
    tester = Bench()
    tester.ask(0x10, 0x03)
    tester.wait(S3_S + PERIOD)
    assert tester.ask(0x22, 0xF1, 0x86) == b"\x62\xf1\x86\x01"


def test_tester_present_keeps_the_session() -> None:
    tester = Bench()
    tester.ask(0x10, 0x03)
    for _ in range(3):
        tester.wait(S3_S / 2)
        assert tester.ask(0x3E, 0x00) == b"\x7e\x00"
    assert tester.ask(0x22, 0xF1, 0x86) == b"\x62\xf1\x86\x03"


def test_the_suppress_bit_leaves_the_positive_answer_out() -> None:
    assert Bench().ask(0x3E, 0x80) is None


def test_wrong_length_is_refused_with_0x13() -> None:
    assert Bench().ask(0x10, 0x03, 0x00) == refusal(0x10, Nrc.INCORRECT_MESSAGE_LENGTH_OR_INVALID_FORMAT)


def test_unknown_service_is_refused_with_0x11() -> None:
    assert Bench().ask(0x23, 0x00) == refusal(0x23, Nrc.SERVICE_NOT_SUPPORTED)


def test_unknown_sub_function_is_refused_with_0x12() -> None:
    assert Bench().ask(0x11, 0x05) == refusal(0x11, Nrc.SUB_FUNCTION_NOT_SUPPORTED)


def test_a_service_outside_its_session_is_refused_with_0x7f() -> None:
    assert Bench().ask(0x27, 0x01) == refusal(0x27, Nrc.SERVICE_NOT_SUPPORTED_IN_ACTIVE_SESSION)


def test_the_programming_session_from_default_is_refused_with_0x7e() -> None:
    assert Bench().ask(0x10, 0x02) == refusal(0x10, Nrc.SUB_FUNCTION_NOT_SUPPORTED_IN_ACTIVE_SESSION)


def test_the_programming_session_while_moving_is_refused_as_conditions_not_correct() -> None:
    tester = Bench(BenchNode(speed=30.0))
    tester.ask(0x10, 0x03)
    assert tester.ask(0x10, 0x02) == refusal(0x10, Nrc.CONDITIONS_NOT_CORRECT)


def test_an_unknown_speed_counts_as_moving() -> None:
    tester = Bench(BenchNode(speed=NAN))
    tester.ask(0x10, 0x03)
    assert tester.ask(0x10, 0x02) == refusal(0x10, Nrc.CONDITIONS_NOT_CORRECT)


def test_a_functional_request_gets_no_not_supported_answer() -> None:
    assert Bench().ask(0x23, 0x00, functional=True) is None


def test_read_data_by_identifier_gives_the_vin_and_the_active_session() -> None:
    assert Bench().ask(0x22, 0xF1, 0x90, 0xF1, 0x86) == b"\x62\xf1\x90" + VIN + b"\xf1\x86\x01"


def test_an_unknown_identifier_alone_is_refused_with_0x31() -> None:
    assert Bench().ask(0x22, 0x12, 0x34) == refusal(0x22, Nrc.REQUEST_OUT_OF_RANGE)


def test_a_parameter_is_read_and_written_by_its_identifier_after_security_access() -> None:
    tester = Bench(BenchNode(parameters=DictParameters()))
    assert tester.ask(0x22, 0x01, 0x00) == b"\x62\x01\x00\x01\xf4"
    tester.unlock()
    assert tester.ask(0x2E, 0x01, 0x00, 0x02, 0x58) == b"\x6e\x01\x00"
    assert tester.ask(0x22, 0x01, 0x00) == b"\x62\x01\x00\x02\x58"


def test_writing_without_security_access_is_refused_with_0x33() -> None:
    tester = Bench(BenchNode(parameters=DictParameters()))
    tester.ask(0x10, 0x03)
    assert tester.ask(0x2E, 0x01, 0x00, 0x02, 0x58) == refusal(0x2E, Nrc.SECURITY_ACCESS_DENIED)


def test_a_parameter_value_out_of_range_is_refused_with_0x31() -> None:
    tester = Bench(BenchNode(parameters=DictParameters()))
    tester.unlock()
    assert tester.ask(0x2E, 0x01, 0x00, 0x07, 0xD0) == refusal(0x2E, Nrc.REQUEST_OUT_OF_RANGE)


def test_identification_is_read_only() -> None:
    tester = Bench()
    tester.unlock()
    assert tester.ask(0x2E, 0xF1, 0x90, *VIN) == refusal(0x2E, Nrc.REQUEST_OUT_OF_RANGE)


def test_dtcs_are_the_stores_with_j1939_spn_and_fmi_and_their_status() -> None:
    node = BenchNode()
    node.dtcs.update({Dtc(91, 9)})
    node.dtcs.update({Dtc(639, 14)})
    tester = Bench(node)
    assert tester.ask(0x19, 0x01, 0xFF) == b"\x59\x01\x0b\x02\x00\x02"
    assert tester.ask(0x19, 0x02, 0xFF) == b"\x59\x02\x0b" + b"\x7f\x02\x0e\x0b" + b"\x5b\x00\x09\x08"
    assert tester.ask(0x19, 0x02, 0x01) == b"\x59\x02\x0b\x7f\x02\x0e\x0b"


def test_clear_diagnostic_information_clears_the_store_dm1_and_dm2_read() -> None:
    node = BenchNode()
    node.dtcs.update({Dtc(91, 9)})
    node.dtcs.update(set())
    assert Bench(node).ask(0x14, 0xFF, 0xFF, 0xFF) == b"\x54"
    assert node.dtcs.active() == [] and node.dtcs.previously_active() == []


def test_clearing_one_group_is_refused_with_0x31() -> None:
    assert Bench().ask(0x14, 0x00, 0x01, 0x00) == refusal(0x14, Nrc.REQUEST_OUT_OF_RANGE)


def test_communication_control_silences_the_node_until_the_default_session() -> None:
    tester = Bench()
    tester.ask(0x10, 0x03)
    assert tester.ask(0x28, 0x03, 0x01) == b"\x68\x03" and not tester.node.sending
    tester.ask(0x10, 0x01)
    assert tester.node.sending


def test_control_dtc_setting_holds_the_dtcs_until_on_again() -> None:
    tester = Bench()
    tester.ask(0x10, 0x03)
    assert tester.ask(0x85, 0x02) == b"\xc5\x02" and not tester.node.recording
    assert tester.ask(0x85, 0x01) == b"\xc5\x01" and tester.node.recording


def test_ecu_reset_answers_first_then_resets_at_the_next_tick_in_the_default_session() -> None:
    tester = Bench()
    tester.ask(0x10, 0x03)
    assert tester.ask(0x11, 0x01) == b"\x51\x01" and tester.node.resets == []
    tester.wait(PERIOD)
    assert tester.node.resets == [1] and tester.ask(0x22, 0xF1, 0x86) == b"\x62\xf1\x86\x01"


def test_an_idle_server_has_no_tick_to_run() -> None:
    tester = Bench()
    assert tester.server.idle and tester.server.next_due(5) >= 1 << 62


@given(st.lists(st.binary(min_size=1, max_size=12), max_size=30))
def test_any_requests_get_an_answer_or_none_and_never_an_error(requests: list[bytes]) -> None:
    bench = Bench(BenchNode(parameters=DictParameters()))
    for request in requests:
        answer = bench.ask(*request)
        assert answer is None or answer[0] in (0x7F, request[0] + 0x40)
