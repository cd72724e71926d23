"""Erase, download and the dependency check against a memory that keeps the contract's rules."""

from __future__ import annotations

from ecu_sim.uds.codes import Nrc
from ecu_sim.uds.server import ERASE_S
from tests.helpers.udsbench import PERIOD, Bench, BenchNode, ContractMemory

IMAGE = bytes(63) + b"\x5a"


def refusal(service: int, code: Nrc) -> bytes:
    return bytes((0x7F, service, code))


def programming(memory: ContractMemory | None = None, speed: float = 0.0) -> Bench:
    bench = Bench(BenchNode(memory=ContractMemory() if memory is None else memory, speed=speed))
    bench.program()
    return bench


def erased(bench: Bench) -> None:
    bench.ask(0x31, 0x01, 0xFF, 0x00)
    bench.wait(ERASE_S + PERIOD)


def download(bench: Bench, size: int = 64) -> bytes | None:
    return bench.ask(0x34, 0x00, 0x44, 0, 0, 0x10, 0x00, 0, 0, 0, size)


def test_erase_answers_response_pending_then_positive_when_done() -> None:
    bench = programming()
    assert bench.ask(0x31, 0x01, 0xFF, 0x00) == refusal(0x31, Nrc.REQUEST_CORRECTLY_RECEIVED_RESPONSE_PENDING)
    assert bench.wait(ERASE_S + PERIOD) == [(0xF9, b"\x71\x01\xff\x00")]


def test_a_request_during_the_erase_is_busy_repeat_request() -> None:
    bench = programming()
    bench.ask(0x31, 0x01, 0xFF, 0x00)
    assert bench.ask(0x3E, 0x00) == refusal(0x3E, Nrc.BUSY_REPEAT_REQUEST)


def test_erasing_while_the_truck_moves_is_refused_as_vehicle_speed_too_high() -> None:
    bench = programming()
    bench.node.speed = 20.0
    assert bench.ask(0x31, 0x01, 0xFF, 0x00) == refusal(0x31, Nrc.VEHICLE_SPEED_TOO_HIGH)


def test_a_download_while_the_truck_moves_is_refused_as_vehicle_speed_too_high() -> None:
    bench = programming()
    erased(bench)
    bench.node.speed = 20.0
    assert download(bench) == refusal(0x34, Nrc.VEHICLE_SPEED_TOO_HIGH)


def test_a_download_without_security_access_is_refused_with_0x33() -> None:
    bench = Bench(BenchNode(memory=ContractMemory()))
    bench.unlock()
    bench.ask(0x10, 0x02)  # a new session locks again
    assert download(bench) == refusal(0x34, Nrc.SECURITY_ACCESS_DENIED)


def test_a_download_into_an_image_not_erased_is_not_accepted() -> None:
    assert download(programming()) == refusal(0x34, Nrc.UPLOAD_DOWNLOAD_NOT_ACCEPTED)


def test_a_download_outside_the_calibration_area_is_out_of_range() -> None:
    bench = programming()
    erased(bench)
    assert download(bench, size=65) == refusal(0x34, Nrc.REQUEST_OUT_OF_RANGE)


def test_a_whole_download_and_check_make_the_new_image_active() -> None:
    memory = ContractMemory()
    bench = programming(memory)
    erased(bench)
    assert download(bench) == b"\x74\x20\x0f\xff"
    assert bench.ask(0x36, 0x01, *IMAGE[:32]) == b"\x76\x01"
    assert bench.ask(0x36, 0x02, *IMAGE[32:]) == b"\x76\x02"
    assert bench.ask(0x37) == b"\x77"
    assert bench.ask(0x31, 0x01, 0xFF, 0x01) == b"\x71\x01\xff\x01\x00"
    assert memory.application_valid and memory.active == IMAGE


def test_wrong_block_sequence_counter_is_refused_with_0x73() -> None:
    bench = programming()
    erased(bench)
    download(bench)
    assert bench.ask(0x36, 0x02, 1, 2, 3) == refusal(0x36, Nrc.WRONG_BLOCK_SEQUENCE_COUNTER)


def test_the_last_block_sent_again_is_answered_and_not_written_twice() -> None:
    bench = programming()
    erased(bench)
    download(bench, size=4)
    assert bench.ask(0x36, 0x01, 1, 2, 3, 4) == b"\x76\x01"
    assert bench.ask(0x36, 0x01, 1, 2, 3, 4) == b"\x76\x01"
    assert bench.ask(0x37) == b"\x77"


def test_transfer_data_without_a_download_is_a_request_sequence_error() -> None:
    bench = programming()
    assert bench.ask(0x36, 0x01, 1) == refusal(0x36, Nrc.REQUEST_SEQUENCE_ERROR)


def test_transfer_exit_before_every_byte_came_is_a_request_sequence_error() -> None:
    bench = programming()
    erased(bench)
    download(bench)
    bench.ask(0x36, 0x01, 1, 2)
    assert bench.ask(0x37) == refusal(0x37, Nrc.REQUEST_SEQUENCE_ERROR)


def test_a_check_the_image_fails_is_a_general_programming_failure_and_boot_mode_stays() -> None:
    memory = ContractMemory()
    bench = programming(memory)
    erased(bench)
    download(bench)
    bench.ask(0x36, 0x01, *bytes(64))
    bench.ask(0x37)
    assert bench.ask(0x31, 0x01, 0xFF, 0x01) == refusal(0x31, Nrc.GENERAL_PROGRAMMING_FAILURE)
    assert not memory.application_valid


def test_a_node_without_programmable_memory_refuses_routines_and_downloads_with_0x31() -> None:
    bench = Bench()
    bench.program()
    assert bench.ask(0x31, 0x01, 0xFF, 0x00) == refusal(0x31, Nrc.REQUEST_OUT_OF_RANGE)
    assert download(bench) == refusal(0x34, Nrc.REQUEST_OUT_OF_RANGE)


def test_the_session_falling_back_gives_the_download_up() -> None:
    bench = programming()
    erased(bench)
    download(bench)
    bench.wait(6.0)
    bench.program()
    assert bench.ask(0x36, 0x01, 1) == refusal(0x36, Nrc.REQUEST_SEQUENCE_ERROR)
